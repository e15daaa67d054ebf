// SPDX-License-Identifier: BSL-1.0
// memory: heap allocations per acquire+release cycle, and the bytes a held lock costs in
// this process and on each server.

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tuple>

#include "cycles.hpp"
#include "raw.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
constexpr std::size_t in_flight = 64;

struct held_locks {
  std::string prefix;
  std::vector<redlock::lock> locks;
  std::size_t next = 0;
  std::uint64_t failures = 0;
  std::string first_error;

  void note(error_code ec, std::string_view what) {
    ++failures;
    if (first_error.empty()) first_error = fmt::format("{}: {}", what, ec.message());
  }
};

asio::awaitable<void> take_locks(redlock::client& c, held_locks& h, std::chrono::milliseconds ttl) {
  std::string resource;
  const redlock::lock_options opts{.ttl = ttl};
  while (h.next < h.locks.size()) {
    const std::size_t i = h.next++;
    resource = h.prefix;
    append_hex(resource, i);
    std::tuple<error_code, redlock::lock> got =
        co_await c.async_try_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
    if (!std::get<0>(got)) {
      h.locks[i] = std::move(std::get<1>(got));
      continue;
    }
    h.note(std::get<0>(got), "acquire");
    co_await yield_after_failure();
  }
}

asio::awaitable<void> release_locks(redlock::client& c, held_locks& h) {
  while (h.next < h.locks.size()) {
    redlock::lock& lk = h.locks[h.next++];
    if (!lk.owns()) continue;
    std::tuple<error_code> released =
        co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
    if (std::get<0>(released)) {
      h.note(std::get<0>(released), "release");
      co_await yield_after_failure();
    }
  }
}

// Operations outlive their completion until the last node's late reply arrives; a local
// node answers well within the pause after the workers, so the heap is settled when we
// read it.
template <typename Worker>
void run_all(asio::io_context& io, held_locks& h, Worker make_worker) {
  h.next = 0;
  run_workers(io, in_flight, make_worker);
  io.run_for(std::chrono::milliseconds{50});
}

}  // namespace

void run_memory(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context io{1};
  redlock::client c{io.get_executor(), ctx.client_config(uris)};
  wait_until_lockable(io, c, ctx);

  // Allocations per cycle: one worker, so that every allocation in the window belongs to
  // a counted cycle.
  const cycle_plan plan{.concurrency = 1,
                        .warmup = std::min(o.warmup, seconds_f{0.5}),
                        .duration = seconds_f{3600},
                        .max_ops = o.cycles,
                        .ttl = o.ttl,
                        .key_prefix = ctx.key_prefix("memory")};
  cycle_result r = run_cycles(io, c, plan);

  // Bytes per held lock, in this process (heap plus the lock object) and on the servers.
  node_links links{io, uris, ctx.client_config(uris)};
  held_locks h{.prefix = ctx.key_prefix("memory-held")};
  h.locks.resize(o.held);
  const auto server_before = used_memory(links);
  const auto heap_before = alloc::snapshot();
  run_all(io, h, [&] { return take_locks(c, h, o.ttl); });
  const auto heap_after = alloc::snapshot();
  const auto server_after = used_memory(links);
  const std::uint64_t taken = o.held - std::min<std::uint64_t>(h.failures, o.held);
  run_all(io, h, [&] { return release_locks(c, h); });
  shut_down(io, c);

  std::optional<double> client_bytes, server_bytes;
  if (taken > 0) {
    const auto n = static_cast<double>(taken);
    client_bytes = static_cast<double>(heap_after.live_bytes - heap_before.live_bytes) / n +
                   static_cast<double>(sizeof(redlock::lock));
    double server_sum = 0;
    for (std::size_t i = 0; i < server_before.size(); ++i)
      server_sum += static_cast<double>(server_after[i] - server_before[i]);
    server_bytes = server_sum / static_cast<double>(server_before.size()) / n;
  }

  json_line l = base_line("memory", uris.size(), 1, r.ops, r.seconds);
  l.add_latency("acquire", r.acquire);
  l.add_latency("release", r.release);
  l.add("failures", static_cast<std::size_t>(r.failures + h.failures));
  l.add("allocs_per_cycle", std::optional<double>{r.allocs_per_cycle()});
  l.add("alloc_bytes_per_cycle", std::optional<double>{r.alloc_bytes_per_cycle()});
  l.add("held_locks", static_cast<std::size_t>(taken));
  l.add("client_bytes_per_lock", client_bytes);
  l.add("server_bytes_per_lock", server_bytes);
  l.add("lock_object_bytes", sizeof(redlock::lock));
  l.add("ttl_ms", static_cast<std::size_t>(o.ttl.count()));
  const std::string human = fmt::format(
      "memory: {:.1f} heap allocations ({:.0f} bytes) per acquire+release cycle; a held lock "
      "costs {:.0f} bytes here and {:.0f} bytes on each node{}",
      r.allocs_per_cycle(), r.alloc_bytes_per_cycle(), client_bytes.value_or(0),
      server_bytes.value_or(0),
      r.failures + h.failures ? fmt::format("; {} failures (first: {})", r.failures + h.failures,
                                            r.first_error.empty() ? h.first_error : r.first_error)
                              : std::string{});
  ctx.emit(std::move(l), human);
}

}  // namespace redlock::bench
