// SPDX-License-Identifier: BSL-1.0
// claims: the save-once gate's cost. Each round claims fresh names (async_try_claim with
// batches of 1, 16 and 128; and single async_claim calls from many coroutines, batched
// by the client), then settles the won ones as done markers, in both claim modes (the
// "done" marker spread to every node, and the claim that is its own marker). Claims per
// second, what the client and the servers spend on each, and the servers' ceiling for
// the same script calls (redis-benchmark).

#include "drivers/claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <tuple>

#include "cycles.hpp"
#include "quorum/rules.hpp"
#include "raw.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
// Done markers live this long: long enough to be real, short enough that the servers'
// memory stays flat at 200,000 claims a second.
constexpr auto keep_for = std::chrono::milliseconds{1000};

struct claim_config {
  const char* mode;       // "batch": async_try_claim; "single": async_claim per coroutine
  std::size_t batch;      // names per call
  std::size_t in_flight;  // calls in flight
  bool batch_given;       // false: the client forms batches from single calls
  claim_mode marker = claim_mode::spread_marker;  // what a settled claim becomes
};

struct claim_run {
  std::string prefix;
  measure_window window;
  std::uint64_t next = 0;
  std::uint64_t claims = 0;  // names claimed and settled in the window
  std::uint64_t won = 0;
  std::uint64_t failures = 0;
  std::string first_error;
  latency_samples claim, settle;

  void note(error_code ec, std::string_view what) {
    ++failures;
    if (first_error.empty()) first_error = fmt::format("{}: {}", what, ec.message());
  }
  std::string fresh_name() {
    std::string s = prefix;
    append_hex(s, next++, 12);
    return s;
  }
};

asio::awaitable<void> batch_worker(redlock::client& c, claim_run& run, std::size_t batch,
                                   std::chrono::milliseconds ttl, claim_mode marker) {
  std::vector<redlock::lock> won;
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    std::vector<std::string> names;
    names.reserve(batch);
    for (std::size_t i = 0; i < batch; ++i) names.push_back(run.fresh_name());
    std::tuple<error_code, std::vector<claim_result>> got = co_await c.async_try_claim(
        std::move(names), ttl, marker, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      run.note(std::get<0>(got), "claim");
      co_await yield_after_failure();
      continue;
    }
    won.clear();
    for (auto& r : std::get<1>(got))
      if (r.won()) won.push_back(std::move(r.lock));
    std::tuple<error_code, std::size_t> settled =
        co_await c.async_settle(won, keep_for, asio::as_tuple(asio::use_awaitable));
    const auto t2 = bench_clock::now();
    if (std::get<0>(settled)) run.note(std::get<0>(settled), "settle");
    if (!measured) continue;
    run.claims += batch;
    run.won += won.size();
    run.claim.add(t1 - t0);
    run.settle.add(t2 - t1);
    run.window.completed(t2);
  }
}

asio::awaitable<void> single_worker(redlock::client& c, claim_run& run,
                                    std::chrono::milliseconds ttl, claim_mode marker) {
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    std::tuple<error_code, claim_result> got =
        co_await c.async_claim(run.fresh_name(), ttl, marker, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      run.note(std::get<0>(got), "claim");
      co_await yield_after_failure();
      continue;
    }
    claim_result& r = std::get<1>(got);
    if (r.won()) {
      std::tuple<error_code> settled =
          co_await c.async_settle(r.lock, keep_for, asio::as_tuple(asio::use_awaitable));
      if (std::get<0>(settled)) run.note(std::get<0>(settled), "settle");
    }
    const auto t2 = bench_clock::now();
    if (!measured) continue;
    ++run.claims;
    run.won += r.won();
    run.claim.add(t1 - t0);
    run.settle.add(t2 - t1);
    run.window.completed(t2);
  }
}

