// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Claims: "do this once" gates at high rate. A claim is a try-lock that is cheap to take
/// in bulk (one script call per node for a whole batch, a majority of nodes asked first)
/// and that ends either released or as a "done" marker that makes later claims of the
/// same name answer claim_status::done. See client::async_try_claim, async_claim and
/// async_settle, and docs/claims.md.

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>

#include "redlock/lock.hpp"

namespace redlock {

/// How one resource of a claim came out.
enum class claim_status : std::uint8_t {
  won,        ///< taken on a majority within validity: claim_result::lock owns it
  held,       ///< another owner holds it now (its work is in progress)
  done,       ///< a done marker is there: the work was done already (async_settle)
  duplicate,  ///< the same name came earlier in the same batch; that entry has the outcome
  failed,     ///< not decided: claim_result::error says why (no_quorum, validity_exhausted,
              ///< wrong_type)
};

/// What a won claim becomes when async_settle keeps it as done (chosen when claiming; a
/// release with a zero keep time is the same in both modes). docs/claims.md compares them.
enum class claim_mode : std::uint8_t {
  /// The claim's keys are replaced by the value "done" on the nodes that hold the claim (a
  /// majority), and the marker is then also written, in the background, on every node the
  /// claim never went to, so that it survives one node restarting empty.
  spread_marker,
  /// The claim is its own done marker: the claim's value carries a state byte ("C" while
  /// held), and the settle turns that byte into "D" and sets the keep time in the same
  /// compare-and-set, on the nodes that hold the claim only. No call beyond the claim's
  /// majority: a won and settled claim costs one claim and one settle call per node of a
  /// majority per batch. The marker lasts as the claim's keys do: a node restarted empty
  /// loses its copy (docs/claims.md, "What a done marker survives").
  own_marker,
};

/// The outcome for one resource.
struct claim_result {
  claim_status status = claim_status::failed;
  /// Set when status is failed: why no majority could be had.
  boost::system::error_code error{};
  /// Owns the resource when status is won (empty otherwise). Settle it with
  /// client::async_settle, or release it with client::async_unlock; dropped, it is
  /// released in the background like any lock.
  redlock::lock lock{};

  bool won() const noexcept { return status == claim_status::won; }
};

/// Most resources in one async_try_claim or async_settle call: each node runs a batch
/// as one Lua script, and Lua's argument lists are bounded.
inline constexpr std::size_t max_claim_batch = 256;

/// Human-readable name of a status ("won", "held", ...).
const char* to_string(claim_status s) noexcept;

/// Human-readable name of a mode ("spread_marker", "own_marker").
const char* to_string(claim_mode m) noexcept;

}  // namespace redlock
