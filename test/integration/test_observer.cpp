// SPDX-License-Identifier: BSL-1.0
// The observer: what it is told about attempts, calls, extensions, losses and nodes, and
// the metrics observer's Prometheus text, against real nodes that are contended, emptied
// behind the holder's back, frozen and restarted.

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <set>
#include <sstream>

#include "async_helpers.hpp"
#include "fake_server.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::node_answer;
using redlock::test::eventually;
using redlock::test::run_bounded;

namespace {

struct seen_node {
  node_answer answer;
  error_code error;
  std::chrono::microseconds latency;
};

std::vector<seen_node> copy_nodes(std::span<const redlock::node_reply> nodes) {
  std::vector<seen_node> out;
  for (const auto& n : nodes) out.push_back({n.answer, n.error, n.latency});
  return out;
}

struct seen_attempt {
  std::string resource;
  bool fenced;
  unsigned attempt;
  error_code outcome;
  std::chrono::microseconds elapsed;
  std::uint64_t fence;
  std::vector<seen_node> nodes;

  std::size_t count(node_answer a) const {
    return static_cast<std::size_t>(std::count_if(
        nodes.begin(), nodes.end(), [a](const seen_node& n) { return n.answer == a; }));
  }
};

struct seen_extend {
  std::string resource;
  bool by_keeper;
  error_code outcome;
  std::vector<seen_node> nodes;
};

struct seen_loss {
  std::string resource;
  bool by_keeper;
  error_code reason;
};

struct seen_node_event {
  redlock::node_event::kind what;
  std::size_t node;
};

// Keeps a copy of everything it is told, and passes it on to a metrics observer.
// The tests run the io_context on their own thread: no lock is needed to read it.
class recorder final : public redlock::observer {
 public:
  std::vector<seen_attempt> attempts;
  std::vector<redlock::acquire_event> calls;  // resource views cleared: not kept
  std::vector<std::string> call_resources;
  std::vector<seen_extend> extends;
  std::vector<seen_loss> losses;
  std::vector<seen_node_event> node_events;
  redlock::metrics_observer metrics;

  void on_attempt(const redlock::attempt_event& e) override {
    attempts.push_back({std::string{e.resource}, e.fenced, e.attempt, e.outcome, e.elapsed, e.fence,
                        copy_nodes(e.nodes)});
    metrics.on_attempt(e);
  }
  void on_acquire(const redlock::acquire_event& e) override {
    call_resources.emplace_back(e.resource);
    calls.push_back(e);
    calls.back().resource = {};
    metrics.on_acquire(e);
  }
  void on_extend(const redlock::extend_event& e) override {
    extends.push_back({std::string{e.resource}, e.by_keeper, e.outcome, copy_nodes(e.nodes)});
    metrics.on_extend(e);
  }
  void on_loss(const redlock::loss_event& e) override {
    losses.push_back({std::string{e.resource}, e.by_keeper, e.reason});
    metrics.on_loss(e);
  }
  void on_node_event(const redlock::node_event& e) override {
    node_events.push_back({e.what, e.node});
    metrics.on_node_event(e);
  }

  std::size_t count(redlock::node_event::kind k, std::size_t node) const {
    return static_cast<std::size_t>(
        std::count_if(node_events.begin(), node_events.end(),
                      [&](const seen_node_event& e) { return e.what == k && e.node == node; }));
  }
  std::size_t connected() const {
    std::size_t n = 0;
    for (const auto& e : node_events) n += e.what == redlock::node_event::kind::connected;
    return n;
  }
};

struct three_nodes : redlock::test::fleet_fixture<3> {
  std::shared_ptr<recorder> seen = std::make_shared<recorder>();

  redlock::config observed_config() {
    auto cfg = config();
    cfg.observer = seen;
    return cfg;
  }
  void wait_connected(std::size_t n) {
    const bool ok = run_bounded(io, eventually([&] { return seen->connected() >= n; }));
    BOOST_REQUIRE_MESSAGE(ok, "the client did not connect to every node");
  }
};

// ---- the Prometheus text format, parsed strictly enough to catch a malformed line ----

struct sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct exposition {
  std::map<std::string, std::string> types;  // family -> counter / gauge / histogram
  std::vector<sample> samples;