// The servers' ceiling for the same calls: redis-benchmark sends the claim script with
// `batch` random names to every node at once. A claim costs a majority of nodes one
// name in a claim call and one in a settle call; a settle is taken to cost what a claim
// does (both are one lookup and one write per name).
std::optional<double> claims_ceiling(const bench_context& ctx, const std::vector<std::string>& uris,
                                     std::size_t batch, std::string& problem) {
  if (!ctx.opts.ceiling) return std::nullopt;
  std::vector<std::string> cmd{"EVALSHA", std::string{detail::claim_script.sha},
                               std::to_string(batch)};
  for (std::size_t i = 0; i < batch; ++i) cmd.push_back("redlock-bench:ceiling:__rand_int__");
  cmd.push_back(std::to_string(ctx.opts.ttl.count()));
  for (std::size_t i = 0; i < batch; ++i) cmd.push_back("0123456789abcdef0123456789abcdef01234567");
  try {
    double names_per_s = 0;
    for (double calls : redis_benchmark_rates(ctx, uris, cmd)) names_per_s += calls * double(batch);
    return names_per_s / (2.0 * static_cast<double>(detail::quorum(uris.size())));
  } catch (const std::exception& e) {
    problem = e.what();
    return std::nullopt;
  }
}

}  // namespace

