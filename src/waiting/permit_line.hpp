// SPDX-License-Identifier: BSL-1.0
#pragma once
// A client's places in its semaphores' lines of waiters on the nodes (permit_acquire_script
// takes a place for a waiting call; permit_release_script hands a released permit to the head
// of the line and tells that waiter alone, on its client's channel). The channel is one per
// client, subscribed by the first waiting permit call and kept until shutdown, so that a wait
// costs no SUBSCRIBE of its own.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/string_map.hpp"

namespace redlock::detail {

/// A semaphore call waiting in line: told when a node offers it a permit.
class permit_waiter {
 public:
  /// A node offered it the permit of key `key` (with the client's key prefix); empty: no
  /// permit in particular (the channel's subscription came up, or shutdown): sweep again.
  virtual void offered(std::string_view key) = 0;
  /// Node `node` granted it the permit of key `key` (a place that takes grants: the key holds
  /// "g|" and the place); `epoch` is the subscription that heard it (wake_hub::offers_epoch).
  virtual void granted(std::size_t node, std::string_view key, std::uint64_t epoch) = 0;

 protected:
  ~permit_waiter() = default;
};

/// The calls of one client waiting in semaphores' lines, by their id.
class permit_places {
 public:
  /// Names the client's channel (at the first call: keyspace::permit_offers).
  const std::string& channel(std::string name);
  const std::string& channel() const { return channel_; }
  /// Registers `w` and returns its place: "<channel> <id>", as the nodes' line records it;
  /// with a `grant_ttl`, "<channel> <id>+<ms>": a place that the releases grant permits to
  /// for that long, instead of offering them (permit_release_script).
  std::string join(permit_waiter& w, std::chrono::milliseconds grant_ttl = {});
  /// The call of place `place` ended: later offers to it are taken over or declined, later
  /// grants released (client_state::permit_offered).
  void leave(std::string_view place);
  bool empty() const { return waiting_.empty(); }
  /// What an offer message ("<id> <permit key>", or "<id>+<ms> <permit key>" for a grant) is
  /// for: the waiting call, or null.
  permit_waiter* find(std::string_view id) const;
  /// Calls `f` for every waiting call (shutdown, a new subscription), each looked up again
  /// before its turn: a call may end (and leave) in an earlier one's.
  template <typename F>
  void each(F&& f) const {
    std::vector<std::string> ids;
    ids.reserve(waiting_.size());
    for (const auto& entry : waiting_) ids.push_back(entry.first);
    for (const auto& id : ids)
      if (permit_waiter* w = find(id)) f(*w);
  }

 private:
  std::string channel_;
  std::uint64_t next_id_ = 0;
  string_map<permit_waiter*> waiting_;
};

/// How long a waiting call's place in a line lives on a node without being renewed: past
/// the call's next try (each failed try renews it) with room for a slow node.
template <typename Config>
std::chrono::milliseconds permit_place_lasts(const Config& cfg) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(4 * cfg.retry_delay +
                                                               2 * cfg.node_timeout);
}

}  // namespace redlock::detail