  double value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    return 0;  // a counter not yet incremented has no sample
  }
};

bool is_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// Throws std::runtime_error naming the line that does not parse.
exposition parse_exposition(const std::string& text) {
  exposition out;
  std::istringstream in{text};
  std::string line;
  std::set<std::string> helped;
  auto fail = [&](const std::string& why) { throw std::runtime_error(why + ": \"" + line + "\""); };
  auto family_of = [&](const std::string& name) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s{suffix};
      if (name.size() > s.size() && name.ends_with(s)) {
        const auto base = name.substr(0, name.size() - s.size());
        if (out.types.count(base) && out.types[base] == "histogram") return base;
      }
    }
    return name;
  };
  while (std::getline(in, line)) {
    if (line.empty()) fail("empty line");
    if (line.starts_with("# HELP ")) {
      const auto rest = line.substr(7);
      const auto sp = rest.find(' ');
      if (sp == std::string::npos || sp + 1 == rest.size()) fail("HELP without text");
      helped.insert(rest.substr(0, sp));
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::istringstream t{line.substr(7)};
      std::string name, type, extra;
      t >> name >> type;
      if (t >> extra) fail("TYPE with trailing text");
      if (type != "counter" && type != "gauge" && type != "histogram") fail("unknown type");
      if (!helped.count(name)) fail("TYPE before HELP");
      if (out.types.count(name)) fail("family typed twice");
      out.types[name] = type;
      continue;
    }
    if (line[0] == '#') fail("unknown comment");
    sample s;
    std::size_t i = 0;
    while (i < line.size() && is_name_char(line[i], i == 0)) ++i;
    if (i == 0) fail("no metric name");
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find("=\"", i);
        if (eq == std::string::npos) fail("label without =\"");
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;
          value += line[j];
        }
        if (j >= line.size()) fail("unterminated label value");
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) fail("unterminated labels");
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') fail("no space before the value");
    const std::string number = line.substr(i + 1);
    std::size_t used = 0;
    s.value = std::stod(number, &used);
    if (used != number.size()) fail("trailing text after the value");
    if (!out.types.count(family_of(s.name))) fail("sample before its TYPE");
    out.samples.push_back(std::move(s));
  }
  return out;
}

