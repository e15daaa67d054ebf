// SPDX-License-Identifier: BSL-1.0
// redis-benchmark as the yardstick: the server's ceiling for the w1 command mix, and one
// SET round trip from a C client. It runs as child processes, one per node at once,
// owned by pid (the test fixture's child_process), with their output in a temp directory.

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "raw.hpp"

namespace redlock::bench {
namespace {

// Keys the ceiling writes; as in w1, a random name per SET.
constexpr std::string_view ceiling_key = "redlock-bench:ceiling:__rand_int__";
constexpr std::string_view ceiling_value = "0123456789abcdef0123456789abcdef01234567";
constexpr std::uint64_t probe_requests = 20000;

std::vector<std::string> benchmark_argv(const bench_context& ctx, const node_uri& u, int clients,
                                        int pipeline, std::uint64_t requests,
                                        const std::vector<std::string>& command) {
  // env searches PATH, so that a missing redis-benchmark is an exit code, not a throw.
  std::vector<std::string> argv{"/usr/bin/env", "redis-benchmark",     "-h", u.host,
                                "-p",           std::to_string(u.port)};
  if (!u.user.empty()) argv.insert(argv.end(), {"--user", u.user});
  if (!u.password.empty()) argv.insert(argv.end(), {"-a", u.password});
  if (u.db != 0) argv.insert(argv.end(), {"--dbnum", std::to_string(u.db)});
  if (u.tls) {
    argv.push_back("--tls");
    if (!ctx.opts.tls_ca.empty()) argv.insert(argv.end(), {"--cacert", ctx.opts.tls_ca});
  }
  argv.insert(argv.end(), {"-c", std::to_string(clients), "-P", std::to_string(pipeline), "-n",
                           std::to_string(requests), "-r", "1000000", "-q", "--csv"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

struct csv_row {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// redis-benchmark --csv: a header, then one row of quoted fields: "test", "rps",
// "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
// "p99_latency_ms", "max_latency_ms".
std::optional<csv_row> parse_csv(const std::string& text) {
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("\"test\"") || !line.starts_with("\"")) continue;
    std::vector<std::string> fields;
    std::size_t pos = 0;
    while (pos < line.size()) {
      const auto open = line.find('"', pos);
      if (open == std::string::npos) break;
      const auto close = line.find('"', open + 1);
      if (close == std::string::npos) break;
      fields.push_back(line.substr(open + 1, close - open - 1));
      pos = close + 1;
    }
    if (fields.size() < 8) continue;
    try {
      return csv_row{std::stod(fields[1]), std::stod(fields[4]), std::stod(fields[6])};
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::string read_file(const std::string& path) {
  std::ifstream f{path};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs the commands at the same time and returns each one's result; throws
// std::runtime_error saying what went wrong.
std::vector<csv_row> run_together(const std::vector<std::vector<std::string>>& argvs,
                                  seconds_f limit) {
  test::detail::temp_dir dir;
  std::vector<test::detail::child_process> procs(argvs.size());
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < argvs.size(); ++i) {
    outputs.push_back(fmt::format("{}/redis-benchmark-{}.out", dir.path(), i));
    procs[i].spawn(argvs[i], outputs[i]);
  }
  const auto deadline =
      bench_clock::now() + std::chrono::duration_cast<bench_clock::duration>(limit);
  auto any_running = [&] {
    return std::any_of(procs.begin(), procs.end(), [](const auto& p) { return p.running(); });
  };
  while (any_running()) {
    if (bench_clock::now() >= deadline)
      throw std::runtime_error(
          fmt::format("redis-benchmark ran longer than {:.0f} s", limit.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  std::vector<csv_row> rows;
  for (std::size_t i = 0; i < procs.size(); ++i) {
    const std::string how = procs[i].exit_description();
    const std::string text = read_file(outputs[i]);
    const auto row = parse_csv(text);
    if (how != "exited with code 0" || !row)
      throw std::runtime_error(fmt::format(
          "redis-benchmark {}: {}", how, text.substr(0, std::min<std::size_t>(text.size(), 200))));
    rows.push_back(*row);
  }
  return rows;
}

std::vector<node_uri> parse_all(const std::vector<std::string>& uris) {
  std::vector<node_uri> out;
  for (const auto& s : uris) {
    node_uri u;
    std::string why;
    if (!parse_node_uri(s, u, why)) throw std::runtime_error("bad node URI: " + why);
    out.push_back(std::move(u));
  }
  return out;
}

// One command's rate on every node at once, each redis-benchmark sending `requests`.
std::vector<double> rates_together(const bench_context& ctx, const std::vector<node_uri>& nodes,
                                   std::uint64_t requests,
                                   const std::vector<std::string>& command) {
  std::vector<std::vector<std::string>> argvs;
  for (const auto& u : nodes)
    argvs.push_back(benchmark_argv(ctx, u, ctx.opts.ceiling_clients, ctx.opts.ceiling_pipeline,
                                   requests, command));
  const auto rows = run_together(argvs, ctx.opts.ceiling_duration * 10 + seconds_f{30});
  std::vector<double> rates;
  for (const auto& r : rows) rates.push_back(r.rps);
  return rates;
}

}  // namespace

std::vector<double> redis_benchmark_rates(const bench_context& ctx,
                                          const std::vector<std::string>& uris,
                                          const std::vector<std::string>& command) {
  const auto nodes = parse_all(uris);
  const auto probe = rates_together(ctx, nodes, probe_requests / 4, command);
  const double slowest = *std::min_element(probe.begin(), probe.end());
  const auto requests = std::max<std::uint64_t>(
      probe_requests / 4, static_cast<std::uint64_t>(slowest * ctx.opts.ceiling_duration.count()));
  return rates_together(ctx, nodes, requests, command);
}

ceiling_result measure_ceiling(const bench_context& ctx, const std::vector<std::string>& uris,
                               std::string_view release_sha) {
  ceiling_result out;
  try {
    const auto nodes = parse_all(uris);
    const std::string ttl = std::to_string(ctx.opts.ttl.count());
    const std::vector<std::string> set{
        "SET", std::string{ceiling_key}, std::string{ceiling_value}, "NX", "PX", ttl};
    const std::vector<std::string> release{"EVALSHA", std::string{release_sha}, "1",
                                           std::string{ceiling_key}, std::string{ceiling_value}};
    // A short probe sizes the real runs so that each phase lasts about ceiling_duration.
    const auto probe = rates_together(ctx, nodes, probe_requests, set);
    const double slowest = *std::min_element(probe.begin(), probe.end());
    const auto requests = std::max<std::uint64_t>(
        probe_requests, static_cast<std::uint64_t>(slowest * ctx.opts.ceiling_duration.count()));
    const auto set_rates = rates_together(ctx, nodes, requests, set);
    const auto release_rates = rates_together(ctx, nodes, requests, release);

    // A node spends 1/set + 1/release seconds per SET+release pair; a cycle needs one
    // pair on every node, and the nodes work in parallel.
    double commands_per_s = 0, set_sum = 0, release_sum = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      commands_per_s += 2.0 / (1.0 / set_rates[i] + 1.0 / release_rates[i]);
      set_sum += set_rates[i];
      release_sum += release_rates[i];
    }
    out.cycles_per_s = commands_per_s / (2.0 * static_cast<double>(nodes.size()));
    out.set_per_s = set_sum;
    out.release_per_s = release_sum;
  } catch (const std::exception& e) {
    out.problem = e.what();
  }
  return out;
}

rtt_result redis_benchmark_rtt(const bench_context& ctx, const std::string& uri,
                               std::optional<double> rtt_hint_us) {
  try {
    const auto nodes = parse_all({uri});
    const std::vector<std::string> set{"SET",
                                       std::string{ceiling_key},
                                       std::string{ceiling_value},
                                       "NX",
                                       "PX",
                                       std::to_string(ctx.opts.ttl.count())};
    // About two seconds (fewer with a short --duration), at the round trip measured or,
    // at the least, 50 us.
    const double seconds = std::min(ctx.opts.duration.count(), 2.0);
    const double rtt_us = std::max(rtt_hint_us.value_or(0), 50.0);
    const auto requests =
        std::max<std::uint64_t>(200, static_cast<std::uint64_t>(seconds * 1e6 / rtt_us));
    const auto rows =
        run_together({benchmark_argv(ctx, nodes.front(), 1, 1, requests, set)}, seconds_f{60});
    return {rows.front().p50_ms * 1000.0, rows.front().p99_ms * 1000.0};
  } catch (const std::exception& e) {
    fmt::print(stderr, "w2: no round-trip yardstick: {}\n", e.what());
    return {};
  }
}

}  // namespace redlock::bench
