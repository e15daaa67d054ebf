// SPDX-License-Identifier: BSL-1.0
#pragma once
// The engine hands a lock kind a node's answer in three hooks (classify a reply, a node
// failed, tally after recording), none of which alone sees every answer exactly once
// with the round already recorded. A state machine wants one event per answer: this
// base turns the hooks into on_vote(v), called once per node and round, after
// the round has recorded the answer (so a completion it decides describes every node).
// Failures while the round is still being sent reach on_vote too: the machine counts
// those from the number of requests that went out, and ignores them one by one.

#include <utility>

#include "client/client_state.hpp"
#include "quorum/operation.hpp"

namespace redlock::detail {

/// A quorum_op that hears each node's answer once, as on_vote. Not a template, so that
/// the lock kinds' templates (extend_op_base) name its members without `this->`.
class voted_op : public quorum_op<client_state, void(error_code)> {
 protected:
  using quorum_op::quorum_op;

  /// What node i's reply says (not an error reply).
  virtual vote answer(std::size_t i, const resp::reply& r) = 0;
  /// A node answered `v`, or failed (a timeout, a lost connection, an error reply, an
  /// unreadable reply, a node that may not vote).
  virtual void on_vote(vote v) = 0;

 private:
  // The vote is held until on_tally: the round records it only after classify returns.
  vote classify(std::size_t i, const resp::reply& r) final { return heard_ = answer(i, r); }

  // Every failure comes here, an unreadable reply that classify held too: it must not
  // count twice.
  void on_failed(std::size_t) final {
    heard_ = vote::pending;
    on_vote(vote::failed);
  }

  void on_tally() final {
    if (heard_ != vote::pending) on_vote(std::exchange(heard_, vote::pending));
  }

  vote heard_ = vote::pending;
};

}  // namespace redlock::detail
