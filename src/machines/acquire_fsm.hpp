// SPDX-License-Identifier: BSL-1.0
#pragma once
// The attempts of one acquisition call (a single lock or a set) as a state machine with no
// I/O: it takes events (a round decided, a release heard, the retry timer, cancellation,
// the client's shutdown) and answers with the action its driver must take (machine_action:
// send an attempt, hand out a win, give up a loss, retry, wait, complete). The driver
// (acquisition_op, drivers/acquisition.hpp, over a single lock's or a set's target) owns the
// sockets, the timer, the payloads and the local line; every decision about what comes next is made
// here, and test_rules feeds it events without a server.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "machines/action.hpp"
#include "quorum/rules.hpp"
#include "redlock/clock.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// An acquisition's part of its action.
struct acquire_detail {
  /// wait: the timer's generation (an expiry of an older one is stale).
  std::uint64_t generation = 0;
  /// Call off the waiting retry (an attempt starts now, or a wake made it stale).
  bool cancel_timer = false;
  /// complete after cancellation or shutdown: undo the attempt that was in flight first.
  bool release = false;
};

/// What the driver of an acquisition does next (machine_action): none; send_round (a new
/// attempt: new token, first round to every voter); won (the first round won in time:
/// hand out, or send the write-back); lost (undo the attempt on the nodes, then call
/// attempt_failed(`ec`)); retry (join the lines, then plan_retry); wait (arm the retry
/// timer for `delay`, as `detail.generation`); complete (with `ec`; success is the
/// hand-out after a write-back).
using acquire_action = machine_action<acquire_detail>;

/// What a failed attempt's retry depends on besides the clock, gathered by the driver.
struct retry_context {
  /// The retry delay, jittered (client_state::jitter).
  std::chrono::nanoseconds delay{};
  /// Behind the head of this client's local line for the resource: only the wait deadline,
  /// a promotion or a wake ends the wait.
  bool parked = false;
  /// Fair mode: the longest wait that keeps the call's place in the nodes' line.
  std::optional<std::chrono::nanoseconds> renew{};
};

class acquire_fsm {
 public:
  enum class phase : std::uint8_t {
    between,      ///< no round in flight: before the first attempt, or waiting to retry
    first_round,  ///< an attempt's first round is undecided
    write_back,   ///< a fenced win's write-back round is out
    done,         ///< completed: events change nothing
  };

  acquire_fsm() = default;
  /// `waiting`: async_lock (retries until `wait_deadline`) rather than one try.
  acquire_fsm(bool waiting, boot_clock::time_point wait_deadline)
      : waiting_(waiting), wait_deadline_(wait_deadline) {}

  phase state() const { return phase_; }
  /// Whether the current attempt's first round is decided (late answers may still come).
  bool decided() const { return phase_ != phase::first_round; }
  /// Whether a round of the current attempt is out and undecided.
  bool in_flight() const { return phase_ == phase::first_round || phase_ == phase::write_back; }
  boot_clock::time_point wait_deadline() const { return wait_deadline_; }

  /// The driver sent an attempt's first round.
  void attempt_sent() { phase_ = phase::first_round; }
  /// The driver sent the write-back round of a fenced win.
  void write_back_sent() { phase_ = phase::write_back; }
  /// The call ends here (handed out, shut down, no token): later events do nothing.
  void finish() { phase_ = phase::done; }

