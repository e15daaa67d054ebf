// SPDX-License-Identifier: BSL-1.0
// Fencing tokens, the restart guard and clock-jump detection, against real nodes that
// are frozen, killed, restarted empty, and run with a fast clock.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "async_helpers.hpp"
#include "client/testing.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"
#include "scripts/scripts.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;

namespace {

redlock::config fast_config(const redlock::test::redis_fleet& fleet) {
  return redlock::config{.nodes = fleet.uris(),
                         .connect_timeout = 300ms,
                         .node_timeout = 50ms,
                         .reconnect_min = 10ms,
                         .reconnect_max = 50ms,
                         .retry_delay = 5ms};
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::use_awaitable);
}

// Takes a fenced lock (waiting up to `wait`) and releases it; returns its token.
asio::awaitable<std::uint64_t> fenced_turn(redlock::client& c, std::string resource,
                                           std::chrono::milliseconds ttl = 2s,
                                           std::chrono::milliseconds wait = 10s) {
  redlock::diagnostics diag;
  auto [ec, lk] = co_await c.async_lock(resource, {.ttl = ttl, .wait = wait, .fenced = true}, diag,
                                        asio::as_tuple(asio::use_awaitable));
  BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << diag.message);
  const auto fence = lk.fence();
  co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
  co_return fence;
}

// Takes fenced locks until every running, unfrozen node carries the fence marker again
// (repaired by the client in the background), or fails after 10 s. Repairs need a
// majority of marked nodes: a test must give each restart or thaw time to heal before
// the next, as a minority of failures "at any moment" assumes.
void heal(asio::io_context& io, redlock::client& c, redlock::test::redis_fleet& fleet,
          std::chrono::milliseconds ttl, std::uint64_t& last, int& violations) {
  auto all_marked = [&] {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet[i].running() && !fleet[i].frozen() && !fleet[i].marker_names_me()) return false;
    return true;
  };
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        while (!all_marked()) {
          const auto t = co_await fenced_turn(c, "heal", ttl);
          (void)t;
          co_await sleep_for(20ms);
        }
      }(),
      10s);
  (void)last;
  (void)violations;
}

// Sets the counter of `resource` to 10, 20, 30, ... on the nodes (a history in which
// token 20 was written back to nodes 1 and 2 and node 0 lags): no two nodes agree.
void apart(redlock::test::redis_fleet& fleet, std::string_view resource, std::size_t stripes) {
  const std::string field = redlock::fence_field(resource, stripes);
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"HSET", "redlock:fence", field, std::to_string(10 * (i + 1))});
}

// Runs of the fencing write-back script on each node, counted by the server.
std::int64_t write_backs_run(const redlock::test::redis_fleet& fleet, std::string_view sha) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < fleet.size(); ++i) n += fleet[i].calls_naming("evalsha", sha);
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tokens_strictly_increase_while_minorities_are_frozen_in_turn) {
  redlock::test::redis_fleet fleet{5};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;  // nothing restarts here; fresh nodes need not wait
  redlock::client c{io.get_executor(), cfg};
  // Pairs of nodes to freeze in turn, so the winning majorities keep changing.
  const std::pair<int, int> minorities[] = {{0, 1}, {2, 3}, {4, 0}, {1, 2}, {3, 4}, {0, 2}, {1, 3}};
  std::uint64_t last = 0;
  int violations = 0;
  for (int round = 0; round < 20; ++round) {
    heal(io, c, fleet, 2s, last, violations);
    const auto [a, b] = minorities[round % 7];
    fleet[static_cast<std::size_t>(a)].freeze();
    fleet[static_cast<std::size_t>(b)].freeze();
    run_bounded(
        io,
        [&]() -> asio::awaitable<void> {
          for (int i = 0; i < 50; ++i) {
            const auto t = co_await fenced_turn(c, "fenced-resource");
            if (t <= last) ++violations;
            last = t;
          }
        }(),
        60s);
    fleet[static_cast<std::size_t>(a)].thaw();
    fleet[static_cast<std::size_t>(b)].thaw();
  }
  BOOST_TEST(violations == 0);
  BOOST_TEST(last >= 1000u);  // 1,000 acquisitions, each at least one more
}

