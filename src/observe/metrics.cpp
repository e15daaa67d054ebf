// SPDX-License-Identifier: BSL-1.0
// The ready-made metrics observer: counters and latency histograms behind one mutex,
// rendered in the Prometheus text exposition format (0.0.4).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "redlock/error.hpp"
#include "redlock/observer.hpp"

namespace redlock {

const char* to_string(node_answer a) noexcept {
  switch (a) {
    case node_answer::yes:
      return "yes";
    case node_answer::held:
      return "held";
    case node_answer::refused:
      return "refused";
    case node_answer::failed:
      return "failed";
    case node_answer::held_back:
      return "held_back";
    case node_answer::no_answer:
      return "no_answer";
  }
  return "unknown";
}

namespace {

// A label value for an outcome: short, stable and bounded in number (a message would be
// neither).
std::string_view outcome_label(boost::system::error_code ec) {
  if (!ec) return "ok";
  if (ec.category() != category()) return "other";
  switch (static_cast<error>(ec.value())) {
    case error::contended:
      return "contended";
    case error::wait_timeout:
      return "wait_timeout";
    case error::no_quorum:
      return "no_quorum";
    case error::validity_exhausted:
      return "validity_exhausted";
    case error::not_held:
      return "not_held";
    case error::lock_lost:
      return "lock_lost";
    case error::cancelled:
      return "cancelled";
    case error::wrong_type:
      return "wrong_type";
    case error::invalid_argument:
      return "invalid_argument";
    case error::invalid_ttl:
      return "invalid_ttl";
    case error::invalid_resource:
      return "invalid_resource";
    case error::invalid_wait:
      return "invalid_wait";
    case error::too_many_resources:
      return "too_many_resources";
    case error::shut_down:
      return "shut_down";
    case error::no_lock:
      return "no_lock";
    default:
      return "other";
  }
}

std::string_view kind_label(node_event::kind k) {
  switch (k) {
    case node_event::kind::connected:
      return "connected";
    case node_event::kind::disconnected:
      return "disconnected";
    case node_event::kind::connect_failed:
      return "connect_failed";
    case node_event::kind::restarted:
      return "restarted";
    case node_event::kind::clock_jump:
      return "clock_jump";
    case node_event::kind::replica:
      return "replica";
    case node_event::kind::duplicate:
      return "duplicate";
    case node_event::kind::tls_unverified:
      return "tls_unverified";
    default:
      return "other";
  }
}

// Label values may hold any text (a host name): escape what the format reserves.
std::string escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

struct histogram {
  std::vector<std::uint64_t> counts;  // one per bound, then +Inf; not cumulative
  std::int64_t sum_us = 0;            // whole microseconds: a sum of doubles would print as
                                      // 0.005672000000000002
  std::uint64_t count = 0;

  void observe(const std::vector<double>& bounds, std::chrono::microseconds d) {
    if (counts.empty()) counts.assign(bounds.size() + 1, 0);
    const double v = static_cast<double>(d.count()) / 1e6;
    const auto it = std::lower_bound(bounds.begin(), bounds.end(), v);  // le: v <= bound
    ++counts[static_cast<std::size_t>(it - bounds.begin())];
    sum_us += d.count();
    ++count;
  }
  double sum() const { return static_cast<double>(sum_us) / 1e6; }
};

template <typename T>
T& entry(std::map<std::string, T, std::less<>>& m, std::string_view key) {
  auto it = m.find(key);
  if (it == m.end()) it = m.emplace(std::string{key}, T{}).first;
  return it->second;
}

}  // namespace

struct metrics_observer::impl {
  metrics_options opts;
  mutable std::mutex mutex;
  std::map<std::string, std::uint64_t, std::less<>> attempts;  // by outcome
  std::map<std::string, std::uint64_t, std::less<>> calls;     // by outcome
  histogram acquire;
  std::map<std::string, histogram, std::less<>> node_latency;    // by address
  std::map<std::string, std::uint64_t, std::less<>> extensions;  // by "by|outcome"
  std::map<std::string, std::uint64_t, std::less<>> losses;      // by reason
  std::map<std::string, std::map<std::string, std::uint64_t, std::less<>>, std::less<>>
      node_events;                                    // address -> kind -> n
  std::map<std::string, int, std::less<>> connected;  // address -> 0/1

  void node_latencies(std::span<const node_reply> nodes) {
    for (const auto& n : nodes)
      if (n.latency.count() >= 0)
        entry(node_latency, n.address).observe(opts.latency_buckets, n.latency);
  }

