// SPDX-License-Identifier: BSL-1.0
// raw: the w1 command mix through the connection layer alone, next to the server's
// ceiling; how much of w1's time the lock logic adds.

#include "raw.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/asio/post.hpp>
#include <charconv>
#include <random>
#include <stdexcept>
#include <string_view>

#include "client/client_state.hpp"
#include "redlock/error.hpp"

namespace redlock::bench {

using boost::system::error_code;

// ---- node_links ----------------------------------------------------------------------

node_links::node_links(asio::io_context& io, const std::vector<std::string>& uris,
                       const config& cfg)
    : io_(io), cfg_(cfg) {
  const detail::strand_type strand{asio::any_io_executor{io.get_executor()}};
  for (std::size_t i = 0; i < uris.size(); ++i) {
    node_uri u;
    std::string why;
    if (!parse_node_uri(uris[i], u, why)) throw std::runtime_error("bad node URI: " + why);
    conns_.push_back(std::make_shared<detail::connection>(strand, std::move(u), cfg_, i));
    conns_.back()->start();
  }
  const auto deadline = bench_clock::now() + cfg_.connect_timeout + std::chrono::seconds{1};
  io_.restart();
  for (const auto& c : conns_) {
    while (!c->ready()) {
      if (bench_clock::now() >= deadline)
        throw std::runtime_error(
            fmt::format("no connection to {}: {}", c->uri().display(), c->last_problem()));
      io_.run_for(std::chrono::milliseconds{5});
    }
  }
}

node_links::~node_links() {
  for (auto& c : conns_) c->close();
  io_.restart();
  io_.poll();
}

namespace {

// Collects one reply per node for ask_all().
class collect_sink final : public detail::request_sink {
 public:
  explicit collect_sink(std::size_t n) : texts(n), errors(n) {}
  void on_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    --pending;
    if (ec) {
      errors[i] = ec.message();
    } else if ((*r)[0].is_error()) {
      errors[i] = std::string{(*r)[0].text};
    } else if ((*r)[0].kind == resp::type::integer) {
      texts[i] = std::to_string((*r)[0].integer);
    } else {
      texts[i] = std::string{(*r)[0].text};
    }
  }
  std::size_t pending = 0;
  std::vector<std::string> texts;
  std::vector<std::string> errors;
};

}  // namespace

std::vector<std::string> node_links::ask_all(std::string_view payload) {
  collect_sink sink{conns_.size()};
  std::vector<detail::request> reqs(conns_.size());
  const auto deadline = boot_clock::now() + cfg_.node_timeout + std::chrono::seconds{5};
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    reqs[i] = detail::request{payload, nullptr, deadline, &sink, i, false};
    if (const auto ec = conns_[i]->submit(reqs[i])) {
      sink.errors[i] = ec.message();
    } else {
      ++sink.pending;
    }
  }
  io_.restart();
  while (sink.pending > 0) io_.run_one();
  for (std::size_t i = 0; i < conns_.size(); ++i)
    if (!sink.errors[i].empty())
      throw std::runtime_error(
          fmt::format("{} answered: {}", conns_[i]->uri().display(), sink.errors[i]));
  return std::move(sink.texts);
}

std::optional<std::int64_t> info_number(std::string_view info, std::string_view field) {
  const auto at = info.find(field);
  if (at == std::string_view::npos) return std::nullopt;
  const char* first = info.data() + at + field.size();
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(first, info.data() + info.size(), v);
  if (ec != std::errc{}) return std::nullopt;
  return v;
}

std::optional<double> info_real(std::string_view info, std::string_view field) {
  const auto at = info.find(field);
  if (at == std::string_view::npos) return std::nullopt;
  const char* first = info.data() + at + field.size();
  double v = 0;
  const auto [end, ec] = std::from_chars(first, info.data() + info.size(), v);
  if (ec != std::errc{}) return std::nullopt;
  return v;
}

namespace {

// `stat` is the INFO commandstats line's name with its colon, e.g. "cmdstat_evalsha:".
script_stats command_stats(node_links& links, std::string_view stat) {
  std::string info;
  resp::append_command(info, "INFO", "commandstats");
  script_stats s;
  for (const auto& text : links.ask_all(info)) {
    const auto at = text.find(stat);
    if (at == std::string::npos) continue;  // none yet
    const std::string_view line = std::string_view{text}.substr(at, text.find('\n', at) - at);
    const auto failed = info_number(line, "failed_calls=").value_or(0);
    s.calls += info_number(line, "calls=").value_or(0) - failed;
    s.failed += failed;
    s.usec += info_number(line, ",usec=").value_or(0);
  }
  return s;
}

}  // namespace

script_stats evalsha_stats(node_links& links) {
  return command_stats(links, "cmdstat_evalsha:");
}

