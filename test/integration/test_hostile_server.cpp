// SPDX-License-Identifier: BSL-1.0
// Servers that are broken or hostile in ways a real redis-server never is: malformed RESP,
// absurd lengths, deep nesting, unexpected types, floods, nonsense in the handshake. The
// promise: a clear protocol error, bounded memory, the connection reset (and re-made),
// no crash, and the lock still decided by the healthy nodes.

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "async_helpers.hpp"
#include "connection/slots.hpp"
#include "connection_harness.hpp"
#include "fake_server.hpp"
#include "fast_config.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"
#include "scripts/scripts.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::boot_clock;
using redlock::detail::request;
using redlock::test::command;
using redlock::test::error_text;
using redlock::test::fake_reply;
using redlock::test::fake_server;
using redlock::test::fast_config;
using redlock::test::recorder;
using redlock::test::run_bounded;

namespace {

// Answers GET with `first` on the first connection and with "$2\r\nok\r\n" afterwards.
fake_server::responder on_get(fake_reply first) {
  return [first](const fake_server::command& c, std::size_t conn) -> std::optional<fake_reply> {
    // The handshake's read of the fence marker is answered as a server would.
    if (c[0] != "GET" || c.size() < 2 || c[1].ends_with("redlock:fence:marker"))
      return std::nullopt;
    if (conn == 0) return first;
    return fake_reply{.bytes = "$2\r\nok\r\n"};
  };
}

struct hostile : redlock::test::one_node {
  std::vector<std::string> disconnects;  // the messages of "disconnected" events

  std::shared_ptr<redlock::detail::connection> watched(
      const fake_server& server, redlock::resp::limits limits = redlock::detail::reply_limits()) {
    auto c = connect(server.uri(), limits);
    BOOST_TEST_REQUIRE(c->ready(), c->last_problem());
    c->on_event = [this](redlock::detail::node&, redlock::node_event::kind k,
                         const std::string& msg) {
      if (k == redlock::node_event::kind::disconnected) disconnects.push_back(msg);
    };
    return c;
  }

  // Sends one GET and returns its outcome as the recorder writes it.
  std::string get(redlock::detail::connection& c, std::chrono::milliseconds deadline = 5s) {
    recorder rec{1};
    const auto payload = command({"GET", "k"});
    request r{payload, nullptr, boot_clock::now() + deadline, &rec, 0, false};
    BOOST_TEST_REQUIRE(!c.submit(r));
    run_until([&] { return rec.count == 1; }, 30s);
    return rec.results[0];
  }