  std::string render() const;
};

metrics_observer::metrics_observer(metrics_options opts) : impl_(std::make_unique<impl>()) {
  const auto& b = opts.latency_buckets;
  if (b.empty()) throw std::invalid_argument("metrics_options::latency_buckets is empty");
  for (std::size_t i = 0; i < b.size(); ++i)
    if (!(b[i] > 0) || (i > 0 && !(b[i] > b[i - 1])))
      throw std::invalid_argument(
          "metrics_options::latency_buckets must be positive and increasing");
  impl_->opts = std::move(opts);
}

metrics_observer::~metrics_observer() = default;

void metrics_observer::on_attempt(const attempt_event& e) {
  std::lock_guard g{impl_->mutex};
  ++entry(impl_->attempts, outcome_label(e.outcome));
  impl_->node_latencies(e.nodes);
}

void metrics_observer::on_acquire(const acquire_event& e) {
  std::lock_guard g{impl_->mutex};
  ++entry(impl_->calls, outcome_label(e.outcome));
  if (!e.outcome) impl_->acquire.observe(impl_->opts.latency_buckets, e.elapsed);
}

void metrics_observer::on_extend(const extend_event& e) {
  std::lock_guard g{impl_->mutex};
  std::string key{e.by_keeper ? "keeper" : "call"};
  key += '|';
  key += outcome_label(e.outcome);
  ++entry(impl_->extensions, key);
  impl_->node_latencies(e.nodes);
}

void metrics_observer::on_loss(const loss_event& e) {
  std::lock_guard g{impl_->mutex};
  ++entry(impl_->losses, outcome_label(e.reason));
}

void metrics_observer::on_node_event(const node_event& e) {
  std::lock_guard g{impl_->mutex};
  ++entry(entry(impl_->node_events, e.address), kind_label(e.what));
  if (e.what == node_event::kind::connected) entry(impl_->connected, e.address) = 1;
  if (e.what == node_event::kind::disconnected || e.what == node_event::kind::connect_failed)
    entry(impl_->connected, e.address) = 0;
}

std::string metrics_observer::render() const {
  std::lock_guard g{impl_->mutex};
  return impl_->render();
}

std::string metrics_observer::impl::render() const {
  std::string out;
  const std::string& p = opts.prefix;
  auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out), "# HELP {}{} {}\n# TYPE {}{} {}\n", p, name, help, p,
                   name, type);
  };
  auto counters = [&](std::string_view name, std::string_view label,
                      const std::map<std::string, std::uint64_t, std::less<>>& m) {
    for (const auto& [value, n] : m)
      fmt::format_to(std::back_inserter(out), "{}{}{{{}=\"{}\"}} {}\n", p, name, label,
                     escape(value), n);
  };
  // labels: "" or `node="..."`; the le label goes after them.
  auto hist = [&](std::string_view name, const std::string& labels, const histogram& h) {
    const std::string sep = labels.empty() ? "" : labels + ",";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < opts.latency_buckets.size(); ++i) {
      cumulative += h.counts.empty() ? 0 : h.counts[i];
      fmt::format_to(std::back_inserter(out), "{}{}_bucket{{{}le=\"{}\"}} {}\n", p, name, sep,
                     opts.latency_buckets[i], cumulative);
    }
    cumulative += h.counts.empty() ? 0 : h.counts.back();
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    fmt::format_to(std::back_inserter(out), "{}{}_bucket{{{}le=\"+Inf\"}} {}\n", p, name, sep,
                   cumulative);
    fmt::format_to(std::back_inserter(out), "{}{}_sum{} {}\n{}{}_count{} {}\n", p, name, braces,
                   h.sum(), p, name, braces, h.count);
  };

  family("lock_attempts_total", "counter",
         "Rounds of lock calls (one request to every node), by outcome.");
  counters("lock_attempts_total", "outcome", attempts);
  family("lock_calls_total", "counter",
         "Completed async_lock and async_try_lock calls, by outcome.");
  counters("lock_calls_total", "outcome", calls);
  family("acquire_seconds", "histogram",
         "Time a successful lock call took to get its lock, waiting included.");
  hist("acquire_seconds", "", acquire);
  family("node_latency_seconds", "histogram",
         "A node's reply time in lock rounds and extensions (replies before the decision).");
  for (const auto& [address, h] : node_latency)
    hist("node_latency_seconds", fmt::format("node=\"{}\"", escape(address)), h);
  family("extensions_total", "counter", "Extensions, by keeper or call, by outcome.");
  for (const auto& [key, n] : extensions) {
    const auto bar = key.find('|');
    fmt::format_to(std::back_inserter(out), "{}extensions_total{{by=\"{}\",outcome=\"{}\"}} {}\n",
                   p, key.substr(0, bar), key.substr(bar + 1), n);
  }
  family("losses_total", "counter", "Held locks found lost, by reason.");
  counters("losses_total", "reason", losses);
  family("node_events_total", "counter",
         "Node events by kind: connected, disconnected, connect_failed, restarted, clock_jump, "
         "replica, duplicate, tls_unverified.");
  for (const auto& [address, kinds] : node_events)
    for (const auto& [kind, n] : kinds)
      fmt::format_to(std::back_inserter(out), "{}node_events_total{{node=\"{}\",kind=\"{}\"}} {}\n",
                     p, escape(address), kind, n);
  family("node_connected", "gauge", "1 while the connection to the node is up, else 0.");
  for (const auto& [address, up] : connected)
    fmt::format_to(std::back_inserter(out), "{}node_connected{{node=\"{}\"}} {}\n", p,
                   escape(address), up);
  return out;
}

}  // namespace redlock
