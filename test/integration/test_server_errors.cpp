// SPDX-License-Identifier: BSL-1.0
// What real redis-servers answer when they cannot or will not take a lock: a replica
// (READONLY), a full memory (OOM), an ACL user without the commands or keys (NOPERM), a
// wrong or missing password, a flushed script cache, a key of another type, a restart in
// the middle of a batch. Each gives a clear error with the server's own text, and no key
// is left behind without a TTL.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "async_helpers.hpp"
#include "fast_config.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::fast_config;
using redlock::test::run_bounded;

namespace {

// "redis://user:password@127.0.0.1:port" for each server.
std::vector<std::string> uris_as(const redlock::test::redis_fleet& fleet, const std::string& user,
                                 const std::string& password) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < fleet.size(); ++i)
    out.push_back("redis://" + user + ":" + password +
                  "@127.0.0.1:" + std::to_string(fleet[i].port()));
  return out;
}

// One attempt that is expected to fail; returns its error and diagnostics.
std::pair<error_code, std::string> failed_lock(asio::io_context& io, redlock::client& c,
                                               std::string resource) {
  std::pair<error_code, std::string> out;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_lock(resource, {.ttl = 5s, .wait = 200ms}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!lk.owns());
    out = {ec, diag.message};
  }());
  return out;
}

// async_unlock returns once a majority has answered, so the release on the last nodes
// may land a moment later: waits until `key` is gone from nodes [first, last). The limit
// stays below the TTLs the tests use, so a key that expired cannot pass for a release.
void expect_released(asio::io_context& io, const redlock::test::redis_fleet& fleet,
                     const std::string& key, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < last; ++i) {
    const bool gone =
        run_bounded(io, redlock::test::eventually([&] { return !fleet.has_key(i, key); }, 2s));
    BOOST_TEST(gone, "node " << i << " still has \"" << key << "\"");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(replicas_never_vote_and_the_error_says_so) {
  redlock::test::redis_server master;
  const std::string port = std::to_string(master.port());
  redlock::test::redis_server r1{{"--replicaof", "127.0.0.1", port}};
  redlock::test::redis_server r2{{"--replicaof", "127.0.0.1", port}};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config({master.uri(), r1.uri(), r2.uri()})};
  const auto [ec, diag] = failed_lock(io, c, "ro");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("is a replica") != std::string::npos, diag);
  BOOST_TEST(master.command({"EXISTS", "ro"}).integer == 0);
}

BOOST_AUTO_TEST_CASE(masters_turned_replicas_answer_readonly_and_nothing_is_left) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("before", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  // The client's connections stay open: the next SETs meet READONLY.
  for (std::size_t i = 1; i < 3; ++i)
    fleet[i].command({"REPLICAOF", "127.0.0.1", std::to_string(fleet[0].port())});
  const auto [ec, diag] = failed_lock(io, c, "ro");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("READONLY") != std::string::npos, diag);
  // Node 0 said yes each time; every attempt released it there.
  expect_released(io, fleet, "ro", 0, 1);
}

BOOST_AUTO_TEST_CASE(a_full_memory_refuses_new_locks_with_oom_and_old_ones_still_release) {
  redlock::test::redis_fleet fleet{3, {"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"}};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  redlock::lock held;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    held = co_await c.async_lock("held", {.ttl = 30s, .wait = 2s}, asio::use_awaitable);
  }());
  // Allowed while below the limit, it takes the server above it.
  for (std::size_t i = 0; i < fleet.size(); ++i)
    BOOST_TEST_REQUIRE(!fleet[i].command({"SETRANGE", "ballast", "6000000", "x"}).is_error());
  const auto [ec, diag] = failed_lock(io, c, "new");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("OOM") != std::string::npos, diag);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await c.async_extend(held, 30s, asio::use_awaitable);        // PEXPIRE is not refused
    co_await c.async_unlock(std::move(held), asio::use_awaitable);  // nor is DEL
  }());
  expect_released(io, fleet, "held", 0, fleet.size());
}

