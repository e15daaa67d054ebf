// SPDX-License-Identifier: BSL-1.0
// A client's places in semaphores' lines: see permit_line.hpp.

#include "waiting/permit_line.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "client/client_state.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "scripts/script_calls.hpp"
#include "waiting/wake.hpp"

namespace redlock::detail {

const std::string& permit_places::channel(std::string name) {
  if (channel_.empty()) channel_ = std::move(name);
  return channel_;
}

std::string permit_places::join(permit_waiter& w, std::chrono::milliseconds grant_ttl) {
  std::string id = std::to_string(++next_id_);
  std::string place = grant_ttl.count() > 0
                          ? fmt::format("{} {}+{}", channel_, id, grant_ttl.count())
                          : fmt::format("{} {}", channel_, id);
  waiting_.emplace(std::move(id), &w);
  return place;
}

void permit_places::leave(std::string_view place) {
  std::string_view id = place.substr(place.rfind(' ') + 1);
  id = id.substr(0, id.find('+'));
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  waiting_.erase(it);
}

permit_waiter* permit_places::find(std::string_view id) const {
  auto it = waiting_.find(id);
  return it == waiting_.end() ? nullptr : it->second;
}

std::string client_state::join_permit_line(permit_waiter& w, std::chrono::milliseconds grant_ttl) {
  // Without announcements nobody would hear an offer: the call polls, as before lines.
  if (!cfg.wake_on_release || closed) return {};
  if (places.channel().empty()) {
    std::string random;
    tokens.next(random);
    places.channel(names.permit_offers(random));
  }
  if (!wakes) wakes = std::make_unique<wake_hub>(*this);
  wakes->watch_offers(places.channel());
  return places.join(w, grant_ttl);
}

void client_state::leave_permit_line(std::string_view place) {
  if (!place.empty()) places.leave(place);
}

void client_state::permit_offered(std::size_t node, std::string_view message) {
  const auto space = message.find(' ');
  if (space == std::string_view::npos) return;
  const std::string_view tag = message.substr(0, space), key = message.substr(space + 1);
  const auto plus = tag.find('+');
  const std::string_view id = tag.substr(0, plus);
  const bool grant = plus != std::string_view::npos;
  if (permit_waiter* w = places.find(id)) {
    if (!grant) return w->offered(key);
    return w->granted(node, key, wakes ? wakes->offers_epoch(node) : 0);
  }
  if (closed || node >= size()) return;
  if (grant) return grant_unclaimed(node, key, fmt::format("g|{} {}", places.channel(), tag));
  // An offer to a call that no longer waits: the node had it in line while the call won
  // elsewhere, or after it gave up. Taken over by this client's lock of that permit, if it
  // holds one (the node then counts it as held, and its release hands it on); else passed
  // to the next in line.
  const std::string offer = fmt::format("o|{} {}", places.channel(), id);
  std::string payload;
  const auto now = boot_clock::now();
  for (const lock_data* d = held; d; d = d->next) {
    if (d->key() != key || d->lost || d->deadline <= now) continue;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(d->deadline - now);
    write_permit_claim(payload, key, offer, d->token(), left);
    nodes[node]->submit_detached(std::move(payload));
    return;
  }
  std::array<bool, max_nodes> only{};
  only[node] = true;
  release_detached(key, offer, &only, true, true);
}

void client_state::grant_unclaimed(std::size_t node, std::string_view key, std::string_view value) {
  // A grant to a call that no longer waits (it won, gave up, or renewed its place): the key
  // holds the grant's value on that node. Kept where it is the token of a permit this client
  // holds (the node's late grant of the permit the call won there too), else released, which
  // hands it to the next in line.
  for (const lock_data* d = held; d; d = d->next)
    if (d->key() == key && d->token() == value) return;
  std::array<bool, max_nodes> only{};
  only[node] = true;
  release_detached(key, value, &only, true, true);
}

void client_state::wake_permit_waiters() {
  places.each([](permit_waiter& w) { w.offered({}); });
}

}  // namespace redlock::detail
