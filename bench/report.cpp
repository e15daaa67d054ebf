// SPDX-License-Identifier: BSL-1.0
// Results: percentiles, JSON lines, and the nodes every workload runs against.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "bench.hpp"

namespace redlock::bench {

measure_window::measure_window(seconds_f warmup, seconds_f duration)
    : from_(bench_clock::now() + std::chrono::duration_cast<bench_clock::duration>(warmup)),
      until_(from_ + std::chrono::duration_cast<bench_clock::duration>(duration)) {}

bool measure_window::enter(bench_clock::time_point now) {
  if (!open_ && now >= from_) {
    open_ = true;
    opened_ = now;
    last_completion_ = now;
  }
  return open_;
}

seconds_f measure_window::seconds() const {
  return open_ ? seconds_f{last_completion_ - opened_} : seconds_f{0};
}

latency_samples::summary latency_samples::summarize() {
  summary s;
  if (ns_.empty()) return s;
  std::sort(ns_.begin(), ns_.end());
  const auto n = ns_.size();
  // Nearest rank: the smallest sample with at least p of all samples at or below it.
  auto at = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
    return static_cast<double>(ns_[std::clamp<std::size_t>(rank, 1, n) - 1]) / 1000.0;
  };
  s.p50_us = at(0.50);
  s.p90_us = at(0.90);
  s.p99_us = at(0.99);
  s.p999_us = at(0.999);
  s.max_us = static_cast<double>(ns_.back()) / 1000.0;
  const long double total = std::accumulate(ns_.begin(), ns_.end(), 0.0L);
  s.mean_us = static_cast<double>(total / static_cast<long double>(n)) / 1000.0;
  return s;
}

json_line& json_line::add(std::string_view key, value v) {
  fields_.insert_or_assign(key, std::move(v));
  return *this;
}

json_line& json_line::add(std::string_view key, std::optional<double> v) {
  if (v && std::isfinite(*v)) return add(key, value(*v));
  return add(key, value(nullptr));
}

json_line& json_line::add_latency(std::string_view phase, latency_samples& samples) {
  const bool any = !samples.empty();
  const auto s = samples.summarize();
  auto field = [&](std::string_view name, double us) {
    add(fmt::format("{}_{}", phase, name), any ? std::optional<double>{us} : std::nullopt);
  };
  field("p50_us", s.p50_us);
  field("p90_us", s.p90_us);
  field("p99_us", s.p99_us);
  field("p999_us", s.p999_us);
  field("max_us", s.max_us);
  field("mean_us", s.mean_us);
  return *this;
}

const json_line::value* json_line::get(std::string_view key) const {
  return fields_.if_contains(key);
}

std::optional<double> json_line::number(std::string_view key) const {
  const value* v = get(key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

std::string json_line::str() const {
  // Fractions to three decimals, as the lines had before Boost.JSON wrote them ("%.3f"):
  // microseconds to the nanosecond, ratios to 0.1 %. Boost.JSON then prints each in its
  // shortest exact form, so results from either compare equal.
  boost::json::object rounded = fields_;
  for (auto& field : rounded)
    if (field.value().is_double())
      field.value() = std::round(field.value().get_double() * 1000.0) / 1000.0;
  return boost::json::serialize(rounded);
}

json_line base_line(std::string_view workload, std::size_t nodes, std::size_t concurrency,
                    std::uint64_t ops, seconds_f seconds) {
  json_line l;
  l.add("workload", workload);
  l.add("nodes", nodes);
  l.add("concurrency", concurrency);
  l.add("ops", static_cast<std::size_t>(ops));
  l.add("seconds", std::optional<double>{seconds.count()});
  l.add("ops_per_s", seconds.count() > 0
                         ? std::optional<double>{static_cast<double>(ops) / seconds.count()}
                         : std::nullopt);
  return l;
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

// ---- bench_context -------------------------------------------------------------------

std::vector<std::string> bench_context::node_uris(std::size_t n) {
  if (!opts.nodes.empty()) return opts.nodes;
  if (opts.cluster_shards > 0) {
    std::vector<std::string> out;
    for (auto* c : own_clusters(n)) out.push_back(c->uri());
    return out;
  }
  return own_fleet(n)->uris();
}

std::vector<test::redis_cluster*> bench_context::own_clusters(std::size_t n) {
  auto& made = clusters_[n];
  while (made.size() < n)
    made.push_back(std::make_unique<test::redis_cluster>(opts.cluster_shards));
  std::vector<test::redis_cluster*> out;
  for (auto& c : made) out.push_back(c.get());
  return out;
}

std::vector<std::string> bench_context::server_uris(std::size_t n) {
  if (!opts.nodes.empty() || opts.cluster_shards == 0) return node_uris(n);
  std::vector<std::string> out;
  for (auto* c : own_clusters(n))
    for (std::size_t i = 0; i < c->size(); ++i) out.push_back((*c)[i].uri());
  return out;
}

test::redis_fleet* bench_context::own_fleet(std::size_t n) {
  if (!opts.nodes.empty() || opts.cluster_shards > 0) return nullptr;
  auto& fleet = fleets_[n];
  if (!fleet) fleet = std::make_unique<test::redis_fleet>(n);
  return fleet.get();
}

std::string bench_context::key_prefix(std::string_view workload) const {
  return fmt::format("redlock-bench:{}:{}:", ::getpid(), workload);
}

bench_context::bench_context(options o) : opts(std::move(o)) {
  if (opts.observer == "noop") observer_ = std::make_shared<redlock::observer>();
  if (opts.observer == "metrics") observer_ = std::make_shared<redlock::metrics_observer>();
}

config bench_context::client_config(std::vector<std::string> uris) const {
  config cfg{.nodes = std::move(uris), .node_timeout = opts.node_timeout, .observer = observer_};
  cfg.tls.ca_file = opts.tls_ca;
  return cfg;
}

void bench_context::emit(json_line line, std::string_view human) {
  if (opts.observer != "none") line.add("observer", opts.observer.c_str());
  const std::string text = line.str();
  std::fputs(text.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  fmt::print(stderr, "{}\n", human);
  lines_.push_back(std::move(line));
}

const json_line* bench_context::find(std::string_view workload, std::size_t concurrency) const {
  for (const auto& line : lines_) {
    const auto* w = line.get("workload");
    if (w && w->is_string() && w->get_string() == workload &&
        line.number("concurrency") == static_cast<double>(concurrency))
      return &line;
  }
  return nullptr;
}

}  // namespace redlock::bench