// Every histogram: buckets cumulative, +Inf equal to _count.
void check_histograms(const exposition& x) {
  for (const auto& [family, type] : x.types) {
    if (type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<double>> series;
    for (const auto& s : x.samples) {
      if (s.name != family + "_bucket") continue;
      auto labels = s.labels;
      BOOST_REQUIRE(labels.count("le"));
      labels.erase("le");
      series[labels].push_back(s.value);
    }
    for (const auto& [labels, buckets] : series) {
      BOOST_TEST(std::is_sorted(buckets.begin(), buckets.end()),
                 family << ": buckets not cumulative");
      BOOST_TEST(buckets.back() == x.value(family + "_count", labels), family);
    }
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(observer, three_nodes)

BOOST_AUTO_TEST_CASE(a_won_lock_reports_its_round_and_its_call) {
  auto c = make_client(observed_config());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("won", {.ttl = 2s, .wait = 2s}, asio::use_awaitable);
    auto fenced = co_await c.async_lock("won-fenced", {.ttl = 2s, .wait = 2s, .fenced = true},
                                        asio::use_awaitable);
    BOOST_TEST(fenced.fence() > 0u);
  }());
  // Fresh connections may make an early round fail; the last one of each call won.
  BOOST_REQUIRE(seen->calls.size() == 2u);
  BOOST_TEST(seen->call_resources[0] == "won");
  BOOST_TEST(!seen->calls[0].outcome);
  BOOST_TEST(seen->calls[0].waiting);
  BOOST_TEST(!seen->calls[0].fenced);
  BOOST_TEST(seen->calls[1].fenced);
  BOOST_TEST(seen->calls[1].fence > 0u);
  BOOST_TEST(seen->calls[0].elapsed.count() > 0);
  const auto& won =
      *std::find_if(seen->attempts.begin(), seen->attempts.end(),
                    [](const seen_attempt& a) { return a.resource == "won" && !a.outcome; });
  BOOST_TEST(won.attempt == seen->calls[0].attempts);
  BOOST_TEST(!won.fenced);
  BOOST_TEST(won.fence == 0u);
  BOOST_REQUIRE(won.nodes.size() == 3u);
  BOOST_TEST(won.count(node_answer::yes) >= 2u);
  for (const auto& n : won.nodes) {
    if (n.answer != node_answer::yes) continue;
    BOOST_TEST(n.latency.count() >= 0);
    BOOST_TEST((n.latency <= won.elapsed));
  }
  BOOST_TEST(seen->attempts.back().resource == "won-fenced");
  BOOST_TEST(seen->attempts.back().fenced);
  BOOST_TEST(seen->attempts.back().fence == seen->calls[1].fence);
}

BOOST_AUTO_TEST_CASE(a_contended_lock_reports_held_answers_and_every_round) {
  auto holder = make_client();
  auto c = make_client(observed_config());
  wait_connected(3);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await holder.async_lock("busy", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    auto [ec, lk] =
        co_await c.async_try_lock("busy", {.ttl = 1s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended);
    auto [ec2, lk2] = co_await c.async_lock("busy", {.ttl = 1s, .wait = 100ms},
                                            asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::wait_timeout);
  }());
  BOOST_REQUIRE(seen->calls.size() == 2u);
  BOOST_TEST(seen->calls[0].outcome == redlock::error::contended);
  BOOST_TEST(seen->calls[0].attempts == 1u);
  BOOST_TEST(!seen->calls[0].waiting);
  BOOST_TEST(seen->calls[1].outcome == redlock::error::wait_timeout);
  BOOST_TEST(seen->calls[1].attempts > 1u);  // 100 ms of 10 ms retry delays
  BOOST_TEST((seen->calls[1].elapsed >= 100ms));
  // One event per round, numbered, each "contended" with a majority answering held.
  BOOST_REQUIRE(seen->attempts.size() == 1 + seen->calls[1].attempts);
  for (std::size_t i = 0; i < seen->attempts.size(); ++i) {
    const auto& a = seen->attempts[i];
    BOOST_TEST(a.attempt == (i == 0 ? 1u : i));
    BOOST_TEST(a.outcome == redlock::error::contended);
    BOOST_TEST(a.count(node_answer::held) >= 2u);
  }
}

// A semaphore call is one call for observers, under the permit it won or last tried, with
// every try of its sweep a round of it, numbered across the call.
BOOST_AUTO_TEST_CASE(a_semaphore_call_reports_once_with_every_try_a_round) {
  auto holder = make_client();
  auto c = make_client(observed_config());
  wait_connected(3);
  std::size_t freed = 0;
  std::size_t won = 0;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto a = co_await redlock::async_try_lock_permit(holder, "obs-pool", 2, {.ttl = 5s},
                                                     asio::use_awaitable);
    auto b = co_await redlock::async_try_lock_permit(holder, "obs-pool", 2, {.ttl = 5s},
                                                     asio::use_awaitable);
    auto [ec, none] = co_await redlock::async_try_lock_permit(c, "obs-pool", 2, {.ttl = 1s},
                                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended, ec.message());
    freed = a.index;
    co_await holder.async_unlock(std::move(a.lock), asio::use_awaitable);
    auto p =
        co_await redlock::async_try_lock_permit(c, "obs-pool", 2, {.ttl = 1s}, asio::use_awaitable);
    won = p.index;
  }());
  BOOST_TEST(won == freed);
  BOOST_REQUIRE(seen->calls.size() == 2u);
  BOOST_TEST(seen->calls[0].outcome == redlock::error::contended);
  BOOST_TEST(seen->call_resources[0].starts_with("redlock:permit:{obs-pool}:"));
  BOOST_TEST(!seen->calls[1].outcome);
  BOOST_TEST(seen->call_resources[1] == redlock::permit_resource("obs-pool", won));
  BOOST_TEST(seen->attempts.size() == seen->calls[0].attempts + seen->calls[1].attempts);
  BOOST_REQUIRE(!seen->attempts.empty());
  BOOST_TEST(seen->attempts.back().attempt == seen->calls[1].attempts);
  BOOST_TEST(seen->attempts.back().resource == seen->call_resources[1]);
}

