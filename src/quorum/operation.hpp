// SPDX-License-Identifier: BSL-1.0
#pragma once
// The quorum engine's operation: one request per node and round, replies recorded into a
// round (quorum/round.hpp) as they are parsed and classified by the lock kind, the
// rules (quorum/rules.hpp) consulted on each tally. A lock kind supplies the payload,
// how a reply is classified and what a tally means; sending, counting, describing,
// cancellation, completion and the op's lifetime are written once, here.
//
// Lifetime, one rule for every op (quorum/lifetime.hpp): the op is created with new and
// deletes itself once it has completed, no connection holds one of its requests any more
// (late replies are still read), and no pending handler (a retry timer, a cancellation hop)
// holds it.
//
// `State` is the client's shared state (client_state): it gives the strand, the node
// connections (`nodes`, `size()`), their `addresses`, the observer (`obs`) and
// `server_hint` for server error texts. Everything
// runs on the strand but cancellation, which hops onto it.

#include <array>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "connection/connection.hpp"
#include "quorum/completion.hpp"
#include "quorum/lifetime.hpp"
#include "quorum/observed.hpp"
#include "quorum/round.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/observer.hpp"
#include "util/pool.hpp"

namespace redlock::detail {

/// The engine's part that does not depend on the handler's signature: rounds, requests,
/// counting and describing. quorum_op adds the handler.
template <typename State>
class quorum_core : public request_sink, public op_lifetime {
 public:
  quorum_core(std::shared_ptr<State> s, diagnostics* diag) : s_(std::move(s)), diag_(diag) {}

 protected:
  /// Sends `payload` to every node that should_send(), as request i of node i (a new
  /// round: the last one's answers are forgotten). The caller must not start a round
  /// while requests of the last one are outstanding (they use the same slots). A node
  /// still connecting gets until `connecting_deadline`, when later than `deadline`: its
  /// request waits for the handshake, which a fresh client's first call must not count
  /// against the node's answer time.
  void send_to_all(std::string_view payload, const script* lua, boot_clock::time_point deadline,
                   boot_clock::time_point connecting_deadline = {}) {
    begin_round();
    for (std::size_t i = 0; i < s_->size(); ++i) {
      if (!should_send(i)) continue;  // recorded as failed
      const bool waits = connecting_deadline > deadline && s_->nodes[i]->connecting();
      send_to(i, payload, lua, waits ? connecting_deadline : deadline);
    }
  }

  /// Starts a round whose requests go out with send_to(): every node pending.
  void begin_round() {
    reqs_.fit(s_->size());
    round_.reset(s_->size());
    replied_at_.begin(s_->obs && reports_);
    sent_ = true;
  }

  /// Sends node i its request of this round (payloads may differ per node; a node gets at
  /// most one request per round). False if its connection refused it (recorded as failed).
  bool send_to(std::size_t i, std::string_view payload, const script* lua,
               boot_clock::time_point deadline) {
    reqs_[i] = request{payload, lua, deadline, this, i, false};
    if (auto ec = s_->nodes[i]->submit(reqs_[i])) {
      round_.fail(i, ec);
      on_failed(i);
      on_unsent(i);
      return false;
    }
    round_.sent_to[i] = true;
    ++outstanding_;
    return true;
  }

  /// A second round's request to node i (index max_nodes + i), in `slot`: answers go to
  /// on_second_reply. False if the connection refused it at once.
  bool send_second(request& slot, std::size_t i, std::string_view payload, const script* lua,
                   boot_clock::time_point deadline) {
    slot = request{payload, lua, deadline, this, max_nodes + i, false};
    if (s_->nodes[i]->submit(slot)) return false;
    ++outstanding_;
    return true;
  }

  /// Whether to send to node i at all; a node that may not vote is recorded as failed.
  virtual bool should_send(std::size_t) { return true; }
  /// Whether node i's answer counts now (the handshake may have changed its standing
  /// while the request waited for the connection).
  virtual bool counts(std::size_t) { return true; }
  /// Node i's answer to this round's request (not an error reply).
  virtual vote classify(std::size_t i, const resp::reply& r) = 0;
  /// A reply was recorded and the op has not completed: decide if it can.
  virtual void on_tally() = 0;
  /// Replies to requests of a second round (index - max_nodes).
  virtual void on_second_reply(std::size_t, error_code, const resp::reply*) {}
  /// Node i's request may not have run: not accepted by its connection, lost with it, or
  /// timed out (it may run later, or never). Also after the op completed.
  virtual void on_unsent(std::size_t) {}
  /// Node i gave no usable answer this round (its reason is in round_): refused by its
  /// connection, a transport failure, an error reply, an answer that may not count, or
  /// one classify() could not read. Also after the op completed.
  virtual void on_failed(std::size_t) {}
  /// The cancellation slot fired (on the strand, before completion).
  virtual void on_cancel() = 0;
  /// Called once, just before the handler is completed with `ec`.
  virtual void before_complete(error_code) {}
  /// The yes votes that count towards the majority, for the describing text.
  virtual std::size_t counted_yes() const { return round_.yes; }
  /// The failure text of `ec` for the diagnostics: describe()'s, unless a kind words it.
  virtual std::string failure_message(error_code ec) const { return describe(ec); }