BOOST_AUTO_TEST_CASE(a_holder_paused_between_the_rounds_never_obtains_a_token) {
  redlock::test::redis_fleet fleet{3};
  // The other client runs on its own thread, while the paused one is blocked in its hook.
  asio::io_context other_io;
  auto other_cfg = fast_config(fleet);
  other_cfg.restart_guard = false;
  redlock::client other{other_io.get_executor(), other_cfg};
  auto guard = asio::make_work_guard(other_io);
  std::thread other_thread{[&] { other_io.run(); }};

  std::uint64_t other_fence = 0;
  redlock::lock other_lock;  // the other client keeps holding it
  bool paused_once = false;
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  redlock::client c{io.get_executor(), cfg};
  redlock::detail::set_fence_writeback_hook(c, [&](std::string_view resource) {
    if (resource != "contested" || paused_once) return;
    paused_once = true;
    // The "pause": our keys vanish (as after an expiry we did not notice) and the other
    // client takes the lock, with its own token, before our write-back runs.
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].command({"DEL", "contested"});
    auto lk =
        other.async_lock("contested", {.ttl = 10s, .wait = 5s, .fenced = true}, asio::use_future)
            .get();
    other_fence = lk.fence();
    other_lock = std::move(lk);
  });
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await fenced_turn(c, "warm-up");  // counters initialised
    // Counters apart on every node, so that any two report different values and the
    // write-back (where the hook pauses us) must run: with counters in step the token
    // is handed out after one round, and there is no pause between rounds to test.
    apart(fleet, "contested", cfg.fence_stripes);
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_try_lock("contested", {.ttl = 10s, .fenced = true}, diag,
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(paused_once);
    BOOST_TEST(!!ec, "the paused holder was granted the lock");
    BOOST_TEST(lk.fence() == 0u);
    BOOST_TEST(diag.message.find("fencing token could not be confirmed") != std::string::npos,
               diag.message);
  }());
  BOOST_TEST(other_fence > 0u);
  // The other holder's key is intact: the paused holder did not write back over it.
  for (std::size_t i = 0; i < fleet.size(); ++i)
    BOOST_TEST(fleet[i].command({"EXISTS", "contested"}).integer == 1);
  guard.reset();
  other_io.stop();
  other_thread.join();
}

BOOST_AUTO_TEST_CASE(the_write_back_runs_only_when_the_majority_reports_differ) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  cfg.node_timeout = 1s;  // a slow reply on a busy machine must not split the counters
  int hooks = 0;
  redlock::client c{io.get_executor(), cfg};
  redlock::detail::set_fence_writeback_hook(c, [&](std::string_view) { ++hooks; });
  const std::string_view raise_sha = redlock::detail::fence_raise_script.sha;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await fenced_turn(c, "warm-up");  // nodes marked: their counters count
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].log_every_command();
    const int hooks_before = hooks;

    // In step (every node increments the same counter for every lock): one round each.
    std::uint64_t last = 0;
    for (int i = 0; i < 20; ++i) {
      const auto t = co_await fenced_turn(c, "in-step");
      BOOST_TEST(t > last);
      last = t;
    }
    BOOST_TEST(last == 20u);
    BOOST_TEST(hooks == hooks_before);
    BOOST_TEST(write_backs_run(fleet, raise_sha) == 0);

    // Apart: whichever two nodes answer first disagree, so T is written back. Every node
    // holds our key, so every node runs it and ends at T or above.
    apart(fleet, "apart", cfg.fence_stripes);
    const auto t1 = co_await fenced_turn(c, "apart");
    BOOST_TEST(t1 > 20u);  // above the token of the history apart() stands for
    BOOST_TEST(hooks == hooks_before + 1);
    const bool raised = co_await redlock::test::eventually([&] {
      for (std::size_t i = 0; i < fleet.size(); ++i)
        if (std::stoull(fleet[i].command({"HGET", "redlock:fence", "apart"}).text) < t1)
          return false;
      return write_backs_run(fleet, raise_sha) == 3;
    });
    BOOST_TEST(raised);
    const auto t2 = co_await fenced_turn(c, "apart");
    BOOST_TEST(t2 > t1);
  }());
}

