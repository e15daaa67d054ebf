#pragma once
// The Redlock arithmetic, pure and clock-free so it can be tested exhaustively:
// majorities, drift, validity deadlines and when a vote is decided.

#include <chrono>
#include <cstddef>

#include "redlock/clock.hpp"

namespace redlock::detail {

/// Votes needed out of n nodes.
constexpr std::size_t quorum(std::size_t n) { return n / 2 + 1; }

/// Clock drift allowance for a TTL: ttl * factor + 2 ms (the 2 ms cover the
/// millisecond resolution of Redis expiry on each side).
inline std::chrono::nanoseconds drift(std::chrono::milliseconds ttl, double factor) {
  const auto scaled = std::chrono::duration<double, std::nano>(ttl) * factor;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(scaled) + std::chrono::milliseconds{2};
}

/// End of validity of a lock whose attempt started (first byte enqueued) at `start`:
/// start + ttl - drift. The validity left at time t is deadline - t.
inline boot_clock::time_point validity_deadline(boot_clock::time_point start,
                                                std::chrono::milliseconds ttl, double factor) {
  return start + ttl - drift(ttl, factor);
}

enum class vote_state { undecided, won, lost };

/// Decides a vote among n nodes given `yes` votes and `no` definite refusals or
/// failures: won once a majority said yes, lost once a majority can no longer say yes.
constexpr vote_state decide(std::size_t n, std::size_t yes, std::size_t no) {
  if (yes >= quorum(n)) return vote_state::won;
  if (n - no < quorum(n)) return vote_state::lost;
  return vote_state::undecided;
}

}  // namespace redlock::detail
