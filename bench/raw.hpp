// SPDX-License-Identifier: BSL-1.0
#pragma once
// Below the lock: the library's connection layer driven directly, and redis-benchmark as
// the server's ceiling. These are the yardsticks w1 and w2 are compared with.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench.hpp"
#include "connection/connection.hpp"

namespace redlock::bench {

/// One connection per node from the library's connection layer, on one io_context,
/// closed on destruction.
class node_links {
 public:
  /// Connects to every node; throws std::runtime_error if they are not all ready within
  /// the configuration's connect timeout (plus a second).
  node_links(asio::io_context& io, const std::vector<std::string>& uris, const config& cfg);
  ~node_links();
  node_links(const node_links&) = delete;
  node_links& operator=(const node_links&) = delete;

  std::size_t size() const { return conns_.size(); }
  asio::io_context::executor_type get_executor() const { return io_.get_executor(); }
  detail::connection& operator[](std::size_t i) { return *conns_.at(i); }
  const config& cfg() const { return cfg_; }

  /// Sends one encoded command to every node and runs the io_context until all have
  /// answered; returns each top-level reply's text (integers as decimal). Throws
  /// std::runtime_error on an error reply or a failed request.
  std::vector<std::string> ask_all(std::string_view payload);

 private:
  asio::io_context& io_;
  config cfg_;
  std::vector<std::shared_ptr<detail::connection>> conns_;
};

/// The integer that follows `field` in an INFO reply (`used_memory:`, `calls=`);
/// nullopt if the field is absent.
std::optional<std::int64_t> info_number(std::string_view info, std::string_view field);
/// The same for a number with decimals (`used_cpu_user:`).
std::optional<double> info_real(std::string_view info, std::string_view field);
/// used_memory from INFO memory, per node.
std::vector<std::int64_t> used_memory(node_links& links);
/// CPU seconds (user + system) each node's server process has used, from INFO cpu.
std::vector<double> server_cpu_seconds(node_links& links);

/// The w1 command mix without the lock logic: `concurrency` workers each send
/// `SET key token NX PX ttl GET` to the first `nodes_used` nodes, wait for every reply,
/// then the release script's EVALSHA, and wait again.
struct raw_plan {
  std::size_t concurrency = 1;
  std::size_t nodes_used = 1;
  seconds_f warmup{0};
  seconds_f duration{0};
  std::chrono::milliseconds ttl{10000};
  std::string key_prefix;
};

struct raw_result {
  std::uint64_t ops = 0;
  std::uint64_t failures = 0;
  seconds_f seconds{0};
  latency_samples set;      ///< the SET phase
  latency_samples release;  ///< the EVALSHA phase
};

raw_result run_raw_cycles(asio::io_context& io, node_links& links, const raw_plan& plan);

/// SET NX PX latency from redis-benchmark with one client and no pipelining, against
/// one node; nullopt fields when redis-benchmark cannot be run.
struct rtt_result {
  std::optional<double> p50_us;
  std::optional<double> p99_us;
};
/// `rtt_hint_us`, a round trip measured already (if any), sizes the run to about two
/// seconds also where round trips are milliseconds (nodes in network namespaces).
rtt_result redis_benchmark_rtt(const bench_context& ctx, const std::string& uri,
                               std::optional<double> rtt_hint_us);

/// p50 of one SET NX PX round trip to one node through our connection layer.
std::optional<double> connection_set_p50_us(const bench_context& ctx, const std::string& uri);

/// The server ceiling: redis-benchmark sends the w1 command mix, pipelined, to every
/// node at once; cycles/s = commands/s over all nodes / (2 commands x nodes).
struct ceiling_result {
  std::optional<double> cycles_per_s;
  std::optional<double> set_per_s;      ///< summed over the nodes
  std::optional<double> release_per_s;  ///< summed over the nodes
  std::string problem;                  ///< why it is unknown
};
ceiling_result measure_ceiling(const bench_context& ctx, const std::vector<std::string>& uris,
                               std::string_view release_sha);

/// `command` sent by redis-benchmark (pipelined, with __rand_int__ placeholders) to every
/// node at once for about ceiling_duration: each node's requests per second. Throws
/// std::runtime_error if redis-benchmark is missing or fails.
std::vector<double> redis_benchmark_rates(const bench_context& ctx,
                                          const std::vector<std::string>& uris,
                                          const std::vector<std::string>& command);

/// EVALSHA calls, failed calls and their server time, summed over the nodes (INFO
/// commandstats).
struct script_stats {
  std::int64_t calls = 0;
  std::int64_t failed = 0;
  std::int64_t usec = 0;
};
script_stats evalsha_stats(node_links& links);
/// The same for EVAL (the calls the client sends without reading their reply: a claim's
/// undo, a done marker's spread).
script_stats eval_stats(node_links& links);

}  // namespace redlock::bench
