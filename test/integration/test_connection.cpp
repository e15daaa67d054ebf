// SPDX-License-Identifier: BSL-1.0
// One pipelined connection against a real redis-server: ordering, deadlines,
// AUTH/SELECT from the URI, reconnects and NOSCRIPT reloads.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <functional>

#include "async_helpers.hpp"
#include "connection/connection.hpp"
#include "connection_harness.hpp"
#include "redis_fleet.hpp"
#include "redlock/error.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::boot_clock;
using redlock::detail::connection;
using redlock::detail::request;

using redlock::test::command;
using redlock::test::one_node;
using redlock::test::recorder;

BOOST_FIXTURE_TEST_SUITE(connection_layer, one_node)

BOOST_AUTO_TEST_CASE(many_pipelined_requests_get_their_own_replies_in_order) {
  redlock::test::redis_server server;
  auto c = connect(server.uri());
  BOOST_TEST_REQUIRE(c->ready());
  constexpr std::size_t n = 2000;
  recorder rec{n};
  std::vector<std::string> payloads(n);
  std::vector<request> reqs(n);
  const auto deadline = boot_clock::now() + 10s;
  for (std::size_t i = 0; i < n; ++i) {
    payloads[i] = command({"INCRBY", "ctr", std::to_string(i + 1)});
    reqs[i] = request{payloads[i], nullptr, deadline, &rec, i, false};
    BOOST_TEST_REQUIRE(!c->submit(reqs[i]));
  }
  run_until([&] { return rec.count == n; });
  // INCRBY returns the running sum: each reply belongs to its own request.
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += static_cast<std::int64_t>(i + 1);
    BOOST_TEST(rec.results[i] == std::to_string(sum));
  }
  c->close();
}

BOOST_AUTO_TEST_CASE(a_timed_out_request_fails_alone_and_the_connection_recovers) {
  redlock::test::redis_server server;
  auto c = connect(server.uri());
  recorder rec{3};
  // A 300 ms server-side sleep outlives a 50 ms deadline.
  const auto slow = command({"EVAL",
                             "local t = redis.call('TIME'); local e = t[1]*1000000+t[2]+300000; "
                             "while true do local n = redis.call('TIME'); if n[1]*1000000+n[2] > e "
                             "then break end end; return 7",
                             "0"});
  request r0{slow, nullptr, boot_clock::now() + 50ms, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(r0));
  run_until([&] { return rec.count == 1; });
  BOOST_TEST(rec.results[0] == "error:" + error_code{redlock::error::node_timeout}.message());
  // While the late reply is outstanding, new requests are refused at once ...
  const auto ping = command({"PING"});
  request r1{ping, nullptr, boot_clock::now() + 1s, &rec, 1, false};
  BOOST_TEST((c->submit(r1) == redlock::error::node_unavailable));
  // ... and accepted again once the node has answered the probe.
  run_until([&] { return c->ready(); });
  request r2{ping, nullptr, boot_clock::now() + 1s, &rec, 2, false};
  BOOST_TEST_REQUIRE(!c->submit(r2));
  run_until([&] { return rec.count == 2; });
  BOOST_TEST(rec.results[2] == "PONG");  // the dropped reply (7) went to nobody
  c->close();
}

BOOST_AUTO_TEST_CASE(auth_and_select_come_from_the_uri) {
  redlock::test::redis_server server{{"--requirepass", "s3cret"}};
  auto c = connect("redis://:s3cret@127.0.0.1:" + std::to_string(server.port()) + "/5");
  BOOST_TEST_REQUIRE(c->ready());
  recorder rec{1};
  const auto set = command({"SET", "where", "db5"});
  request r{set, nullptr, boot_clock::now() + 1s, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(r));
  run_until([&] { return rec.count == 1; });
  BOOST_TEST(rec.results[0] == "OK");
  auto got = server.command({"AUTH", "s3cret"});
  BOOST_TEST(!got.is_error());
  c->close();
}

