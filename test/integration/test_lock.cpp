// SPDX-License-Identifier: BSL-1.0
// The lock manager against five real redis-server processes.

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>

#include "async_helpers.hpp"
#include "delay_proxy.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"
#include "scripts/scripts.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;

namespace {

struct five_nodes : redlock::test::fleet_fixture<5> {
  redlock::client make_client(std::chrono::milliseconds node_timeout = 100ms) {
    auto cfg = config();
    cfg.node_timeout = node_timeout;
    cfg.reconnect_max = 100ms;
    return fleet_fixture::make_client(std::move(cfg));
  }
};

// Locks (or fails) and returns the error code: no exception on the expected failures.
asio::awaitable<std::pair<error_code, redlock::lock>> try_once(redlock::client& c,
                                                               std::string_view r,
                                                               redlock::lock_options o = {}) {
  auto [ec, lk] = co_await c.async_try_lock(r, o, asio::as_tuple(asio::use_awaitable));
  co_return std::pair{ec, std::move(lk)};
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(lock_manager, five_nodes)

BOOST_AUTO_TEST_CASE(lock_then_unlock_sets_and_removes_the_key_on_every_node) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::lock lk =
        co_await c.async_lock("order:42", {.ttl = 10s, .wait = 2s}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    BOOST_TEST(lk.token().size() >= 40u);
    BOOST_TEST((lk.validity() > 9s));
    BOOST_TEST((lk.validity() <= 10s));
    BOOST_TEST(copies("order:42") >= 3);
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      if (!fleet.has_key(i, "order:42")) continue;  // a node behind the majority may lag
      auto pttl = fleet[i].command({"PTTL", "order:42"});
      BOOST_TEST((pttl.integer > 9000 && pttl.integer <= 10000));
      BOOST_TEST(fleet[i].command({"GET", "order:42"}).text == lk.token());
    }
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    BOOST_TEST(!lk.owns());
  }());
  // Late replies to the unlock may still be in flight; wait on the keys themselves.
  for (int i = 0; i < 200 && copies("order:42") > 0; ++i) io.run_for(5ms);
  BOOST_TEST(copies("order:42") == 0);
}

BOOST_AUTO_TEST_CASE(a_held_resource_is_refused_to_a_second_client) {
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await a.async_lock("res", {.ttl = 5s}, asio::use_awaitable);
    auto [ec, other] = co_await try_once(b, "res");
    BOOST_TEST(ec == redlock::error::contended);
    BOOST_TEST(!other.owns());
    redlock::diagnostics diag;
    auto [ec2, other2] = co_await b.async_lock("res", {.ttl = 5s, .wait = 50ms}, diag,
                                               asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::wait_timeout);
    BOOST_TEST(diag.message.find("held by another owner") != std::string::npos, diag.message);
    co_await a.async_unlock(std::move(lk), asio::use_awaitable);
    auto [ec3, mine] = co_await try_once(b, "res");
    BOOST_TEST(!ec3);
    BOOST_TEST(mine.valid());
  }());
}

