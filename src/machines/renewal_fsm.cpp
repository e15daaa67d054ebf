// SPDX-License-Identifier: BSL-1.0
// One batch renewal round as a state machine: see renewal_fsm.hpp.

#include "machines/renewal_fsm.hpp"

namespace redlock::detail {

void renewal_fsm::sent(boot_clock::time_point start) {
  if (phase_ != phase::idle) return;
  phase_ = phase::in_flight;
  start_ = start;
}

bool renewal_fsm::first_word(std::size_t i) {
  // Late words after the decision, and a second word from one node, would count a node
  // twice towards a majority.
  if (phase_ != phase::in_flight || i >= n_ || in_.test(i)) return false;
  in_.set(i);
  return true;
}

void renewal_fsm::answered(std::size_t i, std::span<const std::int64_t> codes) {
  if (codes.size() != yes_.size()) return failed(i);
  if (!first_word(i)) return;
  for (std::size_t j = 0; j < codes.size(); ++j) codes[j] == 1 ? ++yes_[j] : ++no_[j];
}

void renewal_fsm::failed(std::size_t i) {
  if (first_word(i)) ++failed_;
}

renewal_action renewal_fsm::tally() {
  // Every vote that can still come is waited for: a per-lock decision needs them all, and
  // renewals are not latency-critical. A node's timeout arrives as its failure.
  if (phase_ != phase::in_flight || in_.count() < n_) return {};
  phase_ = phase::done;
  return renewal_action::completed(abandoned_ ? error_code{error::shut_down} : error_code{});
}

renewal_step renewal_fsm::outcome(std::size_t j, const renewal_times& t,
                                  boot_clock::time_point old_deadline,
                                  boot_clock::time_point now) const {
  return decide_renewal(votes(j), t, old_deadline, start_, ttl_, now, factor_);
}

}  // namespace redlock::detail
