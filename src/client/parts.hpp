// SPDX-License-Identifier: BSL-1.0
#pragma once
// Two of the named parts a client's state is made of (client_state.hpp): the fleet of
// nodes it votes with, and the locks it has handed out. (The third, the calls waiting for
// a release, is waiter_lines in lines.hpp.) Neither does I/O of its own.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "connection/connection.hpp"
#include "redlock/lock.hpp"

namespace redlock::detail {

/// The nodes, in config order, and what the client knows of them beside their
/// connections: their addresses for events, and which repeat an earlier node's server.
struct fleet {
  std::vector<std::shared_ptr<node>> nodes;
  /// Each node's uri().display(), for observer events.
  std::vector<std::string> addresses;
  std::array<bool, max_nodes> duplicate{};  // repeats an earlier node's run id
  std::array<std::size_t, max_nodes> duplicate_of{};

  std::size_t size() const { return nodes.size(); }
  /// The hash tag that keeps keys beside `key` on every node, when some node spreads keys
  /// by slot (node::colocation_tag): fencing counters and fair lines then live in their
  /// lock key's slot. None on a fleet of single servers.
  std::optional<std::string_view> colocation_tag(std::string_view key) const {
    for (const auto& n : nodes)
      if (auto tag = n->colocation_tag(key)) return tag;
    return std::nullopt;
  }
  /// How many of `most` keys one call of a per-key script may carry on every node.
  std::size_t keys_per_call(std::size_t most) const {
    for (const auto& n : nodes) most = n->keys_per_call(most);
    return most;
  }
};

/// Locks and sets handed out and not yet released, released at shutdown. On the strand.
struct held_locks {
  /// Single locks: a list through their lock_data, which their lock objects own. A lock
  /// dropped or released leaves it before its data is freed; one that outlives the
  /// client is simply forgotten.
  lock_data* held = nullptr;
  void hold(lock_data& d) noexcept {
    d.prev = nullptr;
    d.next = held;
    if (held) held->prev = &d;
    held = &d;
    d.linked = true;
  }
  void unhold(lock_data& d) noexcept {
    if (!d.linked) return;
    (d.prev ? d.prev->next : held) = d.next;
    if (d.next) d.next->prev = d.prev;
    d.prev = d.next = nullptr;
    d.linked = false;
  }
  /// Whether a lock of `key` in mode `shared` (lock_options::shared) is held and valid at
  /// `now`. Walks the list: asked only when a call meets the other mode on the nodes.
  bool holds(std::string_view key, bool shared, boot_clock::time_point now) const noexcept {
    for (const lock_data* d = held; d; d = d->next)
      if (d->shared == shared && !d->lost && d->deadline > now && d->key() == key) return true;
    return false;
  }
  /// Whether `token` on `key` is one this client handed out and still holds (a lock, a
  /// set, a keeper's lock): a wait that meets it waits on another of its own calls.
  bool holds_token(std::string_view key, std::string_view token) const {
    for (const lock_data* d = held; d; d = d->next)
      if (d->token() == token && d->key() == key) return true;
    const auto set = held_sets.find(std::string{token});
    return set != held_sets.end() &&
           std::find(set->second.begin(), set->second.end(), key) != set->second.end();
  }
  /// Multi-resource locks: token -> keys (multi.cpp).
  std::unordered_map<std::string, std::vector<std::string>> held_sets;
};

}  // namespace redlock::detail
