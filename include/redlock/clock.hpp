// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// The clock every validity computation uses.

#include <chrono>
#include <ctime>

namespace redlock {

/// A monotonic clock that keeps counting while the host is suspended (CLOCK_BOOTTIME).
/// Redis keeps expiring keys while a client host sleeps; std::chrono::steady_clock
/// (CLOCK_MONOTONIC) would not see that time pass and would overstate a lock's validity.
/// Never the wall clock, which can jump.
struct boot_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<boot_clock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point{std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec}};
  }
};

}  // namespace redlock
