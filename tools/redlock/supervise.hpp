// SPDX-License-Identifier: BSL-1.0
#pragma once
// What `redlock run` does around COMMAND's process group so that it behaves as flock(1)
// would at a terminal, and never outlives its supervisor: the terminal handed to the
// group while it runs, and a watchdog process that kills the group if redlock dies.

#include <sys/types.h>

namespace redlock::cli {

/// The terminal redlock runs in the foreground of (its stdin), or -1: then COMMAND's
/// group is not given a terminal. Read before fork.
int foreground_terminal();

/// Makes process group `pgid` the foreground group of terminal `tty` (from
/// foreground_terminal; nothing for -1), so that an interactive COMMAND can read it and
/// the terminal's ^C and ^Z reach COMMAND. Async-signal-safe: the child calls it too.
void give_terminal(int tty, pid_t pgid) noexcept;

/// Takes the foreground of `tty` back for redlock's own group once COMMAND has ended.
void take_terminal_back(int tty) noexcept;

/// A process that kills COMMAND's whole group (`pgid`, SIGKILL) as soon as redlock dies
/// without saying goodbye (kill -9, the OOM killer): it waits on a pipe whose only write
/// end redlock holds, and the kernel closes that end however redlock ends.
class watchdog {
 public:
  watchdog() = default;
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() { stand_down(); }

  /// Starts watching `pgid`. Returns false (errno set) if the process cannot be started.
  bool start(pid_t pgid) noexcept;
  /// COMMAND has ended under redlock's eye: the watchdog exits without killing anything.
  void stand_down() noexcept;

 private:
  pid_t pid_ = -1;
  int pipe_ = -1;  // the write end
};

}  // namespace redlock::cli