BOOST_AUTO_TEST_CASE(a_restarted_node_does_not_vote_until_the_guard_has_passed) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.max_ttl = 1500ms;
  redlock::client c{io.get_executor(), cfg};
  // Fresh nodes are held back too: the first lock waits the guard out.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("warm", {.ttl = 1s, .wait = 10s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  // Taken before the restart: the server starts somewhere inside restart(), which can
  // take long on a loaded machine, and the guard counts from that start.
  const auto restarted = std::chrono::steady_clock::now();
  fleet[0].kill();
  fleet[0].restart();
  fleet[1].freeze();  // now a lock needs node 0 and node 2
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        co_await sleep_for(200ms);  // let the client reconnect to node 0 and learn its uptime
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_try_lock("guarded", {.ttl = 1s}, diag,
                                                  asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::no_quorum);
        BOOST_TEST(diag.message.find("restart guard") != std::string::npos, diag.message);
        // A waiting lock waits the guard out, then node 0 votes again.
        auto lk2 = co_await c.async_lock("guarded", {.ttl = 1s, .wait = 10s}, asio::use_awaitable);
        BOOST_TEST(lk2.valid());
      }(),
      20s);
  // Never earlier than max_ttl after the restart (a lower bound: noise only adds to it).
  BOOST_TEST((std::chrono::steady_clock::now() - restarted >= 1400ms));
  fleet[1].thaw();
}

BOOST_AUTO_TEST_CASE(a_fleet_marked_on_one_node_only_is_repaired_from_all_of_them) {
  // What a first repair of a new fleet can leave behind (the other nodes were still
  // inside their restart guard when it started, or its writes to them were lost): one
  // node marked, with a counter, two without. Fewer marked nodes than a majority once
  // stopped every later repair, and with them every fenced lock (no_quorum).
  redlock::test::redis_fleet fleet{3};
  fleet[0].command({"SET", "redlock:fence:marker", fleet[0].incarnation()});
  fleet[0].command({"HSET", "redlock:fence", "partly", "7"});
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Read from every node, the marked one included: the token continues from 7.
    const auto t = co_await fenced_turn(c, "partly", 2s, 5s);
    BOOST_TEST(t > 7u);
    const bool all_marked = co_await redlock::test::eventually([&] {
      for (std::size_t i = 0; i < fleet.size(); ++i)
        if (!fleet[i].marker_names_me()) return false;
      return true;
    });
    BOOST_TEST(all_marked);
  }());
}

BOOST_AUTO_TEST_CASE(unrepaired_nodes_are_not_counted_as_agreeing) {
  // A new fleet with one node frozen: the repair needs every node of an unmarked fleet,
  // so the two live nodes set the key but their votes cannot count. The diagnostics
  // must say so, not "2 of 3 nodes agreed, 2 needed".
  redlock::test::redis_fleet fleet{3};
  fleet[2].freeze();
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_try_lock("unrepaired", {.ttl = 2s, .fenced = true}, diag,
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(diag.message.find("(0 of 3 nodes agreed, 2 needed)") != std::string::npos,
               diag.message);
    BOOST_TEST(diag.message.find("fencing counters await repair") != std::string::npos,
               diag.message);
  }());
  fleet[2].thaw();
  // The undone attempt left no key behind.
  const bool gone = [&] {
    for (int i = 0; i < 200; ++i) {
      bool any = false;
      for (std::size_t n = 0; n < fleet.size(); ++n)
        any = any || fleet[n].command({"EXISTS", "unrepaired"}).integer != 0;
      if (!any) return true;
      io.run_for(5ms);
    }
    return false;
  }();
  BOOST_TEST(gone);
}

// A new fleet: every node says yes but none can count until the repair that the try
// starts has marked them. Nobody holds the resource, so a single try (a lock, a set) is
// tried once more when the repair ends and is granted, not refused with no_quorum.
BOOST_AUTO_TEST_CASE(a_single_fenced_try_on_a_new_fleet_is_granted_after_the_repair) {
  for (const bool set : {false, true}) {
    redlock::test::redis_fleet fleet{3};
    asio::io_context io;
    auto cfg = fast_config(fleet);
    cfg.restart_guard = false;  // a new fleet past its guard
    redlock::client c{io.get_executor(), cfg};
    BOOST_TEST_REQUIRE(!fleet[0].marker_names_me());
    run_bounded(io, [&]() -> asio::awaitable<void> {
      redlock::diagnostics diag;
      const redlock::lock_options opts{.ttl = 2s, .fenced = true};
      std::uint64_t fence = 0;
      if (set) {
        auto [ec, lk] = co_await c.async_try_lock_all({"new:a", "new:b"}, opts, diag,
                                                      asio::as_tuple(asio::use_awaitable));
        BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << diag.message);
        fence = lk.fence("new:b");
        co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
      } else {
        auto [ec, lk] =
            co_await c.async_try_lock("new", opts, diag, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST_REQUIRE(!ec, ec.message() << ": " << diag.message);
        fence = lk.fence();
        co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
      }
      BOOST_TEST(fence >= 1u);
    }());
    for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(fleet[i].marker_names_me());
  }
}

