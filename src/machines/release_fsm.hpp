// SPDX-License-Identifier: BSL-1.0
#pragma once
// A release (async_unlock of one lock or of a set) as a state machine with no I/O: it
// takes events (the round went out, a node answered or failed, cancellation) and answers
// with what its driver does next (nothing yet, or complete with an error code). The
// driver (release_op_base in release.hpp) owns the requests, the background releases of
// nodes that may not have run it, the wake-ups and the completion; what the answers
// mean is decide_release's (quorum/rules.hpp), asked here and nowhere else.
// test/unit/test_release.cpp feeds it events without a server.

#include <cstddef>
#include <cstdint>

#include "machines/action.hpp"
#include "quorum/round.hpp"
#include "quorum/rules.hpp"
#include "redlock/error.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// What the driver of a release does next: nothing yet, or complete with `ec`.
using release_action = machine_action<>;

/// Why a release may not go out (success: send it): the client shut down, the lock
/// object holds nothing, or it belongs to a client that no longer runs.
error_code release_refusal(bool closed, bool has_token, bool owns);

/// A single lock's compare-and-delete answer: 1 deleted, any other integer not ours,
/// anything else no usable answer.
inline vote release_answer(const resp::reply& r) {
  if (r.empty() || r[0].kind != resp::type::integer) return vote::failed;
  return r[0].integer == 1 ? vote::yes : vote::no;
}

/// A set's release answers with the number of its keys it deleted: any of them is a yes
/// (the others had expired), none is not ours.
inline vote set_release_answer(const resp::reply& r) {
  if (r.empty() || r[0].kind != resp::type::integer) return vote::failed;
  return r[0].integer >= 1 ? vote::yes : vote::no;
}

class release_fsm {
 public:
  enum class phase : std::uint8_t {
    sending,  ///< the round is being sent: refusals are counted by sent(), not one by one
    waiting,  ///< out, undecided
    done,     ///< completed: late answers change nothing
  };

  phase state() const { return phase_; }

  /// The round went out to `n` nodes, `out` of which took the request (the others refused
  /// it at once and count as failed). Decides already when nothing can change the outcome.
  release_action sent(std::size_t n, std::size_t out) {
    if (phase_ != phase::sending) return {};
    n_ = n;
    pending_ = out < n ? out : n;
    phase_ = phase::waiting;
    return tally();
  }

  /// A node's answer: yes deleted our key; no and held mean the key is not ours there
  /// (expired, or another owner's); failed (a timeout, a lost connection, an error or an
  /// unreadable reply) is neither, and only stops waiting for that node.
  release_action voted(vote v) {
    if (phase_ != phase::waiting || pending_ == 0 || v == vote::pending) return {};
    --pending_;
    if (v == vote::yes)
      ++deleted_;
    else if (v != vote::failed)
      ++absent_;
    return tally();
  }

  /// Cancelled: complete with `cancelled` at once (the requests already out run all the
  /// same; nothing is undone). After the decision it changes nothing.
  release_action cancel();

 private:
  release_action tally() {
    const release_verdict v = decide_release(n_, deleted_, absent_, pending_);
    if (!v.decided) return {};
    phase_ = phase::done;
    return release_action::completed(v.outcome);
  }

  phase phase_ = phase::sending;
  std::size_t n_ = 0, deleted_ = 0, absent_ = 0, pending_ = 0;
};

}  // namespace redlock::detail
