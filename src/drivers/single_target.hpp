// SPDX-License-Identifier: BSL-1.0
#pragma once
// A single lock's target for acquisition_op (acquisition.hpp): one resource's payloads, how a
// node's answer reads (a shared resource's modes, a fenced counter, a permit's count), the
// undo, the hand-out, and its place in the local line. lock_ops.cpp takes single locks over it;
// a semaphore's sweep (semaphore.cpp) builds on it, one permit a try.

#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/call_checks.hpp"
#include "client/client_state.hpp"
#include "drivers/single_lock.hpp"
#include "machines/acquire_fsm.hpp"
#include "machines/lock_answer.hpp"
#include "machines/shared_decisions.hpp"
#include "quorum/rules.hpp"
#include "scripts/script_calls.hpp"
#include "waiting/local_waiter.hpp"
#include "waiting/wake.hpp"

namespace redlock::detail {

// A single lock's target. A semaphore's sweep_target derives from it and sets permit_ (which
// makes each attempt a permit's try) and hides the hooks it words otherwise.
template <typename Op>
class single_target : protected single_lock_call, public local_waiter<Op> {
 protected:
  using waiting_part = local_waiter<Op>;
  using lock_part = single_target;
  static constexpr std::string_view tokens_noun = "token";
  static constexpr const char* verb = "lock";

  single_target(buffer resource, lock_options opts, bool wait)
      : single_lock_call(std::move(resource), opts, wait) {}

  call_problem check(const config& cfg) const {
    return check_lock_call(resource_, opts_, wait_, cfg, permit_ != nullptr);
  }
  // A name too long to use is quoted by its start: the diagnostics must not copy it.
  std::string subject() const { return quoted_resource(resource_); }
  void name_keys() {
    single_lock_call::name_keys(*op().s_, *this);
    call_start_ = boot_clock::now();
  }
  bool queue_behind_yield() { return waiting_part::queue_behind_yield(); }

  void begin_target_attempt() {
    repair_asked_ = false;
    retry_now_ = false;
    modes_.begin_attempt();
  }
  void draw_token() { new_token(*op().s_, *this); }
  const script* write_attempt() {
    client_state& s = *op().s_;
    if (opts_.fenced) repair_unmarked_nodes(s);
    // Fair mode: a waiting call takes (or renews) its place in the nodes' line, its last
    // attempt too (the same script, so the same permissions, whatever the timing); a
    // single try only checks that nobody waits.
    const script* lua =
        single_lock_call::write_attempt(payload_, s.cfg, opts_.fair && wait_, this->line_ticket);
    ++attempts_;
    return lua;
  }

  void repair_unmarked() { repair_pair_once(*op().s_); }

  // A lost permit try's node that never answered may have run it.
  void failed_node(std::size_t i) {
    if (late_undo_ && may_have_taken(vote::failed, op().round_.errors[i], true))
      undo_late(*op().s_, i);
  }

  vote read_answer(std::size_t i, const resp::reply& r) {
    Op& o = op();
    const lock_answer a = permit_ ? read_permit_answer(r, opts_.fenced)
                                  : read_lock_answer(r, opts_.fenced, opts_.fair);
    switch (a.what) {
      case lock_answer::kind::other_count:
        // Nothing was taken there; the acquisition's failure rule weighs these nodes.
        permit_->nodes_count = a.count;
        o.round_.fail(i, error::permit_count_mismatch,
                      fmt::format("holds the semaphore with {} permits", a.count));
        return vote::failed;
      case lock_answer::kind::held:
      case lock_answer::kind::readers:
      case lock_answer::kind::writer_waiting:
        if (permit_) permit_->held_answer(*o.s_, i, a, permit_->tries);
        return held(i, a);
      case lock_answer::kind::waiter_first:
        o.round_.texts[i] = "an earlier waiter is first in the line (fair mode)";
        return vote::held;
      case lock_answer::kind::malformed:
        return vote::failed;
      case lock_answer::kind::taken:
        break;
    }
    if (late_undo_) {
      undo_late(*o.s_, i);  // a lost permit try's late yes
      return vote::yes;
    }
    if (!opts_.fenced) return vote::yes;
    // Counted only if the marker names the server that answered.
    fence_[i] = a.counter;
    const bool marked = o.trusted_marker(i, *a.marker);
    o.fenced_.count(i, marked);
    if (marked) return vote::yes;
    // One that answers after the decision (a slow node behind the majority) is repaired
    // too: a node that always lags would otherwise never be.
    if (o.fsm_.decided()) repair_unmarked();
    o.round_.texts[i] =
        "set the key, but its fencing counters await repair (new, or restarted or promoted "
        "since they were last repaired), so its vote does not count";
    return vote::yes;
  }

  // A fenced win's token T, from the `counted` nodes' counters: true if the write-back must
  // raise it first (acquisition_op::do_won).
  bool decide_tokens(const std::array<bool, max_nodes>& counted) {
    return decide_fences(op().s_->size(), counted, 1, fence_, {&fence_token_, 1});
  }

