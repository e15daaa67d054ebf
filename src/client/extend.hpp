#pragma once
// An extension on the quorum engine, for a single lock and for a set: the checks before
// anything is sent, the vote, and the extension rule (quorum/rules.hpp) applied to the
// lock's state before the caller hears of the outcome. The lock kind supplies only the
// payload (which keys, which script) and what an observer is told.

#include <algorithm>
#include <chrono>
#include <string>

#include "client/client_state.hpp"
#include "client/extend_decisions.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"

namespace redlock::detail {

/// `Lock` is lock or multi_lock; `Access` reaches its private state (token, ttl,
/// deadline, lost).
template <typename Lock, typename Access>
class extend_op_base : public quorum_op<client_state, void(error_code)> {
 public:
  extend_op_base(std::shared_ptr<client_state> s, diagnostics* diag, void_handler h)
      : quorum_op(std::move(s), diag, std::move(h)) {
    no_text_ = "not held by us (expired or taken)";
  }

 protected:
  /// Checks that `lk` may be extended by `ttl` and completes the op if not (false).
  /// Else records the start; the caller then writes payload_ and calls send().
  bool begin(Lock& lk, std::chrono::milliseconds ttl) {
    lk_ = &lk;
    was_lost_ = lk.lost();
    const auto now = boot_clock::now();
    auto check = check_extension(facts(lk), ttl, s_->cfg, now);
    if (check.refusal) {
      if (check.mark_lost) Access::lost(lk) = true;  // lost stays lost
      extra_ = std::move(check.detail);
      return complete(check.refusal), false;
    }
    ttl_ = ttl;
    start_ = now;
    old_deadline_ = lk.deadline();
    Access::extending(lk) = true;
    return true;
  }

  /// Sends payload_ (a call of `lua`) to every node; no node may take longer than the
  /// lock's validity left.
  void send(const script& lua) {
    watch_cancellation(cancel_with_effects);
    send_to_all(payload_, &lua, request_deadline(start_, s_->cfg.node_timeout, old_deadline_));
    on_tally();
  }

  Lock* lk_ = nullptr;
  bool was_lost_ = false;  // before this call: an observer hears of a loss it found
  std::chrono::milliseconds ttl_{};
  boot_clock::time_point start_{};
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

  bool counts(std::size_t i) override { return voter(i, ttl_); }

  vote classify(std::size_t, const resp::reply& r) override { return extension_answer(r); }

  void on_tally() override {
    const auto v =
        decide_extension(s_->size(), round_.yes, round_.no, round_.failed, boot_clock::now(),
                         start_, ttl_, old_deadline_, s_->cfg.drift_factor);
    if (v.decided) finish(v);
  }

  // Cancelled after the requests went out: they may still run on the nodes.
  void on_cancel() override {
    finish(abandoned_extension(error::cancelled, boot_clock::now(), start_, ttl_, old_deadline_,
                               s_->cfg.drift_factor));
  }

  // The lock's state changes before the caller hears of the outcome.
  void finish(const extension_verdict& v) {
    Access::extending(*lk_) = false;
    Access::deadline(*lk_) = v.deadline;
    if (!v.outcome) Access::ttl(*lk_) = ttl_;
    if (v.lost) Access::lost(*lk_) = true;
    complete(v.outcome);
  }

  boot_clock::time_point old_deadline_{};
};

}  // namespace redlock::detail
