// SPDX-License-Identifier: BSL-1.0
// w1 (throughput), w2 (latency), w3 (contention) and w4 (degraded): the lock as an
// application uses it.

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <thread>
#include <tuple>

#include "cycles.hpp"
#include "raw.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
constexpr std::size_t degraded_fleet_size = 5;
constexpr std::size_t frozen_nodes = 2;

// Each node a cluster: how evenly the primaries shared the work (max / min of their CPU),
// and the servers' CPU per cycle summed over one node's primaries, which compares with
// server_cpu_us_per_cycle of a one-server node.
void add_cluster_fields(json_line& l, std::size_t shards, const cycle_result& r) {
  l.add("cluster_shards", static_cast<std::int64_t>(shards));
  l.add("servers", static_cast<std::int64_t>(r.server_cpu_each.size()));
  if (r.server_cpu_each.empty() || r.all_ops == 0) return;
  const auto [lo, hi] = std::minmax_element(r.server_cpu_each.begin(), r.server_cpu_each.end());
  if (*lo > 0) l.add("server_cpu_spread", std::optional<double>{*hi / *lo});
  double sum = 0;
  for (double v : r.server_cpu_each) sum += v;
  const double nodes = static_cast<double>(r.server_cpu_each.size()) / static_cast<double>(shards);
  l.add("node_cpu_us_per_cycle",
        std::optional<double>{sum / nodes * 1e6 / static_cast<double>(r.all_ops)});
}

}  // namespace

void run_w1(bench_context& ctx) {
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context admin_io{1};
  const auto server_uris = ctx.server_uris(fleet_size);
  node_links servers{admin_io, server_uris, ctx.client_config(server_uris)};
  for (const std::size_t concurrency : ctx.opts.concurrency) {
    asio::io_context io{1};
    redlock::client c{io.get_executor(), ctx.client_config(uris)};
    wait_until_lockable(io, c, ctx);
    cycle_result r = run_cycles(io, c, timed_plan(ctx, "w1", concurrency, &servers));
    shut_down(io, c);
    json_line l = cycle_line("w1", uris.size(), concurrency, r, ctx.opts.ttl);
    if (ctx.opts.cluster_shards > 0) add_cluster_fields(l, ctx.opts.cluster_shards, r);
    const std::string human = fmt::format(
        "w1 throughput: {:.0f} cycles/s with {} in flight on {} nodes; {}; {:.1f} "
        "allocations per cycle{}",
        l.number("ops_per_s").value_or(0), concurrency, uris.size(), latency_text(l),
        r.allocs_per_cycle(), failure_text(r));
    ctx.emit(std::move(l), human);
  }
}

void run_w2(bench_context& ctx) {
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context admin_io{1};
  const auto server_uris = ctx.server_uris(fleet_size);
  node_links servers{admin_io, server_uris, ctx.client_config(server_uris)};
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);
  cycle_result r = run_cycles(io, c, timed_plan(ctx, "w2", 1, &servers));
  shut_down(io, c);

  // The yardsticks: one SET NX PX round trip to one node, from redis-benchmark (a C
  // client, one request at a time) and through our own connection layer.
  const auto conn_p50 = connection_set_p50_us(ctx, uris.front());
  const auto rtt = redis_benchmark_rtt(ctx, uris.front(), conn_p50);

  json_line l = cycle_line("w2", uris.size(), 1, r, ctx.opts.ttl);
  l.add("rtt_set_p50_us", rtt.p50_us);
  l.add("rtt_set_p99_us", rtt.p99_us);
  l.add("conn_set_p50_us", conn_p50);
  const auto vs_rtt = ratio(l.number("acquire_p50_us"), rtt.p50_us);
  l.add("acquire_p50_vs_rtt", vs_rtt);
  const std::string human = fmt::format(
      "w2 latency: {}; one SET round trip p50 {:.0f} us (redis-benchmark), {:.0f} us (our "
      "connection): acquire p50 = {:.2f}x the round trip{}",
      latency_text(l), rtt.p50_us.value_or(0), conn_p50.value_or(0), vs_rtt.value_or(0),
      failure_text(r));
  ctx.emit(std::move(l), human);
}

// ---- shared: readers' leases -----------------------------------------------------------

// w2's cycle with lock_options::shared: a reader's acquisition is one script call per node
// (the writer's is SET NX GET), its release the same script as a writer's.
void run_shared(bench_context& ctx) {
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);
  cycle_plan plan = timed_plan(ctx, "shared", 1, nullptr);
  plan.shared = true;
  cycle_result r = run_cycles(io, c, plan);
  shut_down(io, c);
  json_line l = cycle_line("shared_w2", uris.size(), 1, r, ctx.opts.ttl);
  // w2 of the same invocation, when it ran before this one.
  const json_line* w2 = ctx.find("w2", 1);
  const auto vs =
      ratio(l.number("acquire_p50_us"), w2 ? w2->number("acquire_p50_us") : std::nullopt);
  l.add("acquire_p50_vs_w2", vs);
  const std::string human = fmt::format("shared_w2 latency: {}; acquire p50 = {:.2f}x w2's{}",
                                        latency_text(l), vs.value_or(0), failure_text(r));
  ctx.emit(std::move(l), human);
}