  /// Whether a fence marker in node i's answer to this round names the server that
  /// answered (request::answered_by): only then are its counters trusted.
  bool trusted_marker(std::size_t i, const resp::node& marker) const {
    return marker_trusted(reqs_[i], marker);
  }
  /// The incarnation of the server that answered node i's request of this round, while
  /// its reply is being classified (null if unknown).
  const std::string* reqs_answered_by(std::size_t i) const { return reqs_[i].answered_by; }
  /// Node i may not vote now (restart guard, replica, duplicate), for `why`.
  void held_back(std::size_t i, std::string why) { round_.fail(i, error::node_held_back, why); }

  /// Whether node i may vote at `now` for a lock of `ttl` (State::votes); records why not.
  bool voter(std::size_t i, std::chrono::milliseconds ttl, boot_clock::time_point now) {
    if (s_->votes(i, ttl, now)) return true;
    std::string why;  // formatted only for a node held back
    s_->votes(i, ttl, now, &why);
    held_back(i, std::move(why));
    return false;
  }

  /// Node i's answer in this round, for an observer, with its latency from `round_start`
  /// to `replied` (zero: no reply).
  node_reply observed(std::size_t i, boot_clock::time_point round_start,
                      boot_clock::time_point replied) const {
    return observed_reply(round_, i, s_->addresses[i], round_start, replied);
  }

  /// The round's answers, for an observer: one per node, latency from `round_start`.
  std::span<const node_reply> node_replies(std::array<node_reply, max_nodes>& out,
                                           boot_clock::time_point round_start) const {
    return observed_replies(round_, replied_at_, {s_->addresses.data(), s_->size()}, out,
                            round_start);
  }

  /// For an observer: an async_extend of `resource` that ended with `ec` (with this round's
  /// answers when it was sent at `start`), and the loss it found when `lost_now`.
  void report_extension(std::string_view resource, error_code ec, boot_clock::time_point start,
                        bool lost_now) const {
    std::array<node_reply, max_nodes> replies;
    const auto elapsed = sent_ ? micros(boot_clock::now() - start) : std::chrono::microseconds{0};
    const auto nodes = sent_ ? node_replies(replies, start) : std::span<const node_reply>{};
    report_extension_to(*s_->obs, resource, ec, elapsed, nodes, lost_now);
  }

  /// The caller's diagnostics: on failure the describing text and each node's answer;
  /// on success nothing (cleared, nothing formatted or allocated).
  void record_diagnostics(error_code ec) const {
    diag_->nodes.clear();
    if (!ec) return diag_->message.clear();
    diag_->message = failure_message(ec);
    if (!per_node(ec)) return;
    const std::size_t n = s_->size();
    diag_->nodes.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      diag_->nodes.push_back(
          diagnosed_node(round_, i, s_->addresses[i], s_->nodes[i]->last_problem()));
  }

  /// Whether the outcome is worth each node's answer: requests went out, and the call
  /// was not refused before (a shut-down client's half-sent round says nothing).
  bool per_node(error_code ec) const {
    return sent_ && !is_argument_error(ec) && ec != error::shut_down;
  }

  std::string describe(error_code ec) const {
    std::array<node_label, max_nodes> labels;
    const std::size_t n = s_->size();
    for (std::size_t i = 0; i < n; ++i)
      labels[i] = {s_->addresses[i], s_->nodes[i]->last_problem()};
    const round_wording w{.verb = verb_,
                          .subject = subject_,
                          .no_text = no_text_,
                          .counted_yes = counted_yes(),
                          .per_node = per_node(ec),
                          .hint = &State::server_hint};
    return detail::describe(round_, {labels.data(), n}, ec, w) + extra_;
  }

  std::shared_ptr<State> s_;
  diagnostics* diag_;
  asio::cancellation_slot slot_;
  fleet_array<request> reqs_;  // sized to the fleet by the first round
  round round_;
  // Kept only with an observer and for ops that report them (reports_).
  reply_times replied_at_;
  bool reports_ = true;
  bool sent_ = false;
  // The failure text: "could not <verb_> "<subject_>": ...<extra_>", formatted only on
  // failure and only with a diagnostics object.
  const char* verb_ = "lock";
  std::string subject_;
  std::string extra_;
  const char* no_text_ = "refused";

  /// The slot handler of watch_cancellation (quorum_op): hops onto the strand.
  struct cancel_handler {
    cancel_handler(quorum_core* op, asio::cancellation_type_t honoured)
        : op_(op), honoured_(honoured) {}
    void operator()(asio::cancellation_type_t type) {
      if ((type & honoured_) == asio::cancellation_type::none) return;
      // Cancellation must be emitted from the op's executor or the handler's (as for
      // any Asio operation); hop onto the strand before touching the op. The slot is
      // cleared on completion, so op_ is alive whenever this runs.
      quorum_core* op = op_;
      asio::dispatch(op->s_->strand, [op, h = hold{op}] {
        if (!op->done_) op->on_cancel();
      });
    }
    quorum_core* op_;
    asio::cancellation_type_t honoured_;
  };

