// SPDX-License-Identifier: BSL-1.0
#include "cycles.hpp"

#include <fmt/format.h>
#include <time.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <exception>
#include <random>
#include <stdexcept>
#include <tuple>

#include "raw.hpp"

namespace redlock::bench {

std::function<void(std::string_view)> round_marks::hook() {
  return [this](std::string_view resource) { note(resource); };
}

void round_marks::note(std::string_view resource) {
  // Other acquisitions of the client (the readiness probe) have other names: ignored.
  if (resource.size() != prefix_.size() + 16 || !resource.starts_with(prefix_)) return;
  const char* digits = resource.data() + prefix_.size();
  std::size_t worker = 0;
  const auto [end, ec] = std::from_chars(digits, digits + 4, worker, 16);
  if (ec != std::errc{} || end != digits + 4 || worker >= at_.size()) return;
  at_[worker] = bench_clock::now();
}

double cycle_result::allocs_per_cycle() const {
  if (ops == 0) return 0.0;
  return static_cast<double>(allocs_after.allocations - allocs_before.allocations) /
         static_cast<double>(ops);
}

double cycle_result::alloc_bytes_per_cycle() const {
  if (ops == 0) return 0.0;
  return static_cast<double>(allocs_after.bytes - allocs_before.bytes) / static_cast<double>(ops);
}

namespace {

using boost::system::error_code;

// Shared by the workers of one run; everything runs on one thread.
struct cycle_run {
  const cycle_plan& plan;
  redlock::client& client;
  measure_window window;
  std::uint64_t started_in_window = 0;
  std::size_t active = 0;
  cycle_result result;
  std::exception_ptr error;

  // Whether a cycle starting now is measured.
  bool enter_cycle(bench_clock::time_point now) {
    const bool was_open = window.is_open();
    if (!window.enter(now)) return false;
    if (!was_open) result.allocs_before = alloc::snapshot();
    ++started_in_window;
    return true;
  }
  bool should_stop(bench_clock::time_point now) const {
    return window.over(now) || (plan.max_ops != 0 && started_in_window >= plan.max_ops);
  }
  void note_failure(bool measured, error_code ec, std::string_view what) {
    if (!measured) return;
    ++result.failures;
    if (result.first_error.empty()) result.first_error = fmt::format("{}: {}", what, ec.message());
  }
};

// The 4 hex digits after the prefix name the worker (round_marks finds it by them); the
// other 12 are random, or the number of one of the worker's own resources.
void next_resource(std::string& resource, std::size_t prefix_size, std::size_t worker,
                   std::uint64_t rest) {
  resource.resize(prefix_size);
  append_hex(resource, worker, 4);
  append_hex(resource, rest, 12);
}

// Tokens must be positive and, per resource, above the previous holder's.
void check_fence(cycle_run& run, std::vector<std::uint64_t>& last, std::size_t slot,
                 std::uint64_t fence) {
  ++run.result.fence_checks;
  const bool increasing = last.empty() || fence > last[slot];
  if (fence == 0 || !increasing) ++run.result.fence_violations;
  if (!last.empty()) last[slot] = fence;
}

// GCC 12 at -O2 reports a false -Wmismatched-new-delete for this coroutine's frame: it
// pairs the frame's class-specific operator delete with the aligned_alloc that Asio's
// operator new inlines. Both are Asio's, and they match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<void> cycle_worker(cycle_run& run, std::size_t worker) {
  std::mt19937_64 rng{std::random_device{}()};
  std::string resource = run.plan.key_prefix;
  resource.reserve(resource.size() + 16);
  const redlock::lock_options opts{
      .ttl = run.plan.ttl, .fenced = run.plan.fenced, .shared = run.plan.shared};
  const std::size_t pool = run.plan.resources_per_worker;
  std::vector<std::uint64_t> last_fence(pool, 0);
  std::size_t slot = 0;
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.should_stop(t0)) break;
    const bool measured = run.enter_cycle(t0);
    if (pool > 0) slot = (slot + 1) % pool;
    next_resource(resource, run.plan.key_prefix.size(), worker, pool > 0 ? slot : rng());