// A call that meets a lock its own client holds (another of its calls) says so: the
// caller is waiting on itself, not on some other owner. Such calls still queue behind
// the holder in the client's local line (a wait), or are refused (a try).
BOOST_AUTO_TEST_CASE(a_call_refused_by_its_own_clients_lock_says_held_by_this_client) {
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await a.async_lock("mine", {.ttl = 5s}, asio::use_awaitable);
    const std::string ours = "held by this client, in another of its calls (token ";
    redlock::diagnostics d1, d2, d3, d4;
    auto [e1, l1] =
        co_await a.async_try_lock("mine", {.ttl = 5s}, d1, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e1 == redlock::error::contended);
    BOOST_TEST(d1.message.find(ours) != std::string::npos, d1.message);
    BOOST_TEST(d1.message.find("held by another owner") == std::string::npos, d1.message);
    auto [e2, l2] = co_await a.async_lock("mine", {.ttl = 5s, .wait = 50ms}, d2,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e2 == redlock::error::wait_timeout);
    BOOST_TEST(d2.message.find(ours) != std::string::npos, d2.message);
    auto [e3, l3] = co_await a.async_try_lock_all({"other", "mine"}, {.ttl = 5s}, d3,
                                                  asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e3 == redlock::error::contended);
    BOOST_TEST(d3.message.find("\"mine\" " + ours) != std::string::npos, d3.message);
    // Another client's view of the same lock is someone else's.
    auto [e4, l4] =
        co_await b.async_try_lock("mine", {.ttl = 5s}, d4, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e4 == redlock::error::contended);
    BOOST_TEST(d4.message.find("this client") == std::string::npos, d4.message);
    co_await a.async_unlock(std::move(lk), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(concurrent_clients_never_overlap_in_the_critical_section) {
  // Four independent clients (their own connections), four coroutines each.
  std::vector<redlock::client> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(make_client());
  int inside = 0, overlaps = 0, entries = 0;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        auto worker = [&](redlock::client& c) -> asio::awaitable<void> {
          for (int round = 0; round < 10; ++round) {
            auto lk =
                co_await c.async_lock("counter", {.ttl = 2s, .wait = 20s}, asio::use_awaitable);
            if (++inside != 1) ++overlaps;
            ++entries;
            asio::steady_timer t{co_await asio::this_coro::executor, 1ms};
            co_await t.async_wait(asio::use_awaitable);
            --inside;
            co_await c.async_unlock(std::move(lk), asio::use_awaitable);
          }
        };
        using namespace asio::experimental::awaitable_operators;
        co_await (
            (worker(clients[0]) && worker(clients[1]) && worker(clients[0]) &&
             worker(clients[1])) &&
            (worker(clients[2]) && worker(clients[3]) && worker(clients[2]) && worker(clients[3])));
      }(),
      60s);
  BOOST_TEST(entries == 80);
  BOOST_TEST(overlaps == 0);
}

