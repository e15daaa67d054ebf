// SPDX-License-Identifier: BSL-1.0
#pragma once
// Every key and channel name the library writes, built in one place from config::key_prefix:
// a lock's key, the fencing pairs, a fair line's keys, a semaphore's keys and its client's
// channel, an election's record. The other files ask the keyspace and never spell the prefix,
// so that a change of layout is one change here. No I/O, no Asio.

#include <cstddef>
#include <string>
#include <string_view>

namespace redlock {
struct config;
}

namespace redlock::detail {

// ---- a semaphore's keys ------------------------------------------------------------------
//
// Every key of semaphore R starts with call_checks.hpp's semaphore_names, which plain calls
// refuse: "redlock:permit:{R}:<i>" for permit i, "redlock:permit:{R}:count" for the record of
// its count, "redlock:permit:{R}:line" and "redlock:permit:{R}:lapse" for its line of waiters
// (after the client's key prefix). They are alike up to and including "{R}", so they
// hash to one slot whatever braces the key prefix or R hold: on a Redis Cluster one script may
// touch a permit and the record (and the fencing pair of that slot). A name that cannot be a
// hash tag (one starting with '}': "{}" is none) is refused for semaphores.

/// The resource name of permit `index` of semaphore `resource` (its lock's resource()).
std::string permit_key_name(std::string_view resource, std::size_t index);
/// The resource name of the nodes' record of semaphore `resource`'s count.
std::string permit_record_name(std::string_view resource);
/// The keys of a semaphore's line of waiters on a node (permit_acquire_script), named from
/// the key of its record or of one of its permits (with the client's key prefix): the
/// places, and when each lapses.
struct permit_line_keys {
  std::string line, lapse;
};
permit_line_keys permit_line_of(std::string_view semaphore_key);

// ---- the client's names -------------------------------------------------------------

class keyspace {
 public:
  keyspace() = default;
  /// Names under `cfg`'s key prefix (put before every name).
  explicit keyspace(const config& cfg);

  /// How many bytes of every key are the prefix.
  std::size_t prefix_size() const { return prefix_.size(); }
  /// The key of resource `resource` (a lock's, a permit's, a record's).
  std::string key(std::string_view resource) const;
  /// As key(), into `out` (which keeps its storage).
  template <typename Buffer>
  void key_into(Buffer& out, std::string_view resource) const {
    out.assign(prefix_);
    out.append(resource);
  }

  /// The fleet's one fencing pair: the counters' hash and the marker of its incarnation.
  std::string fence_hash() const;
  std::string fence_marker() const;
  /// The fencing pair of hash slot tag `tag` (a Redis Cluster's).
  std::string fence_hash(std::string_view tag) const;
  std::string fence_marker(std::string_view tag) const;

  /// A fair lock's line and its expiry set, in the slot of `tag` ("{t}:" or "").
  std::string fair_line(std::string_view tag, std::string_view resource) const;
  std::string fair_expiry(std::string_view tag, std::string_view resource) const;

  /// The record of election `name`, in the slot of `tag` ("{t}:" or "").
  std::string election_record(std::string_view tag, std::string_view name) const;

  /// A client's channel for its semaphore waiters (`random`: a token of its own).
  std::string permit_offers(std::string_view random) const;

 private:
  std::string prefix_;
};

}  // namespace redlock::detail
