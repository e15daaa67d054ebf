// SPDX-License-Identifier: BSL-1.0
#pragma once
// Leader election's decisions, pure functions of what the nodes answered (no I/O): how a
// node's answer to election_read_script reads, who leads by a majority's agreement, and
// which change an observer reports, when the record is rewritten and how long it lives.
// The driver (src/guard/election.cpp) asks them;
// test/unit/test_election_rules.cpp checks them without a server.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "machines/action.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// A leader's record as written by election_record_script: "<term> <token> <value>".
struct election_record {
  std::uint64_t term = 0;
  std::string token;
  std::string value;
};

/// The record text of `term`, `token` and `value`, as the script writes it (for tests and
/// for the one place that must agree with the script: parse_election_record).
std::string format_election_record(std::uint64_t term, std::string_view token,
                                   std::string_view value);
/// Reads a record's text; false if it is not one (a key of that name written by someone
/// else): the node then vouches for no leader.
bool parse_election_record(std::string_view text, election_record& out);

/// One node's view of an election.
struct election_node_view {
  bool answered = false;   ///< the node gave a readable answer
  std::string lock_token;  ///< the lock key's value ("" when there is none)
  bool has_record = false;
  election_record record;
};

/// Reads node's answer to election_read_script ({lock value or nil, record or nil}) into
/// `out`; false if the reply cannot be that answer.
bool read_election_answer(const resp::reply& r, election_node_view& out);

/// Who leads, as the nodes agree.
struct leader_view {
  bool leading = false;
  std::uint64_t term = 0;
  std::string token;
  std::string value;
};

/// A leader is one whose token a majority of the `n` nodes (n/2 + 1) hold in the lock key
/// *and* name in a well-formed record beside it, the record's term and value then being
/// the same on each (a record vouched for by its own node's lock key: a deposed leader's
/// record beside its successor's lock does not count). Otherwise no one leads (leading
/// false): nobody holds the lock on a majority, or the leader's record has not reached it.
leader_view decide_leader(std::span<const election_node_view> nodes, std::size_t n);

/// Whether a read can end: a leader is already agreed by a majority (`so_far`), or every
/// node is in. `answered` counts the nodes that answered or failed, of `n`.
inline bool election_read_decided(const leader_view& so_far, std::size_t answered, std::size_t n) {
  return so_far.leading || answered >= n;
}

/// What an observer has reported so far.
struct observer_memory {
  bool reported = false;      ///< a report was made: `last` is it
  leader_view last;           ///< the last report
  std::uint64_t highest = 0;  ///< the highest term reported as leading (0 before any)
};

/// How many of `nodes` answered without `token` in the lock key: where the leader holding
/// `token` no longer holds its lock.
std::size_t answered_without(std::span<const election_node_view> nodes, std::string_view token);

/// Whether a read is news to an observer that remembers `m`, given the nodes' answers
/// (`nodes`, of `n` nodes) and who leads by them (`seen`, decide_leader's). One report per
/// term:
/// - a leader is news only with a term above every term reported as leading (`highest`):
///   a stale read is not, nor the same leader back after a gap;
/// - "no leader" is news as the first report once a majority of the nodes answered, and
///   after a leader only once a majority answered without that leader's token in the lock
///   key, so that it can lead no more. Fewer (its record short of a majority for a while, a
///   node that did not answer still holding its token): no news, the observer reads again.
bool leader_news(const observer_memory& m, const leader_view& seen,
                 std::span<const election_node_view> nodes, std::size_t n);

// ---- the leader's record and the observer's steps (src/guard/election.cpp drives them) ----

/// How long the leader's record lives: past a missed refresh or two of the longer of the lock's
/// TTL and its renewal TTL (a record without its lock key is never trusted, so living on after
/// the leader costs only memory), within the 24 h any key of ours may live.
std::chrono::milliseconds election_record_ttl(std::chrono::milliseconds ttl,
                                              std::chrono::milliseconds renew_ttl);

/// When the leader rewrites its record next: every quarter of the record's TTL once a
/// majority holds it, so that observers keep seeing it; at the client's retry delay while the
/// last write reached fewer nodes.
std::chrono::milliseconds election_refresh_delay(bool on_majority,
                                                 std::chrono::milliseconds record_ttl,
                                                 std::chrono::milliseconds retry_delay);

/// A campaign's part of its action: whether a majority holds the first record (the
/// refresher's first delay, election_refresh_delay).
struct campaign_detail {
  bool on_majority = false;
};
/// What a campaign does once its record's first write is in (machine_action: always
/// complete): with the write's error; with leadership_lost when the lock's validity ran out
/// meanwhile (a leadership over before it began is not handed out); else with the
/// leadership, whose record `written` of the fleet's `nodes` hold.
using campaign_action = machine_action<campaign_detail>;
campaign_action after_first_record(error_code write_failed, bool lock_valid, std::size_t written,
                                   std::size_t nodes);

/// What an observer's async_next does once a read is in (machine_action): complete (the
/// read failed: with its `ec`; else it is news: report it), send_round (no news, but a
/// release or a new record was announced during the read: read again), or wait (no news:
/// for the poll interval, `delay`, or an announcement).
using observer_action = machine_action<>;
observer_action after_election_read(error_code read_failed, bool news, bool woken,
                                    std::chrono::milliseconds poll_interval);

/// What the report of what an observer remembers says (election_observer::last, async_next):
/// the last leader while one leads, else no leader with the highest term reported so far.
struct leader_report {
  bool leading = false;
  std::uint64_t term = 0;
  std::string value;
};
leader_report report_of(const observer_memory& m);

/// Remembers `seen` as the observer's new report.
void remember_report(observer_memory& m, leader_view seen);

// ---- arguments, before anything is taken ----

/// The first problem with an election call's arguments: its error (error{} when none) and a
/// sentence for the diagnostics or the exception.
struct election_problem {
  error code{};
  std::string why{};
  explicit operator bool() const { return code != error{}; }
};

/// A campaign's value (its size) and the TTL its keeper renews with (`renew_ttl`, zero: the
/// lock's `ttl`), which the keeper would refuse later: above the lock's TTL with
/// config::max_ttl unset, the renewals would outlive the restart guard.
election_problem campaign_problem(std::size_t value_size, std::chrono::milliseconds ttl,
                                  std::chrono::milliseconds renew_ttl, const config& cfg);

/// An election_observer's name and poll interval.
election_problem observer_problem(std::string_view name, std::chrono::milliseconds poll_interval);

}  // namespace redlock::detail
