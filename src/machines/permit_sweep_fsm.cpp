// SPDX-License-Identifier: BSL-1.0
// A semaphore's sweep over its permits: see permit_sweep_fsm.hpp.

#include "machines/permit_sweep_fsm.hpp"

#include <algorithm>

#include "quorum/rules.hpp"

namespace redlock::detail {

std::string semaphore_name_problem(std::string_view resource) {
  if (resource.empty()) return "an empty resource name";
  // "{}" is no hash tag: a cluster would spread the semaphore's keys over slots.
  if (resource.front() == '}') return "a semaphore's name cannot start with '}' (its hash tag)";
  return {};
}

namespace {

// Ends the call at once: shutdown, cancellation and argument errors hold for every
// permit and every later sweep alike, and so does the nodes' record of another count
// (it lives while any permit of that count is held).
bool ends_the_call(error_code ec) {
  return ec == error::shut_down || ec == error::cancelled || is_argument_error(ec) ||
         ec == error::permit_count_mismatch;
}

}  // namespace

sweep_step permit_sweep::start(std::size_t first) {
  first_ = first % permits_;
  covered_ = turns_ = wrong_type_ = 0;
  other_ = {};
  return ask(first_, true);
}

sweep_step permit_sweep::ask(std::size_t index, bool regular) {
  at_ = index % permits_;
  regular_ = regular;
  const std::size_t left = permits_ - covered_;
  span_ = std::min(window, regular ? left : permits_);
  return {.what = action_kind::send_round,
          .detail = {.index = at_, .span = span_, .last = left <= window}};
}

sweep_step permit_sweep::tried(error_code ec, std::size_t free_at) {
  if (!ec) return {.what = action_kind::won, .detail = {.index = at_}};
  if (ends_the_call(ec)) return {.what = action_kind::complete, .ec = ec};
  if (regular_) {
    covered_ += span_;
    if (ec == error::wrong_type)
      wrong_type_ += span_;  // the script says so only when its whole window is
    else if (ec != error::contended && !other_)
      other_ = ec;
  }
  if (free_at > 0 && free_at < span_ && turns_ < permits_) {
    ++turns_;
    return ask(at_ + free_at, false);
  }
  if (covered_ < permits_) return ask(first_ + covered_, true);
  return {.what = action_kind::lost, .ec = reason()};
}

error_code permit_sweep::reason() const {
  // No wait mends keys of another type at every permit.
  if (wrong_type_ == permits_) return error::wrong_type;
  // A permit that could not be asked (no_quorum, ...) may be free: "held" would be a
  // guess, and for the CLI the difference between exit 75 and 69.
  if (other_) return other_;
  // Every permit that answered was held; one of another type only takes its permit out
  // of use.
  return error::contended;
}

void permit_try_answers::sent(std::uint64_t id, bool with_place) {
  id_ = id;
  with_place_ = with_place;
  free_at_ = {};
  in_line_ = {};
}

bool permit_try_answers::held(std::uint64_t id, std::size_t node, std::size_t free_at) {
  if (id != id_ || node >= in_line_.size()) return false;
  if (free_at != 0) {
    if (free_at < free_at_.size()) ++free_at_[free_at];
    return false;
  }
  if (!with_place_) return false;
  in_line_[node] = true;
  return won_;
}

std::array<bool, max_nodes> permit_try_answers::won() {
  won_ = true;
  return with_place_ ? in_line_ : std::array<bool, max_nodes>{};
}

std::size_t permit_try_answers::pointed(std::size_t nodes) const {
  const auto best = std::ranges::max_element(free_at_);
  return *best >= quorum(nodes) ? static_cast<std::size_t>(best - free_at_.begin()) : 0;
}

}  // namespace redlock::detail
