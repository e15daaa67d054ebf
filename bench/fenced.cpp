// SPDX-License-Identifier: BSL-1.0
// fenced: w2 and w1 with fencing tokens (lock_options::fenced), next to the unfenced
// lines of the same run: what the token's second round (the write-back) costs, and a
// check that tokens increase per resource.

#include <fmt/format.h>

#include <string>

#include "client/testing.hpp"
#include "cycles.hpp"
#include "raw.hpp"

namespace redlock::bench {
namespace {

constexpr std::size_t fleet_size = 3;
// The sequential run cycles through this many resources, so that each is locked
// thousands of times and its tokens can be compared.
constexpr std::size_t sequential_resources = 16;
// Fewer new counters than this drown in used_memory's other movements.
constexpr std::int64_t min_counters_measured = 10000;

struct fenced_run {
  cycle_result result;
  /// Counters in the fencing hash on node 0 after the run, and the growth of used_memory
  /// (mean over the nodes) per counter the run added; null if it added too few.
  std::int64_t counters = 0;
  std::optional<double> bytes_per_counter;
};

// The client's fencing keys under a key prefix (config::key_prefix).
std::string fence_hash(const std::string& key_prefix) {
  return key_prefix + "redlock:fence";
}
std::string fence_marker(const std::string& key_prefix) {
  return key_prefix + "redlock:fence:marker";
}

std::int64_t counters_on_first_node(node_links& links, const std::string& key_prefix) {
  std::string hlen;
  resp::append_command(hlen, "HLEN", fence_hash(key_prefix));
  return std::stoll(links.ask_all(hlen).front());
}

double mean_growth(const std::vector<std::int64_t>& before,
                   const std::vector<std::int64_t>& after) {
  double sum = 0;
  for (std::size_t i = 0; i < before.size(); ++i) sum += static_cast<double>(after[i] - before[i]);
  return before.empty() ? 0.0 : sum / static_cast<double>(before.size());
}

// One timed run with its own client. The fencing keys fall under the client's key prefix
// (the bench's), so the resource names are only the 16 hex digits of the cycle.
fenced_run run_fenced_cycles(bench_context& ctx, const std::vector<std::string>& uris,
                             node_links& links, std::size_t concurrency, std::size_t pool) {
  round_marks marks{"", concurrency};
  config cfg = ctx.client_config(uris);
  cfg.key_prefix = ctx.key_prefix("fenced");
  cfg.fence_stripes = ctx.opts.fence_stripes;

  asio::io_context io{1};
  redlock::client c{io.get_executor(), cfg};
  redlock::detail::set_fence_writeback_hook(c, marks.hook());
  // A fresh prefix has no fencing counters yet: the probe waits until the client has
  // initialised them (and out the restart guard).
  wait_until_lockable(io, c, ctx, redlock::lock_options{.ttl = ctx.opts.ttl, .fenced = true});
  const auto counters_before = counters_on_first_node(links, cfg.key_prefix);
  const auto memory_before = used_memory(links);

  cycle_plan plan = timed_plan(ctx, "fenced", concurrency, &links);
  plan.key_prefix.clear();
  plan.fenced = true;
  plan.resources_per_worker = pool;
  plan.marks = &marks;
  fenced_run run{.result = run_cycles(io, c, plan)};
  shut_down(io, c);

  run.counters = counters_on_first_node(links, cfg.key_prefix);
  const auto added = run.counters - counters_before;
  if (added >= min_counters_measured)
    run.bytes_per_counter =
        mean_growth(memory_before, used_memory(links)) / static_cast<double>(added);
  return run;
}

// The fenced line: the contract's fields, both rounds, the token check, and the ratios
// to the unfenced line of the same run (null without one: run w1 and w2 too).
json_line fenced_line(std::string_view name, std::size_t nodes, std::size_t concurrency,
                      std::size_t pool, fenced_run& run, const json_line* unfenced,
                      std::chrono::milliseconds ttl) {
  cycle_result& r = run.result;
  json_line l = cycle_line(name, nodes, concurrency, r, ttl);
  l.add_latency("first_round", r.first_round);
  l.add_latency("write_back", r.write_back);
  l.add("write_back_share", r.ops == 0
                                ? std::optional<double>{}
                                : static_cast<double>(r.write_backs) / static_cast<double>(r.ops));
  l.add("resources_per_worker", pool);
  l.add("fence_checks", static_cast<std::size_t>(r.fence_checks));
  l.add("fence_violations", static_cast<std::size_t>(r.fence_violations));
  l.add("fence_counters", run.counters);
  l.add("fence_bytes_per_counter", run.bytes_per_counter);
  auto from_unfenced = [&](std::string_view key) {
    return unfenced ? unfenced->number(key) : std::nullopt;
  };
  for (const char* key : {"ops_per_s", "acquire_p50_us", "acquire_p99_us", "allocs_per_cycle",
                          "client_cpu_us_per_cycle", "server_cpu_us_per_cycle"})
    l.add(fmt::format("unfenced_{}", key), from_unfenced(key));
  l.add("ops_per_s_vs_unfenced", ratio(l.number("ops_per_s"), from_unfenced("ops_per_s")));
  l.add("acquire_p50_vs_unfenced",
        ratio(l.number("acquire_p50_us"), from_unfenced("acquire_p50_us")));
  l.add("acquire_p99_vs_unfenced",
        ratio(l.number("acquire_p99_us"), from_unfenced("acquire_p99_us")));
  return l;
}

std::string fenced_text(const json_line& l, std::string_view unfenced_name) {
  auto v = [&](std::string_view key) { return l.number(key).value_or(0.0); };
  const std::string vs =
      l.number("acquire_p50_vs_unfenced")
          ? fmt::format("{:.0f} cycles/s = {:.2f}x {}; acquire p50 = {:.2f}x {}'s", v("ops_per_s"),
                        v("ops_per_s_vs_unfenced"), unfenced_name, v("acquire_p50_vs_unfenced"),
                        unfenced_name)
          : fmt::format("{:.0f} cycles/s (no {} line in this run to compare with)", v("ops_per_s"),
                        unfenced_name);
  return fmt::format(
      "{} with {} in flight: {}; {}; first round p50 {:.0f} us, write-back in {:.1f} % of "
      "cycles, p50/p99 {:.0f}/{:.0f} us; {} tokens checked, {} violations; {:.1f} allocations "
      "per cycle",
      l.get("workload")->get_string().c_str(), v("concurrency"), vs, latency_text(l),
      v("first_round_p50_us"), 100 * v("write_back_share"), v("write_back_p50_us"),
      v("write_back_p99_us"), v("fence_checks"), v("fence_violations"), v("allocs_per_cycle"));
}

}  // namespace

namespace {

void run_fenced_lines(bench_context& ctx, const std::vector<std::string>& uris, node_links& links) {
  fenced_run seq = run_fenced_cycles(ctx, uris, links, 1, sequential_resources);
  json_line l2 = fenced_line("fenced_w2", uris.size(), 1, sequential_resources, seq,
                             ctx.find("w2", 1), ctx.opts.ttl);
  l2.add("fence_stripes", ctx.opts.fence_stripes);
  std::string human = fenced_text(l2, "w2") + failure_text(seq.result);
  ctx.emit(std::move(l2), human);

  for (const std::size_t concurrency : ctx.opts.concurrency) {
    fenced_run run = run_fenced_cycles(ctx, uris, links, concurrency, 0);
    json_line l1 = fenced_line("fenced_w1", uris.size(), concurrency, 0, run,
                               ctx.find("w1", concurrency), ctx.opts.ttl);
    l1.add("fence_stripes", ctx.opts.fence_stripes);
    human = fenced_text(l1, "w1") + failure_text(run.result);
    ctx.emit(std::move(l1), human);
  }
}

// The counters and the marker are the only keys without a TTL: never leave them on
// nodes the bench did not start.
void delete_fence_keys(node_links& links, const std::string& key_prefix) {
  std::string unlink;
  resp::append_command(unlink, "UNLINK", fence_hash(key_prefix), fence_marker(key_prefix));
  links.ask_all(unlink);
}

}  // namespace

void run_fenced(bench_context& ctx) {
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context admin_io{1};
  node_links links{admin_io, uris, ctx.client_config(uris)};
  try {
    run_fenced_lines(ctx, uris, links);
  } catch (...) {
    delete_fence_keys(links, ctx.key_prefix("fenced"));
    throw;
  }
  delete_fence_keys(links, ctx.key_prefix("fenced"));
}

}  // namespace redlock::bench