  /// The first round's tally: `v` the vote, `in_time` the grant rule at this moment,
  /// `lost_reason` why a lost vote failed (acquire_failure).
  acquire_action first_round_decided(vote_state v, bool in_time, error_code lost_reason) {
    if (phase_ != phase::first_round || v == vote_state::undecided) return {};
    phase_ = phase::between;
    if (v == vote_state::lost) return {.what = action_kind::lost, .ec = lost_reason};
    if (!in_time) return {.what = action_kind::lost, .ec = error::validity_exhausted};
    return {.what = action_kind::won};
  }
  /// The write-back's tally: its vote and the grant rule at this moment.
  acquire_action write_back_decided(vote_state v, bool in_time);
  /// An attempt failed for `reason`: complete (no wait, a failure no retry can mend, the
  /// wait is over: contended then reads wait_timeout); retry at once (`wait` of 0) when a
  /// release came while it was in flight or `retry_at_once` (a node refused for a token
  /// whose release this client has heard); else `retry`: the driver joins its lines and
  /// asks plan_retry how long to wait. A single try that lost only to nodes whose fencing
  /// counters await repair (`repair_bound` set) is tried once more, when the repair ends
  /// (a wake) or after `repair_bound` at the latest: nobody held the resource.
  acquire_action attempt_failed(error_code reason, boot_clock::time_point now,
                                bool retry_at_once = false,
                                std::optional<std::chrono::nanoseconds> repair_bound = {});
  /// How long to wait before the retry of a failed attempt.
  acquire_action plan_retry(boot_clock::time_point now, const retry_context& ctx);
  /// Wait for `delay` before the first attempt (a call queued behind a yielded release).
  acquire_action park(boot_clock::time_point now, std::optional<std::chrono::nanoseconds> renew);

  /// A release was heard: try now, or right after the round in flight, or once the
  /// last attempt's `outstanding` requests are back.
  acquire_action wake(std::size_t outstanding);
  /// Try after `delay` (cut at the wait deadline), or right after the round in flight.
  acquire_action wake_after(std::chrono::nanoseconds delay, boot_clock::time_point now);
  /// Moved to the head of the local line: poll after `delay` (jittered, at most `renew`).
  acquire_action promote(boot_clock::time_point now, std::chrono::nanoseconds delay,
                         std::optional<std::chrono::nanoseconds> renew);
  /// The retry timer of `generation` expired.
  acquire_action timer_fired(std::uint64_t generation, std::size_t outstanding);
  /// A late answer came back while no round is undecided; `outstanding` requests remain.
  acquire_action requests_back(std::size_t outstanding) {
    if (phase_ != phase::between || outstanding != 0 || !retry_when_idle_) return {};
    retry_when_idle_ = false;
    return {.what = action_kind::send_round};
  }
  /// Cancelled: complete with `cancelled`, undoing the attempt if a round was out
  /// (`sent`: an attempt was ever sent).
  acquire_action cancel(bool sent) { return stop(sent, error::cancelled); }
  /// The client shut down: complete with `shut_down` at once, as cancel() does. Not after
  /// the round in flight: shutdown has released what the client held and ended the
  /// waits, so a win decided later would be handed out and released by nobody, and a
  /// refusal would wait in a line nobody wakes.
  acquire_action client_closed(bool sent) { return stop(sent, error::shut_down); }

 private:
  acquire_action stop(bool sent, error_code why);
  acquire_action wait_for(std::chrono::nanoseconds delay);
  acquire_action start_if_free(std::size_t outstanding, bool cancel_timer);

  bool waiting_ = false;
  boot_clock::time_point wait_deadline_{};
  phase phase_ = phase::between;
  bool woken_ = false;               // woken while a round was in flight
  bool retried_for_repair_ = false;  // a single try's one retry after a fence repair
  bool retry_when_idle_ = false;     // a retry waits for the last attempt's requests
  std::uint64_t generation_ = 0;     // of the latest wait: older timers are stale
};

/// The retry delay, cut short so that the wait ends at `deadline` (never negative).
std::chrono::nanoseconds delay_within(std::chrono::nanoseconds delay, boot_clock::time_point now,
                                      boot_clock::time_point deadline);

/// The wait deadline of an acquisition call made at `now`: `now` for one try, never for
/// a wait of wait_forever (or beyond a century), else now + wait.
boot_clock::time_point wait_deadline(boot_clock::time_point now, bool waiting,
                                     std::chrono::milliseconds wait);

}  // namespace redlock::detail
