// SPDX-License-Identifier: BSL-1.0
#pragma once
// A single lock's call as a member of its client's local line of waiters for one resource
// (waiter_lines, lines.hpp): only the head polls the nodes, a local release wakes the head at
// once, and the next call moves up when the head leaves. The nodes still decide who holds the
// lock. What the call does when woken is its acquisition machine's decision.

#include <chrono>
#include <utility>

#include "client/client_state.hpp"
#include "waiting/lines.hpp"
#include "waiting/wake.hpp"

namespace redlock::detail {

/// The waiter part of a single lock's acquisition (`Op`, acquisition_op over single_target,
/// which befriends this class): it has the call's key_, wait_, opts_, fsm_, s_ and done_, and
/// the op's act, retry_after and wake_attempt.
template <typename Op>
class local_waiter : public waiter {
 public:
  /// A local release of this resource (or the head leaving the line): try now if waiting, or
  /// right after the attempt in flight. Now, not from the timer's handler: the SET joins the
  /// release queued in this same turn and leaves in the same write, right behind it on every
  /// connection.
  void wake() override {
    if (!op().done_) op().wake_attempt();
  }

  void wake_after(std::chrono::nanoseconds delay) override {
    if (!op().done_) op().act(op().fsm_.wake_after(delay, boot_clock::now()));
  }

  /// Moved to the head of the line: start polling (a local release still wakes it).
  void promote() override {
    Op& o = op();
    if (o.done_) return;
    o.act(o.fsm_.promote(boot_clock::now(), o.s_->jitter(o.s_->cfg.retry_delay),
                         o.renew_interval(o.s_->cfg)));
  }

 protected:
  /// A release of this resource was just left to its announcement, so that other clients'
  /// waiters get their turn (wake_hub::hand_off_locally): a new call of this client joins the
  /// back of its line instead of racing them, and waits to be woken as its head. True when it
  /// did (no attempt in flight: a wake tries at once).
  bool queue_behind_yield() {
    Op& o = op();
    client_state& s = *o.s_;
    if (!o.wait_ || o.opts_.fair || !s.wakes || !s.wakes->yielding(o.key_)) return false;
    if (!s.lines.has_line(o.key_)) return false;
    join_local_line();
    o.retry_after(o.fsm_.park(boot_clock::now(), std::nullopt));
    return true;
  }

  /// Joins the line, once. It is in arrival order; fair calls are placed by their ticket
  /// among the fair ones, the order of the nodes' line (waiter_lines::join).
  void join_local_line() {
    if (std::exchange(queued_, true)) return;
    if (op().s_->lines.join(op().key_, *this)) op().s_->line_formed(op().key_);
  }

  /// Leaves the line, if in it: the next call becomes the head and polls.
  void leave_line() {
    if (!std::exchange(queued_, false)) return;
    client_state& s = *op().s_;
    const auto left = s.lines.leave(op().key_, *this);
    if (left.gone) s.line_gone(op().key_);
    if (left.promoted) left.promoted->promote();
  }

  /// In the line behind its head: only the wait deadline (or a promotion) wakes it.
  bool parked() const {
    return queued_ && op().s_->lines.head(op().key_) != static_cast<const waiter*>(this);
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  bool queued_ = false;
};

}  // namespace redlock::detail
