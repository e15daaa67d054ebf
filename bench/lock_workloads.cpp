// w1 (throughput), w2 (latency), w3 (contention) and w4 (degraded): the lock as an
// application uses it.

#include <fmt/format.h>

#include <signal.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
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

}  // namespace

void run_w1(bench_context& ctx) {
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context admin_io{1};
  node_links servers{admin_io, uris, ctx.client_config(uris)};
  for (const std::size_t concurrency : ctx.opts.concurrency) {
    asio::io_context io{1};
    redlock::client c{io.get_executor(), ctx.client_config(uris)};
    wait_until_lockable(io, c, ctx);
    cycle_result r = run_cycles(io, c, timed_plan(ctx, "w1", concurrency, &servers));
    shut_down(io, c);
    json_line l = cycle_line("w1", uris.size(), concurrency, r, ctx.opts.ttl);
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
  node_links servers{admin_io, uris, ctx.client_config(uris)};
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

// ---- w3: contention ------------------------------------------------------------------

namespace {

struct contention_run {
  const options& opts;
  std::string resource;
  measure_window window;
  std::vector<std::uint64_t> per_worker;
  std::uint64_t acquisitions = 0;
  std::uint64_t failures = 0;
  std::string first_error;
  int inside = 0;
  std::uint64_t overlaps = 0;
  bool released_since_acquire = false;
  bench_clock::time_point last_release_start{};
  latency_samples acquire, release, handoff;
  std::size_t active = 0;
  std::exception_ptr error;
};

asio::awaitable<void> contender(redlock::client& c, contention_run& run, std::size_t id) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold{ex};
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    // Waits no longer than the run lasts, so that every worker ends with it.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(run.window.until() - t0);
    const redlock::lock_options opts{.ttl = run.opts.ttl, .wait = left};
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
    // Mutual exclusion, checked locally: the next holder can only get in after the
    // previous one started its release.
    if (run.inside++ != 0) ++run.overlaps;
    if (measured) {
      ++run.acquisitions;
      ++run.per_worker[id];
      run.acquire.add(t1 - t0);
      if (run.released_since_acquire) run.handoff.add(t1 - run.last_release_start);
    }
    run.released_since_acquire = false;

    hold.expires_after(run.opts.hold);
    co_await hold.async_wait(asio::use_awaitable);

    --run.inside;
    const auto t2 = bench_clock::now();
    run.last_release_start = t2;
    run.released_since_acquire = true;
    std::tuple<error_code> released =
        co_await c.async_unlock(std::get<1>(got), asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(released)) {
      if (measured && run.first_error.empty())
        run.first_error = fmt::format("release: {}", std::get<0>(released).message());
      run.failures += measured ? 1 : 0;
    } else if (measured) {
      run.release.add(bench_clock::now() - t2);
    }
  }
}

}  // namespace

void run_w3(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);

  contention_run run{.opts = o,
                     .resource = ctx.key_prefix("w3") + "the-one-resource",
                     .window = {o.warmup, o.contention_duration}};
  run.per_worker.assign(o.contenders, 0);
  for (std::size_t i = 0; i < o.contenders; ++i) {
    ++run.active;
    asio::co_spawn(io, contender(c, run, i), [&run](std::exception_ptr e) {
      if (e && !run.error) run.error = e;
      --run.active;
    });
  }
  io.restart();
  while (run.active > 0) io.run_one();
  shut_down(io, c);
  if (run.error) std::rethrow_exception(run.error);

  const auto [lo, hi] = std::minmax_element(run.per_worker.begin(), run.per_worker.end());
  json_line l = base_line("w3", uris.size(), o.contenders, run.acquisitions,
                          seconds_f{o.contention_duration});
  l.add_latency("acquire", run.acquire);
  l.add_latency("release", run.release);
  l.add_latency("handoff", run.handoff);
  l.add("fairness_min", static_cast<std::size_t>(run.per_worker.empty() ? 0 : *lo));
  l.add("fairness_max", static_cast<std::size_t>(run.per_worker.empty() ? 0 : *hi));
  l.add("overlaps", static_cast<std::size_t>(run.overlaps));
  l.add("failures", static_cast<std::size_t>(run.failures));
  l.add("hold_ms", static_cast<std::size_t>(o.hold.count()));
  l.add("ttl_ms", static_cast<std::size_t>(o.ttl.count()));
  const std::string human = fmt::format(
      "w3 contention: {:.0f} acquisitions/s by {} workers on one resource; hand-off gap "
      "p50/p99 {:.0f}/{:.0f} us; per worker min {} max {}; {} overlaps{}",
      l.number("ops_per_s").value_or(0), o.contenders, l.number("handoff_p50_us").value_or(0),
      l.number("handoff_p99_us").value_or(0), run.per_worker.empty() ? 0 : *lo,
      run.per_worker.empty() ? 0 : *hi, run.overlaps,
      run.failures ? fmt::format("; {} failures (first: {})", run.failures, run.first_error)
                   : std::string{});
  ctx.emit(std::move(l), human);
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
