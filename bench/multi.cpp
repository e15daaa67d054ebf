// SPDX-License-Identifier: BSL-1.0
// multi: multi-resource locks. Each cycle takes 4 fresh resources at once with
// async_try_lock_all (one script call per node for the set) and releases the set; one
// line with one worker (compare with w2) and one per --concurrency (compare with w1).

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tuple>

#include "cycles.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
constexpr std::size_t set_size = 4;

struct multi_run {
  std::string prefix;
  std::chrono::milliseconds ttl;
  measure_window window;
  latency_samples acquire, release;
  std::uint64_t ops = 0, failures = 0;
  std::string first_error;

  void note_failure(bool measured, error_code ec, const char* phase) {
    if (!measured) return;
    ++failures;
    if (first_error.empty()) first_error = fmt::format("{}: {}", phase, ec.message());
  }
};

asio::awaitable<void> set_worker(redlock::client& c, multi_run& run, std::size_t worker) {
  const redlock::lock_options opts{.ttl = run.ttl};
  std::vector<std::string> names;
  for (std::uint64_t cycle = 0;; ++cycle) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    names.clear();
    for (std::size_t k = 0; k < set_size; ++k) {
      std::string r = run.prefix;
      append_hex(r, worker, 4);
      append_hex(r, cycle, 10);
      append_hex(r, k, 2);
      names.push_back(std::move(r));
    }
    std::tuple<error_code, redlock::multi_lock> got =
        co_await c.async_try_lock_all(names, opts, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      run.note_failure(measured, std::get<0>(got), "acquire");
      co_await yield_after_failure();
      continue;
    }
    std::tuple<error_code> released =
        co_await c.async_unlock(std::move(std::get<1>(got)), asio::as_tuple(asio::use_awaitable));
    const auto t2 = bench_clock::now();
    if (std::get<0>(released)) {
      run.note_failure(measured, std::get<0>(released), "release");
      co_await yield_after_failure();
      continue;
    }
    if (!measured) continue;
    ++run.ops;
    run.acquire.add(t1 - t0);
    run.release.add(t2 - t1);
    run.window.completed(t2);
  }
}

}  // namespace

void run_multi(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  std::vector<std::size_t> levels{1};
  for (const std::size_t c : o.concurrency)
    if (c != 1) levels.push_back(c);
  for (const std::size_t concurrency : levels) {
    asio::io_context io{1};
    redlock::client c{io.get_executor(), ctx.client_config(uris)};
    wait_until_lockable(io, c, ctx);
    multi_run run{
        .prefix = ctx.key_prefix("multi"), .ttl = o.ttl, .window = {o.warmup, o.duration}};
    std::size_t next_worker = 0;
    run_workers(io, concurrency, [&] { return set_worker(c, run, next_worker++); });
    shut_down(io, c);

    json_line l = base_line("multi", uris.size(), concurrency, run.ops, run.window.seconds());
    l.add("resources_per_lock", set_size);
    l.add_latency("acquire", run.acquire);
    l.add_latency("release", run.release);
    l.add("failures", static_cast<std::size_t>(run.failures));
    l.add("ttl_ms", static_cast<std::size_t>(o.ttl.count()));
    // The single-lock runs of the same invocation, when they ran before this one.
    const json_line* single = ctx.find(concurrency == 1 ? "w2" : "w1", concurrency);
    const auto vs =
        ratio(l.number("acquire_p50_us"), single ? single->number("acquire_p50_us") : std::nullopt);
    l.add(concurrency == 1 ? "acquire_p50_vs_w2" : "acquire_p50_vs_w1", vs);
    const std::string human = fmt::format(
        "multi ({} resources per lock, {} in flight): {:.0f} sets/s; {}{}", set_size, concurrency,
        l.number("ops_per_s").value_or(0), latency_text(l),
        run.failures ? fmt::format("; {} failures (first: {})", run.failures, run.first_error)
                     : std::string{});
    ctx.emit(std::move(l), human);
  }
}

}  // namespace redlock::bench
