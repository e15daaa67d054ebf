// SPDX-License-Identifier: BSL-1.0
// A settle batch's machine: see settle_fsm.hpp.

#include "machines/settle_fsm.hpp"

namespace redlock::detail {

settle_fsm::settle_fsm(std::size_t n, std::vector<node_mask> asked, bool marks_done,
                       std::size_t not_ours)
    : n_(n), asks_(n), marks_done_(marks_done), not_ours_(not_ours) {
  claims_.reserve(asked.size());
  for (const node_mask m : asked) claims_.push_back(claim{.asked = m});
}

settle_action settle_fsm::start() {
  node_mask nodes = 0;
  for (std::uint32_t j = 0; j < claims_.size(); ++j)
    for (std::size_t i = 0; i < n_; ++i)
      if (claims_[j].asked & bit(i)) {
        asks_[i].push_back(j);
        nodes |= bit(i);
      }
  out_ = nodes;
  return {.what = action_kind::send_round, .nodes = nodes};
}

std::vector<std::uint32_t> settle_fsm::take_asks(std::size_t i) {
  return i < asks_.size() ? std::move(asks_[i]) : std::vector<std::uint32_t>{};
}

void settle_fsm::count(std::size_t i, std::uint32_t j, std::int64_t code) {
  if (j < claims_.size() && (claims_[j].asked & bit(i)))
    count_settle_answer(claims_[j].answers, code);
}

void settle_fsm::answered(std::size_t i, std::span<const std::uint32_t> items,
                          std::span<const std::int64_t> codes) {
  if (done_ || i >= n_ || !(out_ & bit(i))) return;
  if (codes.size() != items.size()) return failed(i, items);
  out_ = static_cast<node_mask>(out_ & ~bit(i));
  for (std::size_t k = 0; k < items.size(); ++k) count(i, items[k], codes[k]);
}

void settle_fsm::failed(std::size_t i, std::span<const std::uint32_t> items) {
  if (done_ || i >= n_ || !(out_ & bit(i))) return;
  out_ = static_cast<node_mask>(out_ & ~bit(i));
  for (const std::uint32_t j : items) count(i, j, -1);
}

settle_action settle_fsm::tally(std::size_t outstanding, bool closed) {
  if (done_ || out_ != 0 || outstanding > 0) return {};
  done_ = true;
  closed_ = closed;
  return settle_action::completed();
}

error_code settle_fsm::outcome(std::uint32_t j) const {
  return settle_outcome(n_, closed_, marks_done_, claims_[j].answers);
}

node_mask settle_fsm::spread(std::uint32_t j, std::string_view token) const {
  if (!done_ || !marks_done_ || closed_) return 0;
  return marker_spread(n_, claims_[j].asked, token, outcome(j));
}

settle_summary settle_fsm::summary() const {
  settle_summary sum{not_ours_};
  for (std::uint32_t j = 0; j < claims_.size(); ++j) sum.add(outcome(j));
  return sum;
}

}  // namespace redlock::detail
