// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a claim or settle batch decides, without I/O: which nodes its first round asks,
// what each node's answer for a name counts as, whether a second round is worth it, what
// each name ends as and where it must be undone, and what a settle's answers mean. The
// batches in claims.cpp own the payloads, the connections and the handlers; they gather
// facts and answers and call these. test_kinds feeds them facts without a server.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "client/call_checks.hpp"
#include "machines/action.hpp"
#include "quorum/rules.hpp"
#include "redlock/claim.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

/// Whether a settled token becomes its own done marker (claim_mode::own_marker): lock
/// tokens are lowercase hex, so only such a claim's token starts with the state byte.
bool own_marker(std::string_view token);

// ---- the checks before a call is queued ----------------------------------------------

/// A name a claim may not take: empty, over max_resource_bytes, or a semaphore's own.
inline bool bad_name(std::string_view name) {
  return name.empty() || name.size() > max_resource_bytes || name.starts_with(semaphore_names);
}
/// A done marker's keep time out of [0, 30 days].
bool bad_keep(std::chrono::milliseconds keep);
inline bool bad_mode(claim_mode m) {
  return m != claim_mode::spread_marker && m != claim_mode::own_marker;
}

// ---- the claim's rounds ----------------------------------------------------------------

/// One node as a claim batch's first round sees it: connected (`ready`), or still
/// connecting and taking requests (`accepts`); `votes`: it may vote now for the TTL.
struct claim_candidate {
  bool ready = false;
  bool accepts = false;
  bool votes = false;
};

/// The nodes a claim batch asks first, in the order asked, and those it keeps for a
/// second round.
struct claim_first_round {
  std::array<std::uint8_t, max_nodes> ask{};
  std::size_t asks = 0;
  node_mask later = 0;
};

/// A majority of the nodes able to vote, taken in turn from `rotor` so that the load
/// spreads across batches; connected nodes before those still connecting (a request to
/// one of those waits for its handshake). With fewer able nodes than a majority, all of
/// them. The others able to vote are kept for a second round.
claim_first_round plan_claim_round(std::span<const claim_candidate> nodes, std::size_t rotor);

/// Counts node i's answer `code` for one name into `t` (1 took it, 0 held by another,
/// 2 done marker, 3 wrong type, -2 never sent, anything else: failed after sending).
/// Returns whether our SET may have landed there, so that it must be undone if the
/// name is not kept.
bool count_claim_answer(claim_tally& t, std::int64_t code);

/// What one name of a claim batch ends as, once every node asked has answered.
struct claim_ending {
  claim_status status = claim_status::failed;
  error_code error{};
  /// Won and kept: the caller gets the lock.
  bool keep = false;
  /// Nodes where our SET may have landed and must be taken back (a name not kept).
  node_mask undo = 0;
};

/// The name's verdict (decide_claim, n nodes, `in_time`: the grant rule now); a
/// duplicate of an earlier name in the call was never sent. A won name whose caller was
/// told `cancelled` is not kept: it is undone as a lost one.
claim_ending end_claim(std::size_t n, const claim_tally& t, node_mask maybe, bool duplicate,
                       bool in_time, bool cancelled);

// ---- settling ----------------------------------------------------------------------------

/// One settled claim's answers: the script did it, found the name not ours, or no usable
/// answer.
struct settle_tally {
  std::uint8_t yes = 0, no = 0, failed = 0;
};

/// Counts one node's answer `code` (1 done, 0 not ours, anything else failed).
void count_settle_answer(settle_tally& t, std::int64_t code);

/// What a settle's answers mean on n nodes (decide_settle); shut_down once the client
/// closed, whatever the nodes said.
error_code settle_outcome(std::size_t n, bool closed, bool marks_done, const settle_tally& t);

/// The nodes a settled done marker is also written to, beyond the `asked` ones the claim
/// went to: a marker settled on a majority spreads to every other node of the n, so that
/// it survives the restart of one of them. An own marker stays where the claim is.
node_mask marker_spread(std::size_t n, node_mask asked, std::string_view token, error_code outcome);

/// A settle call's result over its claims: the first failure (not_held first when some
/// claims were not ours before anything was sent) and how many settled.
class settle_summary {
 public:
  explicit settle_summary(std::size_t not_ours)
      : first_(not_ours ? error_code{error::not_held} : error_code{}) {}
  void add(error_code outcome) {
    if (!outcome)
      ++settled_;
    else if (!first_)
      first_ = outcome;
  }
  error_code outcome() const { return first_; }
  std::size_t settled() const { return settled_; }

 private:
  error_code first_;
  std::size_t settled_ = 0;
};

// ---- coalescing ----------------------------------------------------------------------------

/// Moves out of `queue` (not empty) the oldest entry and those after it with the same
/// `group` value (the TTL, or the done marker's keep time), up to max_claim_batch,
/// keeping the others' order: one batch shares one script argument.
template <typename Pending, typename Group>
std::vector<Pending> take_batch(std::vector<Pending>& queue, Group group) {
  const auto g = group(queue.front());
  std::vector<Pending> batch, rest;
  for (auto& p : queue)
    (group(p) == g && batch.size() < max_claim_batch ? batch : rest).push_back(std::move(p));
  queue = std::move(rest);
  return batch;
}

}  // namespace redlock::detail