BOOST_AUTO_TEST_CASE(a_repair_begun_inside_a_restart_guard_does_not_mark_that_node) {
  // The order spin found (verify/redlock.pml, REPAIR_BEFORE_GUARD): a repair reads the
  // marked nodes while a restarted node is still inside its guard, a write-back raises
  // their counters after that read, and the repair ends after the guard. Marking the
  // node with the maximum it read would leave it below a token already handed out.
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.max_ttl = 2s;
  cfg.node_timeout = 6s;  // the frozen node's answer must still count when it thaws
  std::optional<std::chrono::steady_clock::time_point> restart_seen;
  cfg.on_event = [&](const redlock::node_event& e) {
    if (e.node == 2 && e.what == redlock::node_event::kind::restarted)
      restart_seen = std::chrono::steady_clock::now();
  };
  redlock::client c{io.get_executor(), cfg};
  std::uint64_t last = 0;
  int violations = 0;
  heal(io, c, fleet, 1s, last, violations);  // a new fleet: waits out its guard once

  const auto before_restart = std::chrono::steady_clock::now();
  fleet[2].kill();
  fleet[2].restart();
  auto hgetall_calls = [&] {
    const auto info = fleet[0].command({"INFO", "commandstats"}).text;
    const auto at = info.find("cmdstat_hgetall:calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + 22));
  };
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        BOOST_TEST_REQUIRE(
            co_await redlock::test::eventually([&] { return restart_seen.has_value(); }));
        // The client's guard for node 2 ends at most max_ttl after the handshake that
        // reported the restart; the repair must start well before that.
        BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() - before_restart < 1500ms));
        const auto reads = hgetall_calls();  // only the repair's read script runs HGETALL
        fleet[1].freeze();
        // A fenced attempt starts a repair (node 2 is connected and unmarked). Its read of
        // node 0 runs at once; its read of node 1 waits for the thaw.
        c.async_try_lock("trigger", {.ttl = 1s, .fenced = true}, [](error_code, redlock::lock) {});
        BOOST_TEST_REQUIRE(
            co_await redlock::test::eventually([&] { return hgetall_calls() > reads; }));
        // A write-back that lands on node 0 after the repair read it.
        fleet[0].command({"HSET", "redlock:fence", "elsewhere", "100"});
        asio::steady_timer past_guard{io, *restart_seen + cfg.max_ttl + 300ms};
        co_await past_guard.async_wait(asio::use_awaitable);
        fleet[1].thaw();  // the repair now ends, node 2 past its guard
      }(),
      20s);
  heal(io, c, fleet, 1s, last, violations);  // later repairs mark node 2
  BOOST_TEST(fleet[2].command({"HGET", "redlock:fence", "elsewhere"}).text == "100");
}

