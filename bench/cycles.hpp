// SPDX-License-Identifier: BSL-1.0
#pragma once
// The acquire+release cycle the lock workloads (w1, w2, w4, memory, fenced) share:
// `concurrency` coroutines, each taking a distinct random resource with async_try_lock and
// releasing it, as an application written like the README would.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloc_counter.hpp"
#include "bench.hpp"
#include "redlock/client.hpp"

namespace redlock::bench {

class node_links;

/// When the first round of each fenced acquisition was decided, per worker: the client's
/// `detail::set_fence_writeback_hook` hook calls note() between the two rounds (not
/// at all when the write-back is skipped). It finds the worker by the 4 hex digits after
/// the run's key prefix.
class round_marks {
 public:
  round_marks(std::string key_prefix, std::size_t workers)
      : prefix_(std::move(key_prefix)), at_(workers) {}
  /// The hook for the client's configuration; `this` must outlive the client.
  std::function<void(std::string_view)> hook();
  void note(std::string_view resource);
  bench_clock::time_point at(std::size_t worker) const { return at_[worker]; }

 private:
  std::string prefix_;
  std::vector<bench_clock::time_point> at_;
};

struct cycle_plan {
  std::size_t concurrency = 1;
  /// Samples of cycles started before this much time has passed are dropped.
  seconds_f warmup{0};
  /// Cycles are started until this much time has passed after the warm-up...
  seconds_f duration{0};
  /// ...or until this many were started in the measured window (0: no limit).
  std::uint64_t max_ops = 0;
  std::chrono::milliseconds ttl{10000};
  /// Resource names are key_prefix + 4 hex digits of the worker + 12 more.
  std::string key_prefix;
  /// Take fenced locks (lock_options::fenced); every token must then be positive.
  bool fenced = false;
  /// Take readers' leases (lock_options::shared).
  bool shared = false;
  /// 0: a fresh random resource per cycle. N: each worker takes its own N resources in
  /// turn, so that a fenced run can check that tokens increase per resource.
  std::size_t resources_per_worker = 0;
  /// Fenced runs: split acquisitions into their two rounds (the client's hook feeds it).
  const round_marks* marks = nullptr;
  /// Connections to the same nodes, to read their CPU time before and after the run.
  node_links* servers = nullptr;
};

struct cycle_result {
  std::uint64_t ops = 0;       ///< measured cycles that acquired and released
  std::uint64_t all_ops = 0;   ///< the same, warm-up included
  std::uint64_t failures = 0;  ///< measured attempts whose acquire or release failed
  /// From the start of the measured window until its last cycle completed.
  seconds_f seconds{0};
  latency_samples acquire;
  latency_samples release;
  /// With round_marks: an acquisition's first round (SET NX and the counter), and the
  /// rest: the fencing token's write-back, until the lock is handed over (cycles without
  /// a write-back: the whole acquisition is their first round).
  latency_samples first_round;
  latency_samples write_back;
  /// Measured cycles whose acquisition had a write-back round (the others were handed
  /// their token after one round).
  std::uint64_t write_backs = 0;
  /// Fenced runs: tokens checked, and tokens that were zero or not above the previous
  /// token of the same resource (with resources_per_worker). Must stay 0.
  std::uint64_t fence_checks = 0;
  std::uint64_t fence_violations = 0;
  /// CPU time of the thread that ran the client and the workers, warm-up included; and
  /// of each server process, mean over the nodes (with cycle_plan::servers).
  seconds_f client_cpu{0};
  std::optional<double> server_cpu_s;
  /// Each server's CPU seconds over the run (with cycle_plan::servers), in their order.
  std::vector<double> server_cpu_each;
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
/// The same with a lock like `probe` (its TTL, fenced or not; `wait` is set here). A
/// fenced probe also waits until the client has initialised the fencing counters.
void wait_until_lockable(asio::io_context& io, redlock::client& c, const bench_context& ctx,
                         redlock::lock_options probe);

/// After a failed attempt, continues from a fresh handler: until 454e547 a failure could
/// complete inside the call that started it, and a loop of such calls grew the stack.
asio::awaitable<void> yield_after_failure();

/// Runs `count` coroutines from make_worker() on `io` until all have finished; rethrows
/// the first exception one of them threw.
void run_workers(asio::io_context& io, std::size_t count,
                 const std::function<asio::awaitable<void>()>& make_worker);

/// Shuts `c` down and runs `io` until that is done.
void shut_down(asio::io_context& io, redlock::client& c);

/// CPU time the calling thread has used.
seconds_f thread_cpu_time();

/// "acquire p50/p99 12/34 us, release p50/p99 ..." for the stderr summaries.
std::string latency_text(const json_line& l);

/// A timed run of the lock workloads: --warmup, --duration and --ttl; with `servers`, it
/// also measures the nodes' CPU time.
cycle_plan timed_plan(const bench_context& ctx, std::string_view workload, std::size_t concurrency,
                      node_links* servers = nullptr);
/// The contract's fields of a run, with failures, allocations, CPU per cycle (client; servers
/// if measured) and the TTL.
json_line cycle_line(std::string_view workload, std::size_t nodes, std::size_t concurrency,
                     cycle_result& r, std::chrono::milliseconds ttl);
/// "; N failures (first: ...)" for the stderr summaries, or nothing.
std::string failure_text(const cycle_result& r);

}  // namespace redlock::bench
