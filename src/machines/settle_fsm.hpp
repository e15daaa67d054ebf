// SPDX-License-Identifier: BSL-1.0
#pragma once
// A settle batch as a state machine with no I/O: it takes the claims it settles (each
// with the nodes its claim went to), plans the one round (which claims each node is
// asked to settle), takes each node's answer codes or its failure, and once every node it
// asked is in, completes: each claim's outcome, the nodes its done marker also goes to,
// and the call's summary. The driver (settle_batch_op in claims.cpp, over batch_rounds)
// owns the payloads, connections and handlers; the rules it applies are
// claim_decisions.hpp's. test_renew_claim feeds it events without a server.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "machines/action.hpp"
#include "machines/claim_decisions.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// What the driver of a settle batch does next (machine_action): send_round (ask each node
/// in `nodes` for the claims take_asks() gives it, then tally), none (nodes asked are still
/// out), or complete (every answer is in: each claim's outcome(), spread() and summary()).
using settle_action = machine_action<>;

class settle_fsm {
 public:
  /// A batch on a fleet of `n` nodes settling claims whose claim went to `asked[j]` (claim
  /// j); `marks_done`: a settle that leaves done markers (a keep time); `not_ours`: claims
  /// of the call found not ours before anything was sent.
  settle_fsm(std::size_t n, std::vector<node_mask> asked, bool marks_done,
             std::size_t not_ours = 0);

  /// The round: every node some claim went to, each asked for those claims.
  settle_action start();
  /// The claims node i is asked to settle, in order (once: moved out to the driver).
  std::vector<std::uint32_t> take_asks(std::size_t i);
  /// Node i answered `codes` for `items` (one each: 1 done, 0 not ours, anything else
  /// failed). A node not out, or a length that is not the items', changes nothing.
  void answered(std::size_t i, std::span<const std::uint32_t> items,
                std::span<const std::int64_t> codes);
  /// Node i gave no usable answer for `items`: each counts as failed there.
  void failed(std::size_t i, std::span<const std::uint32_t> items);
  /// After the round is sent and after each answer: complete once every node asked was
  /// heard from and no request is `outstanding`, the outcomes judged then (`closed`: the client
  /// shut down, and every claim fails so).
  settle_action tally(std::size_t outstanding, bool closed);

  bool done() const { return done_; }
  /// Claim j's outcome, once complete (settle_outcome).
  error_code outcome(std::uint32_t j) const;
  /// The nodes claim j's done marker also goes to, beyond those its claim went to, once
  /// complete: none without a keep time or after shutdown (marker_spread).
  node_mask spread(std::uint32_t j, std::string_view token) const;
  /// The call's result over its claims, once complete.
  settle_summary summary() const;
  std::size_t size() const { return claims_.size(); }

 private:
  struct claim {
    node_mask asked = 0;
    settle_tally answers{};
  };
  // Counts `code` from node i for claim j, if node i was asked for it.
  void count(std::size_t i, std::uint32_t j, std::int64_t code);

  std::size_t n_;
  std::vector<claim> claims_;
  std::vector<std::vector<std::uint32_t>> asks_;  // per node, until taken
  bool marks_done_;
  std::size_t not_ours_;
  node_mask out_ = 0;  // nodes asked and not yet heard from
  bool closed_ = false;
  bool done_ = false;
};

}  // namespace redlock::detail
