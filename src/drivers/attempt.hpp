// SPDX-License-Identifier: BSL-1.0
#pragma once
// What the drivers of acquisitions share, acquire_op (one resource, lock_ops.cpp) and
// lock_all_op (a set, multi.cpp): why an attempt failed, the retry timer and the fenced
// write-back's requests. What comes next is acquire_fsm's decision.

#include <fmt/format.h>

#include <array>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "machines/acquire_fsm.hpp"
#include "machines/lock_answer.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "redlock/error.hpp"
#include "waiting/lines.hpp"

namespace redlock::detail {

/// Node i's answer (`r`, or the failure `ec`) to the fenced write-back `sent`: an ack only if
/// the script raised the counters ({1, marker, ...}), every marker names the server that
/// answered (its counters are trusted: a raise on an incarnation that lost counters vouches
/// for nothing), and the node may still vote for a lock of `ttl`.
inline bool write_back_acked(const client_state& s, std::size_t i, const request& sent,
                             error_code ec, const resp::reply* r, std::chrono::milliseconds ttl) {
  bool ack = !ec && write_back_raised(*r) && s.votes(i, ttl, boot_clock::now());
  for (std::size_t m = 2; ack && m < r->size(); ++m) ack = marker_trusted(sent, (*r)[m]);
  return ack;
}

/// The driver of an acquisition's acquire_fsm (`fsm_`), shared by acquire_op and
/// lock_all_op as a base (`Op` is the op, which befriends this class): it tallies the
/// first round, carries out the machine's actions, owns the retry timer and runs the
/// fenced write-back round. The op supplies what differs: attempt() (build and send a
/// round), decide_tokens() (a fenced win's tokens, and whether they need the write-back),
/// start_write_back(), succeed() (hand the win out), fail_attempt(), repair_unmarked(),
/// abandon_attempt() (undo a lost or stopped round), the field opts_ and
/// the token noun (`tokens_noun`). On the strand; the op keeps itself alive across a wait with
/// a hold.
template <typename Op, typename Signature>
class attempt_driver : public quorum_op<client_state, Signature>, public acquisition {
  using base = quorum_op<client_state, Signature>;

 public:
  void end_at_shutdown() override {
    if (this->done_) return;
    // Guarded: the handler is posted, never run inside the shutdown's walk of the calls.
    this->run_guarded([this] { stop(fsm_.client_closed(this->sent_)); });
  }

 protected:
  attempt_driver(std::shared_ptr<client_state> s, diagnostics* diag, typename base::handler_type h)
      : base(std::move(s), diag, std::move(h)), strand_(&this->s_->strand) {}

  // quorum_op's hooks, the same for every acquisition.
  // Judged at the attempt's start, taken just before the round goes out: no clock read per
  // node. An answer is judged again when it comes, at that time (the handshake of a fresh
  // connection may have told more about the node meanwhile).
  bool should_send(std::size_t i) override { return this->voter(i, op().opts_.ttl, start_); }
  bool counts(std::size_t i) override { return this->voter(i, op().opts_.ttl, boot_clock::now()); }
  // A fenced yes from a node whose counters await repair set the keys but cannot count.
  std::size_t counted_yes() const override { return yes_votes(); }
  void on_tally() override { tally(); }
  void on_second_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    write_back_reply(i, ec, r);
  }
  void on_cancel() override { stop(fsm_.cancel(this->sent_)); }

  /// A closed client makes no new attempt (the io_context is going away and its connections'
  /// close failed our requests, without a shutdown's end of the calls): true when that
  /// completed the call.
  bool ended_by_close() {
    if (!this->s_->closed) return false;
    fsm_.finish();
    this->complete(error::shut_down, {});
    return true;
  }

  /// Draws the attempt's token with `draw`; without randomness from the kernel the call is
  /// refused rather than given a guessable token (false: it completed).
  template <typename Draw>
  bool drew_token(Draw&& draw) {
    try {
      draw();
      return true;
    } catch (const boost::system::system_error& e) {
      fsm_.finish();
      this->complete(e.code(), {});
      return false;
    }
  }

