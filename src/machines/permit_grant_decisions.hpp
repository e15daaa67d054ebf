// SPDX-License-Identifier: BSL-1.0
#pragma once
// A waiting permit call's grants, decided without I/O. A release hands its permit straight to
// the head of the semaphore's line when the head's place asks for it ("<channel> <n>+<ttl>",
// permit_release_script): the permit key then holds "g|" and the place, for the call's TTL, and
// the node tells the call on its offers channel. A call holds the permit once a majority of the
// nodes granted it that permit, with no try of its own in between (the hand-off saves the round
// trip an offer costs). semaphore.cpp feeds each grant here; test_permit_sweep feeds them
// without a server.
//
// Why a grant may be counted, and for how long:
// - Validity counts from when the place's first try was sent: a node pops a place only after a
//   try put it in its line, so the key it sets lives at least TTL from that moment, by the
//   node's clock; the drift allowance is taken as for any acquisition.
// - A node's grant counts only if it came on the same subscription (wake_hub::epoch) that was
//   up when the call's latest try with this place was sent, and the node votes now (the
//   restart guard and the other rules of rules.hpp). A server that restarted since that try
//   cannot reach the old subscription, and one that restarted before it is known to the
//   connection that sent the try: its grants are not counted. Grants not counted, and grants
//   of a permit the call does not take, are released by the call (stray()).
// - A grant counts only while the place's first try is less than half the TTL old, so that a
//   permit handed out this way has at least half its TTL left (less the drift allowance). The
//   place is renewed (a new id, and a new first try) at the first try once it is older than a
//   quarter of the TTL, so that grants usually find three quarters or more left.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "redlock/clock.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

class permit_grants {
 public:
  /// One grant heard: node `node` handed the call permit `index`.
  struct grant {
    std::size_t node = 0;
    std::size_t index = 0;
    bool counted = false;
  };

  permit_grants(std::chrono::milliseconds ttl, double drift_factor)
      : ttl_(ttl), factor_(drift_factor) {}

  /// A try carrying the place goes out at `now`; `epochs[i]` is node i's subscription epoch
  /// then (0: not subscribed, so node i's grants will not count).
  void place_sent(boot_clock::time_point now, const std::array<std::uint64_t, max_nodes>& epochs);
  /// Whether the place should be renewed before the next try: its first try was sent more than
  /// a quarter of the TTL before `now`. Renewing forgets the place's grants (stray() first).
  bool stale(boot_clock::time_point now) const;
  /// The place was renewed (or the call ends): every grant heard so far is forgotten.
  void renewed();

  /// Node `node` granted permit `index` at `now`, heard on subscription `epoch`; `votes`: the
  /// node votes now (rules.hpp). Returns the permit that `nodes` nodes' counted grants now give
  /// a majority, if any.
  std::optional<std::size_t> granted(std::size_t node, std::size_t index, std::uint64_t epoch,
                                     bool votes, boot_clock::time_point now, std::size_t nodes);
  /// A lock won by grants is valid until this: the place's first try + TTL - drift.
  boot_clock::time_point deadline() const;
  /// Whether node `node` granted the call anything (it popped the place).
  bool from(std::size_t node) const;
  /// Whether no permit can reach a majority of `nodes` with this place any more: each node
  /// pops the place once, and the nodes not heard from yet cannot make up any permit's count.
  bool hopeless(std::size_t nodes) const;
  /// Whether the nodes granted the place different permits.
  bool split() const;
  /// The permit that a majority of `nodes` nodes' counted grants give the call, if any. Once
  /// there is one it stays the call's (later grants of others are strays), however split.
  std::optional<std::size_t> won(std::size_t nodes) const;
  /// Whether the call should hand its grants on and wait under a new place: no permit won, and
  /// the grants split between permits or none can reach a majority any more.
  bool give_back(std::size_t nodes) const { return !won(nodes) && (split() || hopeless(nodes)); }
  /// The grants the call must release when it keeps permit `kept` (nullopt: none): those of
  /// other permits. A grant of `kept`, counted or not, holds the key with the lock's own token,
  /// which the lock's release clears.
  std::vector<grant> stray(std::optional<std::size_t> kept) const;
  bool empty() const { return grants_.empty(); }
  std::chrono::milliseconds ttl() const { return ttl_; }
  /// When the place's first try went out (the epoch of boot_clock before any).
  boot_clock::time_point first_sent() const {
    return first_sent_.value_or(boot_clock::time_point{});
  }

 private:
  std::size_t votes_for(std::size_t index) const;  // nodes whose counted grants name `index`

  std::chrono::milliseconds ttl_;
  double factor_;
  std::optional<boot_clock::time_point> first_sent_;
  std::array<std::uint64_t, max_nodes> epochs_{};
  std::vector<grant> grants_;
};

}  // namespace redlock::detail