BOOST_AUTO_TEST_CASE(extensions_by_call_and_by_keeper_are_reported) {
  auto c = make_client(observed_config());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("ext", {.ttl = 300ms, .wait = 2s}, asio::use_awaitable);
    co_await c.async_extend(lk, 300ms, asio::use_awaitable);
    BOOST_REQUIRE(seen->extends.size() == 1u);
    BOOST_TEST(!seen->extends[0].by_keeper);
    BOOST_TEST(!seen->extends[0].outcome);
    BOOST_TEST(seen->extends[0].resource == "ext");
    redlock::keeper k{c, std::move(lk)};  // renews every 100 ms
    const bool renewed = co_await eventually([&] { return seen->extends.size() >= 3; }, 2s);
    BOOST_TEST(renewed);
    BOOST_TEST(k.valid());
  }());
  for (std::size_t i = 1; i < seen->extends.size(); ++i) {
    const auto& e = seen->extends[i];
    BOOST_TEST(e.by_keeper);
    BOOST_TEST(!e.outcome);
    BOOST_TEST(e.resource == "ext");
    BOOST_REQUIRE(e.nodes.size() == 3u);
    for (const auto& n : e.nodes) BOOST_TEST((n.answer == node_answer::yes), "every node renewed");
  }
  BOOST_TEST(seen->losses.empty());
}

BOOST_AUTO_TEST_CASE(a_lock_whose_keys_are_deleted_is_reported_lost_once) {
  auto c = make_client(observed_config());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Found by async_extend.
    auto lk = co_await c.async_lock("gone", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    co_await delete_once_held("gone", 3);
    auto [ec] = co_await c.async_extend(lk, 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::not_held);
    auto [again] = co_await c.async_extend(lk, 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(again == redlock::error::lock_lost);
    // Found by a keeper.
    auto kept = co_await c.async_lock("kept", {.ttl = 300ms, .wait = 2s}, asio::use_awaitable);
    redlock::keeper k{c, std::move(kept)};
    co_await delete_once_held("kept", 3);
    auto [lost] = co_await k.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(lost == redlock::error::lock_lost);
  }());
  BOOST_REQUIRE(seen->losses.size() == 2u);  // the second extend reports no new loss
  BOOST_TEST(seen->losses[0].resource == "gone");
  BOOST_TEST(!seen->losses[0].by_keeper);
  BOOST_TEST(seen->losses[0].reason == redlock::error::not_held);
  BOOST_TEST(seen->losses[1].resource == "kept");
  BOOST_TEST(seen->losses[1].by_keeper);
  BOOST_TEST(seen->losses[1].reason == redlock::error::not_held);
  const auto& last = seen->extends.back();
  BOOST_TEST(last.by_keeper);
  BOOST_TEST(last.outcome == redlock::error::not_held);
  // A majority refused; the third node may have got our SET only after the DEL (the test
  // sent it while the client's write to that node was still queued).
  const auto refused = std::count_if(last.nodes.begin(), last.nodes.end(), [](const seen_node& n) {
    return n.answer == node_answer::refused;
  });
  BOOST_TEST(refused >= 2);
}