BOOST_AUTO_TEST_CASE(processes_never_overlap_in_the_critical_section) {
  // Three processes, each with its own io_context and client, count in shared memory.
  auto* shared = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  BOOST_TEST_REQUIRE(shared != MAP_FAILED);
  new (&shared[0]) std::atomic<int>{0};  // inside
  new (&shared[1]) std::atomic<int>{0};  // overlaps
  new (&shared[2]) std::atomic<int>{0};  // entries
  const auto uris = fleet.uris();
  std::vector<pid_t> kids;
  for (int p = 0; p < 3; ++p) {
    pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 1;
      try {
        asio::io_context cio;
        redlock::client c{
            cio.get_executor(),
            redlock::config{.nodes = uris, .retry_delay = 5ms, .restart_guard = false}};
        asio::co_spawn(
            cio,
            [&]() -> asio::awaitable<void> {
              for (int i = 0; i < 15; ++i) {
                auto lk =
                    co_await c.async_lock("xproc", {.ttl = 3s, .wait = 30s}, asio::use_awaitable);
                if (shared[0].fetch_add(1) != 0) ++shared[1];
                ++shared[2];
                ::usleep(500);
                shared[0].fetch_sub(1);
                co_await c.async_unlock(std::move(lk), asio::use_awaitable);
              }
              co_await c.async_shutdown(asio::use_awaitable);
            },
            [&](std::exception_ptr e) { rc = e ? 2 : 0; });
        cio.run_for(60s);
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  BOOST_TEST(shared[2].load() == 45);
  BOOST_TEST(shared[1].load() == 0);
  ::munmap(shared, 4096);
}

BOOST_AUTO_TEST_CASE(a_non_owner_can_neither_release_nor_extend) {
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await a.async_lock("owned", {.ttl = 5s}, asio::use_awaitable);
    // Build b's own lock on another resource, then point a forged copy at "owned".
    auto fake = co_await b.async_lock("other", {.ttl = 5s}, asio::use_awaitable);
    // The locks need a majority: node 0's SETs may still be on their way.
    const bool set_there = co_await redlock::test::eventually(
        [&] { return fleet.has_key(0, "owned") && fleet.has_key(0, "other"); });
    BOOST_TEST_REQUIRE(set_there);
    const auto before = fleet[0].command({"GET", "owned"}).text;
    auto [ec] = co_await b.async_extend(fake, 1s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);  // its own lock extends
    // A stolen key: b's lock on "other" is replaced behind its back by another value.
    for (std::size_t i = 0; i < fleet.size(); ++i)
      fleet[i].command({"SET", "other", "intruder", "PX", "5000"});
    auto [ec2] = co_await b.async_extend(fake, 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::not_held);
    BOOST_TEST(fake.lost());
    BOOST_TEST(!fake.valid());
    auto [ec3] = co_await b.async_unlock(std::move(fake), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec3 == redlock::error::not_held);
    // The intruder's value survives both attempts: compare-and-delete/pexpire did nothing.
    BOOST_TEST(fleet[0].command({"GET", "other"}).text == "intruder");
    BOOST_TEST(fleet[0].command({"PTTL", "other"}).integer > 4000);
    // a's lock was never touched.
    BOOST_TEST(fleet[0].command({"GET", "owned"}).text == before);
    co_await a.async_unlock(std::move(lk), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_lock_expires_after_its_ttl) {
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await a.async_lock("short", {.ttl = 200ms}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    BOOST_TEST((lk.validity() < 200ms));
    // b waits; it can only get the lock once the keys expired on a majority.
    auto lk2 = co_await b.async_lock("short", {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
    BOOST_TEST(!lk.valid());  // a's validity ended before b could take it
    BOOST_TEST(lk2.valid());
    auto [ec] = co_await a.async_extend(lk, 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::lock_lost);
    BOOST_TEST(lk.lost());
  }());
}

BOOST_AUTO_TEST_CASE(extend_moves_the_deadline_and_the_ttl_on_the_nodes) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("ext", {.ttl = 1s}, asio::use_awaitable);
    const auto first = lk.deadline();
    co_await c.async_extend(lk, 30s, asio::use_awaitable);
    BOOST_TEST((lk.deadline() > first + 25s));
    BOOST_TEST((lk.ttl() == 30s));
    // A majority confirmed before the extension completed (the rest may still be on
    // their way).
    int extended = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      extended += fleet[i].command({"PTTL", "ext"}).integer > 25000 ? 1 : 0;
    BOOST_TEST(extended >= 3);
    // A key deleted behind our back on a majority is not re-created by extend. (First
    // let every node's SET land: one still queued behind a slow handshake would set it
    // again, which is the acquisition, not the extension.)
    for (int i = 0; i < 400 && copies("ext") < 5; ++i) {
      asio::steady_timer t{co_await asio::this_coro::executor, 5ms};
      co_await t.async_wait(asio::use_awaitable);
    }
    BOOST_TEST_REQUIRE(copies("ext") == 5);
    for (std::size_t i = 0; i < 3; ++i) fleet[i].command({"DEL", "ext"});
    auto [ec] = co_await c.async_extend(lk, 30s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::not_held);
    BOOST_TEST(lk.lost());
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(!fleet.has_key(i, "ext"));
    // Lost stays lost: nothing is sent, even though 2 nodes still hold our token.
    auto [ec2] = co_await c.async_extend(lk, 30s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::lock_lost);
  }());
}

BOOST_AUTO_TEST_CASE(two_frozen_nodes_of_five_do_not_stop_locking) {
  auto c = make_client(100ms);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto warm = co_await c.async_lock("warm", {}, asio::use_awaitable);  // connections up
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
  }());
  fleet[3].freeze();
  fleet[4].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 20; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto lk = co_await c.async_lock("frozen:" + std::to_string(i), {.ttl = 5s, .wait = 0s},
                                      asio::use_awaitable);
      const auto took = std::chrono::steady_clock::now() - t0;
      BOOST_TEST(lk.valid());
      // Decided by the three live nodes: never waits for the frozen ones beyond the
      // per-node timeout (generous bound: this is a correctness check, not a benchmark).
      BOOST_TEST((took < 2s));
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    }
  }());
  fleet[3].thaw();
  fleet[4].thaw();
}

BOOST_AUTO_TEST_CASE(three_nodes_down_of_five_fail_promptly_with_no_quorum) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto warm = co_await c.async_lock("warm", {}, asio::use_awaitable);
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
  }());
  fleet[0].kill();
  fleet[1].kill();
  fleet[2].kill();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    const auto t0 = std::chrono::steady_clock::now();
    auto [ec, lk] = co_await c.async_lock("down", {.ttl = 5s, .wait = 300ms}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 3s));
    BOOST_TEST(diag.message.find(fleet[0].uri().substr(8)) != std::string::npos, diag.message);
  }());
  // Nothing was left behind on the live nodes.
  for (int i = 0; i < 100 && copies("down") > 0; ++i) io.run_for(5ms);
  BOOST_TEST(copies("down") == 0);
}