  // The request answered with `bad` fails as connection_lost, at once (not by its
  // deadline), the connection is reset with a protocol error, and a new one works.
  void expect_reset(const std::string& bad) {
    fake_server server{on_get(fake_reply{.bytes = bad})};
    auto c = watched(server);
    const auto t0 = std::chrono::steady_clock::now();
    BOOST_TEST(get(*c, 20s) == error_text(redlock::error::connection_lost));
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 10s));
    BOOST_TEST_REQUIRE(disconnects.size() == 1u);
    BOOST_TEST(disconnects[0].find("protocol error") != std::string::npos, disconnects[0]);
    run_until([&] { return server.connections() == 2 && c->ready(); });
    BOOST_TEST(get(*c) == "ok");
    c->close();
    disconnects.clear();
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(hostile_server, hostile)

BOOST_AUTO_TEST_CASE(malformed_replies_reset_the_connection_and_fail_the_request_cleanly) {
  const std::vector<std::string> bad{
      "?what\r\n",                              // unknown type byte
      ":12a\r\n",                               // not a number
      "$abc\r\n",                               // not a length
      "$-5\r\n",                                // negative length
      "*-7\r\n",                                // negative count
      "$3\r\nabcd\r\n",                         // length disagrees with the payload
      "#x\r\n",                                 // bad boolean
      "_x\r\n",                                 // bad null
      "=2\r\nab\r\n",                           // verbatim string without its format
      "%-1\r\n",                                // negative map size
      std::string(70'000, 'x'),                 // a line that never ends
      "+" + std::string(70'000, 'y') + "\r\n",  // a line longer than any reply needs
  };
  for (const auto& b : bad) {
    BOOST_TEST_CONTEXT("reply " << b.substr(0, 12)) {
      expect_reset(b);
    }
  }
}

BOOST_AUTO_TEST_CASE(absurd_lengths_fail_at_once_without_waiting_for_their_bytes) {
  for (const std::string b :
       {"$99999999999\r\n", "$16777217\r\n", "*99999999999\r\n", "*1048577\r\n", "%600000\r\n",
        "$9223372036854775807\r\n", "*9223372036854775807\r\n", "$99999999999999999999\r\n"}) {
    BOOST_TEST_CONTEXT("reply " << b.substr(0, b.size() - 2)) {
      expect_reset(b);
    }
  }
}

BOOST_AUTO_TEST_CASE(deep_nesting_is_a_protocol_error) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "*1\r\n";
  expect_reset(deep + ":1\r\n");
  std::string just_deep_enough;  // the connection's limit is 16 levels
  for (int i = 0; i < 15; ++i) just_deep_enough += "*1\r\n";
  fake_server server{on_get(fake_reply{.bytes = just_deep_enough + "$2\r\nno\r\n"})};
  auto c = watched(server);
  BOOST_TEST(get(*c) == "");  // the top node is an array: no text, and no reset
  BOOST_TEST(disconnects.empty());
  c->close();
}

BOOST_AUTO_TEST_CASE(a_reply_larger_than_the_limit_is_cut_off_with_bounded_memory) {
  // An endless array of 64 KiB strings: the connection must give up after about its
  // 64 MiB reply limit (plus what the sockets buffer), not read 1 GiB.
  std::string unit = "$65536\r\n" + std::string(65536, 'z') + "\r\n";
  fake_server server{
      on_get(fake_reply{.bytes = "*1048576\r\n", .flood_bytes = 1ull << 30, .flood_unit = unit})};
  auto c = watched(server);
  BOOST_TEST(get(*c, 60s) == error_text(redlock::error::connection_lost));
  BOOST_TEST_REQUIRE(disconnects.size() == 1u);
  BOOST_TEST(disconnects[0].find("size limit") != std::string::npos, disconnects[0]);
  run_until([&] { return server.closed_by_client() >= 1; }, 30s);
  BOOST_TEST(server.bytes_written() < (100ull << 20), server.bytes_written());
  c->close();
}

BOOST_AUTO_TEST_CASE(a_tighter_limit_bounds_the_reader_to_it) {
  redlock::resp::limits small = redlock::detail::reply_limits();
  small.max_reply = 1u << 20;
  fake_server server{on_get(fake_reply{
      .bytes = "*1000000\r\n", .flood_bytes = 256u << 20, .flood_unit = "$5\r\nhello\r\n"})};
  auto c = watched(server, small);
  BOOST_TEST(get(*c, 60s) == error_text(redlock::error::connection_lost));
  run_until([&] { return server.closed_by_client() >= 1; }, 30s);
  // 1 MiB accepted, plus at most what the two sockets' buffers hold.
  BOOST_TEST(server.bytes_written() < (40ull << 20), server.bytes_written());
  c->close();
}

BOOST_AUTO_TEST_CASE(a_flood_of_replies_nobody_asked_for_resets_the_connection) {
  fake_server server{on_get(
      fake_reply{.bytes = "$1\r\na\r\n", .flood_bytes = 1ull << 30, .flood_unit = "+OK\r\n"})};
  auto c = watched(server);
  BOOST_TEST(get(*c) == "a");  // the first reply is the answer
  run_until([&] { return !disconnects.empty(); }, 30s);
  BOOST_TEST(disconnects[0].find("nobody asked for") != std::string::npos, disconnects[0]);
  run_until([&] { return server.closed_by_client() >= 1; }, 30s);
  BOOST_TEST(server.bytes_written() < (64ull << 20), server.bytes_written());
  c->close();
}

BOOST_AUTO_TEST_CASE(a_reply_cut_short_by_a_close_fails_the_request_and_reconnects) {
  fake_server server{on_get(fake_reply{.bytes = "$10\r\nabc", .close = true})};
  auto c = watched(server);
  BOOST_TEST(get(*c) == error_text(redlock::error::connection_lost));
  BOOST_TEST_REQUIRE(disconnects.size() == 1u);
  BOOST_TEST(disconnects[0].find("closed the connection") != std::string::npos, disconnects[0]);
  run_until([&] { return server.connections() == 2 && c->ready(); });
  BOOST_TEST(get(*c) == "ok");
  c->close();
}

BOOST_AUTO_TEST_CASE(garbage_in_the_handshake_fails_the_connect_with_a_protocol_error) {
  fake_server server{[](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    if (c[0] == "ROLE") return fake_reply{.bytes = "!!!\r\n"};
    return std::nullopt;
  }};
  auto c = connect(server.uri());
  BOOST_TEST(!c->ready());
  BOOST_TEST(c->last_problem().find("protocol error") != std::string::npos, c->last_problem());
  recorder rec{1};
  const auto payload = command({"GET", "k"});
  request r{payload, nullptr, boot_clock::now() + 1s, &rec, 0, false};
  // Refused at once while backing off, or failed with the protocol error by the next
  // handshake: never a reply from an unverified server.
  if (!c->submit(r)) {
    run_until([&] { return rec.count == 1; });
    BOOST_TEST(rec.results[0] == error_text(redlock::error::protocol_error));
  }
  c->close();
}

BOOST_AUTO_TEST_CASE(absurd_uptime_and_time_in_the_handshake_do_not_overflow) {
  // A server claiming to have run for 292 billion years, whose clock reads year 10^11.
  fake_server server{[](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    if (c[0] == "INFO") {
      const std::string info =
          "# Server\r\nrun_id:abc\r\nuptime_in_seconds:9223372036854775807\r\n";
      return fake_reply{.bytes = "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n"};
    }
    if (c[0] == "TIME")
      return fake_reply{.bytes =
                            "*2\r\n$19\r\n9223372036854775807\r\n$19\r\n9223372036854775807\r\n"};
    return std::nullopt;
  }};
  auto c = connect(server.uri());
  BOOST_TEST_REQUIRE(c->ready(), c->last_problem());
  // Started long ago (so the restart guard lets it vote), not at some wrapped-around time.
  BOOST_TEST((c->status().started_at < boot_clock::now() - std::chrono::hours{24 * 365}));
  c->close();
}

BOOST_AUTO_TEST_CASE(a_one_second_uptime_may_mean_a_start_just_now) {
  // Redis's uptime is the difference of two truncated wall-clock seconds: it reads 1
  // from the first second boundary after the start, possibly milliseconds after it.
  // The start must be taken as "now", or the restart guard would end up to 1 s early.
  fake_server server{[](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    if (c[0] != "INFO") return std::nullopt;
    const std::string info = "# Server\r\nrun_id:abc\r\nuptime_in_seconds:1\r\n";
    return fake_reply{.bytes = "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n"};
  }};
  const auto before = boot_clock::now();
  auto c = connect(server.uri());
  BOOST_TEST_REQUIRE(c->ready(), c->last_problem());
  BOOST_TEST((c->status().started_at >= before));
  c->close();
}

// ---- the lock manager with hostile nodes -------------------------------------------

namespace {

// Answers every lock command (SET, EVALSHA, EVAL) with `bytes`.
fake_server::responder lock_commands_get(std::string bytes) {
  return [bytes](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    if (c[0] == "SET" || c[0] == "EVALSHA" || c[0] == "EVAL") return fake_reply{.bytes = bytes};
    return std::nullopt;
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(unexpected_reply_types_are_refused_votes_and_keep_the_connection) {
  for (const std::string b : {":1\r\n", "#t\r\n", "*2\r\n:1\r\n:2\r\n", "%1\r\n+a\r\n+b\r\n",
                              ",3.5\r\n", "~1\r\n:1\r\n", "(123\r\n"}) {
    BOOST_TEST_CONTEXT("reply " << b.substr(0, b.size() - 2)) {
      fake_server server{lock_commands_get(b)};
      asio::io_context io;
      redlock::client c{io.get_executor(), fast_config({server.uri()})};
      run_bounded(io, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_lock("res", {.ttl = 2s, .wait = 100ms}, diag,
                                              asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::no_quorum);
        BOOST_TEST(
            diag.message.find("a reply of a type the command cannot return") != std::string::npos,
            diag.message);
        co_await c.async_shutdown(asio::use_awaitable);
      }());
      BOOST_TEST(server.count("SET") >= 1u);
      BOOST_TEST(server.connections() == 1u);  // well-formed RESP: never a reset
    }
  }
}

BOOST_AUTO_TEST_CASE(a_hostile_node_among_real_ones_does_not_stop_the_lock) {
  redlock::test::redis_fleet fleet{2};
  // Each lock command gets an absurd length: the connection resets every time.
  fake_server server{lock_commands_get("$99999999999\r\n")};
  asio::io_context io;
  auto cfg = fast_config({fleet[0].uri(), server.uri(), fleet[1].uri()});
  bool hostile_up = false;  // the quorum needs only the real nodes: wait for the hostile
  cfg.on_event = [&](const redlock::node_event& e) {  // one so that it sees the first SET
    if (e.what == redlock::node_event::kind::connected && e.node == 1) hostile_up = true;
  };
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    BOOST_TEST_REQUIRE(co_await redlock::test::eventually([&] { return hostile_up; }));
    for (int i = 0; i < 5; ++i) {
      const std::string r = "mixed:" + std::to_string(i);
      auto lk = co_await c.async_lock(r, {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
      BOOST_TEST(lk.valid());
      BOOST_TEST(fleet.has_key(0, r));
      BOOST_TEST(fleet.has_key(1, r));
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
      BOOST_TEST(!fleet.has_key(0, r));
      BOOST_TEST(!fleet.has_key(1, r));
    }
    co_await c.async_shutdown(asio::use_awaitable);
    // The fake server reads on its own thread, possibly after the lock was decided.
    BOOST_TEST(co_await redlock::test::eventually([&] { return server.count("SET") >= 1u; }));
  }());
}

// ---- a hostile node that claims to be a Redis Cluster --------------------------------

namespace {

// Two fake servers that pass for a cluster of two primaries: A owns slots 0-8191, B the
// rest. Each answers CLUSTER SLOTS with that map and the scripts (EVALSHA, or EVAL of
// their text) as `on_script` says (by which of the two it is and the script's body);
// anything else as a Redis 7 master would, or "unknown command".
struct fake_cluster {
  using on_script_fn = std::function<std::optional<fake_reply>(bool is_a, std::string_view body)>;
  std::shared_ptr<std::array<std::atomic<std::uint16_t>, 2>> ports =
      std::make_shared<std::array<std::atomic<std::uint16_t>, 2>>();
  on_script_fn on_script;
  fake_server a{responder(true)};
  fake_server b{responder(false)};

  explicit fake_cluster(on_script_fn f) : on_script(std::move(f)) {
    (*ports)[0] = a.port();
    (*ports)[1] = b.port();
  }
  std::string uri() const {
    return "redis+cluster://127.0.0.1:" + std::to_string(a.port()) +
           ",127.0.0.1:" + std::to_string(b.port());
  }
  // CLUSTER SLOTS as Redis 7 writes it: [start, end, [host, port, id]] per range.
  static std::string slots_reply(std::uint16_t port_a, std::uint16_t port_b) {
    auto entry = [](int lo, int hi, std::uint16_t port, char id) {
      return "*3\r\n:" + std::to_string(lo) + "\r\n:" + std::to_string(hi) +
             "\r\n*3\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(port) + "\r\n$40\r\n" +
             std::string(40, id) + "\r\n";
    };
    return "*2\r\n" + entry(0, 8191, port_a, 'a') + entry(8192, 16383, port_b, 'b');
  }

 private:
  fake_server::responder responder(bool is_a) {
    return [this, is_a](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
      if (c[0] == "CLUSTER")
        return fake_reply{.bytes = slots_reply((*ports)[0].load(), (*ports)[1].load())};
      if ((c[0] != "EVALSHA" && c[0] != "EVAL") || c.size() < 2) return std::nullopt;
      for (const auto* lua : redlock::detail::all_scripts())
        if (lua->sha == c[1] || lua->body == c[1]) return on_script(is_a, lua->body);
      return std::nullopt;
    };
  }
};

// A name whose slot is in [lo, hi].
std::string name_in_slots(std::uint16_t lo, std::uint16_t hi) {
  for (int i = 0;; ++i) {
    std::string name = "n" + std::to_string(i);
    const auto slot = redlock::detail::key_slot(name);
    if (slot >= lo && slot <= hi) return name;
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_malformed_shard_reply_to_a_split_set_fails_that_node_and_is_given_back) {
  // A takes its part of the set; B answers its part with an array no script returns.
  fake_cluster cluster{[](bool is_a, std::string_view body) -> std::optional<fake_reply> {
    const bool acquire = body.find("HINCRBY") != std::string_view::npos;
    if (!acquire) return fake_reply{.bytes = is_a ? ":1\r\n" : ":0\r\n"};  // releases
    return fake_reply{.bytes = is_a ? "*1\r\n:1\r\n" : "*2\r\n:7\r\n:7\r\n"};
  }};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config({cluster.uri()})};
  const std::vector<std::string> names{name_in_slots(0, 8191), name_in_slots(8192, 16383)};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, set] = co_await c.async_try_lock_all(names, {.ttl = 2s}, diag,
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum, ec.message());
    BOOST_TEST(!set.valid());
    BOOST_TEST(diag.message.find("malformed") != std::string::npos, diag.message);
    // What A took is given back: the failed attempt's release (sent as EVAL: nobody
    // reads its reply) reaches A's part.
    auto released_on_a = [&] {
      for (const auto& cmd : cluster.a.received())
        if (cmd[0] == "EVAL" && std::find(cmd.begin(), cmd.end(), names[0]) != cmd.end())
          return true;
      return false;
    };
    BOOST_TEST(co_await redlock::test::eventually(released_on_a));
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  BOOST_TEST(cluster.b.count("EVALSHA") >= 1u);
}

BOOST_AUTO_TEST_CASE(shards_that_disagree_on_a_fenced_set_fail_that_node_clearly) {
  // A answers its part of a fenced set with a counter and a marker, B as if the set were
  // unfenced.
  fake_cluster cluster{[](bool is_a, std::string_view body) -> std::optional<fake_reply> {
    const bool acquire = body.find("HINCRBY") != std::string_view::npos;
    if (!acquire) return fake_reply{.bytes = ":1\r\n"};  // releases
    return fake_reply{.bytes = is_a ? "*3\r\n:1\r\n:5\r\n$3\r\nabc\r\n" : "*1\r\n:1\r\n"};
  }};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config({cluster.uri()})};
  const std::vector<std::string> names{name_in_slots(0, 8191), name_in_slots(8192, 16383)};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, set] = co_await c.async_try_lock_all(names, {.ttl = 2s, .fenced = true}, diag,
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum, ec.message());
    BOOST_TEST(!set.valid());
    BOOST_TEST(diag.message.find("disagree") != std::string::npos, diag.message);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_slot_map_that_makes_no_sense_fails_the_lock_with_a_clear_error) {
  const std::string node = "*3\r\n$9\r\n127.0.0.1\r\n:6379\r\n$1\r\nx\r\n";
  const std::vector<std::string> maps{
      "*0\r\n",                               // no slots at all
      "*1\r\n*3\r\n:10\r\n:5\r\n" + node,     // a range that ends first
      "*1\r\n*3\r\n:0\r\n:16384\r\n" + node,  // a slot past the last
      "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:0\r\n$1\r\nx\r\n",  // port 0
      "*1\r\n*3\r\n$1\r\n0\r\n:16383\r\n" + node,  // a string for a number
      "*1\r\n:5\r\n",                              // not an entry
      "-ERR This instance has cluster support disabled\r\n",
  };
  for (const auto& map : maps) {
    BOOST_TEST_CONTEXT("CLUSTER SLOTS answered " << map.substr(0, 40)) {
      fake_server server{
          [&](const fake_server::command& cmd, std::size_t) -> std::optional<fake_reply> {
            if (cmd[0] == "CLUSTER") return fake_reply{.bytes = map};
            return std::nullopt;
          }};
      asio::io_context io;
      const auto uri = "redis+cluster://127.0.0.1:" + std::to_string(server.port());
      redlock::client c{io.get_executor(), fast_config({uri})};
      run_bounded(
          io,
          [&]() -> asio::awaitable<void> {
            redlock::diagnostics diag;
            auto [ec, lk] = co_await c.async_try_lock("res", {.ttl = 2s}, diag,
                                                      asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(ec == redlock::error::no_quorum, ec.message());
            BOOST_TEST(diag.message.find("slot map") != std::string::npos, diag.message);
            co_await c.async_shutdown(asio::use_awaitable);
          }(),
          10s);
      BOOST_TEST(server.count("CLUSTER") >= 1u);
      BOOST_TEST(server.count("EVALSHA") + server.count("SET") == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_shard_that_redirects_to_itself_forever_is_given_up_on_after_a_few_hops) {
  std::atomic<std::uint16_t> port{0};
  fake_server server{[&](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    const std::string self = "127.0.0.1\r\n:" + std::to_string(port.load()) + "\r\n";
    if (c[0] == "CLUSTER")
      return fake_reply{.bytes = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n" + self + "$1\r\nx\r\n"};
    if (c[0] == "SET" || c[0] == "EVALSHA" || c[0] == "EVAL")
      return fake_reply{.bytes = "-MOVED 1 127.0.0.1:" + std::to_string(port.load()) + "\r\n"};
    return std::nullopt;
  }};
  port = server.port();
  asio::io_context io;
  const auto uri = "redis+cluster://127.0.0.1:" + std::to_string(server.port());
  redlock::client c{io.get_executor(), fast_config({uri})};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] =
        co_await c.async_try_lock("res", {.ttl = 2s}, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum, ec.message());
    BOOST_TEST(diag.message.find("MOVED") != std::string::npos, diag.message);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  // The first send and four redirections, then the refusal stands.
  BOOST_TEST(server.count("SET") == 5u);
}

namespace {

// A client alone on `server`, reconnecting from 50 ms up to 2 s, that waits 2 s for a lock
// it cannot get; returns the failed call's diagnostics.
std::string wait_two_seconds_on(const fake_server& server) {
  asio::io_context io;
  auto cfg = fast_config({server.uri()});
  cfg.reconnect_min = 50ms;
  cfg.reconnect_max = 2s;
  redlock::client c{io.get_executor(), cfg};
  std::string said;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_lock("res", {.ttl = 2s, .wait = 2s}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!!ec);
    said = diag.message;
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  return said;
}

}  // namespace

// A server that answers +OK to every command is no Redis: its INFO is not a report, so
// the handshake fails with the reason, and the reconnects back off (50, 100, 200 ms,
// ...: about 6 connections in 2 s, not one every 50 ms).
BOOST_AUTO_TEST_CASE(a_server_that_answers_ok_to_everything_is_refused_and_backed_off) {
  fake_server server{[](const fake_server::command&, std::size_t) -> std::optional<fake_reply> {
    return fake_reply{.bytes = "+OK\r\n"};
  }};
  const std::string said = wait_two_seconds_on(server);
  BOOST_TEST(said.find("INFO was answered with \"+OK\"") != std::string::npos, said);
  BOOST_TEST(said.find("is this port a Redis server?") != std::string::npos, said);
  BOOST_TEST(server.connections() <= 10u, server.connections() << " connections in 2 s");
}

// One that passes the handshake and then drops the connection at the first lock command
// does not reset the back-off by passing: the delays grow as if the handshake had failed.
BOOST_AUTO_TEST_CASE(a_server_that_drops_every_connection_after_the_handshake_is_backed_off) {
  fake_server server{[](const fake_server::command& c, std::size_t) -> std::optional<fake_reply> {
    if (c[0] == "EVALSHA" || c[0] == "SET") return fake_reply{.close = true};
    return std::nullopt;
  }};
  wait_two_seconds_on(server);
  BOOST_TEST(server.count("SET") + server.count("EVALSHA") >= 2u);
  BOOST_TEST(server.connections() <= 10u, server.connections() << " connections in 2 s");
}

BOOST_AUTO_TEST_SUITE_END()