  /// Sends the attempt's round to every node. Validity counts from before the first byte can
  /// leave: now, at enqueue. A connection still being made (a fresh client) is waited for
  /// within the attempt.
  void send_attempt(std::string_view payload, const script* lua) {
    client_state& s = *this->s_;
    start_ = boot_clock::now();
    valid_until_ = validity_deadline(start_, op().opts_.ttl, s.cfg.drift_factor);
    this->send_to_all(payload, lua, request_deadline(start_, s.cfg.node_timeout, valid_until_),
                      valid_until_);
    tally();
  }

  /// A wake (a release, the line's head leaving): an attempt now if the machine says so.
  /// Guarded: an attempt decided at once completes from a posted handler.
  void wake_attempt() {
    const acquire_action next = fsm_.wake(this->outstanding_);
    if (next.detail.cancel_timer) cancel_retry();
    if (next.what != action_kind::send_round) return;
    this->run_guarded([this] { op().attempt(); });
  }

  /// Cancelled or shut down (`a` says which): completes now; an attempt whose round is out
  /// is undone behind it on every connection, and its late answers are still read.
  void stop(const acquire_action& a) {
    if (a.what != action_kind::complete) return;
    cancel_retry();
    if (a.detail.release) op().abandon_attempt(a.ec);
    this->complete(a.ec, {});
  }

  /// Starts an attempt's count of fenced answers.
  void begin_attempt() {
    fsm_.attempt_sent();
    marked_yes_ = unmarked_yes_ = 0;
    marked_.fill(false);
    lost_to_repair_ = false;
  }

  /// Node i's fenced yes: counted when its counters are trusted (`marked`), else it set
  /// the keys but its vote does not count.
  void count_fenced_yes(std::size_t i, bool marked) {
    marked_[i] = marked;
    marked ? ++marked_yes_ : ++unmarked_yes_;
  }

  /// The yes votes that count: with fencing, only marked nodes' (quorum_op::counted_yes).
  std::size_t yes_votes() const { return op().opts_.fenced ? marked_yes_ : op().round_.yes; }

  /// A tally of the first round (quorum_op::on_tally): decided yet, and what then.
  void tally() {
    Op& o = op();
    if (fsm_.decided()) return act(fsm_.requests_back(o.outstanding_));
    // With fencing, only nodes whose counters are trusted (marked) can make a majority.
    const fenced_tally t =
        tally_fenced(o.s_->size(), yes_votes(), o.opts_.fenced ? unmarked_yes_ : 0,
                     o.round_.held + o.round_.failed + o.round_.no);
    const vote_state v = t.state;
    if (v == vote_state::undecided) return;
    if (unmarked_yes_ > 0) o.repair_unmarked();
    lost_to_repair_ = t.lost_to_repair;
    if (v == vote_state::lost && unmarked_yes_ > 0) {
      o.extra_ = "; fence counters are being repaired on nodes that lost them";
      if (!o.s_->repair_problem.empty())
        o.extra_ += fmt::format(" (the last repair failed on {})", o.s_->repair_problem);
    }
    const error_code lost_reason =
        v == vote_state::lost ? failure_reason(o.round_.errors.first(o.s_->size()), o.round_.held)
                              : error_code{};
    act(fsm_.first_round_decided(v, v == vote_state::won && granted_in_time(), lost_reason));
  }

  /// How long a single try that lost only to nodes awaiting a fence repair waits for
  /// the repair (a read and a write round) before its one more try; none otherwise.
  std::optional<std::chrono::nanoseconds> repair_bound() const {
    if (!lost_to_repair_) return std::nullopt;
    return std::chrono::nanoseconds{2 * op().s_->cfg.node_timeout + op().s_->cfg.retry_delay};
  }

  /// Carries out what the state machine decided (carry_out.hpp).
  void act(const acquire_action& a) {
    if (a.detail.cancel_timer) cancel_retry();
    action_runner::carry_out(*this, a);
  }

  /// Arms the retry timer as `wait` says (nothing for another action); on expiry (not on
  /// cancellation) the machine judges whether the wait is still the latest.
  void retry_after(const acquire_action& wait) {
    if (wait.what != action_kind::wait) return;
    if (!retry_timer_) retry_timer_.emplace(*strand_);
    retry_timer_->expires_after(wait.delay);
    Op& o = op();
    retry_timer_->async_wait(
        [keep = typename Op::hold{&o}, &o, gen = wait.detail.generation](error_code ec) {
          if (!ec && !o.done_) o.act(o.fsm_.timer_fired(gen, o.outstanding_));
        });
  }

