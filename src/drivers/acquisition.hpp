// SPDX-License-Identifier: BSL-1.0
#pragma once
// Acquisition, written once: acquisition_op is the one operation that takes a lock of any
// kind, over its target, which supplies only what differs between kinds. Three targets:
// single_target (one resource; single_target.hpp, for lock_ops.cpp), sweep_target (a
// semaphore's permit, one permit a try; semaphore.cpp) and set_target (a set taken all or
// none; multi.cpp). The op owns the rest: the call's checks and start, each attempt's round
// (validity counts from the moment it leaves), the tally of the answers (with fencing, only
// marked nodes' yes votes count), the fenced write-back round, acquire_fsm's actions carried
// out, the retry timer, what a lost attempt does next, wakes, cancellation, shutdown and
// completion.
//
// What a target `Target<Op>` supplies (as a base of the op, which befriends it; it reaches
// the op's engine through op()): opts_ and wait_; `tokens_noun`; check() (the arguments'
// problem), subject() (the name in failure texts), name_keys(), queue_behind_yield();
// per attempt, begin_target_attempt(), draw_token() and write_attempt() (the payload and
// its script); read_answer() (a node's answer as a vote), failed_node(), repair_unmarked();
// decide_tokens() and start_write_back() for a fenced win; succeed() (the hand-out);
// abandon_attempt() (the undo); after a lost attempt refused_after_loss(),
// next_try_after_loss() (another try of the same attempt, as a sweep's next window),
// retry_now(), unmarked_hashes(), after_loss(), wait_for_release() and retry_plan(); end_call()
// before the completion, forget_waits() when freed unfinished; `verb` and failure_text() for
// the failure texts. `lock_part` and `waiting_part` name the bases that reach the op too (the
// target's own, or one it builds on; the one through which its waiting hears wakes).

#include <fmt/format.h>

#include <array>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

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

/// An attempt's fenced yes votes: those of nodes whose counters are trusted (marked) count,
/// the others set the keys but do not.
struct fenced_yes {
  std::size_t marked = 0, unmarked = 0;
  std::array<bool, max_nodes> counts{};  // per node: a yes that counts
  bool lost_to_repair = false;           // the attempt lost only to unmarked nodes

  void begin() { *this = fenced_yes{}; }
  /// The first round's count (`yes`: the round's yes votes): fenced, only marked nodes' count.
  fenced_tally tally(std::size_t nodes, bool fenced, std::size_t yes, std::size_t against) const {
    return tally_fenced(nodes, fenced ? marked : yes, fenced ? unmarked : 0, against);
  }
  void count(std::size_t i, bool trusted) {
    counts[i] = trusted;
    trusted ? ++marked : ++unmarked;
  }
  /// How long a single try that lost only to nodes awaiting a fence repair waits for the
  /// repair (a read and a write round) before its one more try; none otherwise.
  std::optional<std::chrono::nanoseconds> repair_bound(const config& cfg) const {
    if (!lost_to_repair) return std::nullopt;
    return std::chrono::nanoseconds{2 * cfg.node_timeout + cfg.retry_delay};
  }
};

/// The failure text's note for an attempt lost to unmarked nodes' votes.
inline std::string repair_note(const client_state& s) {
  std::string note = "; fence counters are being repaired on nodes that lost them";
  if (!s.repair_problem.empty())
    note += fmt::format(" (the last repair failed on {})", s.repair_problem);
  return note;
}

/// The fenced write-back round: its requests (made for a fenced acquisition's first
/// write-back only: an unfenced op does not pay for initialising them) and its count.
struct write_back_round {
  std::unique_ptr<std::array<request, max_nodes>> reqs;
  std::size_t acks = 0, refusals = 0;

  void begin() { acks = refusals = 0; }

  request& slot(std::size_t i) {
    if (!reqs) reqs = std::make_unique<std::array<request, max_nodes>>();
    return (*reqs)[i];
  }
};

/// A timer on the strand made on its first wait: a call that never waits (every try, most
/// waits) does not pay for one (two allocations).
class lazy_timer {
 public:
  explicit lazy_timer(const strand_type& strand) : strand_(&strand) {}

