// SPDX-License-Identifier: BSL-1.0
#include "machines/permit_grant_decisions.hpp"

#include <algorithm>

#include "quorum/rules.hpp"

namespace redlock::detail {

void permit_grants::place_sent(boot_clock::time_point now,
                               const std::array<std::uint64_t, max_nodes>& epochs) {
  if (!first_sent_) first_sent_ = now;
  epochs_ = epochs;
}

bool permit_grants::stale(boot_clock::time_point now) const {
  return first_sent_ && now - *first_sent_ > ttl_ / 4;
}

void permit_grants::renewed() {
  first_sent_.reset();
  epochs_ = {};
  grants_.clear();
}

std::optional<std::size_t> permit_grants::granted(std::size_t node, std::size_t index,
                                                  std::uint64_t epoch, bool votes,
                                                  boot_clock::time_point now, std::size_t nodes) {
  const bool counted = first_sent_ && node < max_nodes && epoch != 0 && epoch == epochs_[node] &&
                       votes && now < *first_sent_ + ttl_ / 2 && granted_in_time(now, deadline());
  grants_.push_back({.node = node, .index = index, .counted = counted});
  if (!counted) return std::nullopt;
  if (votes_for(index) >= quorum(nodes)) return index;
  return std::nullopt;
}

// A node counts once per permit, however often it granted it (a place can be put in line again
// by a later try, and popped again).
std::size_t permit_grants::votes_for(std::size_t index) const {
  std::array<bool, max_nodes> seen{};
  std::size_t n = 0;
  for (const grant& g : grants_)
    if (g.counted && g.index == index && !std::exchange(seen[g.node], true)) ++n;
  return n;
}

std::optional<std::size_t> permit_grants::won(std::size_t nodes) const {
  for (const grant& g : grants_)
    if (g.counted && votes_for(g.index) >= quorum(nodes)) return g.index;
  return std::nullopt;
}

boot_clock::time_point permit_grants::deadline() const {
  return first_sent_ ? validity_deadline(*first_sent_, ttl_, factor_) : boot_clock::time_point{};
}

bool permit_grants::from(std::size_t node) const {
  return std::any_of(grants_.begin(), grants_.end(),
                     [node](const grant& g) { return g.node == node; });
}

bool permit_grants::split() const {
  for (const grant& g : grants_)
    if (g.index != grants_.front().index) return true;
  return false;
}

bool permit_grants::hopeless(std::size_t nodes) const {
  std::array<bool, max_nodes> heard{};
  for (const grant& g : grants_) heard[g.node] = true;
  const auto silent =
      nodes - static_cast<std::size_t>(std::count(heard.begin(), heard.begin() + nodes, true));
  for (const grant& g : grants_)
    if (votes_for(g.index) + silent >= quorum(nodes)) return false;
  return !grants_.empty();
}

std::vector<permit_grants::grant> permit_grants::stray(std::optional<std::size_t> kept) const {
  std::vector<grant> out;
  for (const grant& g : grants_)
    if (!kept || g.index != *kept) out.push_back(g);
  return out;
}

}  // namespace redlock::detail