script_stats eval_stats(node_links& links) {
  return command_stats(links, "cmdstat_eval:");
}

std::vector<double> server_cpu_seconds(node_links& links) {
  std::string info;
  resp::append_command(info, "INFO", "cpu");
  std::vector<double> out;
  for (const auto& text : links.ask_all(info)) {
    const auto user = info_real(text, "used_cpu_user:");
    const auto sys = info_real(text, "used_cpu_sys:");
    if (!user || !sys) throw std::runtime_error("INFO cpu without used_cpu_user/used_cpu_sys");
    out.push_back(*user + *sys);
  }
  return out;
}

std::vector<std::int64_t> used_memory(node_links& links) {
  std::string info;
  resp::append_command(info, "INFO", "memory");
  std::vector<std::int64_t> out;
  for (const auto& text : links.ask_all(info)) {
    const auto v = info_number(text, "used_memory:");
    if (!v) throw std::runtime_error("INFO memory without used_memory");
    out.push_back(*v);
  }
  return out;
}

// ---- raw cycles ----------------------------------------------------------------------

namespace {

struct raw_run {
  const raw_plan& plan;
  node_links& links;
  measure_window window;
  std::size_t active = 0;
  raw_result result;
};

// One worker's cycle as a small state machine: SET on every node used, then the release
// script on every node used, then the next cycle. Callbacks only, as the library's own
// operations are written, so that nothing but the connection layer is measured.
class raw_worker final : public detail::request_sink {
 public:
  explicit raw_worker(raw_run& run) : run_(run), rng_(std::random_device{}()) {
    key_.reserve(run.plan.key_prefix.size() + 16);
  }

  void start_cycle() {
    const auto now = bench_clock::now();
    if (run_.window.over(now)) {
      --run_.active;
      return;
    }
    measured_ = run_.window.enter(now);
    failed_ = false;
    key_ = run_.plan.key_prefix;
    append_hex(key_, rng_());
    token_.clear();
    // 40 hex characters, as long as the library's tokens.
    append_hex(token_, rng_());
    append_hex(token_, rng_());
    append_hex(token_, rng_(), 8);
    set_payload_.clear();
    resp::append_command(set_payload_, "SET", key_, token_, "NX", "PX",
                         std::int64_t{run_.plan.ttl.count()}, "GET");
    release_payload_.clear();
    resp::append_command(release_payload_, "EVALSHA", detail::release_script.sha, "1", key_,
                         token_);
    releasing_ = false;
    t0_ = now;
    send(set_payload_, nullptr);
  }

 private:
  void send(std::string_view payload, const detail::script* lua) {
    const auto deadline = boot_clock::now() + run_.links.cfg().node_timeout;
    pending_ = run_.plan.nodes_used;
    for (std::size_t i = 0; i < run_.plan.nodes_used; ++i) {
      reqs_[i] = detail::request{payload, lua, deadline, this, i, false};
      if (run_.links[i].submit(reqs_[i])) {
        failed_ = true;
        --pending_;
      }
    }
    // Sinks are never called from inside submit(): if nothing was accepted, nothing
    // will call us back. Posted, not called: a phase that fails at once, again and
    // again, must not recurse.
    if (pending_ == 0) asio::post(run_.links.get_executor(), [this] { phase_done(); });
  }

  void on_reply(std::size_t, error_code ec, const resp::reply* r) override {
    if (ec) {
      failed_ = true;
    } else if (!releasing_) {
      failed_ = failed_ || (*r)[0].kind != resp::type::null;  // nil: we set it
    } else {
      failed_ = failed_ || (*r)[0].kind != resp::type::integer || (*r)[0].integer != 1;
    }
    if (--pending_ == 0) phase_done();
  }

  void phase_done() {
    const auto now = bench_clock::now();
    if (!releasing_) {
      t1_ = now;
      releasing_ = true;
      send(release_payload_, &detail::release_script);
      return;
    }
    if (measured_) {
      if (failed_) {
        ++run_.result.failures;
      } else {
        ++run_.result.ops;
        run_.result.set.add(t1_ - t0_);
        run_.result.release.add(now - t1_);
        run_.window.completed(now);
      }
    }
    start_cycle();
  }

  raw_run& run_;
  std::mt19937_64 rng_;
  std::string key_;
  std::string token_;
  std::string set_payload_;
  std::string release_payload_;
  std::array<detail::request, detail::max_nodes> reqs_{};
  std::size_t pending_ = 0;
  bool releasing_ = false;
  bool failed_ = false;
  bool measured_ = false;
  bench_clock::time_point t0_{};
  bench_clock::time_point t1_{};
};

}  // namespace

