// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiting, bounded, for a condition on state that nothing can signal to the test: another
// process's keys on a server, a server's uptime, its client list. The condition is checked
// at once and then at a fixed interval until it holds or the limit passes; the caller
// asserts on the result, so a condition that never holds fails the test rather than
// hanging it, and one that holds early costs no wait.

#include <chrono>
#include <thread>

namespace redlock::test {

/// True as soon as `done()` holds; false if it still does not after `limit`.
template <typename Pred>
bool wait_until(Pred done, std::chrono::milliseconds limit,
                std::chrono::milliseconds every = std::chrono::milliseconds{5}) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(every);
  }
}

}  // namespace redlock::test
