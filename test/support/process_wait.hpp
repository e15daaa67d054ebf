// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiting for a child process to exit and for a file to appear, on the events themselves
// (a pidfd and inotify), each with a time limit that fails the test. No polling sleeps.

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <string>

namespace redlock::test {

namespace detail {
// Blocks in poll() on `fd` until it is readable or `end` passes; true if readable.
inline bool readable_before(int fd, std::chrono::steady_clock::time_point end) {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}
}  // namespace detail

/// Waits for child `pid` to exit and returns its exit code (128 + signal if killed). If
/// it is still running after `limit`, kills it and fails the test.
inline int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  BOOST_TEST_REQUIRE(fd >= 0, "pidfd_open failed: " << errno);
  const bool exited = detail::readable_before(fd, std::chrono::steady_clock::now() + limit);
  ::close(fd);
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    BOOST_FAIL("the child " << pid << " did not exit within " << limit.count() << " ms");
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Waits until `path` exists (created by another process), for at most `limit`;
/// returns whether it does.
inline bool wait_for_file(const std::string& path, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return false;
  const auto dir = std::filesystem::path{path}.parent_path();
  ::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ATTRIB);
  // Checked after the watch is set: a file made before it is seen here, one made after
  // wakes the poll.
  bool found = std::filesystem::exists(path);
  while (!found && detail::readable_before(fd, end)) {
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    found = std::filesystem::exists(path);
  }
  ::close(fd);
  return found;
}

}  // namespace redlock::test
