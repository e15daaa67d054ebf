// SPDX-License-Identifier: BSL-1.0
#pragma once
// What the background renewal decides without I/O: a kept lock's schedule (when its
// renewal falls due, when it is lost by time), which locks a timer tick renews or gives
// up, and what one renewal's answers do to the lock. The scheduler and its batch
// (renewal.cpp) own the timer, the payloads and the waiters; test_kinds feeds these
// functions time points and counts.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "quorum/rules.hpp"
#include "redlock/clock.hpp"

namespace redlock::detail {

/// The times by which the scheduler runs one kept lock.
struct renewal_times {
  std::chrono::nanoseconds interval{};  ///< between renewals
  std::chrono::nanoseconds margin{};    ///< the work hears of a loss this long before it
  boot_clock::time_point next_due{};    ///< the next renewal
  boot_clock::time_point loss_at{};     ///< lost by time unless renewed before
  boot_clock::time_point hold_until = boot_clock::time_point::max();  ///< renewed until
};

/// How a keeper renews a lock of `lock_ttl` that ends at `deadline`: with `renew_ttl`
/// each `fraction` of it, counted from the acquisition (deadline - lock_ttl + drift),
/// lost `margin` (loss_margin) before its deadline, and for at most `max_hold` (zero: no
/// limit) after the acquisition.
renewal_times plan_renewals(boot_clock::time_point deadline, std::chrono::milliseconds lock_ttl,
                            std::chrono::milliseconds renew_ttl, double fraction,
                            std::chrono::nanoseconds margin, std::chrono::milliseconds max_hold,
                            double factor);

/// What a timer tick at `now` does with one kept lock.
enum class renewal_tick : std::uint8_t {
  wait,     ///< nothing yet
  renew,    ///< send its renewal (due, or due soon: it shares a call with those due)
  expired,  ///< lost by time: its last renewal was not confirmed in time
};
renewal_tick on_renewal_tick(const renewal_times& t, bool in_flight, boot_clock::time_point now);

/// When the scheduler must wake for this lock: its loss time, or its next renewal when
/// one is to be sent (none in flight, and within the hold time).
boot_clock::time_point renewal_wake(const renewal_times& t, bool in_flight);

/// One renewal round's answers for one lock: `yes`, `no` (not our token) of the n nodes,
/// `failed` those with no usable answer.
struct renewal_votes {
  std::size_t n = 0, yes = 0, no = 0, failed = 0;
};

/// What one renewal's answers do to the lock, as the scheduler acts on them.
struct renewal_step {
  enum class kind : std::uint8_t {
    lost_not_held,  ///< a majority no longer holds our token: lost, state left as it was
    lost,           ///< lost by time: the new deadline leaves no margin
    renewed,        ///< extended: the lock takes the renewal's TTL
    retry_soon,     ///< too few answers: try again soon, while validity remains
  };
  kind what = kind::lost;
  /// The extension's outcome, as an observer hears it.
  error_code outcome{};
  /// The lock's deadline and loss time from now on (all but lost_not_held).
  boot_clock::time_point deadline{};
  boot_clock::time_point loss_at{};
  /// The next renewal (renewed and retry_soon).
  boot_clock::time_point next_due{};
};

/// The renewal of a lock whose deadline was `old_deadline`, sent at `start` with `ttl`
/// and decided at `now`: the extension rule, a round without a verdict taken as
/// no_quorum (never keep a stale deadline), then the keeper's margin (keeper_verdict).
/// Any outcome but not_held may have shortened the keys: the deadline moves with it.
renewal_step decide_renewal(const renewal_votes& v, const renewal_times& t,
                            boot_clock::time_point old_deadline, boot_clock::time_point start,
                            std::chrono::milliseconds ttl, boot_clock::time_point now,
                            double factor);

/// The deadline of a lock handed back by a keeper that stops while a renewal sent at
/// `renew_start` with `ttl` may still run: no later than that renewal leaves.
inline boot_clock::time_point deadline_after_stop(boot_clock::time_point deadline, bool in_flight,
                                                  boot_clock::time_point renew_start,
                                                  std::chrono::milliseconds ttl, double factor) {
  if (!in_flight) return deadline;
  return std::min(deadline, validity_deadline(renew_start, ttl, factor));
}

/// What a keeper that stops at `now` reports: the lock handed back while it is valid; lost
/// once it was declared lost, and also when its deadline has passed, declared or not (the
/// work that ends now ran past the lock: a paused process, or a timer that had not fired).
enum class stop_verdict : std::uint8_t { handed_back, lost };
inline stop_verdict on_keeper_stop(bool declared_lost, boot_clock::time_point deadline,
                                   boot_clock::time_point now) {
  if (declared_lost || now >= deadline) return stop_verdict::lost;
  return stop_verdict::handed_back;
}

}  // namespace redlock::detail