// ---- w3: contention ------------------------------------------------------------------

namespace {

// One measured acquisition, by clock readings that every process on the host shares
// (steady_clock is CLOCK_MONOTONIC): the hand-off gap and the overlaps are computed from
// all processes' events together.
struct w3_event {
  std::int64_t acquired_ns = 0;       // the lock call completed
  std::int64_t release_start_ns = 0;  // the worker started releasing (0: it did not)
  std::int64_t acquire_ns = 0;        // the lock call's latency
  std::int64_t release_ns = -1;       // the unlock call's latency (-1: failed)
  std::uint32_t worker = 0;
};

struct contention_run {
  const options& opts;
  std::string resource;
  bool fair = false;  // lock_options::fair
  measure_window window;
  std::uint32_t first_worker = 0;  // global number of this process's first worker
  std::vector<w3_event> events;
  std::uint64_t failures = 0;
  std::string first_error;
  std::size_t active = 0;
  std::exception_ptr error;
};

std::int64_t ns_of(bench_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

asio::awaitable<void> contender(redlock::client& c, contention_run& run, std::uint32_t id) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold{ex};
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    // Waits no longer than the run lasts, so that every worker ends with it.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(run.window.until() - t0);
    const redlock::lock_options opts{.ttl = run.opts.ttl, .wait = left, .fair = run.fair};
    std::tuple<error_code, redlock::lock> got =
        co_await c.async_lock(run.resource, opts, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      if (std::get<0>(got) == redlock::error::wait_timeout && run.window.over(t1)) break;
      if (measured && run.first_error.empty())
        run.first_error = fmt::format("acquire: {}", std::get<0>(got).message());
      run.failures += measured ? 1 : 0;
      continue;
    }
    w3_event e{.acquired_ns = ns_of(t1), .acquire_ns = (t1 - t0).count(), .worker = id};

    hold.expires_after(run.opts.hold);
    co_await hold.async_wait(asio::use_awaitable);

    const auto t2 = bench_clock::now();
    e.release_start_ns = ns_of(t2);
    std::tuple<error_code> released =
        co_await c.async_unlock(std::move(std::get<1>(got)), asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(released)) {
      if (measured && run.first_error.empty())
        run.first_error = fmt::format("release: {}", std::get<0>(released).message());
      run.failures += measured ? 1 : 0;
    } else {
      e.release_ns = (bench_clock::now() - t2).count();
    }
    // Unmeasured acquisitions still count for the overlap check and hand-off order.
    if (!measured) e.acquire_ns = -1;
    run.events.push_back(e);
  }
}

// Runs `workers` contenders numbered from `first_worker` in this process, on a client of
// its own; returns their events.
contention_run contend(bench_context& ctx, const std::vector<std::string>& uris,
                       std::string resource, bool fair, std::uint32_t first_worker,
                       std::size_t workers) {
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);
  contention_run run{.opts = ctx.opts,
                     .resource = std::move(resource),
                     .fair = fair,
                     .window = {ctx.opts.warmup, ctx.opts.contention_duration},
                     .first_worker = first_worker};
  for (std::size_t i = 0; i < workers; ++i) {
    ++run.active;
    const auto id = static_cast<std::uint32_t>(first_worker + i);
    asio::co_spawn(io, contender(c, run, id), [&run](std::exception_ptr e) {
      if (e && !run.error) run.error = e;
      --run.active;
    });
  }
  io.restart();
  while (run.active > 0) io.run_one();
  shut_down(io, c);
  if (run.error) std::rethrow_exception(run.error);
  return run;
}

// A child process's report to the parent: failures, the first error's length and text,
// the event count and the events, in host byte order through a pipe.
void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(3);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

void report(int fd, const contention_run& run) {
  const std::uint64_t header[3] = {run.failures, run.first_error.size(), run.events.size()};
  write_all(fd, header, sizeof header);
  write_all(fd, run.first_error.data(), run.first_error.size());
  write_all(fd, run.events.data(), run.events.size() * sizeof(w3_event));
}

