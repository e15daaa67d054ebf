// SPDX-License-Identifier: BSL-1.0
#pragma once
// One sweep of a semaphore acquisition over its permits, as a state machine with no I/O:
// which permit to try next, and what the sweep's tries add up to. The driver
// (acquisition_op over sweep_target, semaphore.cpp) makes each try as a single lock's attempt
// and feeds its outcome here; between sweeps, acquire_fsm decides the waits. test_permit_sweep
// feeds it outcomes without a server.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "machines/action.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "util/keyspace.hpp"

namespace redlock::detail {

/// Why `resource` cannot name a semaphore (empty: it can).
std::string semaphore_name_problem(std::string_view resource);
/// How long the record lives at least after a permit of `ttl` was granted or renewed: past
/// the permit's own expiry with room for a renewal (sent beside the permit's, not in the same
/// script) to arrive, so that the record outlives every permit key of its node.
inline std::chrono::milliseconds permit_record_keep(std::chrono::milliseconds ttl) {
  return 2 * ttl;
}

/// A sweep's part of its action: which permit.
struct sweep_detail {
  std::size_t index = 0;  ///< send_round, won: the permit
  std::size_t span = 1;   ///< send_round: the permits its script reads, `index` first
  bool last = false;      ///< send_round: the sweep's last window, so a waiting call takes a place
};

/// What the driver of a sweep does next (machine_action): send_round (try permit
/// `detail.index` once, reading `detail.span` permits from it: a window), won (that try won:
/// hand the permit out), lost (every permit was tried, none won: the attempt failed with
/// `ec`), or complete (an error no later sweep can change, `ec`).
using sweep_step = machine_action<sweep_detail>;

/// One sweep: the permits in windows of up to `window` from a first one, each window one try
/// (permit_acquire_script asks for its first permit and reads the others). A try that finds its
/// permit held but another of its window free (or offered to the call) says how far after it:
/// the sweep then asks for that one at once, up to `permits` such turns a sweep, so that a
/// free permit is taken in two tries however many are held.
class permit_sweep {
 public:
  /// The most permits one try reads.
  static constexpr std::size_t window = 16;

  explicit permit_sweep(std::size_t permits) : permits_(permits) {}

  /// A new sweep, first asking for permit `first` (the driver draws it at random, so that
  /// concurrent acquirers spread over the permits, or takes the permit offered to it).
  sweep_step start(std::size_t first);
  /// The try last asked for ended with `ec` (success: it won); `free_at`, when it failed, is
  /// how far after its permit the window had a free one (0: none).
  sweep_step tried(error_code ec, std::size_t free_at = 0);

 private:
  sweep_step ask(std::size_t index, bool regular);
  // The error of a sweep in which no permit won.
  error_code reason() const;

  std::size_t permits_;
  std::size_t first_ = 0;    // where the sweep began
  std::size_t covered_ = 0;  // permits read by the sweep's regular (windowed) tries
  std::size_t at_ = 0, span_ = 1;
  bool regular_ = true;  // the current try is a window of the sweep, not a turn to a free one
  std::size_t turns_ = 0;
  std::size_t wrong_type_ = 0;  // permits the regular tries found of another type
  error_code other_{};
};

/// What a sweep's tries were told besides their votes (single_target counts those): where a
/// majority of the nodes pointed the current try at a free permit of its window (the sweep's
/// next turn), and where the call's place in the line was kept, which the call leaves once it
/// has won (a place left there would be handed a permit nobody takes). Answers to an earlier
/// try, which come late, are ignored: each try has its id.
class permit_try_answers {
 public:
  /// Try `id` goes out, carrying the call's place in the line or not.
  void sent(std::uint64_t id, bool with_place);
  /// Node `node` answered try `id` "held", pointing `free_at` permits after the one asked for
  /// (0: no pointer). Returns whether the call leaves its place there now: the node kept it,
  /// and the call has already won.
  bool held(std::uint64_t id, std::size_t node, std::size_t free_at);
  /// The call won with its current try: the nodes that kept its place so far, to leave now.
  std::array<bool, max_nodes> won();
  /// How far after the permit asked for a majority of `nodes` nodes pointed the current try
  /// (0: nowhere). One node's free permit is a lost try's leftover or a release not yet run
  /// elsewhere, and would be asked for in vain.
  std::size_t pointed(std::size_t nodes) const;

 private:
  std::uint64_t id_ = 0;
  bool with_place_ = false;
  bool won_ = false;
  std::array<std::uint8_t, permit_sweep::window> free_at_{};
  std::array<bool, max_nodes> in_line_{};
};

}  // namespace redlock::detail
