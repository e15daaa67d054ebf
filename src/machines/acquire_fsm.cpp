// SPDX-License-Identifier: BSL-1.0
// The acquisition's attempts as a state machine: see acquire_fsm.hpp.

#include "machines/acquire_fsm.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

namespace {

using kind = action_kind;

// A parked call waits at most a day at a time: the timer must not overflow for a wait of
// wait_forever, and a promotion or wake ends it sooner.
constexpr std::chrono::hours longest_park{24};

acquire_action complete_with(error_code ec) {
  return {.what = kind::complete, .ec = ec};
}

}  // namespace

std::chrono::nanoseconds delay_within(std::chrono::nanoseconds delay, boot_clock::time_point now,
                                      boot_clock::time_point deadline) {
  if (deadline - now < delay)
    delay = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
  return std::max(delay, std::chrono::nanoseconds::zero());
}

boot_clock::time_point wait_deadline(boot_clock::time_point now, bool waiting,
                                     std::chrono::milliseconds wait) {
  if (!waiting) return now;
  if (wait == wait_forever || wait > std::chrono::hours{24 * 365 * 100})
    return boot_clock::time_point::max();
  return now + wait;
}

acquire_action acquire_fsm::write_back_decided(vote_state v, bool in_time) {
  if (phase_ != phase::write_back || v == vote_state::undecided) return {};
  phase_ = phase::between;
  if (v == vote_state::lost) return {.what = kind::lost, .ec = error::no_quorum};
  if (!in_time) return {.what = kind::lost, .ec = error::validity_exhausted};
  phase_ = phase::done;
  return complete_with({});
}

acquire_action acquire_fsm::attempt_failed(error_code reason, boot_clock::time_point now,
                                           bool retry_at_once,
                                           std::optional<std::chrono::nanoseconds> repair_bound) {
  if (phase_ == phase::done) return {};
  phase_ = phase::between;
  // Nobody holds it: the nodes that said yes could not count until their counters are
  // repaired (a new fleet). One more try when the repair is over, not a refusal.
  if (!waiting_ && repair_bound && !std::exchange(retried_for_repair_, true))
    return wait_for(*repair_bound);
  // A key of another type stays in the way whatever we wait for.
  if (!waiting_ || reason == error::wrong_type || now >= wait_deadline_) {
    phase_ = phase::done;
    if (waiting_ && reason == error::contended) reason = error::wait_timeout;
    return complete_with(reason);
  }
  // A release came while the attempt was in flight: it may have freed the resource.
  if (retry_at_once) woken_ = true;
  if (std::exchange(woken_, false)) return wait_for(std::chrono::nanoseconds::zero());
  return {.what = kind::retry};
}

acquire_action acquire_fsm::plan_retry(boot_clock::time_point now, const retry_context& ctx) {
  if (phase_ != phase::between) return {};
  if (ctx.parked) return park(now, ctx.renew);
  auto delay = ctx.delay;
  if (ctx.renew) delay = std::min(delay, *ctx.renew);
  return wait_for(delay_within(delay, now, wait_deadline_));
}

acquire_action acquire_fsm::park(boot_clock::time_point now,
                                 std::optional<std::chrono::nanoseconds> renew) {
  if (phase_ != phase::between) return {};
  auto park = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::min(wait_deadline_, now + longest_park) - now);
  if (renew) park = std::min(park, *renew);
  return wait_for(std::max(park, std::chrono::nanoseconds::zero()));
}

acquire_action acquire_fsm::wake(std::size_t outstanding) {
  if (phase_ == phase::done) return {};
  if (in_flight()) {
    woken_ = true;  // right after the round in flight
    return {};
  }
  ++generation_;  // the waiting retry is stale now
  return start_if_free(outstanding, true);
}

acquire_action acquire_fsm::wake_after(std::chrono::nanoseconds delay, boot_clock::time_point now) {
  if (phase_ == phase::done) return {};
  if (in_flight()) {
    woken_ = true;
    return {};
  }
  auto a = wait_for(delay_within(delay, now, wait_deadline_));
  a.detail.cancel_timer = true;
  return a;
}

acquire_action acquire_fsm::promote(boot_clock::time_point now, std::chrono::nanoseconds delay,
                                    std::optional<std::chrono::nanoseconds> renew) {
  if (phase_ != phase::between) return {};
  if (renew) delay = std::min(delay, *renew);
  auto a = wait_for(delay_within(delay, now, wait_deadline_));
  a.detail.cancel_timer = true;
  return a;
}

acquire_action acquire_fsm::timer_fired(std::uint64_t generation, std::size_t outstanding) {
  // A wait that expired just as a wake tried at once is stale too.
  if (phase_ == phase::done || generation != generation_) return {};
  return start_if_free(outstanding, false);
}

acquire_action acquire_fsm::stop(bool sent, error_code why) {
  if (phase_ == phase::done) return {};
  const bool release = sent && in_flight();
  phase_ = phase::done;
  retry_when_idle_ = false;
  return {.what = kind::complete, .ec = why, .detail = {.cancel_timer = true, .release = release}};
}

acquire_action acquire_fsm::wait_for(std::chrono::nanoseconds delay) {
  return {.what = kind::wait, .delay = delay, .detail = {.generation = ++generation_}};
}

acquire_action acquire_fsm::start_if_free(std::size_t outstanding, bool cancel_timer) {
  // The last attempt's requests still use the request slots: start when they are back.
  if (outstanding != 0) {
    retry_when_idle_ = true;
    return {.detail = {.cancel_timer = cancel_timer}};
  }
  return {.what = kind::send_round, .detail = {.cancel_timer = cancel_timer}};
}

}  // namespace redlock::detail
