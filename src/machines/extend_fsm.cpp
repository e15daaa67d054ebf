// SPDX-License-Identifier: BSL-1.0
// An extension as a state machine: see extend_fsm.hpp.

#include "machines/extend_fsm.hpp"

#include <utility>

namespace redlock::detail {

extend_action extend_fsm::check(const extension_facts& f, std::chrono::milliseconds ttl,
                                const config& cfg, boot_clock::time_point now) {
  if (phase_ != phase::idle) return {};
  auto c = check_extension(f, ttl, cfg, now);
  if (c.refusal) {
    phase_ = phase::done;
    return {.what = action_kind::complete,
            .ec = c.refusal,
            .detail = {.lost = c.mark_lost, .refused = true, .text = std::move(c.detail)}};
  }
  phase_ = phase::sending;
  factor_ = cfg.drift_factor;
  ttl_ = ttl;
  start_ = now;
  old_deadline_ = f.deadline;
  return {.what = action_kind::send_round};
}

extend_action extend_fsm::sent(std::size_t n, std::size_t out, boot_clock::time_point now) {
  if (phase_ != phase::sending) return {};
  phase_ = phase::waiting;
  n_ = n;
  failed_ = out < n ? n - out : 0;
  return tally(now);
}

extend_action extend_fsm::voted(vote v, boot_clock::time_point now) {
  // One answer a node, n in all: anything beyond is not this round's.
  if (phase_ != phase::waiting || yes_ + refused_ + failed_ >= n_) return {};
  switch (v) {
    case vote::pending:
      return {};
    case vote::yes:
      ++yes_;
      break;
    case vote::no:
    case vote::held:
      ++refused_;
      break;
    case vote::failed:
      ++failed_;
      break;
  }
  return tally(now);
}

extend_action extend_fsm::cancel(boot_clock::time_point now) {
  if (phase_ != phase::sending && phase_ != phase::waiting) return {};
  return finish(abandoned_extension(error::cancelled, now, start_, ttl_, old_deadline_, factor_));
}

extend_action extend_fsm::tally(boot_clock::time_point now) {
  const auto v =
      decide_extension(n_, yes_, refused_, failed_, now, start_, ttl_, old_deadline_, factor_);
  if (!v.decided) return {};
  return finish(v);
}

extend_action extend_fsm::finish(const extension_verdict& v) {
  phase_ = phase::done;
  return {.what = action_kind::complete,
          .ec = v.outcome,
          .detail = {.deadline = v.deadline, .lost = v.lost}};
}

}  // namespace redlock::detail