BOOST_AUTO_TEST_CASE(a_sets_extension_is_reported_per_resource_and_its_loss_too) {
  auto c = make_client(observed_config());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    std::vector<std::string> names{"s1", "s2"};  // not braced inside co_await (GCC 12)
    const redlock::lock_options opts{.ttl = 5s, .wait = 2s};
    auto set = co_await c.async_lock_all(std::move(names), opts, asio::use_awaitable);
    co_await c.async_extend(set, 5s, asio::use_awaitable);
    BOOST_REQUIRE(seen->extends.size() == 2u);
    for (std::size_t j = 0; j < 2; ++j) {
      const auto& e = seen->extends[j];
      BOOST_TEST(e.resource == (j == 0 ? "s1" : "s2"));
      BOOST_TEST(!e.by_keeper);
      BOOST_TEST(!e.outcome);
      BOOST_REQUIRE(e.nodes.size() == 3u);
    }
    co_await delete_once_held("s2", 3);
    auto [ec] = co_await c.async_extend(set, 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::not_held);
  }());
  BOOST_REQUIRE(seen->extends.size() == 4u);
  BOOST_TEST(seen->extends[3].outcome == redlock::error::not_held);
  BOOST_REQUIRE(seen->losses.size() == 2u);
  BOOST_TEST(seen->losses[0].resource == "s1");
  BOOST_TEST(seen->losses[1].resource == "s2");
  BOOST_TEST(seen->losses[1].reason == redlock::error::not_held);
}

BOOST_AUTO_TEST_CASE(a_lock_that_runs_out_under_a_frozen_majority_is_reported_lost) {
  auto c = make_client(observed_config());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("frozen", {.ttl = 300ms, .wait = 2s}, asio::use_awaitable);
    redlock::keeper k{c, std::move(lk)};
    fleet[0].freeze();
    fleet[1].freeze();
    auto [lost] = co_await k.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(lost == redlock::error::lock_lost);
  }());
  fleet[0].thaw();
  fleet[1].thaw();
  BOOST_REQUIRE(seen->losses.size() == 1u);
  BOOST_TEST(seen->losses[0].reason == redlock::error::lock_lost);
  // Renewals (if one was decided before the loss) failed for want of a majority, never
  // because the key was gone.
  for (const auto& e : seen->extends) BOOST_TEST(e.outcome != redlock::error::not_held);
}

BOOST_AUTO_TEST_CASE(a_restarted_node_is_reported_down_up_restarted_and_held_back) {
  auto cfg = observed_config();
  cfg.restart_guard = true;
  cfg.max_ttl = 5s;  // longer than this test: node 0 stays held back once restarted
  auto c = make_client(cfg);
  wait_connected(3);
  fleet[0].restart();
  const bool back =
      run_bounded(io, eventually([&] {
                    return seen->count(redlock::node_event::kind::restarted, 0) == 1 &&
                           seen->count(redlock::node_event::kind::connected, 0) == 2;
                  }));
  BOOST_REQUIRE(back);
  BOOST_TEST(seen->count(redlock::node_event::kind::disconnected, 0) == 1u);
  BOOST_TEST(seen->count(redlock::node_event::kind::restarted, 1) == 0u);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec, lk] = co_await c.async_try_lock("after-restart", {.ttl = 1s},
                                              asio::as_tuple(asio::use_awaitable));
    (void)ec;  // the fresh fleet is held back as a whole: only node 0's answer matters
  }());
  BOOST_REQUIRE(!seen->attempts.empty());
  const auto& n0 = seen->attempts.back().nodes.at(0);
  BOOST_TEST((n0.answer == node_answer::held_back));
  BOOST_TEST(n0.error == redlock::error::node_held_back);

  const auto x = parse_exposition(seen->metrics.render());
  const std::map<std::string, std::string> node0{{"node", fleet[0].uri().substr(8)}};
  auto with_kind = [&](const char* kind) {
    auto l = node0;
    l["kind"] = kind;
    return l;
  };
  BOOST_TEST(x.value("redlock_node_events_total", with_kind("restarted")) == 1);
  BOOST_TEST(x.value("redlock_node_events_total", with_kind("connected")) == 2);
  BOOST_TEST(x.value("redlock_node_events_total", with_kind("disconnected")) == 1);
  BOOST_TEST(x.value("redlock_node_connected", node0) == 1);
}