  template <typename Handler>
  void wait(std::chrono::nanoseconds delay, Handler h) {
    if (!timer_) timer_.emplace(*strand_);
    timer_->expires_after(delay);
    timer_->async_wait(std::move(h));
  }
  void cancel() {
    if (timer_) timer_->cancel();
  }

 private:
  const strand_type* strand_;  // the client state's, which the op keeps alive
  std::optional<boot_timer> timer_;
};

template <typename Result, template <typename> class Target>
class acquisition_op final : public quorum_op<client_state, void(error_code, Result)>,
                             public acquisition,
                             public Target<acquisition_op<Result, Target>> {
  using base = quorum_op<client_state, void(error_code, Result)>;
  using target = Target<acquisition_op>;
  friend target;
  friend typename target::lock_part;
  friend typename target::waiting_part;
  friend action_runner;

 public:
  template <typename... TargetArgs>
  acquisition_op(std::shared_ptr<client_state> s, diagnostics* diag, typename base::handler_type h,
                 TargetArgs&&... args)
      : base(std::move(s), diag, std::move(h)),
        target(std::forward<TargetArgs>(args)...),
        retry_timer_(this->s_->strand) {
    this->verb_ = target::verb;
  }
  // Freed unfinished (its io_context went away): the client's lists must not name it.
  ~acquisition_op() override { this->forget_waits(); }

  void start() {  // on the strand, inside run_guarded (launch_op)
    if (this->diag_) this->subject_ = this->subject();
    if (this->s_->closed) return this->complete(error::shut_down, Result{});
    if (auto problem = this->check(this->s_->cfg)) {
      this->extra_ = ": " + problem.why;
      return this->complete(problem.code, Result{});
    }
    this->name_keys();
    fsm_ =
        acquire_fsm{this->wait_, wait_deadline(boot_clock::now(), this->wait_, this->opts_.wait)};
    this->watch_cancellation(cancel_with_effects);
    this->s_->lines.begin_call(*this);  // until before_complete: shutdown ends it
    if (this->queue_behind_yield()) return;
    attempt();
  }

  void end_at_shutdown() override {
    if (this->done_) return;
    // Guarded: the handler is posted, never run inside the shutdown's walk of the calls.
    this->run_guarded([this] { stop(fsm_.client_closed(this->sent_)); });
  }

 private:
  // quorum_op's hooks. Judged at the attempt's start, taken just before the round goes out: no
  // clock read per node. An answer is judged again when it comes, at that time (the handshake of a
  // fresh connection may have told more about the node meanwhile).
  bool should_send(std::size_t i) override { return this->voter(i, this->opts_.ttl, start_); }
  bool counts(std::size_t i) override { return this->voter(i, this->opts_.ttl, boot_clock::now()); }
  vote classify(std::size_t i, const resp::reply& r) override { return this->read_answer(i, r); }
  void on_failed(std::size_t i) override { this->failed_node(i); }
  // With fencing only marked nodes' yes votes make a majority: a yes from a node whose
  // counters await repair set the keys but cannot count.
  std::size_t counted_yes() const override {
    return this->opts_.fenced ? fenced_.marked : this->round_.yes;
  }
  void on_tally() override { tally(); }
  // An answer to the write-back's request max_nodes + i.
  void on_second_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    if (fsm_.state() != acquire_fsm::phase::write_back || this->done_)
      return tally();  // a late reply of an old round
    const bool ack = write_back_acked(*this->s_, i, write_back_.slot(i), ec, r, this->opts_.ttl);
    ack ? ++write_back_.acks : ++write_back_.refusals;
    write_back_tally();
  }
  void on_cancel() override { stop(fsm_.cancel(this->sent_)); }
  void before_complete(error_code ec) override {
    this->s_->lines.end_call(*this);
    this->s_->forget_repair_wait(this);
    this->end_call(ec);
  }
  std::string failure_message(error_code ec) const override {
    return this->failure_text(ec, this->describe(ec));
  }

  /// One attempt: a new token, and the target's round to every node that may vote. A closed
  /// client makes no new attempt (the io_context is going away and its connections' close
  /// failed our requests, without a shutdown's end of the calls).
  void attempt() {
    if (this->s_->closed) return refuse(error::shut_down);
    fsm_.attempt_sent();
    fenced_.begin();
    this->begin_target_attempt();
    // Without randomness from the kernel the call is refused rather than given a guessable
    // token.
    try {
      this->draw_token();
    } catch (const boost::system::system_error& e) {
      return refuse(e.code());
    }
    const script* lua = this->write_attempt();
    // Validity counts from before the first byte can leave: now, at enqueue. A connection
    // still being made (a fresh client) is waited for within the attempt.
    client_state& s = *this->s_;
    start_ = boot_clock::now();
    valid_until_ = validity_deadline(start_, this->opts_.ttl, s.cfg.drift_factor);
    this->send_to_all(this->payload_, lua,
                      request_deadline(start_, s.cfg.node_timeout, valid_until_), valid_until_);
    tally();
  }

  /// A wake (a release, the line's head leaving): an attempt now if the machine says so.
  /// Guarded: an attempt decided at once completes from a posted handler.
  void wake_attempt() {
    const acquire_action next = fsm_.wake(this->outstanding_);
    if (next.detail.cancel_timer) retry_timer_.cancel();
    if (next.what != action_kind::send_round) return;
    this->run_guarded([this] { attempt(); });
  }

  /// Cancelled or shut down (`a` says which): completes now; an attempt whose round is out
  /// is undone behind it on every connection, and its late answers are still read.
  void stop(const acquire_action& a) {
    if (a.what != action_kind::complete) return;
    retry_timer_.cancel();
    if (a.detail.release) this->abandon_attempt(a.ec);
    this->complete(a.ec, Result{});
  }

  /// A tally of the first round (quorum_op::on_tally): decided yet, and what then.
  void tally() {
    if (fsm_.decided()) return act(fsm_.requests_back(this->outstanding_));
    const round& r = this->round_;
    const fenced_tally t =
        fenced_.tally(this->s_->size(), this->opts_.fenced, r.yes, r.held + r.failed + r.no);
    const vote_state v = t.state;
    if (v == vote_state::undecided) return;
    if (fenced_.unmarked > 0) this->repair_unmarked();
    fenced_.lost_to_repair = t.lost_to_repair;
    if (v == vote_state::lost && fenced_.unmarked > 0) this->extra_ = repair_note(*this->s_);
    const error_code lost_reason = v == vote_state::lost
                                       ? failure_reason(r.errors.first(this->s_->size()), r.held)
                                       : error_code{};
    act(fsm_.first_round_decided(v, v == vote_state::won && granted_in_time(), lost_reason));
  }

  /// A lost attempt: undone, then what the machine decides (complete, wait for a fence
  /// repair, wait for a release, retry after the delay).
  void fail_attempt(error_code reason) {
    this->abandon_attempt(reason);
    if (const error_code refused = this->refused_after_loss()) return refuse(refused);
    if (this->next_try_after_loss(reason)) return;  // a sweep's next window, or a grant
    const auto now = boot_clock::now();
    const auto repair_wait = this->wait_ ? std::nullopt : fenced_.repair_bound(this->s_->cfg);
    const acquire_action next = fsm_.attempt_failed(reason, now, this->retry_now(), repair_wait);
    if (next.what == action_kind::complete) return this->complete(next.ec, Result{});
    if (repair_wait) {
      // Once more when the repairs end (the timer bounds the wait).
      const std::vector<std::string_view> hashes = this->unmarked_hashes();
      retry_after(next);
      if (!this->s_->await_repairs(this, hashes, [this] {
            if (!this->done_) wake_attempt();
          }))
        act(fsm_.wake_after(std::chrono::nanoseconds::zero(), now));  // it ended already
      return;
    }
    this->after_loss();
    if (next.what == action_kind::wait) return retry_after(next);
    // Held by others: the target waits for a release (the delay stays the fallback for lost
    // announcements and expiries).
    if (reason == error::contended) this->wait_for_release();
    retry_after(fsm_.plan_retry(now, this->retry_plan()));
  }

  /// Ends the call with `ec`, no attempt being out.
  void refuse(error_code ec) {
    fsm_.finish();
    this->complete(ec, Result{});
  }

  /// Carries out what the state machine decided (carry_out.hpp).
  void act(const acquire_action& a) {
    if (a.detail.cancel_timer) retry_timer_.cancel();
    action_runner::carry_out(*this, a);
  }

  /// Arms the retry timer as `wait` says (nothing for another action); on expiry (not on
  /// cancellation) the machine judges whether the wait is still the latest.
  void retry_after(const acquire_action& wait) {
    if (wait.what != action_kind::wait) return;
    retry_timer_.wait(wait.delay, [keep = typename base::hold{this}, this,
                                   gen = wait.detail.generation](error_code ec) {
      if (!ec && !this->done_) act(fsm_.timer_fired(gen, this->outstanding_));
    });
  }

  /// The grant rule (quorum/rules.hpp): a majority's yes counts only while this attempt's
  /// keys are valid (valid_until_, computed when the attempt was sent).
  bool granted_in_time() const { return detail::granted_in_time(boot_clock::now(), valid_until_); }

  /// Round two of a fenced acquisition: sends `payload` (the script raising the counters
  /// where our token still holds the keys) to every node, as request max_nodes + i; a
  /// node that cannot take it refuses.
  void send_write_back(std::string_view payload, const script* lua) {
    client_state& s = *this->s_;
    fsm_.write_back_sent();
    write_back_.begin();
    const auto deadline = request_deadline(boot_clock::now(), s.cfg.node_timeout, valid_until_);
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!this->send_second(write_back_.slot(i), i, payload, lua, deadline))
        ++write_back_.refusals;
    write_back_tally();
  }

  void write_back_tally() {
    const vote_state v = decide(this->s_->size(), write_back_.acks, write_back_.refusals);
    // Not written back on a majority where the keys are still ours (another owner took
    // them, e.g. after we paused): the tokens must not be handed out.
    if (v == vote_state::lost)
      this->extra_ =
          fmt::format("; the fencing {} could not be confirmed on a majority", target::tokens_noun);
    act(fsm_.write_back_decided(v, v == vote_state::won && granted_in_time()));
  }

  // The machine's steps (carry_out.hpp). A retry comes only from attempt_failed, which
  // fail_attempt reads.
  void do_send_round(const acquire_action&) { attempt(); }
  // A won first round, in time. Fenced, the tokens are the largest counters of the marked
  // nodes that said yes (decide_fences, through the target's decide_tokens): handed out at
  // once when a majority of marked nodes already holds each of them, else after the
  // write-back round.
  void do_won(const acquire_action&) {
    if (this->opts_.fenced) {
      std::array<bool, max_nodes> counted{};
      for (std::size_t i = 0; i < this->s_->size(); ++i)
        counted[i] = this->round_.votes[i] == vote::yes && fenced_.counts[i];
      if (this->decide_tokens(counted)) return this->start_write_back();
    }
    this->succeed();
  }
  void do_lost(const acquire_action& a) { fail_attempt(a.ec); }
  void do_wait(const acquire_action& a) { retry_after(a); }
  void do_complete(const acquire_action& a) {
    if (a.ec) return this->complete(a.ec, Result{});
    this->succeed();
  }

  acquire_fsm fsm_;
  boot_clock::time_point start_{};        // the attempt's round left (validity counts from it)
  boot_clock::time_point valid_until_{};  // and when the keys it takes stop being valid
  lazy_timer retry_timer_;
  fenced_yes fenced_;
  write_back_round write_back_;
};

/// Makes an acquisition op over `Target` and starts it on the strand; it frees itself by the
/// engine's rule (quorum/lifetime.hpp).
template <typename Result, template <typename> class Target, typename Handler,
          typename... TargetArgs>
void launch_acquisition(std::shared_ptr<client_state> s, diagnostics* diag, Handler h,
                        TargetArgs&&... args) {
  using op_type = acquisition_op<Result, Target>;
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new op_type(std::move(s), diag, std::move(h), std::forward<TargetArgs>(args)...),
            strand, [](op_type& op) { op.start(); });
}

}  // namespace redlock::detail
