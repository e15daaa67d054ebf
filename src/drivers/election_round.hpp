// SPDX-License-Identifier: BSL-1.0
#pragma once
// Leader election's rounds on the quorum engine: writing the leader's record beside its
// lock key on every node, and reading both on every node for an observer. What the
// answers mean is election_decisions.hpp's; the campaign and the observer that use these
// rounds are the guard layer's (src/guard/election.cpp).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "machines/election_decisions.hpp"
#include "redlock/client.hpp"
#include "redlock/detail/erased_handler.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

struct client_state;

/// What a round found.
struct election_round_result {
  /// A write: the nodes that wrote the record (their lock key held the leader's token).
  std::size_t written = 0;
  /// A read: who leads, by decide_leader, and each node's answer (for leader_news: "no
  /// leader" is a finding only where enough nodes answered).
  leader_view leader;
  std::vector<election_node_view> nodes;
};
using election_round_handler =
    erased_handler<void(boost::system::error_code, election_round_result)>;

/// The key of election `name`'s record: beside its lock key (the prefixed name), in the
/// lock key's slot where a node spreads keys by slot, so that one script may touch both.
std::string election_record_key(const client_state& s, std::string_view name);

/// Writes the record (term, token, value, living `record_ttl`) on every node where
/// `lock_key` holds `token`. Completes once a majority wrote it or every node answered or
/// failed (each within node_timeout), with (error_code, result): shut_down, cancelled
/// (terminal or partial; the record may be written on some nodes), else success whatever
/// `written` says.
void start_election_write(std::shared_ptr<client_state> s, std::string lock_key,
                          std::string record_key, std::string token, std::uint64_t term,
                          std::string value, std::chrono::milliseconds record_ttl,
                          election_round_handler h);
/// Resigns: releases `lk` (the leadership's lock, stopped renewing) as async_unlock does,
/// deleting the leader's record at `record_key` with it on every node where the record
/// names the lock's token. Completes as async_unlock (success, not_held, no_quorum,
/// no_lock, shut_down); not cancellable.
void start_election_resign(std::shared_ptr<client_state> s, lock lk, std::string record_key,
                           void_handler h);
/// Reads every node's lock key and record. Completes once a leader is agreed by a
/// majority or every node answered or failed. Errors: shut_down, cancelled (any type).
void start_election_read(std::shared_ptr<client_state> s, std::string lock_key,
                         std::string record_key, election_round_handler h);

}  // namespace redlock::detail