namespace {

void a_fast_clock_is_detected_and_excluded(bool restart_guard) {
  // Node 2 runs with its wall clock at twice the real rate (see support/fast_clock.cpp
  // for why this is not libfaketime).
  redlock::test::redis_server n0, n1;
  redlock::test::redis_server fast{
      {}, {std::string{"LD_PRELOAD="} + REDLOCK_FAST_CLOCK_LIB, "REDLOCK_CLOCK_RATE=2"}};
  asio::io_context io;
  redlock::config cfg{.nodes = {n0.uri(), n1.uri(), fast.uri()},
                      .node_timeout = 50ms,
                      .retry_delay = 5ms,
                      .max_ttl = 1s,
                      .restart_guard = restart_guard,
                      .clock_probe_interval = 200ms};
  std::mutex m;
  std::vector<redlock::node_event> jumps;
  cfg.on_event = [&](const redlock::node_event& e) {
    if (e.what != redlock::node_event::kind::clock_jump) return;
    std::lock_guard<std::mutex> g{m};
    jumps.push_back(e);
  };
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 100 && jumps.empty(); ++i) co_await sleep_for(20ms);
  }());
  BOOST_TEST_REQUIRE(!jumps.empty());
  BOOST_TEST(jumps.front().node == 2u);
  BOOST_TEST(jumps.front().message.find("clock moved") != std::string::npos, jumps.front().message);
  n1.freeze();  // a lock would now need the fast node
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await sleep_for(1100ms);  // past the fresh-start guard of n0
    redlock::diagnostics diag;
    auto [ec, lk] =
        co_await c.async_try_lock("clock", {.ttl = 1s}, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(diag.message.find("clock jumped") != std::string::npos, diag.message);
  }());
  n1.thaw();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_node_with_a_fast_clock_is_detected_and_excluded) {
  a_fast_clock_is_detected_and_excluded(true);
}

// restart_guard = false is for servers that lose nothing on restart; a jumped clock still
// expires keys early, so the clock-jump hold-back stays.
BOOST_AUTO_TEST_CASE(the_clock_jump_hold_back_stays_with_the_restart_guard_off) {
  a_fast_clock_is_detected_and_excluded(false);
}

BOOST_AUTO_TEST_CASE(striped_counters_still_increase_per_resource) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  cfg.fence_stripes = 3;
  redlock::client c{io.get_executor(), cfg};
  std::map<std::string, std::uint64_t> last;
  int violations = 0;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        std::minstd_rand rng{7};
        for (int i = 0; i < 300; ++i) {
          const std::string r = "striped:" + std::to_string(rng() % 10);
          const auto t = co_await fenced_turn(c, r);
          if (t <= last[r]) ++violations;
          last[r] = t;
        }
      }(),
      60s);
  BOOST_TEST(violations == 0);
  // Ten resources share three counters: at most three counter fields exist.
  BOOST_TEST(fleet[0].command({"HLEN", "redlock:fence"}).integer <= 3);
}

BOOST_AUTO_TEST_CASE(tokens_increase_while_nodes_are_killed_and_restarted_empty) {
  redlock::test::redis_fleet fleet{5};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.max_ttl = 300ms;
  redlock::client c{io.get_executor(), cfg};
  std::uint64_t last = 0;
  int violations = 0;
  std::minstd_rand rng{11};
  for (int round = 0; round < 12; ++round) {
    // One node (a minority) loses everything, at once.
    heal(io, c, fleet, 300ms, last, violations);
    const auto victim = static_cast<std::size_t>(rng() % 5);
    fleet[victim].kill();
    fleet[victim].restart();
    run_bounded(
        io,
        [&]() -> asio::awaitable<void> {
          for (int i = 0; i < 25; ++i) {
            const auto t = co_await fenced_turn(c, "crashy", 300ms);
            if (t <= last) ++violations;
            last = t;
          }
        }(),
        60s);
  }
  BOOST_TEST(violations == 0);
  BOOST_TEST(last >= 300u);
}