  // Round two of a fenced acquisition: raise the counter to T on every node where the
  // key still holds our token. Only then is T a valid fencing token.
  void start_write_back() {
    client_state& s = *op().s_;
    if (s.before_fence_writeback) s.before_fence_writeback(resource_);
    payload2_.clear();
    write_fence_raise(payload2_, key_, fence_keys_, token_, field_, fence_token_);
    op().send_write_back(payload2_, &fence_raise_script);
  }

  // A win (fenced: its token T, 0 unfenced), at once or after its write-back.
  void succeed() { op().complete({}, won_lock()); }
  // The call ends with this attempt's win: the lock it hands out.
  lock won_lock() {
    Op& o = op();
    o.fsm_.finish();
    if (o.s_->obs) {
      report_attempt({}, fence_token_);
      report_call(*o.s_->obs, {}, fence_token_);  // while resource_ still names the lock
    }
    this->leave_line();  // while key_ still names the line
    return make_lock(o.s_, o.valid_until_, fence_token_);
  }

  // A lost or stopped attempt: reported, and undone where it may have taken the key.
  void abandon_attempt(error_code reason) {
    if (op().s_->obs) report_attempt(reason, 0);
    undo(*op().s_, op().round_);
  }

  // Refused by this client's own lease or lock of the other mode: waiting would wait on
  // itself (a writer's lock never comes while its reader's lease is renewed).
  error_code refused_after_loss() {
    const std::string_view why =
        modes_.waits_on_itself(op().s_->holds(key_, !opts_.shared, boot_clock::now()));
    if (why.empty()) return {};
    op().extra_ = fmt::format(": {}", why);
    return error::upgrade_refused;
  }
  // One resource: a lost attempt is the call's (a sweep tries its next window instead).
  bool next_try_after_loss(error_code&) { return false; }
  // Refused by a node that has not run a release heard of already: at once.
  bool retry_now() const { return retry_now_; }
  std::vector<std::string_view> unmarked_hashes() const {
    return {op().s_->repair_hash(fence_keys_)};
  }
  void after_loss() {
    if (modes_.mark_writer_waiting()) mark_waiting(*op().s_, modes_.readers());
    if (std::exchange(retry_now_, false)) retried_for_ = std::move(stale_holder_);
  }
  // Held by others: this client's waiters for the resource form a line (local_waiter).
  void wait_for_release() { this->join_local_line(); }
  // Parked behind the head, it is woken by the wait deadline or a promotion; in fair mode
  // it also renews its place on the nodes in time.
  retry_context retry_plan() {
    client_state& s = *op().s_;
    return {.delay = s.jitter(s.cfg.retry_delay),
            .parked = this->parked(),
            .renew = renew_interval(s.cfg)};
  }

  void end_call(error_code ec) {
    client_state& s = *op().s_;
    this->leave_line();
    if (opts_.fair) {
      // Leave the nodes' line: everywhere but where this call's win already took its place.
      std::array<bool, max_nodes> mask{};
      for (std::size_t i = 0; i < s.size(); ++i) mask[i] = ec || op().round_.votes[i] != vote::yes;
      leave_fair_line(s, mask);
    }
    if (s.obs && !reported_) report_call(*s.obs, ec, 0);
  }
  void forget_waits() {}
  std::string failure_text(error_code, std::string text) const { return text; }

  buffer payload_;

 private:
  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  // Held: the answers about the modes of a shared resource are mode_refusals'; an ordinary
  // holder's is judged here.
  vote held(std::size_t i, const lock_answer& a) {
    if (const std::string_view why = modes_.held(i, a); !why.empty()) {
      if (op().diag_) op().round_.texts[i] = why;
      return vote::held;
    }
    return a.named ? held_by(i, a.holder) : vote::held;
  }

  // A node still held by a token whose release this client has heard has not run that
  // release yet (announcements and local releases reach the nodes at different times):
  // the attempt is tried again at once, not after the retry delay (once per release).
  vote held_by(std::size_t i, std::string_view holder) {
    client_state& s = *op().s_;
    if (op().diag_) op().round_.texts[i] = held_by_text(holder, s.holds_token(key_, holder));
    if (s.wakes && holder != retried_for_ && s.wakes->released(key_, holder)) {
      retry_now_ = true;
      stale_holder_.assign(holder);
    }
    return vote::held;
  }

  void report_attempt(error_code outcome, std::uint64_t fence) {
    Op& o = op();
    std::array<node_reply, max_nodes> replies;
    const attempt_event e{.resource = resource_,
                          .fenced = opts_.fenced,
                          .attempt = attempts_,
                          .outcome = outcome,
                          .elapsed = micros(boot_clock::now() - o.start_),
                          .fence = fence,
                          .nodes = o.node_replies(replies, o.start_)};
    o.s_->obs->on_attempt(e);
  }

  std::string payload2_;
  // Fencing.
  std::array<std::uint64_t, max_nodes> fence_{};
  std::uint64_t fence_token_ = 0;
  // Refused by a node still holding a token heard released: retry at once, once per token.
  bool retry_now_ = false;
  std::string stale_holder_, retried_for_;
  mode_refusals modes_{opts_.shared};  // shared locks: what this attempt heard of the other mode
};

}  // namespace redlock::detail
