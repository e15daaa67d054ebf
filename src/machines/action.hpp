// SPDX-License-Identifier: BSL-1.0
#pragma once
// The one vocabulary in which a state machine tells its driver what to do next: send a
// round, send a second round to some nodes, wait, answer the caller early, hand out a won
// round, give up a lost one, retry, complete, or nothing yet. A machine that
// needs more than the common fields says it in its own `Detail` (what to write, what to
// keep), never with a kind of its own, so that one driver can carry out every machine's
// actions. No I/O and no Asio here (scripts/check-asio-free.sh compiles it alone).
//
// Every machine answers with it: acquisition, release, extension, inspection, renewal,
// fence repair, claims and settles; action_runner::carry_out (drivers/carry_out.hpp) turns each
// action into its driver's step.

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "redlock/error.hpp"

namespace redlock::detail {

using boost::system::error_code;

/// One bit per node of the fleet (max_nodes fit).
using node_mask = std::uint16_t;
constexpr node_mask bit(std::size_t i) {
  return static_cast<node_mask>(1u << i);
}
/// Every node of a fleet of n.
constexpr node_mask fleet_mask(std::size_t n) {
  return static_cast<node_mask>((1u << n) - 1);
}

/// What the driver does next.
enum class action_kind : std::uint8_t {
  none,          ///< nothing: wait for the next event
  send_round,    ///< send the machine's round (to the nodes in `nodes`; 0: to every node)
  second_round,  ///< send a second request to each node in `nodes`
  wait,          ///< arm the timer for `delay`
  answer,        ///< tell the caller `ec` now; the machine runs on (what it sent is still
                 ///< read, or undone) until its own complete, which the caller no longer hears
  won,           ///< the round won: hand out what it took (or send the second round the
                 ///< kind needs first)
  lost,          ///< the attempt lost (`ec` says why): undo what its round may have taken,
                 ///< then tell the machine, which decides what comes next
  retry,         ///< the failed round is retried: the driver gathers what the wait depends
                 ///< on (its place in the lines) and asks the machine for it
  complete,      ///< complete the call with `ec` (success: no `ec`)
};

/// No detail: the common fields say everything.
struct no_detail {
  friend constexpr bool operator==(no_detail, no_detail) = default;
};

/// A machine's answer to an event. `kind` names the steps as `release_action::kind::complete`
/// reads, whichever machine's action it is.
template <typename Detail = no_detail>
struct machine_action {
  using kind = action_kind;
  action_kind what = action_kind::none;
  error_code ec{};
  /// send_round, second_round: to whom.
  node_mask nodes = 0;
  /// wait: for how long.
  std::chrono::nanoseconds delay{};
  /// The machine's own part of the action.
  Detail detail{};

  /// Complete with `e`.
  static machine_action completed(error_code e = {}) {
    return {.what = action_kind::complete, .ec = e};
  }
  /// A second request to node i.
  static machine_action second_to(std::size_t i) {
    return {.what = action_kind::second_round, .nodes = bit(i)};
  }
};

}  // namespace redlock::detail
