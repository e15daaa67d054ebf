#pragma once
// What a waiting acquisition does between attempts, shared by acquire_op (one resource,
// client.cpp) and lock_all_op (a set, multi.cpp): why an attempt failed, and when the
// next one starts (after the retry delay, on a wake, or once the request slots are free).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "client/client_state.hpp"
#include "quorum/rules.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// Why a decided, lost attempt failed, from the nodes' errors and the "held" answers.
inline error_code failure_reason(const std::array<error_code, max_nodes>& errors, std::size_t n,
                                 std::size_t held) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (errors[i] == error::wrong_type) ++wrong;
  return acquire_failure(n, held, wrong);
}

/// The retry delay, cut short so that the wait ends at `deadline`.
inline std::chrono::nanoseconds delay_within(std::chrono::nanoseconds delay,
                                             boot_clock::time_point now,
                                             boot_clock::time_point deadline) {
  if (deadline - now < delay)
    delay = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
  return delay;
}

/// The state of an acquisition's attempts, as a base of the op: the attempt in flight
/// (decided, its fenced write-back round), the retry timer, and a wake that came early.
/// On the strand. The op keeps itself alive across a wait with the `keep` it hands to
/// wait_then.
class retry_loop {
 protected:
  explicit retry_loop(const strand_type& strand) : strand_(&strand) {}

  /// Calls `retry` after `delay`, unless a later wait or a wake made this one stale.
  template <typename Keep, typename Retry>
  void wait_then(std::chrono::nanoseconds delay, Keep keep, Retry retry) {
    if (!retry_timer_) retry_timer_.emplace(*strand_);
    retry_timer_->expires_after(delay);
    retry_timer_->async_wait([this, keep = std::move(keep), retry = std::move(retry),
                              gen = ++timer_gen_](error_code ec) {
      // A wait that expired just as a wake tried at once is stale too.
      if (!ec && gen == timer_gen_) retry();
    });
  }

  /// Whether an attempt may start now: not while `outstanding` requests of the last one
  /// still use the request slots (it starts when they are back, see idle_retry_due).
  bool slots_free(std::size_t outstanding) {
    if (outstanding == 0) return true;
    retry_when_idle_ = true;  // the request slots are still in use
    return false;
  }

  /// In the tally of a decided attempt: whether the retry put off by slots_free is due.
  bool idle_retry_due(std::size_t outstanding) {
    if (outstanding != 0 || !retry_when_idle_) return false;
    retry_when_idle_ = false;
    return true;
  }

  /// A wake (a release was heard): whether to try now. With an attempt in flight it is
  /// remembered (woken_) for right after; a waiting retry is called off.
  bool wake_now(std::size_t outstanding) {
    if (!decided_ || second_round_) {
      woken_ = true;  // right after the attempt in flight
      return false;
    }
    ++timer_gen_;
    cancel_retry();
    return slots_free(outstanding);
  }

  /// Round two of a fenced acquisition: sends `payload` (the script raising the
  /// counters where our token still holds the keys) to every node, as request
  /// max_nodes + i of `sink`; a node that cannot take it refuses. Returns how many
  /// requests went out, for the op's count of outstanding ones.
  std::size_t send_write_back(client_state& s, std::string_view payload, const script* lua,
                              boot_clock::time_point valid_until, request_sink* sink) {
    second_round_ = true;
    acks_ = refusals_ = 0;
    const auto deadline = request_deadline(boot_clock::now(), s.cfg.node_timeout, valid_until);
    std::size_t sent = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!reqs2_) reqs2_ = std::make_unique<std::array<request, max_nodes>>();
      (*reqs2_)[i] = request{payload, lua, deadline, sink, max_nodes + i, false};
      if (s.nodes[i]->submit((*reqs2_)[i]))
        ++refusals_;
      else
        ++sent;
    }
    return sent;
  }

  /// Node i's answer to the write-back: an ack only if the script raised the counters
  /// ({1, marker, ...}), every marker names the server that answered (its counters are
  /// trusted: a raise on an incarnation that lost counters vouches for nothing), and the
  /// node may still vote for a lock of `ttl`.
  void count_write_back(const client_state& s, std::size_t i, error_code ec, const resp::reply* r,
                        std::chrono::milliseconds ttl) {
    bool ack = !ec && (*r)[0].kind == resp::type::array && r->size() >= 3 &&
               r->size() == (*r)[0].size + 1 && (*r)[1].kind == resp::type::integer &&
               (*r)[1].integer == 1 && s.votes(i, ttl, boot_clock::now());
    for (std::size_t m = 2; ack && m < r->size(); ++m) ack = marker_trusted((*reqs2_)[i], (*r)[m]);
    ack ? ++acks_ : ++refusals_;
  }

  /// Whether the write-back has won or lost on `nodes` nodes yet; the round ends once
  /// it is decided.
  vote_state write_back_outcome(std::size_t nodes) {
    const vote_state v = decide(nodes, acks_, refusals_);
    if (v != vote_state::undecided) second_round_ = false;
    return v;
  }

  /// Calls off a waiting retry, if any.
  void cancel_retry() {
    if (retry_timer_) retry_timer_->cancel();
  }

  /// Cancelled: nothing is in flight or due any more.
  void settle() {
    decided_ = true;
    second_round_ = false;
    retry_when_idle_ = false;
  }

  // Made on the first wait: a call that never retries (every try, most waits) does not
  // pay for a timer on the strand (two allocations).
  const strand_type* strand_;  // the client state's, which the op keeps alive
  std::optional<boot_timer> retry_timer_;
  bool decided_ = false;
  bool second_round_ = false;  // a fenced write-back round is out
  bool retry_when_idle_ = false;
  bool woken_ = false;           // woken while an attempt was in flight
  std::uint64_t timer_gen_ = 0;  // bumped per wait and by a wake: older waits are stale

 private:
  // The write-back round's requests, made for a fenced acquisition's first write-back
  // only: an unfenced op does not pay for initialising them.
  std::unique_ptr<std::array<request, max_nodes>> reqs2_;
  std::size_t acks_ = 0, refusals_ = 0;
};

}  // namespace redlock::detail