BOOST_AUTO_TEST_CASE(a_failed_attempt_leaves_no_key_of_ours_on_any_node) {
  auto c = make_client();
  // Someone else holds the resource on three of five nodes.
  for (std::size_t i = 0; i < 3; ++i) fleet[i].command({"SET", "split", "foreign", "PX", "60000"});
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec, lk] = co_await try_once(c, "split");
    BOOST_TEST(ec == redlock::error::contended);
  }());
  // Our SET won on nodes 3 and 4 and must be released there.
  for (int i = 0; i < 200 && (fleet.has_key(3, "split") || fleet.has_key(4, "split")); ++i)
    io.run_for(5ms);
  BOOST_TEST(!fleet.has_key(3, "split"));
  BOOST_TEST(!fleet.has_key(4, "split"));
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(fleet[i].command({"GET", "split"}).text == "foreign");
}

BOOST_AUTO_TEST_CASE(release_works_after_the_script_cache_is_flushed) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("flushed", {}, asio::use_awaitable);
    co_await c.async_extend(lk, 10s, asio::use_awaitable);  // scripts now cached
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].command({"SCRIPT", "FLUSH"});
    co_await c.async_extend(lk, 10s, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    // The unlock completes with a majority; the last node's release may still be on
    // its way.
    const bool gone = co_await redlock::test::eventually([&] { return copies("flushed") == 0; });
    BOOST_TEST(gone);
  }());
}

BOOST_AUTO_TEST_CASE(script_hashes_match_what_the_server_computes) {
  // The client sends EVALSHA with constant hashes; a wrong constant would mean a NOSCRIPT
  // round trip on every call. Loading the scripts must give the same hashes.
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("sha", {}, asio::use_awaitable);
    co_await c.async_extend(lk, 10s, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  auto exists =
      fleet[0].command({"SCRIPT", "EXISTS", std::string{redlock::detail::release_script.sha},
                        std::string{redlock::detail::extend_script.sha}});
  BOOST_TEST_REQUIRE(exists.elements.size() == 2u);
  BOOST_TEST(exists.elements[0].integer == 1);
  BOOST_TEST(exists.elements[1].integer == 1);
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_gives_a_clear_error) {
  auto c = make_client();
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].command({"LPUSH", "alist", "x"});
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] =
        co_await c.async_lock("alist", {.wait = 1s}, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::wrong_type);
    BOOST_TEST(diag.message.find("another type") != std::string::npos, diag.message);
  }());
}

BOOST_AUTO_TEST_CASE(a_restarted_node_is_reconnected) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("r1", {}, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].restart();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // The lock waits (retrying) while connections come back; every connection must
    // come back, so that a lock soon lands on all five nodes.
    bool all_five = false;
    for (int i = 0; i < 100 && !all_five; ++i) {
      const std::string r = "r2:" + std::to_string(i);
      auto lk = co_await c.async_lock(r, {.ttl = 5s, .wait = 5s}, asio::use_awaitable);
      BOOST_TEST(lk.valid());
      asio::steady_timer t{co_await asio::this_coro::executor, 20ms};
      co_await t.async_wait(asio::use_awaitable);  // lets the slower nodes' replies land
      all_five = copies(r) == 5;
    }
    BOOST_TEST(all_five);
  }());
}

BOOST_AUTO_TEST_CASE(cancelling_a_wait_releases_what_was_taken) {
  auto a = make_client();
  auto b = make_client();
  for (std::size_t i = 0; i < 3; ++i) fleet[i].command({"SET", "busy", "foreign", "PX", "60000"});
  run_bounded(io, [&]() -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer t{co_await asio::this_coro::executor, 200ms};
    // The timer wins; the lock wait is cancelled through its cancellation slot.
    auto r = co_await (a.async_lock("busy", {.ttl = 60s}, asio::use_awaitable) ||
                       t.async_wait(asio::use_awaitable));
    BOOST_TEST(r.index() == 1u);
  }());
  for (int i = 0; i < 200 && (fleet.has_key(3, "busy") || fleet.has_key(4, "busy")); ++i)
    io.run_for(5ms);
  BOOST_TEST(!fleet.has_key(3, "busy"));
  BOOST_TEST(!fleet.has_key(4, "busy"));
  (void)b;
}

