// SPDX-License-Identifier: BSL-1.0
#pragma once
// One batch renewal round as a state machine with no I/O: it takes events (the round went
// out, a node answered for every lock of the batch, a node failed, the client shut down)
// and tells its driver what to do next (nothing yet, decide each lock, or complete with
// nothing to decide). The driver (batch_extend_op in renewal.cpp) owns the payload, the
// requests and the keepers' entries; every vote it hears is counted here, and what the
// votes make of one lock is decide_renewal's (renewal_decisions.hpp). test_renew_claim
// feeds it events without a server.

#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "machines/action.hpp"
#include "machines/renewal_decisions.hpp"
#include "redlock/clock.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

/// What the driver of a renewal round does next: nothing while nodes are still out, else
/// complete. Every node is in then: with no `ec` each live lock's outcome() is taken; with
/// `shut_down` nothing is decided (the client shut down).
using renewal_action = machine_action<>;

class renewal_fsm {
 public:
  enum class phase : std::uint8_t {
    idle,       ///< the round has not gone out
    in_flight,  ///< sent: answers are being counted
    done,       ///< decided or abandoned: later events change nothing
  };

  /// A round to `nodes` nodes renewing `locks` locks with `ttl` (drift `factor`).
  renewal_fsm(std::size_t nodes, std::size_t locks, std::chrono::milliseconds ttl, double factor)
      : n_(nodes), ttl_(ttl), factor_(factor), yes_(locks), no_(locks) {}

  phase state() const { return phase_; }
  /// When the round went out: validity counts from here.
  boot_clock::time_point start() const { return start_; }
  std::chrono::milliseconds ttl() const { return ttl_; }

  /// The round was enqueued at `start`, before its first byte could leave.
  void sent(boot_clock::time_point start);
  /// Node i answered for every lock, in batch order: 1 renewed it, anything else did not
  /// (the token is not there). Answers of another length are no answer: a failure.
  void answered(std::size_t i, std::span<const std::int64_t> codes);
  /// Node i gave no usable answer: refused, lost, timed out, an error, held back.
  void failed(std::size_t i);
  /// The client shut down: the keepers are stopped, so no lock is to be decided; the
  /// round still completes only once every node is in, since its requests may still run.
  void shut_down() { abandoned_ = true; }
  /// After each event: whether the round is over, and what then.
  renewal_action tally();

  /// Lock j's outcome (decide): its schedule `t` and deadline before the round, decided
  /// at `now`.
  renewal_step outcome(std::size_t j, const renewal_times& t, boot_clock::time_point old_deadline,
                       boot_clock::time_point now) const;
  /// Lock j's votes so far.
  renewal_votes votes(std::size_t j) const {
    return {.n = n_, .yes = yes_[j], .no = no_[j], .failed = failed_};
  }

 private:
  // Whether node i's answer or failure is the first heard of it this round.
  bool first_word(std::size_t i);

  std::size_t n_;
  std::chrono::milliseconds ttl_;
  double factor_;
  phase phase_ = phase::idle;
  boot_clock::time_point start_{};
  std::bitset<max_nodes> in_;  // nodes whose answer or failure was counted
  std::size_t failed_ = 0;
  bool abandoned_ = false;
  std::vector<std::uint16_t> yes_;
  std::vector<std::uint16_t> no_;
};

}  // namespace redlock::detail