BOOST_AUTO_TEST_CASE(metrics_text_parses_and_its_counts_match_the_events) {
  auto holder = make_client();
  auto c = make_client(observed_config());
  wait_connected(3);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 5; ++i) {
      auto lk = co_await c.async_lock("m" + std::to_string(i), {.ttl = 2s, .wait = 1s},
                                      asio::use_awaitable);
      co_await c.async_extend(lk, 2s, asio::use_awaitable);
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    }
    auto held = co_await holder.async_lock("m-busy", {.ttl = 5s, .wait = 1s}, asio::use_awaitable);
    for (int i = 0; i < 3; ++i) {
      auto [ec, lk] =
          co_await c.async_try_lock("m-busy", {.ttl = 1s}, asio::as_tuple(asio::use_awaitable));
      BOOST_TEST(ec == redlock::error::contended);
    }
    auto lk = co_await c.async_lock("m-lost", {.ttl = 2s, .wait = 1s}, asio::use_awaitable);
    co_await delete_once_held("m-lost", 3);
    auto [ec] = co_await c.async_extend(lk, 2s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::not_held);
  }());

  const std::string text = seen->metrics.render();
  exposition x;
  BOOST_REQUIRE_NO_THROW(x = parse_exposition(text));
  for (const auto& [family, type] : x.types) BOOST_TEST(family.starts_with("redlock_"));
  BOOST_TEST(x.types.at("redlock_acquire_seconds") == "histogram");
  BOOST_TEST(x.types.at("redlock_node_latency_seconds") == "histogram");
  BOOST_TEST(x.types.at("redlock_lock_attempts_total") == "counter");
  BOOST_TEST(x.types.at("redlock_node_connected") == "gauge");
  check_histograms(x);

  std::map<std::string, double> attempts, calls;
  for (const auto& a : seen->attempts) ++attempts[a.outcome ? "contended" : "ok"];
  for (const auto& a : seen->calls) ++calls[a.outcome ? "contended" : "ok"];
  BOOST_TEST(calls["ok"] == 6);
  BOOST_TEST(calls["contended"] == 3);
  for (const auto& [outcome, n] : attempts)
    BOOST_TEST(x.value("redlock_lock_attempts_total", {{"outcome", outcome}}) == n, outcome);
  for (const auto& [outcome, n] : calls)
    BOOST_TEST(x.value("redlock_lock_calls_total", {{"outcome", outcome}}) == n, outcome);
  BOOST_TEST(x.value("redlock_acquire_seconds_count") == 6);
  BOOST_TEST(x.value("redlock_extensions_total", {{"by", "call"}, {"outcome", "ok"}}) == 5);
  BOOST_TEST(x.value("redlock_extensions_total", {{"by", "call"}, {"outcome", "not_held"}}) == 1);
  BOOST_TEST(x.value("redlock_losses_total", {{"reason", "not_held"}}) == 1);
  // Every node answered every round it was sent: one latency sample per reply seen.
  double replies = 0, samples = 0;
  for (const auto& a : seen->attempts)
    for (const auto& n : a.nodes) replies += n.latency.count() >= 0;
  for (const auto& e : seen->extends)
    for (const auto& n : e.nodes) replies += n.latency.count() >= 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::map<std::string, std::string> node{{"node", fleet[i].uri().substr(8)}};
    samples += x.value("redlock_node_latency_seconds_count", node);
    BOOST_TEST(x.value("redlock_node_connected", node) == 1);
    BOOST_TEST(x.value("redlock_node_events_total",
                       {{"node", node.at("node")}, {"kind", "connected"}}) == 1);
  }
  BOOST_TEST(samples == replies);
}

