// SPDX-License-Identifier: BSL-1.0
// A claim batch as a state machine: see claim_fsm.hpp.

#include "machines/claim_fsm.hpp"

#include <utility>

namespace redlock::detail {

void claim_fsm::asking(std::size_t i, std::span<const std::uint32_t> items) {
  if (phase_ == phase::done || items.empty()) return;
  for (auto j : items) names_[j].asked |= bit(i);
  out_ |= bit(i);
}

void claim_fsm::planned(boot_clock::time_point valid_until, node_mask later) {
  if (phase_ != phase::planning) return;
  phase_ = phase::first_round;
  valid_until_ = valid_until;
  later_ = later;
}

void claim_fsm::count(std::size_t i, std::uint32_t j, std::int64_t code) {
  auto& name = names_[j];
  // A code for a name node i was not asked for says nothing about that name.
  if (!(name.asked & bit(i))) return;
  if (count_claim_answer(name.votes, code)) name.maybe |= bit(i);
}

void claim_fsm::answered(std::size_t i, std::span<const std::uint32_t> items,
                         std::span<const std::int64_t> codes) {
  if (codes.size() != items.size()) return failed(i, items, true);
  // Heard from already, or after completion: a second word would count the node twice.
  if (phase_ == phase::done || !(out_ & bit(i))) return;
  out_ &= static_cast<node_mask>(~bit(i));
  for (std::size_t k = 0; k < items.size(); ++k) count(i, items[k], codes[k]);
}

void claim_fsm::failed(std::size_t i, std::span<const std::uint32_t> items, bool sent) {
  if (phase_ == phase::done || !(out_ & bit(i))) return;
  out_ &= static_cast<node_mask>(~bit(i));
  // A request that went out may have run: count_claim_answer marks it to be undone.
  const std::int64_t code = sent ? -1 : -2;
  for (auto j : items) count(i, j, code);
}

claim_action claim_fsm::tally(const claim_moment& m) {
  // Every node asked is waited for: a name's verdict and its undo need every answer.
  if (!in_round() || out_ != 0) return {};
  // A cancelled call keeps nothing it wins: asking more nodes would only add SETs to undo.
  if (phase_ == phase::first_round &&
      second_claim_round_due(later_ != 0 && !cancelled_, m.closed, m.now, valid_until_)) {
    // The rest of the nodes, for what a majority may still take.
    const node_mask rest = std::exchange(later_, 0);
    auto open = open_names();
    if (!open.empty()) {
      phase_ = phase::second_round;
      return {.what = action_kind::second_round, .nodes = rest, .detail = std::move(open)};
    }
  }
  return complete(m);
}

claim_action claim_fsm::cancel() {
  if (phase_ == phase::done || cancelled_) return {};
  cancelled_ = true;
  return {.what = action_kind::answer, .ec = error::cancelled};
}

bool claim_fsm::cancel_name(std::uint32_t j) {
  if (phase_ == phase::done) return false;
  names_[j].cancelled = true;
  return true;
}

claim_ending claim_fsm::ending(std::uint32_t j) const {
  const auto& name = names_[j];
  return end_claim(n_, name.votes, name.maybe, name.duplicate, in_time_,
                   cancelled_ || name.cancelled);
}

std::vector<std::uint32_t> claim_fsm::open_names() const {
  std::vector<std::uint32_t> open;
  for (std::uint32_t j = 0; j < names_.size(); ++j)
    if (!names_[j].duplicate && !names_[j].cancelled && claim_open(n_, names_[j].votes))
      open.push_back(j);
  return open;
}

claim_action claim_fsm::complete(const claim_moment& m) {
  phase_ = phase::done;
  if (m.closed) return {.what = action_kind::complete, .ec = error::shut_down};
  in_time_ = granted_in_time(m.now, valid_until_);
  return {.what = action_kind::complete};
}

}  // namespace redlock::detail
