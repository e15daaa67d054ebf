// SPDX-License-Identifier: BSL-1.0
// extend: many locks held by one client and renewed in the background by keepers
// (batched compare-and-pexpire): renewals per second, script calls per renewal cycle on
// each node, what the renewals cost the client and the servers, and that none is lost.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <thread>
#include <tuple>

#include "cycles.hpp"
#include "guard/renewal.hpp"
#include "quorum/rules.hpp"
#include "raw.hpp"
#include "redlock/keeper.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
// Acquisitions and releases in flight while the locks are taken and given back.
constexpr std::size_t in_flight = 64;
// How often the watcher thread reads every keeper's deadline.
constexpr auto poll_every = std::chrono::microseconds{500};

struct held_set {
  std::string prefix;
  std::vector<redlock::keeper> keepers;
  /// Lost by the end: invalid when the window closed, or handed back as lost.
  std::vector<bool> lost;
  std::size_t next = 0;
  std::uint64_t failures = 0;
  std::string first_error;
  latency_samples acquire;
  latency_samples release;

  void note(error_code ec, std::string_view what) {
    ++failures;
    if (first_error.empty()) first_error = fmt::format("{}: {}", what, ec.message());
  }
};

asio::awaitable<void> take_and_keep(redlock::client& c, held_set& h,
                                    std::chrono::milliseconds ttl) {
  std::string resource;
  const redlock::lock_options opts{.ttl = ttl};
  while (h.next < h.keepers.size()) {
    const std::size_t i = h.next++;
    resource = h.prefix;
    append_hex(resource, i);
    const auto t0 = bench_clock::now();
    std::tuple<error_code, redlock::lock> got =
        co_await c.async_try_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(got)) {
      h.note(std::get<0>(got), "acquire");
      co_await yield_after_failure();
      continue;
    }
    h.acquire.add(bench_clock::now() - t0);
    h.keepers[i] = redlock::keeper{c, std::move(std::get<1>(got))};
  }
}

asio::awaitable<void> stop_and_release(redlock::client& c, held_set& h) {
  while (h.next < h.keepers.size()) {
    const std::size_t i = h.next++;
    redlock::keeper& k = h.keepers[i];
    if (k.resource().empty()) continue;  // never taken
    std::tuple<error_code, redlock::lock> back =
        co_await k.async_stop(asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(back) == redlock::error::lock_lost) {
      h.lost[i] = true;
      continue;
    }
    if (std::get<0>(back)) {
      h.note(std::get<0>(back), "stop");
      continue;
    }
    const auto t0 = bench_clock::now();
    std::tuple<error_code> released =
        co_await c.async_unlock(std::move(std::get<1>(back)), asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(released)) {
      h.note(std::get<0>(released), "release");
      co_await yield_after_failure();
      continue;
    }
    h.release.add(bench_clock::now() - t0);
  }
}

// Renewals seen by a thread that reads every keeper's deadline (documented as safe from
// any thread). A new deadline is start + ttl - drift, so it also tells when its renewal
// started: the sample is from then until the new deadline was seen.
struct renewal_watch {
  std::uint64_t renewals = 0;
  latency_samples round_trip;
};

void watch_renewals(const std::vector<redlock::keeper>& keepers,
                    std::chrono::nanoseconds deadline_after_start, const std::atomic<bool>& stop,
                    renewal_watch& out) {
  std::vector<std::size_t> held;
  std::vector<boot_clock::time_point> last;
  for (std::size_t i = 0; i < keepers.size(); ++i) {
    if (keepers[i].resource().empty()) continue;
    held.push_back(i);
    last.push_back(keepers[i].deadline());
  }
  out.round_trip.reserve(held.size() * 64);
  while (!stop.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(poll_every);
    for (std::size_t j = 0; j < held.size(); ++j) {
      const auto d = keepers[held[j]].deadline();
      if (d == last[j]) continue;
      last[j] = d;
      ++out.renewals;
      out.round_trip.add(boot_clock::now() - (d - deadline_after_start));
    }
  }
}

}  // namespace