BOOST_AUTO_TEST_CASE(every_completion_token_works) {
  auto c = make_client();
  // Callback.
  error_code got = redlock::error::protocol_error;
  redlock::lock held;
  c.async_lock("tok", {}, [&](error_code ec, redlock::lock lk) {
    got = ec;
    held = std::move(lk);
  });
  for (int i = 0; i < 400 && !held.owns(); ++i) io.run_for(5ms);
  BOOST_TEST(!got);
  BOOST_TEST(held.valid());
  // Deferred.
  auto op = c.async_unlock(std::move(held), asio::deferred);
  bool unlocked = false;
  std::move(op)([&](error_code ec) { unlocked = !ec; });
  for (int i = 0; i < 400 && !unlocked; ++i) io.run_for(5ms);
  BOOST_TEST(unlocked);
  // Future, with the io_context on another thread.
  auto guard = asio::make_work_guard(io);
  std::thread runner{[&] { io.run(); }};
  auto fut = c.async_try_lock("tok", {}, asio::use_future);
  auto lk = fut.get();
  BOOST_TEST(lk.valid());
  auto fut2 = c.async_unlock(std::move(lk), asio::use_future);
  BOOST_CHECK_NO_THROW(fut2.get());
  auto bad = c.async_try_lock("", {}, asio::use_future);
  BOOST_CHECK_THROW(bad.get(), boost::system::system_error);
  guard.reset();
  io.stop();
  runner.join();
}

BOOST_AUTO_TEST_CASE(a_multithreaded_io_context_is_safe) {
  std::vector<redlock::client> clients;
  for (int i = 0; i < 2; ++i) clients.push_back(make_client());
  std::atomic<int> inside{0}, overlaps{0}, done{0};
  for (int w = 0; w < 8; ++w) {
    asio::co_spawn(
        io,
        [&, w]() -> asio::awaitable<void> {
          auto& c = clients[w % 2];
          for (int i = 0; i < 10; ++i) {
            auto lk = co_await c.async_lock("mt", {.ttl = 2s, .wait = 30s}, asio::use_awaitable);
            if (inside.fetch_add(1) != 0) ++overlaps;
            inside.fetch_sub(1);
            co_await c.async_unlock(std::move(lk), asio::use_awaitable);
          }
          ++done;
        },
        asio::detached);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      const auto end = std::chrono::steady_clock::now() + 60s;
      while (done.load() < 8 && std::chrono::steady_clock::now() < end) io.run_for(10ms);
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(done.load() == 8);
  BOOST_TEST(overlaps.load() == 0);
}

BOOST_AUTO_TEST_CASE(shutdown_lets_run_return) {
  auto c = make_client();
  bool finished = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto lk = co_await c.async_lock("sd", {}, asio::use_awaitable);
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
        co_await c.async_shutdown(asio::use_awaitable);
        auto [ec, l2] = co_await c.async_try_lock("sd", {}, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::shut_down);
        finished = true;
      },
      asio::detached);
  // run() returns by itself only if the client left no work behind.
  std::thread watchdog_free_run{[&] { io.run(); }};
  watchdog_free_run.join();
  BOOST_TEST(finished);
}

