// SPDX-License-Identifier: BSL-1.0
// redlock-bench: runs named workloads against local Redis nodes it starts itself (or
// --nodes) and prints one JSON object per workload and configuration on stdout, with a
// summary for people on stderr. See docs/performance.md.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bench.hpp"

namespace redlock::bench {
namespace {

/// The workloads, in the order they run. Names are part of the output contract: never
/// rename one; add new workloads as new rows. (fenced prints lines named fenced_w2 and
/// fenced_w1, after the unfenced lines they are compared with.)
struct workload {
  std::string_view name;
  std::string_view summary;
  void (*run)(bench_context&);
};

constexpr workload workloads[] = {
    {"w1", "throughput: N in flight, each locks a distinct random resource then releases it",
     run_w1},
    {"w2", "latency: one worker, sequential acquire+release, with round-trip yardsticks", run_w2},
    {"fenced",
     "w2 and w1 with fencing tokens (lines fenced_w2, fenced_w1): the write-back's cost, "
     "tokens checked",
     run_fenced},
    {"w3", "contention: workers compete for one resource, each holds it --hold-ms", run_w3},
    {"w4", "degraded: as w2 on 5 nodes with 2 frozen (SIGSTOP), against 5 healthy", run_w4},
    {"memory", "heap allocations per cycle, bytes per held lock (client and server)", run_memory},
    {"raw", "w1's command mix through the connection layer alone, and redis-benchmark's ceiling",
     run_raw},
    {"extend", "renewal: --extend-locks held by keepers, renewed in batches for --duration",
     run_extend},
    {"claims",
     "save-once gate: claim fresh names in batches of 1, 16, 128 and as single batched calls, "
     "settle them as done markers; vs redis-benchmark's ceiling",
     run_claims},
    {"multi",
     "multi-resource locks: acquire+release of 4 fresh resources at once, one worker "
     "and --concurrency in flight (vs w2 and w1)",
     run_multi},
    {"shared",
     "shared locks: w2's sequential acquire+release of fresh resources as readers' leases "
     "(line shared_w2, vs w2)",
     run_shared},
    {"sem4x16",
     "semaphore: 16 clients contend for 4 permits of one resource, each holds one --hold-ms; "
     "permit acquisitions per second",
     run_sem},
};

constexpr std::string_view usage_text = R"(usage: redlock-bench [options]

Runs the workloads against redis-server nodes it starts on free loopback ports (or the
--nodes given) and prints one JSON line per workload on stdout; a summary on stderr.