BOOST_AUTO_TEST_CASE(a_node_that_never_connects_is_reported_once_and_shown_down) {
  // Node 2 accepts and hangs up at once, again and again (a wrong port, a dead service):
  // one connect_failed with the reason, not one per retry, and its gauge says 0.
  redlock::test::fake_server refuser{[](const redlock::test::fake_server::command&, std::size_t) {
    return redlock::test::fake_reply{.close = true};
  }};
  auto cfg = observed_config();
  cfg.nodes[2] = refuser.uri();
  auto c = make_client(cfg);
  const bool retried = run_bounded(io, eventually([&] { return refuser.connections() >= 3; }));
  BOOST_TEST_REQUIRE(retried);
  using kind = redlock::node_event::kind;
  BOOST_TEST(seen->count(kind::connect_failed, 2) == 1u);
  BOOST_TEST(seen->count(kind::connected, 2) == 0u);
  BOOST_TEST(seen->count(kind::connect_failed, 0) == 0u);
  const auto x = parse_exposition(seen->metrics.render());
  const std::string address = refuser.uri().substr(8);
  BOOST_TEST(x.value("redlock_node_connected", {{"node", address}}) == 0);
  BOOST_TEST(
      x.value("redlock_node_events_total", {{"node", address}, {"kind", "connect_failed"}}) == 1);
  // The two good nodes still make a majority.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("up", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(without_an_observer_node_events_still_reach_on_event) {
  std::vector<redlock::node_event::kind> kinds;
  auto cfg = config();
  cfg.on_event = [&](const redlock::node_event& e) { kinds.push_back(e.what); };
  auto c = make_client(cfg);
  const bool ok = run_bounded(io, eventually([&] { return kinds.size() >= 3; }));
  BOOST_TEST(ok);
  for (auto k : kinds) BOOST_TEST((k == redlock::node_event::kind::connected));
  // And both together: the same events go to each.
  auto both = observed_config();
  std::size_t callbacks = 0;
  both.on_event = [&](const redlock::node_event&) { ++callbacks; };
  auto d = make_client(both);
  const bool ok2 =
      run_bounded(io, eventually([&] { return callbacks >= 3 && seen->connected() >= 3; }));
  BOOST_TEST(ok2);
  BOOST_TEST(callbacks == seen->node_events.size());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(metrics_observer_refuses_bad_buckets_and_escapes_labels) {
  BOOST_CHECK_THROW(redlock::metrics_observer({.latency_buckets = {}}), std::invalid_argument);
  BOOST_CHECK_THROW(redlock::metrics_observer({.latency_buckets = {0.1, 0.1}}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(redlock::metrics_observer({.latency_buckets = {0, 1}}), std::invalid_argument);
  redlock::metrics_observer m{{.prefix = "app_", .latency_buckets = {0.001, 0.01}}};
  m.on_node_event({redlock::node_event::kind::connected, 0, "we\"ird\\host:1", "connected"});
  const redlock::node_reply r{.node = 0,
                              .address = "h:1",
                              .answer = node_answer::yes,
                              .latency = std::chrono::microseconds{5000}};
  m.on_attempt({.resource = "x", .nodes = {&r, 1}});
  m.on_acquire({.resource = "x", .elapsed = std::chrono::microseconds{20000}});
  const auto x = parse_exposition(m.render());
  BOOST_TEST(x.value("app_node_connected", {{"node", "we\"ird\\host:1"}}) == 1);
  BOOST_TEST(x.value("app_node_latency_seconds_bucket", {{"node", "h:1"}, {"le", "0.001"}}) == 0);
  BOOST_TEST(x.value("app_node_latency_seconds_bucket", {{"node", "h:1"}, {"le", "0.01"}}) == 1);
  BOOST_TEST(x.value("app_node_latency_seconds_bucket", {{"node", "h:1"}, {"le", "+Inf"}}) == 1);
  BOOST_TEST(x.value("app_node_latency_seconds_sum", {{"node", "h:1"}}) == 0.005);
  BOOST_TEST(x.value("app_acquire_seconds_bucket", {{"le", "0.01"}}) == 0);
  BOOST_TEST(x.value("app_acquire_seconds_bucket", {{"le", "+Inf"}}) == 1);
  BOOST_TEST(x.value("app_lock_attempts_total", {{"outcome", "ok"}}) == 1);
  check_histograms(x);
}