BOOST_AUTO_TEST_CASE(an_acl_user_without_set_gets_noperm_and_no_password_is_shown) {
  redlock::test::redis_fleet fleet{3};
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"ACL", "SETUSER", "locker", "on", ">S3cretPw", "~*", "&*", "+@all", "-set"});
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(uris_as(fleet, "locker", "S3cretPw"))};
  const auto [ec, diag] = failed_lock(io, c, "perm");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("NOPERM") != std::string::npos, diag);
  BOOST_TEST(diag.find("S3cretPw") == std::string::npos, diag);
}

BOOST_AUTO_TEST_CASE(an_acl_user_limited_to_other_keys_gets_noperm) {
  redlock::test::redis_fleet fleet{3};
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"ACL", "SETUSER", "locker", "on", ">pw", "~other:*", "+@all"});
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(uris_as(fleet, "locker", "pw"))};
  const auto [ec, diag] = failed_lock(io, c, "mine");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("NOPERM") != std::string::npos, diag);
}

BOOST_AUTO_TEST_CASE(an_acl_user_without_scripts_is_refused_at_the_handshake_and_locks_nothing) {
  // Without SCRIPT LOAD and EVALSHA no lock could be released: the connection is refused
  // at once rather than granting locks that could only expire.
  redlock::test::redis_fleet fleet{3};
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command(
        {"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "-evalsha", "-eval", "-script"});
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(uris_as(fleet, "locker", "pw"))};
  const auto [ec, diag] = failed_lock(io, c, "noscript");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("the ACL user may not run SCRIPT LOAD: NOPERM") != std::string::npos, diag);
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(a_wrong_or_missing_password_is_a_clear_error_without_the_password) {
  redlock::test::redis_fleet fleet{3, {"--requirepass", "right-one"}};
  asio::io_context io;
  {
    redlock::client c{io.get_executor(), fast_config(uris_as(fleet, "default", "Wr0ngPass"))};
    const auto [ec, diag] = failed_lock(io, c, "pw");
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(diag.find("WRONGPASS") != std::string::npos, diag);
    BOOST_TEST(diag.find("Wr0ngPass") == std::string::npos, diag);
  }
  {
    redlock::client c{io.get_executor(), fast_config(fleet.uris())};
    const auto [ec, diag] = failed_lock(io, c, "pw");
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(diag.find("NOAUTH") != std::string::npos, diag);
  }
}

// With the restart guard on (the default) a handshake whose INFO was refused NOAUTH once
// passed for a server that had just restarted: every node was held back for max_ttl and the
// error blamed the guard. It must name the server's refusal and say what to do, and no node
// may be reported connected.
BOOST_AUTO_TEST_CASE(a_missing_password_is_named_as_such_not_as_a_restart) {
  redlock::test::redis_fleet fleet{3, {"--requirepass", "right-one"}};
  asio::io_context io;
  auto cfg = fast_config(fleet.uris());
  cfg.restart_guard = true;
  cfg.max_ttl = 600s;
  std::vector<redlock::node_event> events;
  cfg.on_event = [&](const redlock::node_event& e) { events.push_back(e); };
  redlock::client c{io.get_executor(), cfg};
  const auto [ec, diag] = failed_lock(io, c, "pw");
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("NOAUTH") != std::string::npos, diag);
  BOOST_TEST(diag.find("requires a password") != std::string::npos, diag);
  BOOST_TEST(diag.find("restart") == std::string::npos, diag);
  BOOST_TEST(!events.empty());
  for (const auto& e : events)
    BOOST_TEST((e.what != redlock::node_event::kind::connected),
               "node " << e.node << ": " << e.message);
  // The same for a wrong password: the server's words and what to check.
  redlock::client wrong{io.get_executor(), [&] {
                          auto w = fast_config(uris_as(fleet, "default", "Wr0ngPass"));
                          w.restart_guard = true;
                          w.max_ttl = 600s;
                          return w;
                        }()};
  const auto [ec2, diag2] = failed_lock(io, wrong, "pw");
  BOOST_TEST(ec2 == redlock::error::no_quorum);
  BOOST_TEST(diag2.find("WRONGPASS") != std::string::npos, diag2);
  BOOST_TEST(diag2.find("restart") == std::string::npos, diag2);
  BOOST_TEST(diag2.find("Wr0ngPass") == std::string::npos, diag2);
}

