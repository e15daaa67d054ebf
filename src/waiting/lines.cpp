// SPDX-License-Identifier: BSL-1.0
// The waiting calls of one client, per key: see lines.hpp.

#include "waiting/lines.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace redlock::detail {

bool waiter_lines::join(std::string_view key, waiter& w) {
  auto it = lines_.find(key);
  if (it == lines_.end()) it = lines_.emplace(std::string{key}, std::deque<waiter*>{}).first;
  auto& line = it->second;
  const bool formed = line.empty();
  auto at = line.end();
  if (!w.line_id.empty()) {
    // Fair calls keep the order of the nodes' line among themselves.
    at = std::find_if(line.begin(), line.end(), [&w](const waiter* other) {
      return !other->line_id.empty() &&
             std::tie(other->line_ticket, other->line_id) > std::tie(w.line_ticket, w.line_id);
    });
  }
  // Placed first, `w` polls; the old head parks at its next failed attempt.
  line.insert(at, &w);
  return formed;
}

waiter_lines::departure waiter_lines::leave(std::string_view key, waiter& w) {
  auto it = lines_.find(key);
  if (it == lines_.end()) return {};
  auto& line = it->second;
  const bool was_head = !line.empty() && line.front() == &w;
  if (std::erase(line, &w) == 0) return {};
  if (line.empty()) {
    lines_.erase(it);
    return {.gone = true};
  }
  return {.promoted = was_head ? line.front() : nullptr};
}

void waiter_lines::set_waits(set_waiter& w, const std::vector<std::string>& keys) {
  for (const auto& key : keys) sets_[key].push_back(&w);
}

std::vector<std::string_view> waiter_lines::set_stops(set_waiter& w,
                                                      const std::vector<std::string>& keys) {
  std::vector<std::string_view> left;
  for (const auto& key : keys) {
    auto it = sets_.find(key);
    if (it == sets_.end() || std::erase(it->second, &w) == 0) continue;
    if (it->second.empty()) sets_.erase(it);
    left.push_back(key);
  }
  return left;
}

std::vector<set_waiter*> waiter_lines::sets_on(std::string_view key) const {
  if (sets_.empty()) return {};  // no hashing of the key on the common path
  auto it = sets_.find(key);
  return it == sets_.end() ? std::vector<set_waiter*>{} : it->second;
}

void waiter_lines::begin_call(acquisition& c) {
  if (std::exchange(c.listed_, true)) return;
  c.prev_ = nullptr;
  c.next_ = calls_;
  if (calls_) calls_->prev_ = &c;
  calls_ = &c;
}

void waiter_lines::end_call(acquisition& c) {
  if (!std::exchange(c.listed_, false)) return;
  (c.prev_ ? c.prev_->next_ : calls_) = c.next_;
  if (c.next_) c.next_->prev_ = c.prev_;
  c.prev_ = c.next_ = nullptr;
}

std::vector<acquisition*> waiter_lines::calls() const {
  std::vector<acquisition*> all;
  for (acquisition* c = calls_; c; c = c->next_) all.push_back(c);
  return all;
}

std::vector<set_waiter*> waiter_lines::all_sets() const {
  std::vector<set_waiter*> all;
  for (const auto& [key, waiting] : sets_)
    for (set_waiter* w : waiting)
      if (std::find(all.begin(), all.end(), w) == all.end()) all.push_back(w);
  return all;
}

}  // namespace redlock::detail
