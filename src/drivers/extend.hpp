// SPDX-License-Identifier: BSL-1.0
#pragma once
// An extension on the quorum engine, for a single lock and for a set: extend_fsm's
// actions carried out (the checks' refusal, the round, the lock's new state before the
// caller hears of the outcome). The lock kind supplies only the payload (which keys,
// which script) and what an observer is told.

#include <chrono>
#include <string>

#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "drivers/voted_op.hpp"
#include "machines/extend_decisions.hpp"
#include "machines/extend_fsm.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

/// `Lock` is lock or multi_lock; `Access` reaches its private state (token, ttl,
/// deadline, lost).
template <typename Lock, typename Access>
class extend_op_base : public voted_op {
 public:
  extend_op_base(std::shared_ptr<client_state> s, diagnostics* diag, void_handler h)
      : voted_op(std::move(s), diag, std::move(h)) {
    no_text_ = "not held by us (expired or taken)";
  }

 protected:
  /// Checks that `lk` may be extended by `ttl` and completes the op if not (false).
  /// Else records the start; the caller then writes payload_ and calls send().
  bool begin(Lock& lk, std::chrono::milliseconds ttl) {
    lk_ = &lk;
    was_lost_ = lk.lost();
    const extend_action a = fsm_.check(facts(lk), ttl, s_->cfg, boot_clock::now());
    if (a.what == action_kind::complete) {         // refused by the checks
      if (a.detail.lost) Access::lost(lk) = true;  // lost stays lost
      extra_ = a.detail.text;
      return complete(a.ec), false;
    }
    Access::extending(lk) = true;
    return true;
  }

  /// Sends payload_ (a call of `lua`) to every node; no node may take longer than the
  /// lock's validity left.
  void send(const script& lua) {
    watch_cancellation(cancel_with_effects);
    send_to_all(payload_, &lua,
                request_deadline(fsm_.start(), s_->cfg.node_timeout, fsm_.old_deadline()));
    act(fsm_.sent(s_->size(), outstanding_, boot_clock::now()));
  }

  /// When the call started (before the first byte could leave), for observers.
  boot_clock::time_point started() const { return fsm_.start(); }

  Lock* lk_ = nullptr;
  bool was_lost_ = false;  // before this call: an observer hears of a loss it found
  buffer payload_;

 private:
  // A lock object that holds nothing has no extension flag to read.
  extension_facts facts(Lock& lk) const {
    extension_facts f{.closed = s_->closed, .has_token = !Access::token(lk).empty()};
    f.owns = f.has_token && lk.owns();
    f.extending = f.owns && Access::extending(lk);
    f.lost = lk.lost();
    f.deadline = lk.deadline();
    return f;
  }

  bool counts(std::size_t i) override { return voter(i, fsm_.ttl(), boot_clock::now()); }

  vote answer(std::size_t, const resp::reply& r) override { return extension_answer(r); }

  void on_vote(vote v) override { act(fsm_.voted(v, boot_clock::now())); }

  // Cancelled after the requests went out: they may still run on the nodes.
  void on_cancel() override { act(fsm_.cancel(boot_clock::now())); }

  // The lock's state changes before the caller hears of the outcome.
  void act(const extend_action& a) { action_runner::carry_out(*this, a); }
  friend action_runner;
  void do_complete(const extend_action& a) {
    Access::extending(*lk_) = false;
    Access::deadline(*lk_) = a.detail.deadline;
    if (!a.ec) Access::ttl(*lk_) = fsm_.ttl();
    if (a.detail.lost) Access::lost(*lk_) = true;
    complete(a.ec);
  }

  extend_fsm fsm_;
};

}  // namespace redlock::detail