  --quick                 short runs (about a minute in all), for a smoke test
  --only NAME[,NAME...]   run only these workloads (see --list)
  --list                  print the workloads and exit
  --nodes URI[,URI...]    use these redis:// or rediss:// nodes instead of starting our own
                          (w4 is then skipped unless --node-pids is given)
  --node-pids PID[,PID...]
                          the --nodes servers' pids, in order: w4 then freezes the last
                          two of five (SIGSTOP), as it does its own nodes
  --tls-ca FILE           trusted CA for rediss:// nodes (bench/tls.sh uses it)
  --cluster-shards K      each of our own nodes is a Redis Cluster of K primaries (made
                          with redis-cli --cluster create); runs w1 and claims
                          only (w1 unless --only says claims)
  --duration S            measured seconds of each timed phase (default 10; quick 1.5)
  --warmup S              unmeasured seconds before each timed phase (default 1; quick 0.25)
  --contention-duration S w3's and sem4x16's measured seconds (default 10; quick 2)
  --concurrency N[,N...]  operations in flight in w1, fenced_w1 and raw, one line each
                          (default 64)
  --contenders N          w3's workers (default 16)
  --processes N[,N...]    w3's workers split over N processes, one line each (default 1,4)
  --fair off|on[,...]     w3 without and/or with fair mode, one line each (default off,on)
  --hold-ms MS            how long a w3 worker holds the lock (sem4x16: a permit) (default 1)
  --ttl MS                lock TTL (default 10000; quick 2000)
  --node-timeout MS       per-node request timeout of the clients (default 250)
  --fence-stripes N       fenced: counters striped into N buckets (default 0: one per resource)
  --cycles N              memory: cycles counted for allocations (default 20000; quick 1000)
  --held N                memory: locks held at once (default 20000; quick 1000)
  --ceiling-duration S    raw: seconds of each redis-benchmark phase (default 4; quick 0.5)
  --extend-locks N        extend: locks held and renewed at once (default 10000; quick 1000)
  --extend-ttl MS         extend: their TTL, renewed every third of it (default 3000)
  --no-ceiling            raw: do not run redis-benchmark
  --count-commands        sem4x16: count the commands clients send to the first node
                          (MONITOR, which slows it) per permit granted
  --observer KIND         install an observer on every client: none (default), noop
                          (hooks that do nothing) or metrics (redlock::metrics_observer);
                          lines then carry "observer"
  --help
)";

[[noreturn]] void usage_error(const std::string& what) {
  throw std::invalid_argument(what);
}

template <typename T>
T parse_number(std::string_view flag, std::string_view text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    usage_error(fmt::format("{}: not a number: \"{}\"", flag, text));
  return v;
}

double parse_seconds(std::string_view flag, std::string_view text) {
  const auto v = parse_number<double>(flag, text);
  if (!(v > 0)) usage_error(fmt::format("{} must be positive", flag));
  return v;
}

std::size_t parse_count(std::string_view flag, std::string_view text) {
  const auto v = parse_number<std::size_t>(flag, text);
  if (v == 0) usage_error(fmt::format("{} must be positive", flag));
  return v;
}

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    if (comma != 0) out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

struct parsed {
  options opts;
  bool list = false;
  bool help = false;
};

parsed parse_args(std::span<char*> args) {
  // --quick sets the defaults; flags given explicitly win, wherever they stand.
  const bool quick = std::any_of(args.begin(), args.end(),
                                 [](const char* a) { return std::string_view{a} == "--quick"; });
  parsed p;
  options& o = p.opts;
  if (quick) {
    o.quick = true;
    o.duration = seconds_f{1.5};
    o.warmup = seconds_f{0.25};
    o.contention_duration = seconds_f{2.0};
    o.cycles = 1000;
    o.held = 1000;
    o.extend_locks = 1000;
    o.ceiling_duration = seconds_f{0.5};
    // A restart guard holds freshly started nodes back for a TTL: keep that wait short.
    o.ttl = std::chrono::milliseconds{2000};
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= args.size()) usage_error(fmt::format("{} needs a value", flag));
      return args[++i];
    };
    if (flag == "--quick") {
    } else if (flag == "--help" || flag == "-h") {
      p.help = true;
    } else if (flag == "--list") {
      p.list = true;
    } else if (flag == "--count-commands") {
      o.count_commands = true;
    } else if (flag == "--no-ceiling") {
      o.ceiling = false;
    } else if (flag == "--observer") {
      o.observer = value();
      if (o.observer != "none" && o.observer != "noop" && o.observer != "metrics")
        usage_error("--observer: none, noop or metrics");
    } else if (flag == "--only") {
      o.only = split(value());
      for (const auto& name : o.only)
        if (std::none_of(std::begin(workloads), std::end(workloads),
                         [&](const workload& w) { return w.name == name; }))
          usage_error(fmt::format("--only: no workload named \"{}\" (see --list)", name));
    } else if (flag == "--cluster-shards") {
      o.cluster_shards = parse_count(flag, value());
    } else if (flag == "--nodes") {
      o.nodes.clear();
      for (auto& item : split(value())) {
        // An address without a scheme after a cluster URI is one more of its seeds.
        if (!o.nodes.empty() && item.find("://") == std::string::npos &&
            o.nodes.back().find("+cluster://") != std::string::npos)
          o.nodes.back() += "," + item;
        else
          o.nodes.push_back(std::move(item));
      }
      for (const auto& uri : o.nodes) {
        node_uri u;
        std::string why;
        if (!parse_node_uri(uri, u, why)) usage_error(fmt::format("--nodes: {}", why));
      }
    } else if (flag == "--node-pids") {
      o.node_pids.clear();
      for (const auto& pid : split(value()))
        o.node_pids.push_back(static_cast<pid_t>(parse_count(flag, pid)));
    } else if (flag == "--tls-ca") {
      o.tls_ca = value();
    } else if (flag == "--duration") {
      o.duration = seconds_f{parse_seconds(flag, value())};
    } else if (flag == "--warmup") {
      o.warmup = seconds_f{parse_number<double>(flag, value())};
      if (o.warmup.count() < 0) usage_error("--warmup must not be negative");
    } else if (flag == "--contention-duration") {
      o.contention_duration = seconds_f{parse_seconds(flag, value())};
    } else if (flag == "--concurrency") {
      o.concurrency.clear();
      for (const auto& n : split(value())) o.concurrency.push_back(parse_count(flag, n));
      if (o.concurrency.empty()) usage_error("--concurrency needs a value");
    } else if (flag == "--processes") {
      o.processes.clear();
      for (const auto& n : split(value())) o.processes.push_back(parse_count(flag, n));
      if (o.processes.empty()) usage_error("--processes needs a value");
    } else if (flag == "--fair") {
      o.fair_modes.clear();
      for (const auto& m : split(value())) {
        if (m != "off" && m != "on") usage_error("--fair takes off, on or off,on");
        o.fair_modes.push_back(m == "on");
      }
      if (o.fair_modes.empty()) usage_error("--fair needs a value");
    } else if (flag == "--contenders") {
      o.contenders = parse_count(flag, value());
    } else if (flag == "--hold-ms") {
      o.hold = std::chrono::milliseconds{parse_number<std::int64_t>(flag, value())};
      if (o.hold.count() < 0) usage_error("--hold-ms must not be negative");
    } else if (flag == "--ttl") {
      o.ttl = std::chrono::milliseconds{parse_count(flag, value())};
    } else if (flag == "--node-timeout") {
      o.node_timeout = std::chrono::milliseconds{parse_count(flag, value())};
    } else if (flag == "--fence-stripes") {
      o.fence_stripes = parse_count(flag, value());
    } else if (flag == "--cycles") {
      o.cycles = parse_count(flag, value());
    } else if (flag == "--held") {
      o.held = parse_count(flag, value());
    } else if (flag == "--extend-locks") {
      o.extend_locks = parse_count(flag, value());
    } else if (flag == "--extend-ttl") {
      o.extend_ttl = std::chrono::milliseconds{parse_count(flag, value())};
    } else if (flag == "--ceiling-duration") {
      o.ceiling_duration = seconds_f{parse_seconds(flag, value())};
    } else {
      usage_error(fmt::format("unknown option \"{}\" (see --help)", flag));
    }
  }
  if (o.cluster_shards > 0) {
    if (o.cluster_shards < 3) usage_error("--cluster-shards: a cluster has at least 3 primaries");
    if (!o.nodes.empty()) usage_error("--cluster-shards makes its own nodes: not with --nodes");
    if (o.only.empty()) o.only = {"w1"};
    for (const auto& name : o.only)
      if (name != "w1" && name != "claims")
        usage_error(fmt::format("--cluster-shards: {} does not run on cluster nodes yet", name));
  }
  if (!o.node_pids.empty() && o.node_pids.size() != o.nodes.size())
    usage_error("--node-pids: one pid per --nodes URI");
  return p;
}

bool selected(const options& o, std::string_view name) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), name) != o.only.end();
}

}  // namespace
}  // namespace redlock::bench

int main(int argc, char** argv) {
  using namespace redlock::bench;
  parsed p;
  try {
    p = parse_args(std::span<char*>{argv + 1, static_cast<std::size_t>(argc - 1)});
  } catch (const std::exception& e) {
    fmt::print(stderr, "redlock-bench: {}\n", e.what());
    return 64;
  }
  if (p.help) {
    fmt::print("{}", usage_text);
    return 0;
  }
  if (p.list) {
    for (const auto& w : workloads) fmt::print("{:<8} {}\n", w.name, w.summary);
    return 0;
  }

  const auto start = bench_clock::now();
  try {
    bench_context ctx{p.opts};
    for (const auto& w : workloads) {
      if (!selected(ctx.opts, w.name)) continue;
      w.run(ctx);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "redlock-bench: {}\n", e.what());
    return 1;
  }
  fmt::print(stderr, "redlock-bench: done in {:.1f} s\n",
             seconds_f{bench_clock::now() - start}.count());
  return 0;
}
