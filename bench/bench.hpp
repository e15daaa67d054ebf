// SPDX-License-Identifier: BSL-1.0
#pragma once
// redlock-bench: what every workload shares (options, the nodes, how results are printed).
// A workload is a function that measures one thing and emits one JSON line per
// configuration it ran; the table in main.cpp names them.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis_cluster.hpp"
#include "redis_fleet.hpp"
#include "redlock/config.hpp"
#include "redlock/observer.hpp"

namespace redlock::bench {

namespace asio = boost::asio;
/// Latencies and durations: monotonic, never the wall clock.
using bench_clock = std::chrono::steady_clock;
using seconds_f = std::chrono::duration<double>;

struct options {
  bool quick = false;
  /// Workload names to run, in table order; empty: all of them.
  std::vector<std::string> only;
  /// External nodes (redis:// or rediss:// URIs); empty: the bench starts its own.
  std::vector<std::string> nodes;
  /// The pids of the external nodes' servers, in the same order (or empty): lets w4
  /// freeze them.
  std::vector<pid_t> node_pids;
  /// CA file for rediss:// nodes (config::tls::ca_file; empty: the system's store).
  std::string tls_ca;
  /// Measured time of each timed phase (w1, w2, w4's two phases, raw, fenced; extend
  /// rounds it up to whole renewal intervals).
  seconds_f duration{10.0};
  /// Time before each timed phase whose samples are dropped (connections, caches).
  seconds_f warmup{1.0};
  /// w3's measured time.
  seconds_f contention_duration{10.0};
  /// Operations in flight in w1 and raw; several values give one line each.
  std::vector<std::size_t> concurrency{64};
  std::size_t contenders = 16;
  /// w3: the contenders run in one process, or are split evenly over several, each with
  /// its own client; several values give one line each (default 1 and 4).
  std::vector<std::size_t> processes{1, 4};
  /// w3: without and/or with lock_options::fair, one line each (default both).
  std::vector<bool> fair_modes{false, true};
  std::chrono::milliseconds hold{1};
  /// sem4x16: count the commands clients send to the first node (MONITOR) and report them
  /// per grant (it slows that node: measure throughput without it).
  bool count_commands = false;
  std::chrono::milliseconds ttl{10000};
  std::chrono::milliseconds node_timeout{250};
  /// fenced: config::fence_stripes of its clients (0: a counter per resource).
  std::size_t fence_stripes = 0;
  /// memory: cycles counted for allocations, and locks held at once.
  std::size_t cycles = 20000;
  std::size_t held = 20000;
  /// extend: locks held at once and renewed by keepers, and their TTL (renewed every
  /// third of it).
  std::size_t extend_locks = 10000;
  std::chrono::milliseconds extend_ttl{3000};
  /// raw: measure the server ceiling with redis-benchmark (needs it in PATH).
  bool ceiling = true;
  seconds_f ceiling_duration{4.0};
  /// The observer installed on every client: none, noop (an observer whose hooks do
  /// nothing: the cost of building events) or metrics (redlock::metrics_observer).
  std::string observer = "none";
  int ceiling_clients = 32;
  int ceiling_pipeline = 16;
  /// Each node of the bench's own fleet is a Redis Cluster of this many primaries (0: one
  /// server per node). Only w1 runs on such a fleet.
  std::size_t cluster_shards = 0;
};

/// The measured part of a timed run, from its creation: work started during the warm-up
/// is not measured, and no work starts once `duration` more has passed.
class measure_window {
 public:
  measure_window(seconds_f warmup, seconds_f duration);

  /// Whether work starting at `now` is measured; the first such start opens the window.
  bool enter(bench_clock::time_point now);
  bool is_open() const { return open_; }
  bool over(bench_clock::time_point now) const { return now >= until_; }
  bench_clock::time_point until() const { return until_; }
  void completed(bench_clock::time_point t) { last_completion_ = t; }
  /// From the first measured start to the last completion noted (zero if none).
  seconds_f seconds() const;

 private:
  bench_clock::time_point from_;
  bench_clock::time_point until_;
  bool open_ = false;
  bench_clock::time_point opened_{};
  bench_clock::time_point last_completion_{};
};

/// All latency samples of one phase, in nanoseconds; percentiles from every sample.
class latency_samples {
 public:
  void reserve(std::size_t n) { ns_.reserve(n); }
  void add(bench_clock::duration d) { ns_.push_back(d.count()); }
  std::size_t size() const { return ns_.size(); }
  bool empty() const { return ns_.empty(); }