raw_result run_raw_cycles(asio::io_context& io, node_links& links, const raw_plan& plan) {
  if (plan.nodes_used == 0 || plan.nodes_used > links.size() || plan.nodes_used > detail::max_nodes)
    throw std::invalid_argument("raw: bad number of nodes");
  raw_run run{.plan = plan, .links = links, .window = {plan.warmup, plan.duration}};
  run.result.set.reserve(static_cast<std::size_t>(plan.duration.count() * 200000.0));
  run.result.release.reserve(static_cast<std::size_t>(plan.duration.count() * 200000.0));

  std::vector<std::unique_ptr<raw_worker>> workers;
  for (std::size_t i = 0; i < plan.concurrency; ++i)
    workers.push_back(std::make_unique<raw_worker>(run));
  run.active = workers.size();
  for (auto& w : workers) w->start_cycle();
  io.restart();
  while (run.active > 0) io.run_one();
  run.result.seconds = run.window.seconds();
  return std::move(run.result);
}

std::optional<double> connection_set_p50_us(const bench_context& ctx, const std::string& uri) {
  asio::io_context io{1};
  node_links links{io, {uri}, ctx.client_config({uri})};
  const raw_plan plan{.concurrency = 1,
                      .nodes_used = 1,
                      .warmup = std::min(ctx.opts.warmup, seconds_f{0.5}),
                      .duration = std::min(ctx.opts.duration, seconds_f{2.0}),
                      .ttl = ctx.opts.ttl,
                      .key_prefix = ctx.key_prefix("rtt")};
  raw_result r = run_raw_cycles(io, links, plan);
  if (r.set.empty()) return std::nullopt;
  return r.set.summarize().p50_us;
}

// ---- the raw workload ----------------------------------------------------------------

void run_raw(bench_context& ctx) {
  constexpr std::size_t fleet_size = 3;
  const auto uris = ctx.node_uris(fleet_size);
  ceiling_result ceiling;
  if (ctx.opts.ceiling) {
    asio::io_context io{1};
    node_links links{io, uris, ctx.client_config(uris)};
    std::string load;
    resp::append_command(load, "SCRIPT", "LOAD", detail::release_script.body);
    links.ask_all(load);  // redis-benchmark's EVALSHA has no NOSCRIPT fallback
    ceiling = measure_ceiling(ctx, uris, detail::release_script.sha);
  } else {
    ceiling.problem = "not measured (--no-ceiling)";
  }

  for (const std::size_t concurrency : ctx.opts.concurrency) {
    asio::io_context io{1};
    node_links links{io, uris, ctx.client_config(uris)};
    const raw_plan plan{.concurrency = concurrency,
                        .nodes_used = uris.size(),
                        .warmup = ctx.opts.warmup,
                        .duration = ctx.opts.duration,
                        .ttl = ctx.opts.ttl,
                        .key_prefix = ctx.key_prefix("raw")};
    raw_result r = run_raw_cycles(io, links, plan);

    json_line l = base_line("raw", uris.size(), concurrency, r.ops, r.seconds);
    l.add_latency("acquire", r.set);
    l.add_latency("release", r.release);
    l.add("failures", static_cast<std::size_t>(r.failures));
    const auto raw_rate = l.number("ops_per_s");
    const json_line* w1 = ctx.find("w1", concurrency);
    const auto w1_rate = w1 ? w1->number("ops_per_s") : std::nullopt;
    l.add("ceiling_cycles_per_s", ceiling.cycles_per_s);
    l.add("ceiling_set_per_s", ceiling.set_per_s);
    l.add("ceiling_release_per_s", ceiling.release_per_s);
    l.add("ceiling_clients", ctx.opts.ceiling_clients);
    l.add("ceiling_pipeline", ctx.opts.ceiling_pipeline);
    l.add("w1_ops_per_s", w1_rate);
    l.add("w1_vs_raw", ratio(w1_rate, raw_rate));
    l.add("w1_vs_ceiling", ratio(w1_rate, ceiling.cycles_per_s));
    l.add("raw_vs_ceiling", ratio(raw_rate, ceiling.cycles_per_s));
    const std::string human = fmt::format(
        "raw: {:.0f} cycles/s through the connection layer with {} in flight; server ceiling "
        "{}; w1 = {} of raw, {} of the ceiling",
        raw_rate.value_or(0), concurrency,
        ceiling.cycles_per_s ? fmt::format("{:.0f} cycles/s", *ceiling.cycles_per_s)
                             : "unknown (" + ceiling.problem + ")",
        w1_rate ? fmt::format("{:.2f}", *ratio(w1_rate, raw_rate)) : std::string{"?"},
        w1_rate && ceiling.cycles_per_s
            ? fmt::format("{:.2f}", *ratio(w1_rate, ceiling.cycles_per_s))
            : std::string{"?"});
    ctx.emit(std::move(l), human);
  }
}

}  // namespace redlock::bench