    std::tuple<error_code, redlock::lock> got =
        co_await run.client.async_try_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      run.note_failure(measured, std::get<0>(got), "acquire");
      co_await yield_after_failure();
      continue;
    }
    if (run.plan.fenced) check_fence(run, last_fence, slot, std::get<1>(got).fence());
    std::tuple<error_code> released = co_await run.client.async_unlock(
        std::move(std::get<1>(got)), asio::as_tuple(asio::use_awaitable));
    const auto t2 = bench_clock::now();
    if (std::get<0>(released)) {
      run.note_failure(measured, std::get<0>(released), "release");
      co_await yield_after_failure();
      continue;
    }
    ++run.result.all_ops;
    if (measured) {
      ++run.result.ops;
      run.result.acquire.add(t1 - t0);
      run.result.release.add(t2 - t1);
      if (run.plan.marks) {
        // No mark inside this cycle: the client handed the token out after one round
        // (a majority already held it), so there was no write-back to time.
        const auto mid = run.plan.marks->at(worker);
        if (mid >= t0 && mid <= t1) {
          run.result.first_round.add(mid - t0);
          run.result.write_back.add(t1 - mid);
          ++run.result.write_backs;
        } else {
          run.result.first_round.add(t1 - t0);
        }
      }
      run.window.completed(t2);
    }
  }
}
#pragma GCC diagnostic pop

// Everything by reference: the caller runs the io_context until this completes.
asio::awaitable<void> lock_once(redlock::client& c, const std::string& resource,
                                const redlock::lock_options& opts, redlock::diagnostics& diag,
                                error_code& result) {
  std::tuple<error_code, redlock::lock> got =
      co_await c.async_lock(resource, opts, diag, asio::as_tuple(asio::use_awaitable));
  result = std::get<0>(got);
  if (result) co_return;
  std::tuple<error_code> released = co_await c.async_unlock(std::move(std::get<1>(got)), diag,
                                                            asio::as_tuple(asio::use_awaitable));
  result = std::get<0>(released);
}

}  // namespace

asio::awaitable<void> yield_after_failure() {
  const auto ex = co_await asio::this_coro::executor;
  co_await asio::post(ex, asio::use_awaitable);
}

void wait_until_lockable(asio::io_context& io, redlock::client& c, const bench_context& ctx) {
  wait_until_lockable(io, c, ctx, redlock::lock_options{.ttl = ctx.opts.ttl});
}

void wait_until_lockable(asio::io_context& io, redlock::client& c, const bench_context& ctx,
                         redlock::lock_options opts) {
  opts.wait = opts.ttl + std::chrono::seconds{10};
  const std::string resource = ctx.key_prefix("ready") + "probe";
  redlock::diagnostics diag;
  error_code result;
  bool done = false;
  std::exception_ptr error;
  asio::co_spawn(io, lock_once(c, resource, opts, diag, result), [&](std::exception_ptr e) {
    error = e;
    done = true;
  });
  io.restart();
  while (!done) io.run_one();
  if (error) std::rethrow_exception(error);
  if (result)
    throw std::runtime_error(fmt::format("the nodes cannot be locked: {}",
                                         diag.message.empty() ? result.message() : diag.message));
}

cycle_result run_cycles(asio::io_context& io, redlock::client& c, const cycle_plan& plan) {
  cycle_run run{.plan = plan, .client = c, .window = {plan.warmup, plan.duration}};
  // Reserved up front so that the bench's own bookkeeping allocates nothing while the
  // allocation counters are read.
  const double expect =
      plan.max_ops ? static_cast<double>(plan.max_ops) : plan.duration.count() * 200000.0;
  run.result.acquire.reserve(static_cast<std::size_t>(expect));
  run.result.release.reserve(static_cast<std::size_t>(expect));

  if (plan.marks) {
    run.result.first_round.reserve(static_cast<std::size_t>(expect));
    run.result.write_back.reserve(static_cast<std::size_t>(expect));
  }
  if (plan.concurrency > 0xffff)
    throw std::invalid_argument("at most 65535 workers: resource names give them 4 hex digits");

  std::vector<double> server_cpu_before;
  if (plan.servers) server_cpu_before = server_cpu_seconds(*plan.servers);
  const auto cpu_before = thread_cpu_time();
  for (std::size_t i = 0; i < plan.concurrency; ++i) {
    ++run.active;
    asio::co_spawn(io, cycle_worker(run, i), [&run](std::exception_ptr e) {
      if (e && !run.error) run.error = e;
      if (--run.active == 0) run.result.allocs_after = alloc::snapshot();
    });
  }
  // Not io.run(): the client's connections keep reads pending for as long as it lives.
  io.restart();
  while (run.active > 0) io.run_one();
  run.result.client_cpu = thread_cpu_time() - cpu_before;
  if (run.error) std::rethrow_exception(run.error);
  if (plan.servers) {
    const auto after = server_cpu_seconds(*plan.servers);
    double sum = 0;
    for (std::size_t i = 0; i < after.size(); ++i) {
      sum += after[i] - server_cpu_before[i];
      run.result.server_cpu_each.push_back(after[i] - server_cpu_before[i]);
    }
    if (!after.empty()) run.result.server_cpu_s = sum / static_cast<double>(after.size());
  }
  run.result.seconds = run.window.seconds();
  if (run.result.ops == 0) run.result.allocs_after = run.result.allocs_before;
  return std::move(run.result);
}

