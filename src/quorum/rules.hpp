// SPDX-License-Identifier: BSL-1.0
#pragma once
// The Redlock decision rules, pure and clock-free: every time is an argument, nothing
// reads a socket or the clock, so that each rule is tested without a server
// (test/unit/test_rules.cpp). The operations that talk to the nodes count answers and
// ask these functions what the answers mean; a rule lives here and nowhere else.

#include <algorithm>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "redlock/claim.hpp"
#include "redlock/clock.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "redlock/inspect.hpp"

namespace redlock::detail {

using boost::system::error_code;

// ---- majorities, drift, validity ----------------------------------------------------

/// Votes needed out of n nodes (the public redlock::majority, which the CLI counts by).
constexpr std::size_t quorum(std::size_t n) {
  return majority(n);
}

/// Clock drift allowance for a TTL: ttl * factor + 2 ms (the 2 ms cover the
/// millisecond resolution of Redis expiry on each side).
inline std::chrono::nanoseconds drift(std::chrono::milliseconds ttl, double factor) {
  const auto scaled = std::chrono::duration<double, std::nano>(ttl) * factor;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(scaled) +
         std::chrono::milliseconds{2};
}

/// End of validity of keys set with `ttl` by a request enqueued at `start` (before its
/// first byte could leave): start + ttl - drift. The validity left at time t is
/// deadline - t.
inline boot_clock::time_point validity_deadline(boot_clock::time_point start,
                                                std::chrono::milliseconds ttl, double factor) {
  return start + ttl - drift(ttl, factor);
}

/// The deadline of one node's request sent at `sent`: the node's answer time, cut at
/// `bound` (the validity or lock deadline the answer serves; an answer after it is of no
/// use, and the request must not hold its node's slot longer).
constexpr boot_clock::time_point request_deadline(
    boot_clock::time_point sent, std::chrono::milliseconds node_timeout,
    boot_clock::time_point bound = boot_clock::time_point::max()) {
  return std::min(sent + node_timeout, bound);
}

enum class vote_state { undecided, won, lost };

/// Decides a vote among n nodes given `yes` votes and `no` definite refusals or
/// failures: won once a majority said yes, lost once a majority can no longer say yes.
constexpr vote_state decide(std::size_t n, std::size_t yes, std::size_t no) {
  if (yes >= quorum(n)) return vote_state::won;
  if (n - no < quorum(n)) return vote_state::lost;
  return vote_state::undecided;
}

// ---- the one TTL check --------------------------------------------------------------

/// Longest TTL any request may set on a node.
inline constexpr std::chrono::milliseconds longest_ttl{std::chrono::hours{24}};

/// Every TTL that reaches a node (lock, set, extension, keeper renewal, claim) passes
/// this check before anything is sent: from 1 ms to 24 h, at least min_validity longer
/// than the drift allowance (else the lock could not be used), and at most config::max_ttl when
/// that is set (a key must not outlive the time the restart guard holds a restarted node back).
/// Returns "" when `ttl` is acceptable, else why not, for a person.
std::string check_ttl(std::chrono::milliseconds ttl, const config& cfg);
/// A keeper's renewal TTL (`renew`) for a lock taken with `lock_ttl`: check_ttl's rules,
/// and, while config::max_ttl is unset, at most `lock_ttl`. The restart guard then lasts
/// each acquisition's own TTL (guard_period): a key renewed for longer than the TTL it was
/// taken with would outlive the hold-back that the next acquisition of that TTL gives a
/// restarted node, which could then forget a lock that is still valid and vote for another
/// holder. Set max_ttl to renew for longer. Returns "" when acceptable, else why not.
std::string check_renewal_ttl(std::chrono::milliseconds renew, std::chrono::milliseconds lock_ttl,
                              const config& cfg);
/// The least validity a TTL must leave after the drift allowance (check_ttl).
inline constexpr std::chrono::milliseconds min_validity{1};

// ---- who votes ---------------------------------------------------------------------

/// What a client knows of one node that decides whether its answers count.
struct voter_facts {
  bool replica = false;          ///< ROLE said slave
  bool duplicate = false;        ///< same run id as an earlier node of the list
  std::size_t duplicate_of = 0;  ///< that earlier node
  boot_clock::time_point started_at = boot_clock::time_point::min();     ///< server start
  boot_clock::time_point clock_jump_at = boot_clock::time_point::min();  ///< last jump seen
  /// Last promotion of a replica seen in the node (a cluster's failover).
  boot_clock::time_point promoted_at = boot_clock::time_point::min();
};

/// The restart guard's period for a lock of `ttl`: the fleet's max_ttl when set, else
/// the lock's own TTL.
inline std::chrono::nanoseconds guard_period(std::chrono::milliseconds max_ttl,
                                             std::chrono::milliseconds ttl) {
  return max_ttl.count() > 0 ? max_ttl : ttl;
}

/// Whether a node is an independent master: not a replica, not a second name of a server
/// listed earlier. If not and `why` is given, why.
bool independent_master(const voter_facts& node, std::string* why = nullptr);

/// Which rule, if any, keeps a node from voting at `now`: it votes when it is an
/// independent master that was neither failed over (a replica promoted) nor seen with a
/// clock jump within the last `guard`, and, with the restart guard on, did not restart
/// within it either. `restart_guard` switches off only the restart check (for servers
/// that lose nothing on restart): a promoted replica may lack acknowledged writes and a
/// jumped clock expires keys early, whatever persistence the servers have.
node_report::hold_back hold_of(const voter_facts& node, bool restart_guard,
                               std::chrono::nanoseconds guard, boot_clock::time_point now);

/// Whether no rule of hold_of() holds the node back at `now`: the same checks, without
/// building hold_of's answer. Every node of every round asks it, so it stays inline and cheap;
/// test_rules pins it to agree with hold_of.
inline bool votes_now(const voter_facts& node, bool restart_guard, std::chrono::nanoseconds guard,
                      boot_clock::time_point now) {
  // min() (never) is before every `since`: now is a time since boot and guard at most a day.
  const auto since = now - guard;
  return !node.replica && !node.duplicate && !(restart_guard && node.started_at > since) &&
         node.promoted_at <= since && node.clock_jump_at <= since;
}

/// A hold_of() result for a person ("restarted about 400 ms ago; held back 600 ms more by
/// the restart guard (max_ttl 1000 ms)"); "" when the node votes.
std::string describe_hold(const node_report::hold_back& hold, std::chrono::nanoseconds guard);

/// Whether a node may vote at `now` (hold_of() says no rule holds it back). If not and
/// `why` is given, why (describe_hold).
bool may_vote(const voter_facts& node, bool restart_guard, std::chrono::nanoseconds guard,
              boot_clock::time_point now, std::string* why = nullptr);

// ---- acquisition --------------------------------------------------------------------

/// Why a decided, lost acquisition failed on n nodes: `wrong_type` nodes hold a key of
/// another type at the name, `held` nodes hold it for another owner, the rest of the
/// missing votes are nodes that did not answer or failed. A permit's try also counts the
/// nodes that record the semaphore with another number of permits (`other_count`): on
/// more nodes than a majority can spare, the count is the reason (permit_count_mismatch,
/// before wrong_type: the caller's count is what to fix); on fewer, they are in the way as
/// holders are.
error_code acquire_failure(std::size_t n, std::size_t held, std::size_t wrong_type,
                           std::size_t other_count = 0);

/// acquire_failure read from a round: `errors` one per node (error::wrong_type and
/// error::permit_count_mismatch are counted), `held` the nodes that answered "held".
error_code failure_reason(std::span<const error_code> errors, std::size_t held);

/// The grant rule with the validity deadline already known (validity_deadline of the
/// round's start): a majority's yes at `now` counts only before it.
constexpr bool granted_in_time(boot_clock::time_point now, boot_clock::time_point valid_until) {
  return now < valid_until;
}

/// An acquisition (or a fenced write-back) that a majority granted at time `now`, sent at
/// `start` with `ttl`: won only while validity is left (in_time false: validity_exhausted).
struct grant {
  bool in_time;
  boot_clock::time_point deadline;
};
inline grant acquire_grant(boot_clock::time_point now, boot_clock::time_point start,
                           std::chrono::milliseconds ttl, double factor) {
  const auto deadline = validity_deadline(start, ttl, factor);
  return {granted_in_time(now, deadline), deadline};
}

// ---- fencing tokens -----------------------------------------------------------------

/// One node's answer to a won fenced acquisition, as the token rule sees it: `counted`
/// when it voted yes from a marked node (its counter is trusted, and was incremented by
/// the same script that set our key), with the counter it returned.
struct fence_report {
  bool counted = false;
  std::uint64_t counter = 0;
};

/// The token of a won fenced acquisition on n nodes, and whether the write-back round
/// must still run before it may be handed out.
struct fence_decision {
  std::uint64_t token = 0;  ///< T: the largest counter among the counted reports
  bool write_back = true;
};

/// T is the largest counted counter. The write-back exists so that a majority of marked
/// nodes holds a counter >= T before T is handed out: every later winning majority then
/// meets one of them and counts past T. When a majority of counted reports already equal
/// T, those nodes hold T (a marked node's counters never go down, and each was raised by
/// our own SET NX), so the round would add nothing and is skipped. Values that differ, an
/// unmarked node, or fewer than a majority at T: the write-back runs. verify/redlock.pml
/// checks the skip (docs/safety.md, "Fencing tokens").
fence_decision decide_fence(std::size_t n, std::span<const fence_report> reports);

/// A fenced acquisition's first round, tallied: only yes votes whose counters are trusted
/// (`counted_yes`) can make a majority, since that majority must meet every earlier
/// write-back's; a node that set the keys with untrusted counters (`unmarked_yes`, awaiting a
/// repair) counts against. `refused`: held, failed and no answers. Unfenced rounds pass
/// unmarked_yes 0.
struct fenced_tally {
  vote_state state = vote_state::undecided;
  /// Lost only because unmarked yes votes could not count: with them a majority said yes
  /// (a single try then waits for the repair and tries once more).
  bool lost_to_repair = false;
};
fenced_tally tally_fenced(std::size_t n, std::size_t counted_yes, std::size_t unmarked_yes,
                          std::size_t refused);

/// decide_fence for every key of a won fenced acquisition of `keys` keys (a set; one for a
/// single lock) on n nodes: node i's counters count when `counted[i]` (it said yes and its
/// marker was trusted), its counter for key k is counters[i * keys + k]. Key k's T goes to
/// tokens[k]. True when any key still needs the write-back round.
bool decide_fences(std::size_t n, std::span<const bool> counted, std::size_t keys,
                   std::span<const std::uint64_t> counters, std::span<std::uint64_t> tokens);

// ---- release ------------------------------------------------------------------------

/// The outcome of a compare-and-delete sent to n nodes: `deleted` nodes removed our key,
/// `absent` answered that it was not ours (expired, or taken), `pending` have not answered
/// yet (failures are neither). Success once one node deleted it and a majority answered
/// (the key is then ours nowhere on a majority); not_held when a majority answered and
/// none held it; no_quorum when too few answered in the end. Undecided while more answers
/// could change that.
struct release_verdict {
  bool decided;
  error_code outcome;
};
inline release_verdict decide_release(std::size_t n, std::size_t deleted, std::size_t absent,
                                      std::size_t pending) {
  const std::size_t answered = deleted + absent;
  if (deleted >= 1 && answered >= quorum(n)) return {true, {}};
  if (pending > 0) return {false, {}};
  if (answered < quorum(n)) return {true, error::no_quorum};
  return {true, error::not_held};
}

// ---- extension ----------------------------------------------------------------------

/// What a compare-and-pexpire sent at `start` with `ttl` means for a lock whose deadline
/// was `old_deadline`.
struct extension_verdict {
  bool decided;
  error_code outcome;                 ///< success, validity_exhausted, not_held, no_quorum
  boot_clock::time_point deadline{};  ///< the lock's deadline from now on
  bool lost = false;                  ///< the lock is gone for good
};

/// The extension rule. Success needs a majority of yes before both the old and the new
/// deadline; the new deadline is then start + ttl - drift. A majority of refusals means
/// the token is gone: lost. Any other outcome may still have shortened the keys on some
/// nodes (a PEXPIRE that arrives late runs all the same), so the deadline becomes
/// min(old, start + ttl - drift), and the lock is lost when that is already past.
/// `yes`, `refused`, `failed` count answers from nodes that may vote; n nodes in all.
extension_verdict decide_extension(std::size_t n, std::size_t yes, std::size_t refused,
                                   std::size_t failed, boot_clock::time_point now,
                                   boot_clock::time_point start, std::chrono::milliseconds ttl,
                                   boot_clock::time_point old_deadline, double factor);

/// A keeper's loss margin for a lock of `ttl`: `configured` when positive, else ttl / 50
/// kept within [1 ms, 100 ms]. The work is told of a loss this long before the deadline.
std::chrono::nanoseconds loss_margin(std::chrono::milliseconds ttl,
                                     std::chrono::milliseconds configured);

/// A renewal's verdict as a keeper acts on it: a success confirmed less than `margin`
/// before the new deadline is a loss (validity_exhausted), since the work could no longer
/// hear of a loss before another owner may exist.
extension_verdict keeper_verdict(extension_verdict v, boot_clock::time_point now,
                                 std::chrono::nanoseconds margin);

/// An extension that was sent but ended without a verdict (cancelled, shut down): the
/// requests may still run, so the deadline becomes min(old, start + ttl - drift).
extension_verdict abandoned_extension(error_code why, boot_clock::time_point now,
                                      boot_clock::time_point start, std::chrono::milliseconds ttl,
                                      boot_clock::time_point old_deadline, double factor);

// ---- claims and settling -------------------------------------------------------------

/// One name's answers in a claim batch, counted over the nodes asked: the SET took it
/// (yes), another owner holds it, a done marker is there, a key of another type is in the
/// way, or no usable answer.
struct claim_tally {
  std::uint8_t yes = 0, held = 0, done = 0, wrong = 0, failed = 0;
  std::size_t against() const { return std::size_t{held} + done + wrong + failed; }
};

/// Whether a claim of n nodes could still be won by asking more nodes: no majority of yes
/// yet, and no more nodes against than a majority can spare.
inline bool claim_open(std::size_t n, const claim_tally& t) {
  return t.yes < quorum(n) && t.against() <= n - quorum(n);
}

struct claim_verdict {
  claim_status status;
  error_code error{};  ///< why, when failed
};

/// What a claim's answers mean once every node asked has answered: won with a majority
/// of yes before its validity ended (`in_time`); done or held when more nodes than a
/// majority can spare have the name (done if any has the marker: the work is over);
/// otherwise failed: wrong_type when keys of another type are in the way on too many
/// nodes, validity_exhausted when a majority said yes too late, no_quorum else.
claim_verdict decide_claim(std::size_t n, const claim_tally& t, bool in_time);

/// Whether a claim batch asks the nodes it kept back: some were kept (`kept_back`), the
/// client is open, and validity is left to use their answers.
inline bool second_claim_round_due(bool kept_back, bool closed, boot_clock::time_point now,
                                   boot_clock::time_point valid_until) {
  return kept_back && !closed && now < valid_until;
}

/// What a settle of one won claim means: `marks_done` (a keep time) needs the done marker
/// on a majority, for later claims to see it; a release (no keep time) is decided as
/// async_unlock's (decide_release, every answer in). `yes` nodes did it, `no` found the
/// name not ours, `failed` gave no usable answer.
error_code decide_settle(std::size_t n, bool marks_done, std::size_t yes, std::size_t no,
                         std::size_t failed);

// ---- fence repair -------------------------------------------------------------------

/// A fence repair's reads as its read rule counts them: independent nodes (no duplicate
/// of another), those of them that answered, and those of these whose marker named the
/// server that answered.
struct repair_census {
  std::size_t independent = 0, answered = 0, marked = 0;
};

/// The repair's read rule on n nodes: the maxima read may be written when a majority of
/// the answers came from marked nodes, or when every independent node answered (a new
/// fleet, or a partly repaired one: only a read of all of them is sure to include the
/// counters of the last write-back's majority).
bool repair_may_write(std::size_t n, const repair_census& c);

}  // namespace redlock::detail
