// SPDX-License-Identifier: BSL-1.0
#pragma once
// An extension (async_extend of one lock or of a set) as a state machine with no I/O: it
// takes events (the call's checks, the round went out, a node answered or failed,
// cancellation, each with the clock read at that moment) and answers with what its
// driver does next (machine_action): nothing yet, send the round, or complete, either
// refused before sending or with the lock's new deadline and whether it is lost for good.
// The checks are check_extension's (extend_decisions.hpp), the verdicts decide_extension's
// and abandoned_extension's (quorum/rules.hpp). The driver is extend_op_base (extend.hpp);
// test_release.cpp feeds the machine events without a server.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "machines/action.hpp"
#include "machines/extend_decisions.hpp"
#include "quorum/round.hpp"
#include "quorum/rules.hpp"
#include "redlock/clock.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// An extension's part of its action: what `complete` does to the lock.
struct extend_detail {
  /// The lock's deadline from now on (its TTL too on success); unused when refused.
  boot_clock::time_point deadline{};
  /// The lock is lost from now on, and stays so (refused: past its deadline already).
  bool lost = false;
  /// The checks refused the call: nothing was sent and the lock keeps its deadline.
  bool refused = false;
  /// refused: added to the failure's text.
  std::string text{};
};

/// What the driver of an extension does next: send_round (the checks passed: to every
/// node), complete (refused before sending, or decided), or none.
using extend_action = machine_action<extend_detail>;

class extend_fsm {
 public:
  enum class phase : std::uint8_t {
    idle,     ///< before the checks
    sending,  ///< checked: the round is being sent
    waiting,  ///< out, undecided
    done,     ///< completed: late answers change nothing
  };

  phase state() const { return phase_; }
  /// The call, once checked: its TTL, its start (before the first byte could leave) and
  /// the lock's deadline before it.
  std::chrono::milliseconds ttl() const { return ttl_; }
  boot_clock::time_point start() const { return start_; }
  boot_clock::time_point old_deadline() const { return old_deadline_; }

  /// The call at `now` of a lock with facts `f`, for `ttl` under `cfg`: send, or refuse.
  extend_action check(const extension_facts& f, std::chrono::milliseconds ttl, const config& cfg,
                      boot_clock::time_point now);
  /// The round went out to `n` nodes, `out` of which took the request (the others refused
  /// it at once and count as failed); `now` for a verdict already decided.
  extend_action sent(std::size_t n, std::size_t out, boot_clock::time_point now);
  /// A node's answer at `now`: yes extended; no and held mean our token is not there;
  /// failed (a timeout, a lost connection, an error, a node that may not vote) is neither.
  extend_action voted(vote v, boot_clock::time_point now);
  /// Cancelled at `now` after the checks: the requests may still run on the nodes, so the
  /// deadline is cut as for any extension without a verdict. Nothing after the decision.
  extend_action cancel(boot_clock::time_point now);

 private:
  extend_action tally(boot_clock::time_point now);
  extend_action finish(const extension_verdict& v);

  phase phase_ = phase::idle;
  double factor_ = 0;
  std::chrono::milliseconds ttl_{};
  boot_clock::time_point start_{}, old_deadline_{};
  std::size_t n_ = 0, yes_ = 0, refused_ = 0, failed_ = 0;
};

}  // namespace redlock::detail