 private:
  void on_reply(std::size_t i, error_code ec, const resp::reply* r) final {
    // The user's handler may run inline from on_tally() and re-enter this op through
    // another connection (shutdown closes them all): only the outermost call may delete.
    hold h{this};
    --outstanding_;
    if (i >= max_nodes) return on_second_reply(i - max_nodes, ec, r);
    replied_at_.stamp(i);
    if (ec) {
      round_.fail(i, ec);
      on_unsent(i);
    } else if ((*r)[0].is_error()) {
      round_.error_reply(i, (*r)[0].text);
    } else if (counts(i)) {  // if not, counts() recorded why: even a yes is no vote
      round_.count(i, classify(i, *r));
    }
    if (round_.votes[i] == vote::failed) on_failed(i);
    if (!done_) on_tally();
  }
};

template <typename State, typename Signature>
class quorum_op;

template <typename State, typename... Args>
class quorum_op<State, void(error_code, Args...)> : public quorum_core<State> {
  using core = quorum_core<State>;

 public:
  using handler_type = erased_handler<void(error_code, Args...)>;
  using completion_type = completion<void(error_code, Args...)>;

  /// Constructed in the initiating call: work on the handler's executor is counted from
  /// here until the handler is handed over.
  quorum_op(std::shared_ptr<State> s, diagnostics* diag, handler_type h)
      : core(std::move(s), diag), handler_(std::move(h), this->s_->strand.get_inner_executor()) {}
  /// For a handler taken earlier (a template, so that `{}` means "no handler" above).
  template <std::same_as<completion_type> C>
  quorum_op(std::shared_ptr<State> s, diagnostics* diag, C c)
      : core(std::move(s), diag), handler_(std::move(c)) {}

 protected:
  using core::before_complete;
  using core::diag_;
  using core::done_;
  using core::initiating_;
  using core::record_diagnostics;
  using core::s_;
  using core::slot_;

  /// Completes the user's handler on its executor. The op may live on until its last
  /// request comes back.
  void complete(error_code ec, Args... args) {
    if (done_) return;
    done_ = true;
    before_complete(ec);
    if (slot_.is_connected()) slot_.clear();
    if (diag_) record_diagnostics(ec);
    if (!handler_) return;  // an op that completes to nobody (renewal, repair, batch)
    // Decided inside the initiating call (every node refused at once): the handler
    // must not run inside it, or a retry loop would recurse without bound.
    if (initiating_) return handler_.post(ec, std::move(args)...);
    // On the handler's own executor: inline when this thread already runs it.
    handler_.dispatch(ec, std::move(args)...);
  }

  /// Hands the handler `ec` now (posted) while the op carries on to nobody: for a
  /// cancellation that must not wait for the replies, when the op still has to undo what
  /// it took once they are in.
  void complete_now(error_code ec, Args... args) {
    // Forgotten too: the slot's signal may end with the handler.
    if (slot_.is_connected()) std::exchange(slot_, {}).clear();
    if (handler_) handler_.post(ec, std::move(args)...);
  }

  /// Connects the handler's cancellation slot for the types in `honoured` (the others are
  /// ignored, as Asio's filters do); the emitter may run on another executor, so the op
  /// only reacts once on the strand, if still alive.
  void watch_cancellation(asio::cancellation_type_t honoured) {
    slot_ = handler_.slot();
    if (!slot_.is_connected()) return;
    slot_.template emplace<typename core::cancel_handler>(this, honoured);
  }

  completion_type handler_;
};

/// The hop of launch_op onto the strand: runs `start(*op)` guarded. It names its
/// allocator itself (the pool) rather than through asio::bind_allocator: a binder
/// specialises the associated executor, which makes asio::dispatch wrap the hop in a
/// work_dispatcher (a tracked copy of the strand made and destroyed per call).
template <typename Op, typename Start>
struct launch_hop {
  using allocator_type = pool_allocator<void>;
  allocator_type get_allocator() const noexcept { return {}; }
  void operator()() {
    op->run_guarded([&] { start(*op); });
  }
  Op* op;
  Start start;
};

/// Runs `start(*op)` on the strand, guarded (quorum_op::run_guarded), for an op made with
/// new: it frees itself by quorum_op's rule. `strand` must outlive the dispatch (the op's
/// state keeps it). The hop is allocated from the pool. Through the strand's own dispatch,
/// not asio::dispatch: that one goes through strand_executor_service::do_execute, which asks
/// the any_io_executor under the strand for its blocking property, and Asio 1.81 returns
/// that answer in a heap allocation (any_executor_base::query_fn_non_void): one allocation
/// per lock call and per unlock. The strand's dispatch runs the hop in place as well when
/// the strand, or the io_context under it, is running in this thread.
template <typename Op, typename Start>
void launch_op(Op* op, const strand_type& strand, Start start) {
  strand.dispatch(launch_hop<Op, Start>{op, std::move(start)}, pool_allocator<void>{});
}

}  // namespace redlock::detail