// A node restarted from a snapshot (RDB, or an AOF synced every second) comes back with its
// marker but with counters older than its last acknowledged write-back. Here: node 0's
// snapshot is taken after the first token; the second token is written back to nodes 0
// and 1 only (node 2 refuses: another owner's key); node 0 then restarts from its snapshot
// and node 1 freezes. Nodes 0 and 2 both hold the first token's counter: were node 0
// trusted, they would hand out the second token again. Its marker names the server before
// the restart, so it is not trusted until repaired, which needs node 1's counters.
BOOST_AUTO_TEST_CASE(a_node_restarted_from_a_snapshot_is_not_trusted_until_repaired) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.max_ttl = 300ms;
  redlock::client c{io.get_executor(), cfg};
  std::uint64_t last = 0;
  int violations = 0;
  heal(io, c, fleet, 300ms, last, violations);
  std::uint64_t first = 0, second = 0;
  run_bounded(io,
              [&]() -> asio::awaitable<void> { first = co_await fenced_turn(c, "snap", 300ms); }());
  BOOST_TEST_REQUIRE(fleet[0].command({"SAVE"}).text == "OK");
  fleet[2].command({"SET", "snap", "someone-else", "PX", "60000"});
  run_bounded(
      io, [&]() -> asio::awaitable<void> { second = co_await fenced_turn(c, "snap", 300ms); }());
  BOOST_TEST_REQUIRE(second > first);
  fleet[2].command({"DEL", "snap"});
  fleet[0].restart();  // SIGKILL, then up again from the snapshot
  BOOST_TEST_REQUIRE(!fleet[0].command({"GET", "redlock:fence:marker"}).is_nil());
  BOOST_TEST(!fleet[0].marker_names_me());
  fleet[1].freeze();
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        // Node 0's restart guard passes first (a waiting lock would retry meanwhile, and
        // each attempt raises node 2's counter); then one attempt, which only nodes 0 and
        // 2 can answer.
        for (;;) {
          auto report = co_await c.async_inspect("", asio::use_awaitable);
          if (report.at(0).votes) break;
          co_await sleep_for(20ms);
        }
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_try_lock("snap", {.ttl = 300ms, .fenced = true}, diag,
                                                  asio::as_tuple(asio::use_awaitable));
        if (!ec) {
          BOOST_TEST(lk.fence() > second, "token " << lk.fence() << " after " << second);
          co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
        } else {
          BOOST_TEST(diag.message.find("await repair") != std::string::npos, diag.message);
        }
      }(),
      20s);
  fleet[1].thaw();
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        const auto t = co_await fenced_turn(c, "snap", 300ms, 5s);
        BOOST_TEST(t > second);
      }(),
      20s);
  // That turn could win on nodes 1 and 2 alone while node 0's repair still ran in the
  // background: wait for the repair (bounded) before looking at node 0's marker.
  heal(io, c, fleet, 300ms, last, violations);
  BOOST_TEST(fleet[0].marker_names_me());
  BOOST_TEST(violations == 0);
}

BOOST_AUTO_TEST_CASE(extension_keeps_the_fencing_token_and_max_ttl_is_enforced) {
  redlock::test::redis_fleet fleet{3};
  asio::io_context io;
  auto cfg = fast_config(fleet);
  cfg.restart_guard = false;
  cfg.max_ttl = 5s;
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("ext-fence", {.ttl = 2s, .wait = 5s, .fenced = true},
                                    asio::use_awaitable);
    const auto t = lk.fence();
    BOOST_TEST(t > 0u);
    co_await c.async_extend(lk, 4s, asio::use_awaitable);
    BOOST_TEST(lk.fence() == t);
    auto [ec] = co_await c.async_extend(lk, 6s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::invalid_ttl);
    auto [ec2, lk2] =
        co_await c.async_try_lock("too-long", {.ttl = 6s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::invalid_ttl);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(one_server_under_two_names_and_a_replica_never_vote) {
  redlock::test::redis_server primary, other;
  redlock::test::redis_server replica{{"--replicaof", "127.0.0.1", std::to_string(primary.port())}};
  asio::io_context io;
  std::mutex m;
  std::vector<redlock::node_event::kind> events;
  // Node 1 is node 0 again, under another name; node 3 is a replica. Only nodes 0 and 2
  // are distinct masters: 2 of 4 is not a majority.
  redlock::config cfg{
      .nodes = {primary.uri(), "redis://localhost:" + std::to_string(primary.port()), other.uri(),
                replica.uri()},
      .node_timeout = 100ms,
      .retry_delay = 5ms,
      .restart_guard = false};
  cfg.on_event = [&](const redlock::node_event& e) {
    std::lock_guard<std::mutex> g{m};
    events.push_back(e.what);
  };
  redlock::client c{io.get_executor(), cfg};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_lock("once", {.ttl = 1s, .wait = 300ms}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(diag.message.find("same server as node 0") != std::string::npos, diag.message);
    BOOST_TEST(diag.message.find("replica") != std::string::npos, diag.message);
  }());
  auto seen = [&](redlock::node_event::kind k) {
    return std::find(events.begin(), events.end(), k) != events.end();
  };
  BOOST_TEST(seen(redlock::node_event::kind::duplicate));
  BOOST_TEST(seen(redlock::node_event::kind::replica));
}