BOOST_AUTO_TEST_CASE(invalid_configuration_is_refused_before_any_io) {
  auto expect_invalid = [&](redlock::config c, std::string_view needle) {
    try {
      redlock::client cl{io.get_executor(), std::move(c)};
      BOOST_ERROR("accepted an invalid config");
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == redlock::error::invalid_config);
      BOOST_TEST(std::string{e.what()}.find(needle) != std::string::npos, e.what());
    }
  };
  expect_invalid({}, "nodes is empty");
  expect_invalid({.nodes = {"redis://h:1", "http://h:2"}}, "nodes[1]");
  expect_invalid({.nodes = {"redis://h:1", "redis://h:1"}}, "same node");
  expect_invalid({.nodes = {"redis://h:1"}, .node_timeout = 0ms}, "node_timeout");
  expect_invalid({.nodes = {"redis://h:1"}, .drift_factor = 0.7}, "drift_factor");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(a_fresh_clients_first_attempt_waits_for_its_handshakes) {
  // Every node 80 ms away and node_timeout 120 ms: a round trip fits, but the handshake
  // and then the SET do not. The first attempt of a fresh client must wait for the
  // connections it is making (within its validity), not time every node out.
  redlock::test::redis_fleet fleet{3};
  std::vector<std::unique_ptr<redlock::test::delay_proxy>> proxies;
  std::vector<std::string> uris;
  const auto loopback = asio::ip::make_address("127.0.0.1");
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    proxies.push_back(std::make_unique<redlock::test::delay_proxy>(
        -1, asio::ip::tcp::endpoint{loopback, 0},
        asio::ip::tcp::endpoint{loopback, fleet[i].port()},
        redlock::test::link_model{.rtt = 80ms}));
    uris.push_back("redis://127.0.0.1:" + std::to_string(proxies.back()->endpoint().port()));
  }
  asio::io_context io;
  auto cfg = redlock::test::fast_config(uris);
  cfg.node_timeout = 120ms;
  redlock::client c{io.get_executor(), cfg};
  error_code got = redlock::error::cancelled;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] =
        co_await c.async_try_lock("fresh", {.ttl = 5s}, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, diag.message);
    got = ec;
    if (!ec) co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  BOOST_TEST(!got);
  // The same for a set and for a claim, each from a fresh client.
  redlock::client sets{io.get_executor(), cfg};
  redlock::client claims{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    std::vector<std::string> names{"fresh:a", "fresh:b"};
    auto [ec, set] =
        co_await sets.async_try_lock_all(names, {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, ec.message());
    auto [ec2, claim] =
        co_await claims.async_claim("fresh:c", 5s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec2);
    BOOST_TEST(claim.won(), redlock::to_string(claim.status) << " " << claim.error.message());
    co_await sets.async_shutdown(asio::use_awaitable);
    co_await claims.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(one_to_seven_nodes_lock_with_a_majority_and_fail_without_one) {
  for (std::size_t n = 1; n <= 7; ++n) {
    BOOST_TEST_CONTEXT("N = " << n) {
      redlock::test::redis_fleet fleet{n};
      asio::io_context io;
      const redlock::config cfg{.nodes = fleet.uris(),
                                .node_timeout = 100ms,
                                .retry_delay = 10ms,
                                // Fresh test servers would be held back for a whole TTL; the
                                // restart guard has tests of its own (test_fencing).
                                .restart_guard = false};
      redlock::client a{io.get_executor(), cfg};
      redlock::client b{io.get_executor(), cfg};
      const std::size_t may_fail = (n - 1) / 2;  // a majority must survive
      run_bounded(io, [&]() -> asio::awaitable<void> {
        auto lk = co_await a.async_lock("n", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
        auto [ec, other] = co_await b.async_try_lock("n", {}, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::contended);
        co_await a.async_unlock(std::move(lk), asio::use_awaitable);
      }());
      for (std::size_t i = 0; i < may_fail; ++i) fleet[i].kill();
      run_bounded(io, [&]() -> asio::awaitable<void> {
        auto lk = co_await a.async_lock("n2", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
        BOOST_TEST(lk.valid());
        co_await a.async_unlock(std::move(lk), asio::use_awaitable);
      }());
      fleet[may_fail].kill();  // now a majority is gone
      run_bounded(io, [&]() -> asio::awaitable<void> {
        auto [ec, lk] = co_await a.async_lock("n3", {.ttl = 5s, .wait = 100ms},
                                              asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::no_quorum);
      }());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_retry_loop_against_dead_nodes_does_not_recurse) {
  // Every node refuses at once (nothing listens): the attempt is decided inside the
  // initiating call, and its handler must still not run there. 20,000 immediate failures
  // in a loop would overflow the stack if it did.
  std::uint16_t port;
  {
    redlock::test::redis_server gone;
    port = gone.port();
  }
  asio::io_context io;
  redlock::client c{io.get_executor(),
                    redlock::config{.nodes = {"redis://127.0.0.1:" + std::to_string(port)},
                                    .connect_timeout = 100ms,
                                    .reconnect_min = 1000ms,
                                    .reconnect_max = 1000ms}};
  int failures = 0;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    asio::steady_timer t{co_await asio::this_coro::executor, 50ms};
    co_await t.async_wait(asio::use_awaitable);  // the first connect has failed by now
    for (int i = 0; i < 20000; ++i) {
      auto [ec, lk] = co_await c.async_try_lock("x", {}, asio::as_tuple(asio::use_awaitable));
      if (ec) ++failures;
    }
  }());
  BOOST_TEST(failures == 20000);
}

BOOST_AUTO_TEST_CASE(local_waiters_are_woken_by_a_local_release_in_arrival_order) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  // A retry delay of 10 s (drawn from [5 s, 15 s]): a waiter that got the lock sooner
  // than 5 s after the release was woken by it, not by its timer.
  redlock::client c{
      io.get_executor(),
      redlock::config{.nodes = fleet.uris(), .retry_delay = 10000ms, .restart_guard = false}};
  std::vector<int> order;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        auto holder = co_await c.async_lock("line", {.ttl = 30s}, asio::use_awaitable);
        auto waiter = [&](int id) -> asio::awaitable<void> {
          // Arrive in order: waiter k starts k * 30 ms after the first.
          asio::steady_timer t{co_await asio::this_coro::executor,
                               std::chrono::milliseconds{30 * id}};
          co_await t.async_wait(asio::use_awaitable);
          auto lk = co_await c.async_lock("line", {.ttl = 30s, .wait = 60s}, asio::use_awaitable);
          order.push_back(id);
          co_await c.async_unlock(std::move(lk), asio::use_awaitable);
        };
        auto release = [&]() -> asio::awaitable<void> {
          asio::steady_timer t{co_await asio::this_coro::executor, 300ms};
          co_await t.async_wait(asio::use_awaitable);
          co_await c.async_unlock(std::move(holder), asio::use_awaitable);
        };
        const auto t0 = std::chrono::steady_clock::now();
        co_await (waiter(0) && waiter(1) && waiter(2) && waiter(3) && waiter(4) && release());
        // Five hand-offs, each woken by the previous release: far less than one retry delay.
        BOOST_TEST((std::chrono::steady_clock::now() - t0 < 4s));
      }(),
      30s);
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3, 4}));
}