void run_extend(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  const config cfg = ctx.client_config(uris);
  asio::io_context io{1};
  redlock::client c{io.get_executor(), cfg};
  wait_until_lockable(io, c, ctx, redlock::lock_options{.ttl = o.extend_ttl});
  node_links links{io, uris, cfg};

  // Take the locks and hand each to a keeper (not measured as renewals).
  held_set h{.prefix = ctx.key_prefix("extend")};
  h.keepers.resize(o.extend_locks);
  h.lost.assign(o.extend_locks, false);
  h.acquire.reserve(o.extend_locks);
  h.release.reserve(o.extend_locks);
  const auto setup_start = bench_clock::now();
  run_workers(io, in_flight, [&] { return take_and_keep(c, h, o.extend_ttl); });
  const seconds_f setup{bench_clock::now() - setup_start};
  const auto held = static_cast<std::size_t>(std::count_if(
      h.keepers.begin(), h.keepers.end(), [](const auto& k) { return !k.resource().empty(); }));

  // The measured window: whole renewal intervals, so that it holds one renewal of each
  // lock per interval. It opens 1.5 intervals (at least --warmup) after the locks were
  // taken: the first renewals, which load the script on each connection, stay out.
  const auto interval = std::chrono::duration<double>(o.extend_ttl) * renew_options{}.fraction;
  const double intervals = std::max(1.0, std::ceil(o.duration / interval - 1e-9));
  const auto window = std::chrono::duration_cast<bench_clock::duration>(interval * intervals);
  io.restart();
  io.run_for(std::chrono::duration_cast<bench_clock::duration>(
      std::max<seconds_f>(o.warmup, interval * 1.5)));

  const auto stats_before = evalsha_stats(links);
  const auto cpu_before = thread_cpu_time();
  renewal_watch watch;
  std::atomic<bool> stop{false};
  const auto deadline_after_start = std::chrono::duration_cast<std::chrono::nanoseconds>(
      o.extend_ttl - detail::drift(o.extend_ttl, cfg.drift_factor));
  const auto window_start = bench_clock::now();
  std::thread watcher{[&] { watch_renewals(h.keepers, deadline_after_start, stop, watch); }};
  io.restart();
  io.run_for(window);
  stop.store(true, std::memory_order_release);
  watcher.join();
  const seconds_f measured{bench_clock::now() - window_start};
  const auto cpu_used = thread_cpu_time() - cpu_before;
  const auto stats_after = evalsha_stats(links);
  for (std::size_t i = 0; i < h.keepers.size(); ++i)
    if (!h.keepers[i].resource().empty() && !h.keepers[i].valid()) h.lost[i] = true;

  const auto teardown_start = bench_clock::now();
  h.next = 0;
  run_workers(io, in_flight, [&] { return stop_and_release(c, h); });
  const seconds_f teardown{bench_clock::now() - teardown_start};
  shut_down(io, c);

  const auto lost = static_cast<std::size_t>(std::count(h.lost.begin(), h.lost.end(), true));
  const auto nodes = static_cast<double>(uris.size());
  const auto renewals = static_cast<double>(watch.renewals);
  const double calls_per_node = static_cast<double>(stats_after.calls - stats_before.calls) / nodes;
  const auto failed_calls = static_cast<std::size_t>(stats_after.failed - stats_before.failed);
  const double usec_per_node = static_cast<double>(stats_after.usec - stats_before.usec) / nodes;
  const std::optional<double> cycles =
      held > 0 ? std::optional<double>{renewals / static_cast<double>(held)} : std::nullopt;
  const auto per_renewal = [&](double v) {
    return renewals > 0 ? std::optional<double>{v / renewals} : std::nullopt;
  };

  json_line l = base_line("extend", uris.size(), held, watch.renewals, measured);
  l.add_latency("acquire", h.acquire);
  l.add_latency("release", h.release);
  l.add_latency("renew", watch.round_trip);
  l.add("held_locks", held);
  l.add("ttl_ms", static_cast<std::size_t>(o.extend_ttl.count()));
  l.add("renew_interval_ms", std::optional<double>{interval.count() * 1000.0});
  l.add("expected_renewals_per_s",
        std::optional<double>{static_cast<double>(held) / interval.count()});
  l.add("renewal_cycles", cycles);
  l.add("evalsha_per_node", std::optional<double>{calls_per_node});
  l.add("evalsha_per_cycle_per_node", ratio(calls_per_node, cycles));
  l.add("evalsha_per_cycle_min", (held + detail::max_batch - 1) / detail::max_batch);
  l.add("evalsha_failed", failed_calls);
  l.add("locks_per_evalsha", ratio(renewals, calls_per_node));
  l.add("server_us_per_evalsha", ratio(usec_per_node, calls_per_node));
  l.add("server_us_per_renewal", per_renewal(usec_per_node));
  l.add("client_cpu_share", std::optional<double>{cpu_used / measured});
  l.add("client_us_per_renewal", per_renewal(cpu_used.count() * 1e6));
  l.add("lost", lost);
  l.add("failures", static_cast<std::size_t>(h.failures));
  l.add("setup_s", std::optional<double>{setup.count()});
  l.add("teardown_s", std::optional<double>{teardown.count()});

  auto v = [&](std::string_view key) { return l.number(key).value_or(0.0); };
  const std::string human = fmt::format(
      "extend: {} locks kept by keepers (TTL {} ms, renewed every {:.0f} ms): {:.0f} "
      "renewals/s (expected {:.0f}); {:.1f} EVALSHA per renewal cycle per node (at least {}), "
      "{:.0f} locks each; renewal round trip p50/p99/max {:.0f}/{:.0f}/{:.0f} us; client "
      "{:.1f} us and each server {:.1f} us per renewal; {} lost; taken in {:.2f} s, given "
      "back in {:.2f} s{}",
      held, o.extend_ttl.count(), interval.count() * 1000.0, v("ops_per_s"),
      v("expected_renewals_per_s"), v("evalsha_per_cycle_per_node"), v("evalsha_per_cycle_min"),
      v("locks_per_evalsha"), v("renew_p50_us"), v("renew_p99_us"), v("renew_max_us"),
      v("client_us_per_renewal"), v("server_us_per_renewal"), lost, setup.count(), teardown.count(),
      h.failures ? fmt::format("; {} failures (first: {})", h.failures, h.first_error)
                 : std::string{});
  ctx.emit(std::move(l), human);
}

}  // namespace redlock::bench