void run_claims(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context admin_io{1};
  // Every server (each primary of a cluster node): its script calls and CPU.
  const auto server_uris = ctx.server_uris(fleet_size);
  node_links links{admin_io, server_uris, ctx.client_config(server_uris)};
  const std::size_t shards = o.cluster_shards;
  constexpr auto own = claim_mode::own_marker;
  const std::vector<claim_config> configs =
      o.quick
          ? std::vector<claim_config>{{"single", 1, 64, false}, {"single", 1, 64, false, own}}
          : std::vector<claim_config>{{"batch", 1, 64, true},       {"batch", 16, 16, true},
                                      {"batch", 128, 4, true},      {"single", 1, 512, false},
                                      {"batch", 1, 64, true, own},  {"batch", 16, 16, true, own},
                                      {"batch", 128, 4, true, own}, {"single", 1, 512, false, own}};
  // The ceilings run after every measurement: redis-benchmark leaves millions of keys
  // behind whose expiry would slow the next configuration's servers.
  std::vector<json_line> lines;
  std::vector<std::string> first_errors;
  for (const auto& cc : configs) {
    asio::io_context io{1};
    redlock::client c{io.get_executor(), ctx.client_config(uris)};
    wait_until_lockable(io, c, ctx);
    claim_run run{.prefix = ctx.key_prefix("claims") + ":", .window = {o.warmup, o.duration}};
    run.claim.reserve(1u << 16);
    run.settle.reserve(1u << 16);
    const auto calls_before = evalsha_stats(links);
    const auto evals_before = eval_stats(links);
    const auto cpu_before = server_cpu_seconds(links);
    const auto client_before = thread_cpu_time();
    const bool single = std::string_view{cc.mode} == "single";
    run_workers(io, cc.in_flight, [&]() -> asio::awaitable<void> {
      return single ? single_worker(c, run, o.ttl, cc.marker)
                    : batch_worker(c, run, cc.batch, o.ttl, cc.marker);
    });
    // Warm-up included in the CPU figures, as in the other workloads' per-op costs: the
    // counts below are divided by every claim made, measured or not.
    const auto client_cpu = thread_cpu_time() - client_before;
    const auto cpu_after = server_cpu_seconds(links);
    const auto calls_after = evalsha_stats(links);
    const auto evals_after = eval_stats(links);
    shut_down(io, c);

    double server_cpu = 0;
    std::vector<double> cpu_each;
    for (std::size_t i = 0; i < cpu_after.size(); ++i) {
      cpu_each.push_back(cpu_after[i] - cpu_before[i]);
      server_cpu += cpu_each.back();
    }
    const auto all_claims = static_cast<double>(run.next);
    const seconds_f seconds = run.window.seconds();
    json_line l = base_line("claims", uris.size(), cc.in_flight, run.claims, seconds);
    l.add("mode", cc.mode);
    l.add("marker", to_string(cc.marker));
    l.add("batch", cc.batch);
    // The contract's phases: acquire is the claim call, release the settle call.
    l.add_latency("acquire", run.claim);
    l.add_latency("release", run.settle);
    l.add("won", static_cast<std::size_t>(run.won));
    l.add("failures", static_cast<std::size_t>(run.failures));
    l.add("script_calls_per_claim",
          ratio(static_cast<double>(calls_after.calls - calls_before.calls), all_claims));
    // EVAL: the calls sent without reading the reply (the spread of done markers, undos).
    l.add("eval_calls_per_claim",
          ratio(static_cast<double>(evals_after.calls - evals_before.calls), all_claims));
    l.add("client_us_per_claim", ratio(client_cpu.count() * 1e6, all_claims));
    l.add("server_us_per_claim", ratio(server_cpu * 1e6, all_claims));
    if (shards > 0) {
      // Each node a cluster: how evenly its primaries shared the work, and the busiest
      // server's CPU per claim, which bounds what one single-threaded primary can take.
      l.add("cluster_shards", static_cast<std::int64_t>(shards));
      l.add("servers", static_cast<std::int64_t>(cpu_each.size()));
      const auto [lo, hi] = std::minmax_element(cpu_each.begin(), cpu_each.end());
      if (!cpu_each.empty() && *lo > 0)
        l.add("server_cpu_spread", std::optional<double>{*hi / *lo});
      if (!cpu_each.empty()) l.add("busiest_server_us_per_claim", ratio(*hi * 1e6, all_claims));
    }
    lines.push_back(std::move(l));
    first_errors.push_back(run.first_error);
  }
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const auto& cc = configs[k];
    json_line& l = lines[k];
    // Names per script call: with single calls the client forms the batches (a batch
    // costs four calls on three nodes: a claim and a settle on each node of a majority).
    std::size_t batch = cc.batch;
    if (const auto calls = l.number("script_calls_per_claim");
        !cc.batch_given && calls && *calls > 0)
      batch = std::clamp<std::size_t>(static_cast<std::size_t>(std::lround(4.0 / *calls)), 1,
                                      max_claim_batch);
    l.add("effective_batch", batch);
    std::string problem;
    // The ceiling sends one script call with all of a batch's names to each node: a
    // cluster node refuses that (CROSSSLOT), so there the model in docs/performance.md
    // works from the measured CPU per claim instead.
    const auto ceiling = shards > 0 ? std::nullopt : claims_ceiling(ctx, uris, batch, problem);
    if (shards > 0 && o.ceiling) problem = "not measured on cluster nodes";
    l.add("ceiling_claims_per_s", ceiling);
    l.add("vs_ceiling", ratio(l.number("ops_per_s"), ceiling));
    if (!problem.empty()) l.add("ceiling_problem", problem);
    const auto won = l.number("won").value_or(0);
    const auto ops = l.number("ops").value_or(0);
    const std::string human = fmt::format(
        "claims {} x{} ({}) with {} in flight: {:.0f} claims/s ({:.0f}% won), claim p50/p99 "
        "{:.0f}/{:.0f} us; client {:.2f} us and servers {:.2f} us per claim; {:.2f} script "
        "calls per claim (+{:.3f} EVAL){}{}{}{}",
        cc.mode, cc.batch, to_string(cc.marker), cc.in_flight, l.number("ops_per_s").value_or(0),
        ops > 0 ? 100.0 * won / ops : 0.0, l.number("acquire_p50_us").value_or(0),
        l.number("acquire_p99_us").value_or(0), l.number("client_us_per_claim").value_or(0),
        l.number("server_us_per_claim").value_or(0), l.number("script_calls_per_claim").value_or(0),
        l.number("eval_calls_per_claim").value_or(0),
        ceiling ? fmt::format("; ceiling {:.0f}/s", *ceiling) : std::string{},
        l.number("busiest_server_us_per_claim")
            ? fmt::format("; busiest server {:.2f} us per claim, spread {:.2f}",
                          *l.number("busiest_server_us_per_claim"),
                          l.number("server_cpu_spread").value_or(0))
            : std::string{},
        l.number("failures").value_or(0) > 0
            ? fmt::format("; {:.0f} failures, first: {}", l.number("failures").value_or(0),
                          first_errors[k])
            : "",
        problem.empty() ? "" : "; no ceiling: " + problem);
    ctx.emit(std::move(l), human);
  }
}

}  // namespace redlock::bench