BOOST_AUTO_TEST_CASE(a_waiting_lock_is_cancelled_through_a_bound_cancellation_slot) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  redlock::client c{io.get_executor(),
                    redlock::config{.nodes = fleet.uris(), .restart_guard = false}};
  asio::cancellation_signal stop;
  error_code got;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        auto holder = co_await c.async_lock("waited", {.ttl = 30s}, asio::use_awaitable);
        asio::steady_timer t{co_await asio::this_coro::executor, 200ms};
        t.async_wait([&](error_code) { stop.emit(asio::cancellation_type::terminal); });
        auto [ec, lk] = co_await c.async_lock(
            "waited", {.ttl = 30s},
            asio::bind_cancellation_slot(stop.slot(), asio::as_tuple(asio::use_awaitable)));
        got = ec;
        co_await c.async_unlock(std::move(holder), asio::use_awaitable);
      }(),
      10s);
  BOOST_TEST(got == redlock::error::cancelled);
}

BOOST_AUTO_TEST_CASE(shutdown_releases_what_is_still_held_and_what_was_dropped) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  redlock::client c{io.get_executor(),
                    redlock::config{.nodes = fleet.uris(), .restart_guard = false}};
  redlock::lock kept;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        kept = co_await c.async_lock("kept", {.ttl = 60s}, asio::use_awaitable);
        {
          auto dropped = co_await c.async_lock("dropped", {.ttl = 60s}, asio::use_awaitable);
        }                                                // released in the background...
        co_await c.async_shutdown(asio::use_awaitable);  // ...and sent before the close
      },
      asio::detached);
  io.run();  // returns: the client leaves no work behind
  // Both keys (TTL 60 s) are gone: only the releases could remove them.
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    BOOST_TEST(!fleet.has_key(i, "kept"));
    BOOST_TEST(!fleet.has_key(i, "dropped"));
  }
}

BOOST_FIXTURE_TEST_SUITE(inspection, five_nodes)

// One inspection, awaited: the reports, or an empty vector and the error.
std::pair<error_code, std::vector<redlock::node_report>> inspect(asio::io_context& io,
                                                                 redlock::client& c,
                                                                 std::string_view resource) {
  std::pair<error_code, std::vector<redlock::node_report>> out;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec, r] = co_await c.async_inspect(resource, asio::as_tuple(asio::use_awaitable));
    out = {ec, std::move(r)};
  }());
  return out;
}

