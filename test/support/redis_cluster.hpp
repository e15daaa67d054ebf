// SPDX-License-Identifier: BSL-1.0
#pragma once
// A real Redis Cluster on loopback for integration tests: redis-server processes started
// with --cluster-enabled yes, joined by `redis-cli --cluster create`, killed by pid with
// their owner (redis_fleet's rules).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "redis_fleet.hpp"

namespace redlock::test {

class redis_cluster {
 public:
  /// `primaries` primaries (at least 3, as redis-cli requires) with `replicas` replicas
  /// each. Returns once every server says cluster_state:ok and all agree on who owns
  /// every slot. Throws std::runtime_error (with redis-cli's output) if that takes > 30 s.
  explicit redis_cluster(std::size_t primaries, std::size_t replicas = 0);

  std::size_t size() const { return servers_.size(); }
  redis_server& operator[](std::size_t i) { return servers_[i]; }
  const redis_server& operator[](std::size_t i) const { return servers_[i]; }
  /// "redis+cluster://127.0.0.1:<p0>,127.0.0.1:<p1>": two seeds, as a user would list.
  std::string uri() const;

  /// This server's cluster node id.
  std::string node_id(std::size_t i) const;
  /// The index of the server that owns `slot` (asked of the first running server).
  std::size_t owner_of(std::uint16_t slot) const;
  /// The indexes of the servers that own slots now.
  std::vector<std::size_t> primaries() const;
  /// Moves `slot` to server `to` as redis-cli --cluster reshard does: IMPORTING on `to`,
  /// MIGRATING on the owner, MIGRATE of its keys (one at a time), then SETSLOT NODE on every
  /// primary. `while_migrating` runs after MIGRATING is set and before any key has moved
  /// (requests for the slot's missing keys are then answered ASK).
  void move_slot(std::uint16_t slot, std::size_t to,
                 const std::function<void()>& while_migrating = {});
  /// Moves `slot` to server `to` one key at a time: IMPORTING and MIGRATING, then the keys
  /// named in `first` (those present, in that order), then the rest, each with its own
  /// MIGRATE; `between` runs after MIGRATING is set and after each key has moved (its
  /// argument: how many keys have moved so far). Then SETSLOT NODE everywhere. Throws
  /// std::runtime_error when a command fails (a MIGRATE answered BUSYKEY: the target
  /// already has a key of that name).
  void move_slot_key_by_key(std::uint16_t slot, std::size_t to,
                            const std::vector<std::string>& first,
                            const std::function<void(std::size_t moved)>& between);
  /// Waits until every running server says cluster_state:ok and all report the same owner
  /// for every slot. Throws std::runtime_error after `seconds`.
  void wait_until_agreed(int seconds = 30) const;
  /// Keys over the primaries that run.
  std::int64_t total_keys() const;
  /// redis_fleet::keys_without_ttl over the primaries that run (keys naming `exempt` left
  /// out).
  std::string keys_without_ttl(std::string_view exempt = {}) const;

 private:
  redis_fleet servers_;
};

}  // namespace redlock::test