BOOST_AUTO_TEST_CASE(every_script_survives_a_script_flush) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet.uris());
  redlock::client c{io.get_executor(), cfg};
  auto flush_all = [&] {
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].command({"SCRIPT", "FLUSH"});
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first =
        co_await c.async_lock("f", {.ttl = 5s, .wait = 5s, .fenced = true}, asio::use_awaitable);
    const auto first_fence = first.fence();
    co_await c.async_unlock(std::move(first), asio::use_awaitable);
    flush_all();
    // Acquire (SET NX + counter) and write-back scripts, then extend and release.
    auto lk =
        co_await c.async_lock("f", {.ttl = 5s, .wait = 5s, .fenced = true}, asio::use_awaitable);
    BOOST_TEST(lk.fence() > first_fence);  // per resource: the same one
    flush_all();
    co_await c.async_extend(lk, 5s, asio::use_awaitable);
    flush_all();
    // Node 0 holds back writes for a while (less than node_timeout): the release
    // completes with nodes 1 and 2, and node 0's (NOSCRIPT, then EVAL) lands after it.
    fleet[0].command({"CLIENT", "PAUSE", "100", "WRITE"});
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  expect_released(io, fleet, "f", 0, fleet.size());
}

BOOST_AUTO_TEST_CASE(a_script_reloaded_after_its_clean_up_is_still_undone) {
  // Node 2 lost its scripts and holds writes back for a moment; nodes 0 and 1 are held by
  // someone else. The fenced attempt fails on them and queues its clean-up to node 2 behind
  // the EVALSHA; node 2 answers NOSCRIPT, and the reloaded script (which takes the key)
  // runs after that clean-up. The clean-up must run again behind it.
  redlock::test::redis_fleet fleet{3};
  for (std::size_t i = 0; i < 2; ++i)
    fleet[i].command({"SET", "rq", "someone-else", "PX", "60000"});
  fleet[2].log_every_command();
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Connected and loaded first, so that the flush below is what the attempt meets.
    auto warm = co_await c.async_lock("warm", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
    fleet[2].command({"SCRIPT", "FLUSH"});
    fleet[2].command({"CLIENT", "PAUSE", "100", "WRITE"});
    auto [ec, lk] = co_await c.async_try_lock("rq", {.ttl = 10s, .fenced = true},
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended);
  }());
  // The reloaded script did take the key on node 2 ...
  const bool ran = run_bounded(
      io, redlock::test::eventually([&] { return fleet[2].calls_naming("set", "rq") > 0; }, 5s));
  BOOST_TEST_REQUIRE(ran);
  // ... and it is gone again well before its 10 s TTL.
  expect_released(io, fleet, "rq", 2, 3);
}

BOOST_AUTO_TEST_CASE(a_node_that_never_keeps_a_script_gets_its_text) {
  // SCRIPT renamed away: SCRIPT LOAD fails and every EVALSHA is answered NOSCRIPT, as
  // behind a proxy that sends SCRIPT LOAD to another server. After one reload that did
  // not help, each script goes to such a node as EVAL with its text.
  redlock::test::redis_fleet fleet{3, {"--rename-command", "SCRIPT", "script-elsewhere"}};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk =
        co_await c.async_lock("ns", {.ttl = 5s, .wait = 2s, .fenced = true}, asio::use_awaitable);
    BOOST_TEST(lk.fence() > 0u);
    co_await c.async_extend(lk, 5s, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    std::vector<std::string> names{"ns1", "ns2"};  // not braced inside co_await (GCC 12)
    const redlock::lock_options opts{.ttl = 5s, .wait = 2s};
    auto set = co_await c.async_lock_all(std::move(names), opts, asio::use_awaitable);
    co_await c.async_unlock(std::move(set), asio::use_awaitable);
  }());
  expect_released(io, fleet, "ns", 0, fleet.size());
  expect_released(io, fleet, "ns1", 0, fleet.size());
  for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(fleet[i].calls("eval") > 0);
}