BOOST_AUTO_TEST_CASE(inspection_reads_holder_ttl_and_fence_on_every_node) {
  auto c = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await c.async_lock("inspected", {.ttl = 10s, .wait = 2s, .fenced = true},
                               asio::use_awaitable);
  }());
  BOOST_TEST_REQUIRE(lk.valid());
  // Node 3 down, node 4 with a key of another type at the name.
  fleet[3].kill();
  // Once node 4's SET landed (it may lag the majority), or it would land on the hash.
  BOOST_TEST_REQUIRE(redlock::test::run_until(io, [&] { return fleet.has_key(4, "inspected"); }));
  fleet[4].command({"DEL", "inspected"});
  fleet[4].command({"HSET", "inspected", "f", "v"});
  auto [ec, r] = inspect(io, c, "inspected");
  BOOST_TEST(!ec);
  BOOST_TEST_REQUIRE(r.size() == 5u);
  std::size_t held = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST_CONTEXT("node " << i) {
      BOOST_TEST(!r[i].error);
      BOOST_TEST(r[i].node == i);
      BOOST_TEST(r[i].address == fleet.uris()[i].substr(8));            // "redis://" dropped
      if (r[i].key != redlock::node_report::key_state::held) continue;  // may lag the majority
      ++held;
      BOOST_TEST(r[i].holder == lk.token());
      BOOST_TEST((r[i].ttl > 8s && r[i].ttl <= 10s));
      BOOST_TEST_REQUIRE(r[i].fence.has_value());
      BOOST_TEST(*r[i].fence >= lk.fence());
      BOOST_TEST(r[i].votes);
      BOOST_TEST(r[i].role == "master");
      BOOST_TEST(!r[i].version.empty());
      BOOST_TEST(r[i].appendonly == "no");  // the fleet's servers run without AOF
    }
  }
  BOOST_TEST(held >= 2u);
  BOOST_TEST(!!r[3].error);  // connection_lost or node_unavailable, by timing
  BOOST_TEST(!r[3].problem.empty());
  BOOST_TEST((r[3].key == redlock::node_report::key_state::unknown));
  BOOST_TEST(!r[4].error);
  BOOST_TEST((r[4].key == redlock::node_report::key_state::wrong_type));
}

BOOST_AUTO_TEST_CASE(inspecting_no_resource_reads_the_servers_and_writes_nothing) {
  auto cfg = config();
  cfg.restart_guard = true;
  cfg.max_ttl = 60s;  // the fleet's servers started a moment ago: held back
  auto c = fleet_fixture::make_client(std::move(cfg));
  auto [ec, r] = inspect(io, c, "");
  BOOST_TEST(!ec);
  BOOST_TEST_REQUIRE(r.size() == 5u);
  for (const auto& n : r) {
    BOOST_TEST(!n.error, n.problem);
    BOOST_TEST((n.key == redlock::node_report::key_state::unknown));
    BOOST_TEST(n.uptime_s >= 0);
    BOOST_TEST(!n.run_id.empty());
    BOOST_TEST(n.round_trip.count() > 0);
    BOOST_TEST(!n.votes);
    BOOST_TEST(n.held_back.find("restart guard") != std::string::npos, n.held_back);
    // The same as facts: the rule, and times that add up to the guard's 60 s.
    BOOST_TEST((n.hold.by == redlock::node_report::hold_back::rule::restart));
    BOOST_TEST((n.hold.since >= 0ms && n.hold.left > 0ms), n.held_back);
    BOOST_TEST((n.hold.since + n.hold.left <= 60s && n.hold.since + n.hold.left >= 59998ms),
               n.held_back);
  }
  for (std::size_t i = 0; i < fleet.size(); ++i)
    BOOST_TEST(fleet[i].command({"DBSIZE"}).integer <= 1);  // the fence marker at most
}

BOOST_AUTO_TEST_CASE(inspection_after_shutdown_says_so) {
  auto c = make_client();
  run_bounded(io,
              [&]() -> asio::awaitable<void> { co_await c.async_shutdown(asio::use_awaitable); }());
  auto [ec, r] = inspect(io, c, "x");
  BOOST_TEST(ec == redlock::error::shut_down);
  BOOST_TEST(r.empty());
}

BOOST_AUTO_TEST_SUITE_END()