void run_workers(asio::io_context& io, std::size_t count,
                 const std::function<asio::awaitable<void>()>& make_worker) {
  std::size_t active = 0;
  std::exception_ptr error;
  for (std::size_t i = 0; i < count; ++i) {
    ++active;
    asio::co_spawn(io, make_worker(), [&](std::exception_ptr e) {
      if (e && !error) error = e;
      --active;
    });
  }
  io.restart();
  while (active > 0) io.run_one();
  if (error) std::rethrow_exception(error);
}

void shut_down(asio::io_context& io, redlock::client& c) {
  bool done = false;
  c.async_shutdown([&done](error_code) { done = true; });
  io.restart();
  while (!done) io.run_one();
  // Lets the closed connections' cancelled handlers run, so nothing is left for the next
  // workload's io_context.
  io.poll();
}

seconds_f thread_cpu_time() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return seconds_f{static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9};
}

std::string latency_text(const json_line& l) {
  auto us = [&](std::string_view key) { return l.number(key).value_or(0.0); };
  return fmt::format(
      "acquire p50/p99/max {:.0f}/{:.0f}/{:.0f} us, release p50/p99/max "
      "{:.0f}/{:.0f}/{:.0f} us",
      us("acquire_p50_us"), us("acquire_p99_us"), us("acquire_max_us"), us("release_p50_us"),
      us("release_p99_us"), us("release_max_us"));
}

cycle_plan timed_plan(const bench_context& ctx, std::string_view workload, std::size_t concurrency,
                      node_links* servers) {
  return cycle_plan{.concurrency = concurrency,
                    .warmup = ctx.opts.warmup,
                    .duration = ctx.opts.duration,
                    .ttl = ctx.opts.ttl,
                    .key_prefix = ctx.key_prefix(workload),
                    .servers = servers};
}

json_line cycle_line(std::string_view workload, std::size_t nodes, std::size_t concurrency,
                     cycle_result& r, std::chrono::milliseconds ttl) {
  json_line l = base_line(workload, nodes, concurrency, r.ops, r.seconds);
  l.add_latency("acquire", r.acquire);
  l.add_latency("release", r.release);
  l.add("failures", static_cast<std::size_t>(r.failures));
  l.add("failure_rate", std::optional<double>{r.failure_rate()});
  l.add("allocs_per_cycle", std::optional<double>{r.allocs_per_cycle()});
  const auto all = static_cast<double>(r.all_ops);
  auto per_cycle_us = [&](std::optional<double> s) {
    return s && all > 0 ? std::optional<double>{*s * 1e6 / all} : std::nullopt;
  };
  l.add("client_cpu_us_per_cycle", per_cycle_us(r.client_cpu.count()));
  if (r.server_cpu_s) l.add("server_cpu_us_per_cycle", per_cycle_us(r.server_cpu_s));
  l.add("ttl_ms", static_cast<std::size_t>(ttl.count()));
  return l;
}

std::string failure_text(const cycle_result& r) {
  if (r.failures == 0) return "";
  return fmt::format("; {} failures (first: {})", r.failures, r.first_error);
}

}  // namespace redlock::bench