BOOST_AUTO_TEST_CASE(keys_of_every_other_type_give_wrong_type) {
  redlock::test::redis_fleet fleet{3};
  const std::vector<std::vector<std::string>> makers{{"LPUSH", "k", "x"},
                                                     {"HSET", "k", "f", "v"},
                                                     {"SADD", "k", "m"},
                                                     {"ZADD", "k", "1", "m"},
                                                     {"XADD", "k", "*", "f", "v"}};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  for (const auto& make : makers) {
    BOOST_TEST_CONTEXT(make[0]) {
      for (std::size_t i = 0; i < fleet.size(); ++i) {
        fleet[i].command({"DEL", "k"});
        fleet[i].command(make);
      }
      const auto [ec, diag] = failed_lock(io, c, "k");
      BOOST_TEST(ec == redlock::error::wrong_type);
      BOOST_TEST(diag.find("another type") != std::string::npos, diag);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_on_a_minority_does_not_stop_the_lock) {
  redlock::test::redis_fleet fleet{5};
  fleet[0].command({"LPUSH", "mixed", "x"});
  fleet[1].command({"LPUSH", "mixed", "x"});
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("mixed", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  // The lists were never touched; the lock's keys are gone.
  for (std::size_t i = 0; i < 2; ++i) BOOST_TEST(fleet[i].command({"LLEN", "mixed"}).integer == 1);
  expect_released(io, fleet, "mixed", 2, 5);
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_on_a_minority_does_not_end_a_wait) {
  // Node 0 keeps a list at the name; nodes 1 to 3 are held for 300 ms. wrong_type from
  // one node is one "no": the wait goes on and wins with nodes 1 to 4, four of five.
  redlock::test::redis_fleet fleet{5};
  fleet[0].command({"LPUSH", "r", "x"});
  for (std::size_t i = 1; i < 4; ++i) fleet[i].command({"SET", "r", "other", "PX", "300"});
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec, lk] =
        co_await c.async_lock("r", {.ttl = 5s, .wait = 5s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST_REQUIRE(!ec, ec.message());
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  BOOST_TEST(fleet[0].command({"LLEN", "r"}).integer == 1);
  expect_released(io, fleet, "r", 1, 5);
}

BOOST_AUTO_TEST_CASE(a_server_restart_during_a_batch_fails_nothing_and_leaves_no_key_behind) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  redlock::client c{io.get_executor(), fast_config(fleet.uris())};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto warm = co_await c.async_lock("warm", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
  }());
  constexpr int batch = 300;
  std::vector<redlock::lock> locks(batch);
  std::vector<error_code> errors(batch);
  int done = 0;
  bool restarted = false;
  for (int i = 0; i < batch; ++i) {
    c.async_lock("batch:" + std::to_string(i), {.ttl = 10s, .wait = 5s},
                 [&, i](error_code ec, redlock::lock lk) {
                   errors[i] = ec;
                   locks[i] = std::move(lk);
                   // Node 0 dies and comes back empty while most of the batch is in flight.
                   if (++done == batch / 10 && !restarted) {
                     restarted = true;
                     fleet[0].restart();
                   }
                 });
  }
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (done < batch && std::chrono::steady_clock::now() < end) io.run_for(5ms);
  BOOST_TEST_REQUIRE(done == batch);
  BOOST_TEST(restarted);
  // Two of three nodes stayed up: every lock of the batch was granted.
  for (int i = 0; i < batch; ++i)
    BOOST_TEST(!errors[i], "batch:" << i << ": " << errors[i].message());
  // Every key on every running server has a TTL, or has "fence" in its name.
  const auto immortal = fleet.keys_without_ttl("fence");
  BOOST_TEST(immortal.empty(), "without a TTL:" << immortal);
  int released = 0;
  for (auto& lk : locks) {
    if (!lk.owns()) continue;
    c.async_unlock(std::move(lk), [&](error_code ec) {
      BOOST_TEST(!ec, ec.message());
      ++released;
    });
  }
  const auto end2 = std::chrono::steady_clock::now() + 30s;
  while (released < batch && std::chrono::steady_clock::now() < end2) io.run_for(5ms);
  // The last node's releases may land after the majority's answers.
  while (fleet.total_keys() > 0 && std::chrono::steady_clock::now() < end2) io.run_for(20ms);
  BOOST_TEST(released == batch);
  BOOST_TEST(fleet.total_keys() == 0);
}