  struct summary {
    double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0, mean_us = 0;
  };
  /// Nearest-rank percentiles (sorts the samples).
  summary summarize();

 private:
  std::vector<std::int64_t> ns_;
};

/// One output line: a flat JSON object (Boost.JSON) whose fields keep the order they were
/// added in; a field added twice keeps its first place and takes the new value.
class json_line {
 public:
  using value = boost::json::value;

  json_line& add(std::string_view key, value v);
  json_line& add(std::string_view key, std::int64_t v) { return add(key, value(v)); }
  json_line& add(std::string_view key, std::size_t v) {
    return add(key, static_cast<std::int64_t>(v));
  }
  json_line& add(std::string_view key, int v) { return add(key, std::int64_t{v}); }
  json_line& add(std::string_view key, const char* v) { return add(key, value(v)); }
  json_line& add(std::string_view key, std::string_view v) { return add(key, value(v)); }
  /// A ratio or rate that may be unknown (null).
  json_line& add(std::string_view key, std::optional<double> v);
  /// `<phase>_p50_us`, `_p90_us`, `_p99_us`, `_p999_us`, `_max_us`, `_mean_us`; nulls
  /// when there are no samples.
  json_line& add_latency(std::string_view phase, latency_samples& s);

  /// The field's value, or null if there is no such field.
  const value* get(std::string_view key) const;
  /// A numeric field as a double; nullopt if absent or not a number.
  std::optional<double> number(std::string_view key) const;
  /// The line, compact (no blanks: plot.sh matches `"key":value`), fractions rounded to
  /// three decimals.
  std::string str() const;

 private:
  boost::json::object fields_;
};

/// What a workload gets: options, nodes, and where its results go.
class bench_context {
 public:
  explicit bench_context(options o);

  const options opts;

  /// URIs of `n` nodes: the bench's own fleet of that size (started on first use), or
  /// the --nodes list, whatever its size.
  std::vector<std::string> node_uris(std::size_t n);
  /// The bench's own fleet of `n` nodes, or null with --nodes (the bench cannot freeze
  /// servers it did not start) or --cluster-shards.
  test::redis_fleet* own_fleet(std::size_t n);
  /// One plain URI per server process behind node_uris(n) (with --cluster-shards, every
  /// primary of every cluster): what server CPU is read from.
  std::vector<std::string> server_uris(std::size_t n);
  /// A key prefix unique to this process and workload, so that runs against shared
  /// nodes never collide and the bench never has to flush a database.
  std::string key_prefix(std::string_view workload) const;
  /// The client configuration the workloads share.
  config client_config(std::vector<std::string> uris) const;

  /// Prints the line on stdout (flushed) and `human` on stderr; keeps the line for
  /// workloads that compare with an earlier one.
  void emit(json_line line, std::string_view human);
  /// An earlier line of `workload` with this concurrency, if any.
  const json_line* find(std::string_view workload, std::size_t concurrency) const;

 private:
  std::map<std::size_t, std::unique_ptr<test::redis_fleet>> fleets_;
  std::map<std::size_t, std::vector<std::unique_ptr<test::redis_cluster>>> clusters_;
  std::vector<test::redis_cluster*> own_clusters(std::size_t n);
  std::shared_ptr<redlock::observer> observer_;
  std::vector<json_line> lines_;
};

/// Fields every line starts with.
json_line base_line(std::string_view workload, std::size_t nodes, std::size_t concurrency,
                    std::uint64_t ops, seconds_f seconds);

/// Appends the low `digits` hex digits of v. Resource names are made per cycle: fmt would
/// cost the bench more than a tenth of what it measures in w1 (see docs/performance.md).
inline void append_hex(std::string& out, std::uint64_t v, int digits = 16) {
  static constexpr char hex[] = "0123456789abcdef";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += hex[(v >> shift) & 0xf];
}

/// a / b, or null when either is unknown or b is not positive.
std::optional<double> ratio(std::optional<double> a, std::optional<double> b);

void run_w1(bench_context& ctx);
void run_w2(bench_context& ctx);
void run_w3(bench_context& ctx);
void run_w4(bench_context& ctx);
void run_raw(bench_context& ctx);
void run_memory(bench_context& ctx);
void run_fenced(bench_context& ctx);
void run_extend(bench_context& ctx);
void run_claims(bench_context& ctx);
void run_multi(bench_context& ctx);
void run_shared(bench_context& ctx);
void run_sem(bench_context& ctx);

}  // namespace redlock::bench
