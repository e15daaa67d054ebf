#pragma once
// The acquire+release cycle the lock workloads (w1, w2, w4, memory) share: `concurrency`
// coroutines, each taking a distinct random resource with async_try_lock and releasing
// it, as an application written like the README would.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>

#include "alloc_counter.hpp"
#include "bench.hpp"
#include "redlock/client.hpp"

namespace redlock::bench {

struct cycle_plan {
  std::size_t concurrency = 1;
  /// Samples of cycles started before this much time has passed are dropped.
  seconds_f warmup{0};
  /// Cycles are started until this much time has passed after the warm-up...
  seconds_f duration{0};
  /// ...or until this many were started in the measured window (0: no limit).
  std::uint64_t max_ops = 0;
  std::chrono::milliseconds ttl{10000};
  std::string key_prefix;
};

struct cycle_result {
  std::uint64_t ops = 0;       ///< measured cycles that acquired and released
  std::uint64_t failures = 0;  ///< measured attempts whose acquire or release failed
  /// From the start of the measured window until its last cycle completed.
  seconds_f seconds{0};
  latency_samples acquire;
  latency_samples release;
  /// Heap counters when the window opened and when its last cycle completed.
  alloc::counts allocs_before;
  alloc::counts allocs_after;
  /// The first failure's message, for the human summary.
  std::string first_error;

  double failure_rate() const {
    const auto attempts = ops + failures;
    return attempts ? static_cast<double>(failures) / static_cast<double>(attempts) : 0.0;
  }
  double allocs_per_cycle() const;
  double alloc_bytes_per_cycle() const;
};

/// Runs the plan on `io` (which must run nothing else) with client `c`; returns when
/// every worker has finished. Throws what a worker threw.
cycle_result run_cycles(asio::io_context& io, redlock::client& c, const cycle_plan& plan);

/// Takes and releases one lock, waiting up to the TTL plus 10 s, so that measuring starts
/// only once the client can lock at all: a client with a restart guard holds freshly
/// started nodes back for a TTL. Throws std::runtime_error with the diagnostics if not.
void wait_until_lockable(asio::io_context& io, redlock::client& c, const bench_context& ctx);

/// After a failed attempt, continues from a fresh handler: a failure can complete inside
/// the call that started it, and a loop of such calls would otherwise grow the stack.
asio::awaitable<void> yield_after_failure();

/// Shuts `c` down and runs `io` until that is done.
void shut_down(asio::io_context& io, redlock::client& c);

/// "acquire p50/p99 12/34 us, release p50/p99 ..." for the stderr summaries.
std::string latency_text(const json_line& l);

}  // namespace redlock::bench