  /// Calls off a waiting retry, if any.
  void cancel_retry() {
    if (retry_timer_) retry_timer_->cancel();
  }

  /// The grant rule (quorum/rules.hpp): a majority's yes counts only while the validity
  /// of this attempt's keys is left (valid_until_, computed when the attempt was sent).
  bool granted_in_time() const { return detail::granted_in_time(boot_clock::now(), valid_until_); }

  /// Round two of a fenced acquisition: sends `payload` (the script raising the counters
  /// where our token still holds the keys) to every node, as request max_nodes + i; a
  /// node that cannot take it refuses.
  void send_write_back(std::string_view payload, const script* lua,
                       boot_clock::time_point valid_until) {
    Op& o = op();
    client_state& s = *o.s_;
    fsm_.write_back_sent();
    acks_ = refusals_ = 0;
    const auto deadline = request_deadline(boot_clock::now(), s.cfg.node_timeout, valid_until);
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!reqs2_) reqs2_ = std::make_unique<std::array<request, max_nodes>>();
      (*reqs2_)[i] = request{payload, lua, deadline, &o, max_nodes + i, false};
      if (s.nodes[i]->submit((*reqs2_)[i]))
        ++refusals_;
      else
        ++o.outstanding_;
    }
    write_back_tally();
  }

  /// An answer to request max_nodes + i (quorum_op::on_second_reply).
  void write_back_reply(std::size_t i, error_code ec, const resp::reply* r) {
    Op& o = op();
    if (fsm_.state() != acquire_fsm::phase::write_back || o.done_)
      return tally();  // a late reply of an old round
    write_back_acked(*o.s_, i, (*reqs2_)[i], ec, r, o.opts_.ttl) ? ++acks_ : ++refusals_;
    write_back_tally();
  }

  acquire_fsm fsm_;
  boot_clock::time_point start_{};        // the attempt's round left (validity counts from it)
  boot_clock::time_point valid_until_{};  // and when the keys it takes stop being valid

 private:
  // The machine's steps (carry_out.hpp). A retry comes only from attempt_failed, which
  // fail_attempt reads.
  friend action_runner;
  void do_send_round(const acquire_action&) { op().attempt(); }
  // A won first round, in time. Fenced, the tokens are the largest counters of the marked
  // nodes that said yes (decide_fences, through the op's decide_tokens): handed out at
  // once when a majority of marked nodes already holds each of them, else after the
  // write-back round.
  void do_won(const acquire_action&) {
    Op& o = op();
    if (o.opts_.fenced) {
      std::array<bool, max_nodes> counted{};
      for (std::size_t i = 0; i < o.s_->size(); ++i)
        counted[i] = o.round_.votes[i] == vote::yes && marked_[i];
      if (o.decide_tokens(counted)) return o.start_write_back();
    }
    o.succeed();
  }
  void do_lost(const acquire_action& a) { op().fail_attempt(a.ec); }
  void do_wait(const acquire_action& a) { retry_after(a); }
  void do_complete(const acquire_action& a) {
    if (a.ec) return op().complete(a.ec, {});
    op().succeed();
  }

  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  void write_back_tally() {
    Op& o = op();
    const vote_state v = decide(o.s_->size(), acks_, refusals_);
    // Not written back on a majority where the keys are still ours (another owner took
    // them, e.g. after we paused): the tokens must not be handed out.
    if (v == vote_state::lost)
      o.extra_ =
          fmt::format("; the fencing {} could not be confirmed on a majority", Op::tokens_noun);
    act(fsm_.write_back_decided(v, v == vote_state::won && granted_in_time()));
  }

  // Made on the first wait: a call that never retries (every try, most waits) does not
  // pay for a timer on the strand (two allocations).
  const strand_type* strand_;  // the client state's, which the op keeps alive
  std::optional<boot_timer> retry_timer_;
  // The write-back round's requests, made for a fenced acquisition's first write-back
  // only: an unfenced op does not pay for initialising them.
  std::unique_ptr<std::array<request, max_nodes>> reqs2_;
  std::size_t acks_ = 0, refusals_ = 0;
  std::size_t marked_yes_ = 0, unmarked_yes_ = 0;
  std::array<bool, max_nodes> marked_{};  // this attempt's fenced yes votes that count
  bool lost_to_repair_ = false;           // the last attempt: see tally()
};

}  // namespace redlock::detail
