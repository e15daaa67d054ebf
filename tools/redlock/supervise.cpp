// SPDX-License-Identifier: BSL-1.0
#include "supervise.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <initializer_list>

namespace redlock::cli {

namespace {

// tcsetpgrp from a process outside the terminal's foreground group stops it with
// SIGTTOU unless the signal is blocked: blocked for the call, as shells do.
void set_foreground(int tty, pid_t pgid) noexcept {
  sigset_t ttou, old;
  ::sigemptyset(&ttou);
  ::sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(tty, pgid);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
}

// Closes every descriptor from `from` up, but `keep`: the watchdog must not hold
// redlock's sockets open after redlock closed them.
void close_all_but(int from, int keep) noexcept {
  if (keep > from) ::close_range(static_cast<unsigned>(from), static_cast<unsigned>(keep - 1), 0);
  ::close_range(static_cast<unsigned>(keep + 1), ~0U, 0);
}

[[noreturn]] void watch(int read_end, pid_t pgid) noexcept {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  // A ^C or a SIGTERM meant for redlock's group must not take the watchdog with it.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD})
    ::sigaction(sig, &ignore, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  close_all_but(STDERR_FILENO + 1, read_end);
  char byte = 0;
  ssize_t n = 0;
  do {
    n = ::read(read_end, &byte, 1);
  } while (n < 0 && errno == EINTR);
  // End of file without the goodbye byte: redlock is gone, and so is the lock's renewal.
  if (n <= 0) ::kill(-pgid, SIGKILL);
  ::_exit(0);  // the watchdog ends; redlock alone reads this status
}

}  // namespace

int foreground_terminal() {
  if (!::isatty(STDIN_FILENO)) return -1;
  if (::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return -1;  // redlock itself runs in the background
  return STDIN_FILENO;
}

void give_terminal(int tty, pid_t pgid) noexcept {
  if (tty >= 0) set_foreground(tty, pgid);
}

void take_terminal_back(int tty) noexcept {
  if (tty >= 0) set_foreground(tty, ::getpgrp());
}

bool watchdog::start(pid_t pgid) noexcept {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    errno = err;
    return false;
  }
  if (pid == 0) watch(fds[0], pgid);
  ::close(fds[0]);
  pid_ = pid;
  pipe_ = fds[1];
  return true;
}

void watchdog::stand_down() noexcept {
  if (pipe_ < 0) return;
  const char bye = 'x';
  [[maybe_unused]] auto n = ::write(pipe_, &bye, 1);
  ::close(pipe_);
  pipe_ = -1;
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace redlock::cli
