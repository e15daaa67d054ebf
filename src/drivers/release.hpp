// SPDX-License-Identifier: BSL-1.0
#pragma once
// A release on the quorum engine, for a single lock (unlock_op, lock_ops.cpp) and for a set
// (unlock_all_op, multi.cpp): the checks before anything is sent, the round to every
// node, and release_fsm's actions carried out. The lock kind supplies the payload, how a
// reply reads (answer()), what it takes from the lock object, who is woken and how a
// node that may not have run the release gets it in the background.

#include <string_view>

#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "drivers/voted_op.hpp"
#include "machines/release_fsm.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

class release_op_base : public voted_op {
 public:
  release_op_base(std::shared_ptr<client_state> s, diagnostics* diag, void_handler h)
      : voted_op(std::move(s), diag, std::move(h)) {
    no_text_ = "not held by us (expired or taken)";
    reports_ = false;  // a release is not an observer event
  }

 protected:
  /// The checks before a release: false (and completed) if it may not go out.
  bool may_release(bool has_token, bool owns) {
    const error_code refusal = release_refusal(s_->closed, has_token, owns);
    if (refusal) complete(refusal);
    return !refusal;
  }

  /// Sends `payload` (a call of `lua`) to every node, whatever its standing: a node held
  /// back from voting may still hold the key. Then the caller wakes its local waiters and
  /// calls sent().
  void send(std::string_view payload, const script& lua) {
    watch_cancellation(cancel_with_effects);
    send_to_all(payload, &lua, request_deadline(boot_clock::now(), s_->cfg.node_timeout));
  }

  /// The round is out: the machine may decide at once (every node refused it).
  void sent() { act(fsm_.sent(s_->size(), outstanding_)); }

 private:
  void on_vote(vote v) override { act(fsm_.voted(v)); }
  void on_cancel() override { act(fsm_.cancel()); }

  void act(const release_action& a) { action_runner::carry_out(*this, a); }
  friend action_runner;
  void do_complete(const release_action& a) { complete(a.ec); }

  release_fsm fsm_;
};

/// The release of one lock (async_unlock; a leadership's resignation, which deletes the
/// leader's record with it): the lock's data taken out of the lock object, one payload to
/// every node, then the local waiters woken. The kind writes the payload and says how a
/// node that may not have run it gets it in the background (on_unsent).
class lock_release_op : public release_op_base {
 public:
  using release_op_base::release_op_base;

 protected:
  /// Takes `lk` over for a release named `verb`: false (and completed) if it may not go out.
  bool take(lock& lk, const char* verb) {
    verb_ = verb;
    if (diag_) subject_ = lk.resource();
    if (!may_release(!lock_access::token(lk).empty(), lk.owns())) return false;
    // The lock object is emptied now: its destructor must not release it again.
    data_ = lock_access::take(lk);
    s_->unhold(*data_);
    key_ = data_->key();
    token_ = data_->token();
    return true;
  }

  /// Sends `payload` (a call of `lua`) to every node. The release is queued first on every
  /// connection: a local waiter woken now sends its SET after it.
  void release(std::string_view payload, const script& lua) {
    send(payload, lua);
    s_->wake_waiter(key_, token_);
    sent();
  }

  /// Whether the released lock is a semaphore's permit (released by permit_release_script).
  bool permit() const { return !data_->record_key.empty(); }

  std::string_view key_, token_;  // the released lock's

 private:
  vote answer(std::size_t, const resp::reply& r) override { return release_answer(r); }

  lock_ptr data_;  // the released lock's, freed with the op
};

}  // namespace redlock::detail
