// SPDX-License-Identifier: BSL-1.0
// The background renewal's decisions: see renewal_decisions.hpp.

#include "machines/renewal_decisions.hpp"

#include <algorithm>

namespace redlock::detail {

renewal_times plan_renewals(boot_clock::time_point deadline, std::chrono::milliseconds lock_ttl,
                            std::chrono::milliseconds renew_ttl, double fraction,
                            std::chrono::nanoseconds margin, std::chrono::milliseconds max_hold,
                            double factor) {
  renewal_times t;
  t.interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::nano>(renew_ttl) * fraction);
  t.margin = margin;
  const auto acquired = deadline - lock_ttl + drift(lock_ttl, factor);
  t.next_due = acquired + t.interval;
  t.loss_at = deadline - margin;
  if (max_hold.count() > 0) t.hold_until = acquired + max_hold;
  return t;
}

renewal_tick on_renewal_tick(const renewal_times& t, bool in_flight, boot_clock::time_point now) {
  if (now >= t.loss_at) return renewal_tick::expired;
  if (in_flight || t.next_due > t.hold_until) return renewal_tick::wait;
  // Renewals due soon go now with those due already, so that they share a call.
  if (t.next_due <= now + t.interval / 8) return renewal_tick::renew;
  return renewal_tick::wait;
}

boot_clock::time_point renewal_wake(const renewal_times& t, bool in_flight) {
  if (!in_flight && t.next_due <= t.hold_until) return std::min(t.loss_at, t.next_due);
  return t.loss_at;
}

renewal_step decide_renewal(const renewal_votes& v, const renewal_times& t,
                            boot_clock::time_point old_deadline, boot_clock::time_point start,
                            std::chrono::milliseconds ttl, boot_clock::time_point now,
                            double factor) {
  auto x = decide_extension(v.n, v.yes, v.no, v.failed, now, start, ttl, old_deadline, factor);
  // Every node answered or failed, so this cannot happen; but never keep a stale deadline.
  if (!x.decided) x = abandoned_extension(error::no_quorum, now, start, ttl, old_deadline, factor);
  x = keeper_verdict(x, now, t.margin);  // confirmed too late to be of use?
  renewal_step s{.outcome = x.outcome};
  if (x.outcome == error::not_held) {
    s.what = renewal_step::kind::lost_not_held;
    return s;
  }
  s.deadline = x.deadline;
  s.loss_at = x.deadline - t.margin;
  if (x.lost || now >= s.loss_at) {
    s.what = renewal_step::kind::lost;
    return s;
  }
  if (!x.outcome) {
    s.what = renewal_step::kind::renewed;
    s.next_due = start + t.interval;
    return s;
  }
  s.what = renewal_step::kind::retry_soon;
  const auto left = s.loss_at - now;
  s.next_due = now + std::min<std::chrono::nanoseconds>(t.interval / 4, left / 3);
  return s;
}

}  // namespace redlock::detail
