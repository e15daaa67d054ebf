// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// What client::async_inspect reports: each node as the client sees it, and what it holds
/// for one resource. Read-only: an inspection writes nothing and takes no lock.

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// How many of `nodes` nodes make a majority: what every acquisition, extension and
/// release of the library needs, and what an inspection's holders are counted against.
constexpr std::size_t majority(std::size_t nodes) noexcept {
  return nodes / 2 + 1;
}

/// One node, as read by client::async_inspect.
struct node_report {
  std::size_t node = 0;  ///< index in config::nodes
  std::string address;   ///< host:port (no credentials)

  /// Why the node gave no answer (node_unavailable, node_timeout, a server error...);
  /// success when it answered. `problem` says it for a person.
  boost::system::error_code error{};
  std::string problem{};

  /// Whether a lock of the client's longest TTL (config::max_ttl, else 10 s) could count
  /// this node's vote now; if not, `held_back` says why (restart guard, replica, the
  /// same server as an earlier node) for a person, and `hold` the same as facts.
  bool votes = false;
  std::string held_back{};

  /// Why a node does not vote now, as facts a program can sum up over nodes (the CLI says
  /// "5 of 5 nodes started 1 s ago; the restart guard holds them back 1 s more").
  struct hold_back {
    enum class rule : std::uint8_t {
      none,        ///< it votes
      restart,     ///< the server started less than max_ttl ago (the restart guard)
      failover,    ///< a replica was promoted in it less than max_ttl ago
      clock_jump,  ///< its clock jumped less than max_ttl ago
      replica,     ///< a replica: only independent masters vote
      duplicate,   ///< the same server (run id) as node `duplicate_of`, listed earlier
    };
    rule by = rule::none;
    /// For restart, failover and clock_jump: how long ago that happened, and how much
    /// longer it holds the node back (together about max_ttl). Zero for the others.
    std::chrono::milliseconds since{0};
    std::chrono::milliseconds left{0};
    std::size_t duplicate_of = 0;
  };
  hold_back hold{};

  /// The time from sending the last command of the inspection to its reply.
  std::chrono::microseconds round_trip{0};

  /// What the server says of itself (INFO server and replication).
  std::string version{};
  std::string run_id{};
  std::string role{};  ///< "master" or "slave"
  std::int64_t uptime_s = -1;
  /// Its persistence settings (CONFIG GET): "" if it did not answer, "denied" if refused.
  std::string appendonly{};
  std::string appendfsync{};
  std::string save{};

  /// The resource's lock key, when one was asked for.
  enum class key_state : std::uint8_t {
    unknown,     ///< not asked, or no answer
    free,        ///< no such key
    held,        ///< a string: `holder` is the owner's token
    wrong_type,  ///< a key of another type is in the way
  };
  key_state key = key_state::unknown;
  std::string holder{};
  /// What `holder` is: an owner's token; a readers' record (lock_options::shared), listing
  /// `readers` readers (some of whose leases may have lapsed since it was written), with
  /// `writer_mark` when a waiting writer has marked it to keep new readers out (a mark that
  /// may have passed); or a semaphore's permit offered to the call first in its line.
  enum class holding : std::uint8_t { token, readers, offer };
  holding held_as = holding::token;
  std::size_t readers = 0;
  bool writer_mark = false;
  /// The key's remaining TTL (-1 ms: none, which no lock key of ours ever lacks).
  std::chrono::milliseconds ttl{-1};
  /// The resource's fencing counter (the last fencing token issued), if it has one.
  std::optional<std::uint64_t> fence{};

  /// A primary of a node that is a Redis Cluster, as the client's slot map has it.
  struct shard {
    std::string address;  ///< host:port
    std::string node_id;  ///< the cluster's id of the server ("" if not known yet)
    std::size_t slots = 0;
    bool up = false;        ///< connected and answering
    std::string problem{};  ///< why not, when not
  };
  /// A cluster node's primaries (empty for a node that is one server). The fields above
  /// then describe the one primary that answered the inspection (the key's owner when a
  /// resource was named).
  std::vector<shard> shards{};
};

}  // namespace redlock