// Runs the workers in `processes` forked children (each with its own client and
// connections) and gathers their events. A child never returns into main(): it must not
// stop the parent's redis-server processes, or flush the parent's buffers twice.
contention_run contend_in_processes(bench_context& ctx, const std::vector<std::string>& uris,
                                    const std::string& resource, bool fair, std::size_t processes) {
  const std::size_t per = ctx.opts.contenders / processes;
  std::vector<std::pair<pid_t, int>> children;
  std::fflush(stdout);
  std::fflush(stderr);
  for (std::size_t p = 0; p < processes; ++p) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("w3: pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("w3: fork failed");
    if (pid == 0) {
      ::close(fds[0]);
      int status = 0;
      try {
        const auto first = static_cast<std::uint32_t>(p * per);
        report(fds[1], contend(ctx, uris, resource, fair, first, per));
      } catch (const std::exception& e) {
        fmt::print(stderr, "w3 child {}: {}\n", p, e.what());
        status = 2;
      }
      ::close(fds[1]);
      ::_exit(status);
    }
    ::close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  contention_run all{
      .opts = ctx.opts, .resource = resource, .window = {seconds_f{0}, seconds_f{0}}};
  bool ok = true;
  for (auto& [pid, fd] : children) {
    std::uint64_t header[3] = {};
    std::string first_error;
    std::vector<w3_event> events;
    bool got = read_all(fd, header, sizeof header);
    if (got) {
      first_error.resize(header[1]);
      events.resize(header[2]);
      got = read_all(fd, first_error.data(), first_error.size()) &&
            read_all(fd, events.data(), events.size() * sizeof(w3_event));
    }
    ::close(fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    all.failures += header[0];
    if (all.first_error.empty()) all.first_error = std::move(first_error);
    all.events.insert(all.events.end(), events.begin(), events.end());
  }
  if (!ok) throw std::runtime_error("w3: a worker process failed (see above)");
  return all;
}

}  // namespace

void run_w3(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  for (const bool fair : o.fair_modes)
    for (const std::size_t processes : o.processes) {
      if (processes == 0 || o.contenders % processes != 0) {
        fmt::print(stderr, "w3 with {} processes skipped: --contenders ({}) must be a multiple\n",
                   processes, o.contenders);
        continue;
      }
      // A resource of its own per configuration: a lock left by one cannot slow the next.
      const std::string resource = ctx.key_prefix("w3") + "the-one-resource-" +
                                   std::to_string(processes) + (fair ? "-fair" : "");
      contention_run run = processes == 1
                               ? contend(ctx, uris, resource, fair, 0, o.contenders)
                               : contend_in_processes(ctx, uris, resource, fair, processes);

      // In the order of acquisition: each must come after the previous holder started its
      // release (else two held the lock at once); the gap between the two is the hand-off.
      std::sort(run.events.begin(), run.events.end(),
                [](const w3_event& a, const w3_event& b) { return a.acquired_ns < b.acquired_ns; });
      std::vector<std::uint64_t> per_worker(o.contenders, 0);
      latency_samples acquire, release, handoff;
      std::uint64_t acquisitions = 0, overlaps = 0;
      for (std::size_t i = 0; i < run.events.size(); ++i) {
        const w3_event& e = run.events[i];
        const w3_event* prev = i > 0 ? &run.events[i - 1] : nullptr;
        if (prev && prev->release_start_ns > e.acquired_ns) ++overlaps;
        if (e.acquire_ns < 0) continue;  // before the measured window
        ++acquisitions;
        ++per_worker.at(e.worker);
        acquire.add(std::chrono::nanoseconds{e.acquire_ns});
        if (e.release_ns >= 0) release.add(std::chrono::nanoseconds{e.release_ns});
        if (prev && prev->release_start_ns <= e.acquired_ns)
          handoff.add(std::chrono::nanoseconds{e.acquired_ns - prev->release_start_ns});
      }

      const auto [lo, hi] = std::minmax_element(per_worker.begin(), per_worker.end());
      json_line l = base_line("w3", uris.size(), o.contenders, acquisitions,
                              seconds_f{o.contention_duration});
      l.add("processes", processes);
      l.add("fair", static_cast<int>(fair));
      l.add_latency("acquire", acquire);
      l.add_latency("release", release);
      l.add_latency("handoff", handoff);
      l.add("fairness_min", static_cast<std::size_t>(per_worker.empty() ? 0 : *lo));
      l.add("fairness_max", static_cast<std::size_t>(per_worker.empty() ? 0 : *hi));
      // The target: no worker below half of an equal share.
      const double fair_share =
          o.contenders == 0 ? 0.0
                            : static_cast<double>(acquisitions) / static_cast<double>(o.contenders);
      l.add("fairness_min_vs_share",
            ratio(static_cast<double>(per_worker.empty() ? 0 : *lo), fair_share));
      l.add("overlaps", static_cast<std::size_t>(overlaps));
      l.add("failures", static_cast<std::size_t>(run.failures));
      l.add("hold_ms", static_cast<std::size_t>(o.hold.count()));
      l.add("ttl_ms", static_cast<std::size_t>(o.ttl.count()));
      const std::string human = fmt::format(
          "w3 contention{}: {:.0f} acquisitions/s by {} workers in {} process(es) on one resource; "
          "hand-off gap p50/p99 {:.0f}/{:.0f} us; per worker min {} max {}; {} overlaps{}",
          fair ? " (fair)" : "", l.number("ops_per_s").value_or(0), o.contenders, processes,
          l.number("handoff_p50_us").value_or(0), l.number("handoff_p99_us").value_or(0),
          per_worker.empty() ? 0 : *lo, per_worker.empty() ? 0 : *hi, overlaps,
          run.failures ? fmt::format("; {} failures (first: {})", run.failures, run.first_error)
                       : std::string{});
      ctx.emit(std::move(l), human);
    }
}

// ---- w4: degraded --------------------------------------------------------------------

namespace {

// Frozen servers are always thawed, whichever way the workload ends. By pid, so that w4
// can also freeze servers it did not start (--node-pids).
class freeze_guard {
 public:
  explicit freeze_guard(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    for (const pid_t pid : pids_) freeze(pid);
  }
  ~freeze_guard() {
    // A server that died meanwhile has nothing left to thaw.
    for (const pid_t pid : pids_) ::kill(pid, SIGCONT);
  }
  freeze_guard(const freeze_guard&) = delete;
  freeze_guard& operator=(const freeze_guard&) = delete;

 private:
  // SIGSTOP takes effect asynchronously, and a server that is not our child cannot be
  // waited for: watch its state in /proc until it reads "stopped".
  static void freeze(pid_t pid) {
    if (::kill(pid, SIGSTOP) != 0)
      throw std::runtime_error(
          fmt::format("w4: cannot stop pid {}: {}", pid, std::strerror(errno)));
    const auto end = bench_clock::now() + std::chrono::seconds{5};
    while (process_state(pid) != 'T') {
      if (bench_clock::now() > end)
        throw std::runtime_error(fmt::format("w4: pid {} did not stop within 5 s", pid));
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
  }
  // The state letter of /proc/PID/stat ("pid (comm) S ..."); 0 if unreadable.
  static char process_state(pid_t pid) {
    std::ifstream stat{fmt::format("/proc/{}/stat", pid)};
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '\0';
  }

  std::vector<pid_t> pids_;
};

}  // namespace

void run_w4(bench_context& ctx) {
  std::vector<std::string> uris;
  std::vector<pid_t> pids;
  if (test::redis_fleet* fleet = ctx.own_fleet(degraded_fleet_size)) {
    uris = fleet->uris();
    for (std::size_t i = 0; i < fleet->size(); ++i) pids.push_back((*fleet)[i].pid());
  } else if (ctx.opts.node_pids.size() == degraded_fleet_size) {
    uris = ctx.opts.nodes;
    pids = ctx.opts.node_pids;
  } else {
    fmt::print(stderr,
               "w4 skipped: it freezes servers, so it needs the bench's own nodes (run "
               "without --nodes) or {} --nodes with their --node-pids\n",
               degraded_fleet_size);
    return;
  }
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);
  // The healthy baseline: w2 on the same 5 nodes, with the same client.
  cycle_result healthy = run_cycles(io, c, timed_plan(ctx, "w4", 1));
  cycle_result degraded;
  {
    freeze_guard frozen{std::vector<pid_t>(pids.end() - frozen_nodes, pids.end())};
    // No warm-up: the first attempts after the freeze are part of what w4 measures.
    cycle_plan plan = timed_plan(ctx, "w4", 1);
    plan.warmup = seconds_f{0};
    degraded = run_cycles(io, c, plan);
    shut_down(io, c);
  }

  json_line l = cycle_line("w4", uris.size(), 1, degraded, ctx.opts.ttl);
  l.add("frozen", frozen_nodes);
  l.add_latency("healthy_acquire", healthy.acquire);
  l.add_latency("healthy_release", healthy.release);
  l.add("healthy_failures", static_cast<std::size_t>(healthy.failures));
  const auto vs_healthy = ratio(l.number("acquire_p99_us"), l.number("healthy_acquire_p99_us"));
  l.add("acquire_p99_vs_healthy", vs_healthy);
  const std::string human = fmt::format(
      "w4 degraded ({} of {} nodes frozen): {}; failure rate {:.4f}; acquire p99 = {:.2f}x the "
      "healthy p99 ({:.0f} us){}",
      frozen_nodes, uris.size(), latency_text(l), degraded.failure_rate(), vs_healthy.value_or(0),
      l.number("healthy_acquire_p99_us").value_or(0), failure_text(degraded));
  ctx.emit(std::move(l), human);
}

}  // namespace redlock::bench
