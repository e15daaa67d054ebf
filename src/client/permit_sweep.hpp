// SPDX-License-Identifier: BSL-1.0
#pragma once
// One sweep of a semaphore acquisition over its permits, as a state machine with no I/O:
// which permit to try next, and what the sweep's tries add up to. The driver
// (permit_op in semaphore.cpp) makes each try as a single-lock try and feeds its outcome
// here; between sweeps, acquire_fsm decides the waits. test_permit_sweep feeds it
// outcomes without a server.

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "redlock/error.hpp"

namespace redlock::detail {

using boost::system::error_code;

// ---- a semaphore's keys ------------------------------------------------------------------
//
// Every key of semaphore R starts with call_checks.hpp's semaphore_names, which plain calls
// refuse: "redlock:permit:{R}:<i>" for permit i, "redlock:permit:{R}:count" for the record of
// its count (after the client's key prefix). They are alike up to and including "{R}", so they
// hash to one slot whatever braces the key prefix or R hold: on a Redis Cluster one script may
// touch a permit and the record (and the fencing pair of that slot). A name that cannot be a
// hash tag (one starting with '}': "{}" is none) is refused for semaphores.

/// The resource name of permit `index` of semaphore `resource` (its lock's resource()).
std::string permit_key_name(std::string_view resource, std::size_t index);
/// The resource name of the nodes' record of semaphore `resource`'s count.
std::string permit_record_name(std::string_view resource);
/// Why `resource` cannot name a semaphore (empty: it can).
std::string semaphore_name_problem(std::string_view resource);
/// How long the record lives at least after a permit of `ttl` was granted or renewed: past
/// the permit's own expiry with room for a renewal (sent beside the permit's, not in the same
/// script) to arrive, so that the record outlives every permit key of its node.
inline std::chrono::milliseconds permit_record_keep(std::chrono::milliseconds ttl) {
  return 2 * ttl;
}

/// What the driver of a sweep does next.
struct sweep_step {
  enum class kind : unsigned char {
    try_permit,  ///< try permit `index` once (a single-lock try)
    won,         ///< the try of permit `index` won: hand it out
    failed,      ///< every permit was tried, none won: the attempt failed with `ec`
    end,         ///< an error no later sweep can change (`ec`): complete with it
  };
  kind what = kind::try_permit;
  std::size_t index = 0;
  error_code ec{};
};

class permit_sweep {
 public:
  explicit permit_sweep(std::size_t permits) : permits_(permits) {}

  /// A new sweep, first trying permit `first` (the driver draws it at random, so that
  /// concurrent acquirers spread over the permits), then the ones after it, wrapping.
  sweep_step start(std::size_t first);
  /// The try of the permit last asked for ended with `ec` (success: it won).
  sweep_step tried(error_code ec);

 private:
  std::size_t current() const { return (first_ + tried_) % permits_; }
  // The error of a sweep in which no permit won.
  error_code reason() const;

  std::size_t permits_;
  std::size_t first_ = 0, tried_ = 0;
  std::size_t contended_ = 0, wrong_type_ = 0;
  error_code other_{};
};

}  // namespace redlock::detail
