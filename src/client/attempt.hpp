#pragma once
// What the drivers of acquisitions share, acquire_op (one resource, client.cpp) and
// lock_all_op (a set, multi.cpp): why an attempt failed, the retry timer and the fenced
// write-back's requests. What comes next is acquire_fsm's decision.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "client/acquire_fsm.hpp"
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

/// The I/O of an acquisition's attempts, as a base of the op (the driver of an
/// acquire_fsm, `fsm_`): the retry timer, and the requests of a fenced write-back round
/// and their count. On the strand. The op keeps itself alive across a wait with the
/// `keep` it hands to arm().
class retry_loop {
 protected:
  explicit retry_loop(const strand_type& strand) : strand_(&strand) {}

  /// Arms the retry timer as `wait` says; on expiry (not on cancellation) calls
  /// `expired(generation)`, for acquire_fsm::timer_fired to judge.
  template <typename Keep, typename Expired>
  void arm(const acquire_action& wait, Keep keep, Expired expired) {
    if (!retry_timer_) retry_timer_.emplace(*strand_);
    retry_timer_->expires_after(wait.delay);
    retry_timer_->async_wait([keep = std::move(keep), expired = std::move(expired),
                              gen = wait.generation](error_code ec) {
      if (!ec) expired(gen);
    });
  }

  /// Calls off a waiting retry, if any.
  void cancel_retry() {
    if (retry_timer_) retry_timer_->cancel();
  }

  /// Round two of a fenced acquisition: sends `payload` (the script raising the
  /// counters where our token still holds the keys) to every node, as request
  /// max_nodes + i of `sink`; a node that cannot take it refuses. Returns how many
  /// requests went out, for the op's count of outstanding ones.
  std::size_t send_write_back(client_state& s, std::string_view payload, const script* lua,
                              boot_clock::time_point valid_until, request_sink* sink) {
    fsm_.write_back_sent();
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

  /// The write-back's vote on `nodes` nodes so far.
  vote_state write_back_votes(std::size_t nodes) const { return decide(nodes, acks_, refusals_); }

  /// Whether an answer belongs to a write-back round still out.
  bool in_write_back() const { return fsm_.state() == acquire_fsm::phase::write_back; }

  acquire_fsm fsm_;

 private:
  // Made on the first wait: a call that never retries (every try, most waits) does not
  // pay for a timer on the strand (two allocations).
  const strand_type* strand_;  // the client state's, which the op keeps alive
  std::optional<boot_timer> retry_timer_;
  // The write-back round's requests, made for a fenced acquisition's first write-back
  // only: an unfenced op does not pay for initialising them.
  std::unique_ptr<std::array<request, max_nodes>> reqs2_;
  std::size_t acks_ = 0, refusals_ = 0;
};

}  // namespace redlock::detail