BOOST_AUTO_TEST_CASE(a_wrong_password_is_reported_without_the_password) {
  redlock::test::redis_server server{{"--requirepass", "right"}};
  auto c = connect("redis://:wrongpass@127.0.0.1:" + std::to_string(server.port()));
  BOOST_TEST(!c->ready());
  BOOST_TEST(c->last_problem().find("refused the credentials") != std::string::npos,
             c->last_problem());
  BOOST_TEST(c->last_problem().find("wrongpass") == std::string::npos);
  c->close();
}

BOOST_AUTO_TEST_CASE(in_flight_requests_fail_cleanly_when_the_server_dies_and_it_reconnects) {
  redlock::test::redis_server server;
  auto c = connect(server.uri());
  recorder rec{2};
  const auto block = command({"BLPOP", "never", "0"});
  request r0{block, nullptr, boot_clock::now() + 10s, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(r0));
  io.run_for(20ms);
  server.restart();
  run_until([&] { return rec.count == 1; });
  BOOST_TEST(rec.results[0] == "error:" + error_code{redlock::error::connection_lost}.message());
  run_until([&] { return c->ready(); });
  const auto ping = command({"PING"});
  request r1{ping, nullptr, boot_clock::now() + 1s, &rec, 1, false};
  BOOST_TEST_REQUIRE(!c->submit(r1));
  run_until([&] { return rec.count == 2; });
  BOOST_TEST(rec.results[1] == "PONG");
  c->close();
}

BOOST_AUTO_TEST_CASE(an_unreachable_node_fails_requests_at_once) {
  std::uint16_t port;
  {
    redlock::test::redis_server gone;
    port = gone.port();
  }
  auto c = connect("redis://127.0.0.1:" + std::to_string(port));
  BOOST_TEST(!c->ready());
  BOOST_TEST(c->last_problem().find("connect") != std::string::npos, c->last_problem());
  recorder rec{1};
  const auto ping = command({"PING"});
  request r{ping, nullptr, boot_clock::now() + 1s, &rec, 0, false};
  BOOST_TEST((c->submit(r) == redlock::error::node_unavailable));
  c->close();
}

BOOST_AUTO_TEST_CASE(noscript_is_answered_by_loading_the_script_and_retrying) {
  redlock::test::redis_server server;
  auto c = connect(server.uri());
  // Learn the real hash from the server, then flush the cache.
  auto sha = server.command({"SCRIPT", "LOAD", "return ARGV[1]"}).text;
  const redlock::detail::script real{"return ARGV[1]", sha};
  server.command({"SCRIPT", "FLUSH"});
  recorder rec{1};
  const auto call = command({"EVALSHA", sha, "0", "hello"});
  request r{call, &real, boot_clock::now() + 2s, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(r));
  run_until([&] { return rec.count == 1; });
  BOOST_TEST(rec.results[0] == "hello");
  c->close();
}

BOOST_AUTO_TEST_CASE(a_frozen_node_times_out_and_the_thawed_node_is_not_flooded) {
  redlock::test::redis_server server;
  auto c = connect(server.uri());
  server.freeze();
  recorder rec{50};
  const auto ping = command({"PING"});
  std::vector<request> reqs(50);
  reqs[0] = request{ping, nullptr, boot_clock::now() + 50ms, &rec, 0, false};
  BOOST_TEST_REQUIRE(!c->submit(reqs[0]));
  run_until([&] { return rec.count == 1; });
  // Everything else is refused while the node is frozen: nothing piles up.
  int refused = 0;
  for (std::size_t i = 1; i < 50; ++i) {
    reqs[i] = request{ping, nullptr, boot_clock::now() + 1s, &rec, i, false};
    if (c->submit(reqs[i]) == redlock::error::node_unavailable) ++refused;
  }
  BOOST_TEST(refused == 49);
  server.thaw();
  run_until([&] { return c->ready(); });
  c->close();
}

BOOST_AUTO_TEST_SUITE_END()
