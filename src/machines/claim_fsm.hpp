// SPDX-License-Identifier: BSL-1.0
#pragma once
// A claim batch as a state machine with no I/O: it takes events (the first round planned,
// a node asked for some names, a node's answer codes for them, a node's failure, the
// tally after each of these, a cancellation of the call or of one name) and tells its
// driver what to do next (nothing yet, tell the caller `cancelled` now, ask the nodes kept
// back for the names still open, or complete with each name's ending, undo included).
// The driver (claim_batch_op in claims.cpp) owns the tokens, payloads, connections and
// handlers; the rules it applies are claim_decisions.hpp's and rules.hpp's.
// test_renew_claim feeds it events without a server.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "machines/action.hpp"
#include "machines/claim_decisions.hpp"
#include "redlock/clock.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// What a claim batch's decisions read besides the answers.
struct claim_moment {
  boot_clock::time_point now{};
  bool closed = false;  ///< the client has shut down
};

/// What the driver of a claim batch does next (machine_action): none (nodes asked are
/// still out), answer (`cancelled` now; the replies are still read), second_round (ask
/// every node in `nodes` for the names in `detail`, then tally again), or complete (`ec`
/// for the whole call: shut_down fails every name with it and keeps or undoes nothing;
/// else each name's ending()).
using claim_action = machine_action<std::vector<std::uint32_t>>;

class claim_fsm {
 public:
  enum class phase : std::uint8_t {
    planning,      ///< the first round's asks are being made
    first_round,   ///< planned: its nodes are out
    second_round,  ///< the nodes kept back were asked for the open names
    done,          ///< completed: later events change nothing
  };

  /// A batch of `items` names on a fleet of `n` nodes.
  claim_fsm(std::size_t n, std::size_t items) : n_(n), names_(items) {}

  phase state() const { return phase_; }

  /// Name j repeats an earlier name of the call: it is never sent and ends as duplicate.
  void duplicate(std::uint32_t j) { names_[j].duplicate = true; }
  /// Node i is asked for `items` (before its request is submitted).
  void asking(std::size_t i, std::span<const std::uint32_t> items);
  /// Every ask of the first round was made: the names' validity ends at `valid_until`,
  /// and the nodes `later` able to vote were kept back for a second round.
  void planned(boot_clock::time_point valid_until, node_mask later);
  /// Node i answered `codes` for `items` (as asked, one code each): 1 took it, 0 held by
  /// another, 2 done marker, 3 wrong type, anything else failed. Other lengths: failed.
  void answered(std::size_t i, std::span<const std::uint32_t> items,
                std::span<const std::int64_t> codes);
  /// Node i gave no usable answer for `items`; `sent`: its request went out (our SET may
  /// have landed there).
  void failed(std::size_t i, std::span<const std::uint32_t> items, bool sent);
  /// After the asks of a round and after each reply: whether the round is over, and what
  /// then (second_claim_round_due, claim_open; else complete).
  claim_action tally(const claim_moment& m);
  /// The whole call was cancelled: its caller hears now, and nothing won is kept (what
  /// landed is undone once the replies are in).
  claim_action cancel();
  /// Name j's caller was told `cancelled` ahead of the batch: a win of it is not kept.
  /// False once the batch has completed.
  bool cancel_name(std::uint32_t j);

  /// Name j's ending, once complete (end_claim at the completing tally).
  claim_ending ending(std::uint32_t j) const;
  /// The nodes name j was asked of (those that may hold it once won).
  node_mask asked(std::uint32_t j) const { return names_[j].asked; }
  /// Name j's answers so far.
  const claim_tally& votes(std::uint32_t j) const { return names_[j].votes; }

 private:
  struct name_state {
    claim_tally votes{};
    node_mask asked = 0;  // nodes the SET went to
    node_mask maybe = 0;  // nodes where our SET may have landed (a yes, or no clear answer)
    bool duplicate = false;
    bool cancelled = false;  // its caller was told `cancelled`: nothing won is kept
  };

  bool in_round() const { return phase_ == phase::first_round || phase_ == phase::second_round; }
  // Counts `code` from node i for name j, if node i was asked for it and is out.
  void count(std::size_t i, std::uint32_t j, std::int64_t code);
  std::vector<std::uint32_t> open_names() const;
  claim_action complete(const claim_moment& m);

  std::size_t n_;
  std::vector<name_state> names_;
  phase phase_ = phase::planning;
  node_mask out_ = 0;    // nodes asked and not yet heard from
  node_mask later_ = 0;  // able nodes kept for the second round
  boot_clock::time_point valid_until_{};
  bool cancelled_ = false;  // the whole call: nothing won is kept
  bool in_time_ = false;    // the grant rule at the completing tally
};

}  // namespace redlock::detail
