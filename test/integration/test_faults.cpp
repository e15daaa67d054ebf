// SPDX-License-Identifier: BSL-1.0
// Network faults between the client and real redis-servers, injected by a TCP proxy
// (test/support/fault_proxy.hpp): a reply cut half-way, a node that accepts and never
// answers, a node slower than the lock's validity, a reset while releasing.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "async_helpers.hpp"
#include "connection_harness.hpp"
#include "fast_config.hpp"
#include "fault_proxy.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::boot_clock;
using redlock::detail::request;
using redlock::test::command;
using redlock::test::error_text;
using redlock::test::fast_config;
using redlock::test::fault_proxy;
using redlock::test::recorder;
using redlock::test::run_bounded;

namespace {

// Three real servers; the client reaches each through its own proxy.
struct proxied_fleet {
  redlock::test::redis_fleet fleet{3};
  std::vector<std::unique_ptr<fault_proxy>> proxies;
  asio::io_context io;

  proxied_fleet() {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      proxies.push_back(std::make_unique<fault_proxy>(fleet[i].port()));
  }
  fault_proxy& proxy(std::size_t i) { return *proxies.at(i); }
  redlock::config cfg() const {
    std::vector<std::string> uris;
    for (const auto& p : proxies) uris.push_back(p->uri());
    auto c = fast_config(uris);
    c.node_timeout = 100ms;
    return c;
  }
  // Locks and unlocks once, so that every connection is up.
  void warm_up(redlock::client& c) {
    run_bounded(io, [&]() -> asio::awaitable<void> {
      auto lk = co_await c.async_lock("warm", {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    }());
  }
  // Every key on every server has a TTL (nothing is left to live for ever).
  void expect_every_key_expires() {
    const auto immortal = fleet.keys_without_ttl();
    BOOST_TEST(immortal.empty(), "without a TTL:" << immortal);
  }
  // Runs the io_context until no server holds a key; fails after `limit`.
  void wait_until_no_key(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (fleet.total_keys() > 0) {
      BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < end),
                         "keys still there after " << limit.count() << " ms");
      io.run_for(20ms);
    }
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(faults_on_one_connection, redlock::test::one_node)

BOOST_AUTO_TEST_CASE(a_reply_cut_half_way_fails_the_request_and_the_connection_recovers) {
  redlock::test::redis_server server;
  fault_proxy proxy{server.port()};
  const std::string value(100, 'v');
  server.command({"SET", "big", value});
  cfg.clock_probe_interval = 0ms;  // nothing but our requests on the wire
  auto c = connect(proxy.uri());
  BOOST_TEST_REQUIRE(c->ready(), c->last_problem());
  std::vector<std::string> disconnects;
  c->on_event = [&](redlock::detail::node&, redlock::node_event::kind k, const std::string& m) {
    if (k == redlock::node_event::kind::disconnected) disconnects.push_back(m);
  };
  const auto get = command({"GET", "big"});
  recorder rec{2};
  proxy.cut_after(20);  // "$100\r\n" and 14 bytes of the value, then a reset
  request r0{get, nullptr, boot_clock::now() + 5s, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(r0));
  run_until([&] { return rec.count == 1; });
  BOOST_TEST(rec.results[0] == error_text(redlock::error::connection_lost));
  BOOST_TEST(disconnects.size() == 1u);
  // A new connection, a clean parser: the same reply now arrives whole and right.
  run_until([&] { return c->ready() && proxy.connections() == 2; });
  request r1{get, nullptr, boot_clock::now() + 5s, &rec, 1, false};
  BOOST_TEST_REQUIRE(!c->submit(r1));
  run_until([&] { return rec.count == 2; });
  BOOST_TEST(rec.results[1] == value);
  c->close();
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(faults_under_a_lock, proxied_fleet)

BOOST_AUTO_TEST_CASE(a_lock_reply_cut_half_way_on_one_node_is_decided_by_the_others) {
  redlock::client c{io.get_executor(), cfg()};
  warm_up(c);
  proxy(0).cut_after(2);  // "$-" of "$-1\r\n"
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("cut", {.ttl = 5s, .wait = 0ms}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  expect_every_key_expires();
}

BOOST_AUTO_TEST_CASE(a_node_that_accepts_but_never_answers_is_outvoted_at_its_deadline) {
  redlock::client c{io.get_executor(), cfg()};
  warm_up(c);
  proxy(2).blackhole();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto lk = co_await c.async_lock("hole:" + std::to_string(i), {.ttl = 5s, .wait = 0ms},
                                      asio::use_awaitable);
      // Decided by nodes 0 and 1; node 2 costs at most its 100 ms deadline (a generous
      // bound: this checks that nothing waits for the hole, not speed).
      BOOST_TEST((std::chrono::steady_clock::now() - t0 < 1s));
      BOOST_TEST(lk.valid());
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    }
  }());
  // With a second node in the hole there is no majority, and the call says so promptly.
  proxy(1).blackhole();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    const auto t0 = std::chrono::steady_clock::now();
    auto [ec, lk] =
        co_await c.async_try_lock("hole:x", {.ttl = 5s}, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 1s));
    BOOST_TEST(diag.message.find("node 1") != std::string::npos, diag.message);
  }());
  // A client started while the hole lasts gives up on the handshake at its deadline.
  redlock::client fresh{io.get_executor(), cfg()};
  proxy(1).heal();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await fresh.async_lock("hole:fresh", {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    co_await fresh.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  // When the hole closes, what was held reaches node 2 late: keys that expire, and
  // nothing else.
  proxy(2).heal();
  expect_every_key_expires();
}

BOOST_AUTO_TEST_CASE(a_node_slower_than_the_validity_does_not_count) {
  auto config = cfg();
  config.node_timeout = 2s;  // the deadline is then the lock's validity
  redlock::client c{io.get_executor(), config};
  warm_up(c);
  proxy(1).delay(500ms);
  proxy(2).delay(500ms);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const auto t0 = std::chrono::steady_clock::now();
    auto [ec, lk] =
        co_await c.async_try_lock("slow", {.ttl = 300ms}, asio::as_tuple(asio::use_awaitable));
    const auto took = std::chrono::steady_clock::now() - t0;
    // Both slow nodes say yes, 500 ms later: after the 300 ms validity. Only node 0's yes
    // counts, which is no majority.
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(!lk.owns());
    BOOST_TEST((took >= 250ms && took < 500ms),
               std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  }());
  // One slow node of three: the two fast ones decide.
  proxy(2).heal();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("slow:2", {.ttl = 300ms, .wait = 2s}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  proxy(1).heal();
  // The slow yeses were released behind them, or expire.
  expect_every_key_expires();
  wait_until_no_key(5s);
}

BOOST_AUTO_TEST_CASE(a_reset_during_release_leaves_keys_that_expire) {
  redlock::client c{io.get_executor(), cfg()};
  warm_up(c);
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await c.async_lock("reset", {.ttl = 1s, .wait = 2s}, asio::use_awaitable);
  }());
  for (auto& p : proxies) p->reset_all();  // before the client has seen any of it
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec] = co_await c.async_unlock(std::move(lk), diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum, diag.message);
  }());
  expect_every_key_expires();
  wait_until_no_key(3s);
  // And the client is whole again.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto again = co_await c.async_lock("reset", {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(again), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_SUITE_END()
