// SPDX-License-Identifier: BSL-1.0
// Multi-resource locks against real redis-server nodes: a set is taken, extended and
// released together; a set blocked by one key takes nothing anywhere; single and multi
// locks on one resource exclude each other; opposite orders neither deadlock nor
// overlap; a failed partial attempt leaves no key; fencing gives one increasing token
// per resource; a frozen minority does not stop a set; bad arguments say what is wrong;
// a waiting set is woken by a release of any of its resources, local or announced.

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <optional>

#include "async_helpers.hpp"
#include "fast_config.hpp"
#include "fleet_fixture.hpp"
#include "process_wait.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"
#include "scripts/scripts.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::eventually;
using redlock::test::fast_config;
using redlock::test::run_bounded;

namespace {

using names = std::vector<std::string>;

struct three_nodes : redlock::test::fleet_fixture<3> {
  // Nodes (running, not frozen) that hold `key`; each copy must have a TTL.
  std::size_t copies(const std::string& key) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      if (!fleet[i].running() || fleet[i].frozen()) continue;
      if (fleet[i].command({"EXISTS", key}).integer != 1) continue;
      ++n;
      BOOST_TEST(fleet[i].command({"PTTL", key}).integer > 0, key << " on node " << i);
    }
    return n;
  }
  std::size_t copies_of_any(const names& keys) {
    std::size_t n = 0;
    for (const auto& k : keys) n += copies(k);
    return n;
  }
  // Whether every node has `n` subscribers to each channel of `keys` (PUBSUB NUMSUB).
  bool listened_to(const names& keys, std::int64_t n = 1) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      for (const auto& k : keys)
        if (fleet[i].command({"PUBSUB", "NUMSUB", k}).elements.at(1).integer != n) return false;
    return true;
  }

  // A client that only a release can wake in a test's time: each retry delay is drawn
  // from [15 s, 45 s].
  redlock::client patient_client(bool wake_on_release = true) {
    auto c = fast_config(fleet.uris());
    c.retry_delay = 30s;
    // Generous: these tests count attempts, and an attempt timed out on a loaded machine
    // (ASan) is retried, which would count as one more.
    c.node_timeout = 2s;
    c.wake_on_release = wake_on_release;
    return redlock::client{io.get_executor(), c};
  }
  // The waiting set's outcome (members: the call refers to them until it completes).
  std::optional<error_code> waited;
  redlock::multi_lock waited_set;
  // The waiting set must be taken soon after `released`, long before any retry.
  asio::awaitable<void> expect_taken_since(std::chrono::steady_clock::time_point released) {
    BOOST_TEST_REQUIRE(co_await eventually([&] { return waited.has_value(); }, 10s));
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - released);
    BOOST_TEST_MESSAGE("set taken " << us.count() << " us after the release began");
    BOOST_TEST(!*waited, waited->message());
    BOOST_TEST(waited_set.valid());
  }
  // A lock and release of a probe resource with `c`: a full round trip on its
  // connections, behind whatever `c` queued before.
  asio::awaitable<void> round_trip(redlock::client& c) {
    auto probe = co_await c.async_lock("probe", {.ttl = 20s}, asio::use_awaitable);
    co_await c.async_unlock(std::move(probe), asio::use_awaitable);
  }
  // Starts waiting for `set` now: its first attempt is queued before any later call of `c`.
  void wait_for_set(redlock::client& c, names set) {
    c.async_lock_all(std::move(set), {.ttl = 20s, .wait = 60s},
                     [this](error_code ec, redlock::multi_lock lk) {
                       waited_set = std::move(lk);
                       waited = ec;
                     });
  }
};

// Not coroutines themselves: GCC 12 mishandles braced arguments of coroutine calls.
auto try_all(redlock::client& c, names r, redlock::lock_options o, redlock::diagnostics& d) {
  return c.async_try_lock_all(std::move(r), o, d, asio::as_tuple(asio::use_awaitable));
}
auto lock_all(redlock::client& c, names r, redlock::lock_options o) {
  return c.async_lock_all(std::move(r), o, asio::use_awaitable);
}

// Whether a diagnostics message says that node i of `fleet` did not answer in time.
bool names_silent_node(const std::string& message, const redlock::test::redis_fleet& fleet,
                       std::size_t i) {
  const auto line = "node " + std::to_string(i) + " (127.0.0.1:" + std::to_string(fleet[i].port()) +
                    "): " + make_error_code(redlock::error::node_timeout).message();
  return message.find(line) != std::string::npos;
}

// Checks a failure that only node 0 of three answered: it says what failed on which
// set, counts the one vote, and names the two silent nodes.
void check_only_node_0_answered(const redlock::diagnostics& diag, const std::string& what,
                                const redlock::test::redis_fleet& fleet) {
  BOOST_TEST(diag.message.find("could not " + what) != std::string::npos, diag.message);
  const auto node_0 = "node 0 (127.0.0.1:" + std::to_string(fleet[0].port()) + "): ok";
  BOOST_TEST(diag.message.find("(1 of 3 nodes agreed, 2 needed)") != std::string::npos,
             diag.message);
  BOOST_TEST(diag.message.find(node_0) != std::string::npos, diag.message);
  BOOST_TEST(names_silent_node(diag.message, fleet, 1), diag.message);
  BOOST_TEST(names_silent_node(diag.message, fleet, 2), diag.message);
}

// Runs `op(diag, token)`, an extend or unlock, to completion and returns its outcome.
template <typename Op>
error_code run_diagnosed(asio::io_context& io, redlock::diagnostics& diag, Op op) {
  error_code ec;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        co_await op(diag, asio::redirect_error(asio::use_awaitable, ec));
      }(),
      5s);
  return ec;
}

// Takes `set` with `c`, then freezes nodes 1 and 2 (SIGSTOP): a majority of three. Should
// a check stop the test before it thaws them, the fleet's destructor resumes and kills them.
redlock::multi_lock take_then_freeze_majority(three_nodes& f, redlock::client& c, const names& set,
                                              std::chrono::milliseconds ttl) {
  redlock::multi_lock lk;
  run_bounded(f.io,
              [&]() -> asio::awaitable<void> { lk = co_await lock_all(c, set, {.ttl = ttl}); }());
  f.fleet[1].freeze();
  f.fleet[2].freeze();
  return lk;
}

// A forked child's work: 10 rounds of `order` with its own client, counting who is
// inside each resource "x:N" in shared[N] and overlaps in shared[3], entries in shared[4].
// Returns the exit code: 0 when every round completed.
int take_sets_in_child(std::vector<std::string> uris, const names& order,
                       std::atomic<int>* shared) {
  int rc = 1;
  try {
    asio::io_context cio;
    redlock::client c{cio.get_executor(), fast_config(std::move(uris))};
    asio::co_spawn(
        cio,
        [&]() -> asio::awaitable<void> {
          const redlock::lock_options opts{.ttl = 3s, .wait = 30s};
          for (int round = 0; round < 10; ++round) {
            auto set = co_await c.async_lock_all(order, opts, asio::use_awaitable);
            for (const auto& r : set.resources())
              if (shared[r.back() - '0'].fetch_add(1) != 0) ++shared[3];
            ++shared[4];
            ::usleep(500);
            for (const auto& r : set.resources()) shared[r.back() - '0'].fetch_sub(1);
            co_await c.async_unlock(std::move(set), asio::use_awaitable);
          }
          co_await c.async_shutdown(asio::use_awaitable);
        },
        [&](std::exception_ptr e) { rc = e ? 2 : 0; });
    cio.run_for(60s);
  } catch (...) {
    rc = 3;
  }
  return rc;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(multi_locks, three_nodes)

BOOST_AUTO_TEST_CASE(a_set_is_taken_extended_and_released_together) {
  auto c = make_client();
  const names given{"m:c", "m:a", "m:b"}, sorted{"m:a", "m:b", "m:c"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await lock_all(c, given, {.ttl = 5s});
    BOOST_TEST(lk.valid());
    BOOST_TEST((lk.resources() == sorted));
    BOOST_TEST(lk.fences().empty());
    for (const auto& k : lk.keys()) {
      BOOST_TEST(copies(k) >= 2u, k);
      std::size_t ours = 0;
      for (std::size_t i = 0; i < 3; ++i) ours += fleet[i].command({"GET", k}).text == lk.token();
      BOOST_TEST(ours == copies(k));
    }
    co_await c.async_extend(lk, 30s, asio::use_awaitable);
    BOOST_TEST(lk.ttl() == 30s);
    BOOST_TEST(lk.validity() > 20s);
    for (const auto& k : lk.keys())
      for (std::size_t i = 0; i < 3; ++i)
        if (fleet.has_key(i, k)) BOOST_TEST(fleet[i].command({"PTTL", k}).integer > 20000, k);
    const auto keys = lk.keys();
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    BOOST_TEST(!lk.owns());
    BOOST_TEST(copies_of_any(keys) == 0u);
    error_code ec;
    co_await c.async_unlock(std::move(lk), asio::redirect_error(asio::use_awaitable, ec));
    BOOST_TEST(ec == redlock::error::no_lock);  // released already: the object is empty
  }());
}

BOOST_AUTO_TEST_CASE(a_set_blocked_by_one_held_key_takes_nothing) {
  auto c = make_client();
  for (std::size_t i = 0; i < 3; ++i) fleet[i].command({"SET", "b", "someone-else", "PX", "10000"});
  const names abc{"a", "b", "c"}, cba{"c", "b", "a"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await try_all(c, abc, {}, diag);
    BOOST_TEST(ec == redlock::error::contended);
    BOOST_TEST(!lk.owns());
    BOOST_TEST(diag.message.find("\"b\" held by another owner") != std::string::npos, diag.message);
    // Waiting: retries that all fail take nothing either.
    auto [ec2, lk2] =
        co_await c.async_lock_all(cba, {.wait = 150ms}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::wait_timeout);
  }());
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(fleet[i].command({"EXISTS", "a", "c"}).integer == 0);
    BOOST_TEST(fleet[i].command({"GET", "b"}).text == "someone-else");
  }
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_in_the_set_gives_wrong_type_and_takes_nothing) {
  auto c = make_client();
  for (std::size_t i = 0; i < 3; ++i) fleet[i].command({"LPUSH", "t:2", "x"});
  const names set{"t:1", "t:2", "t:3"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await try_all(c, set, {}, diag);
    BOOST_TEST(ec == redlock::error::wrong_type, diag.message);
    BOOST_TEST(diag.message.find("WRONGTYPE") != std::string::npos, diag.message);
  }());
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(fleet[i].command({"EXISTS", "t:1", "t:3"}).integer == 0);
}

BOOST_AUTO_TEST_CASE(single_and_multi_locks_on_a_resource_exclude_each_other) {
  auto a = make_client();
  auto b = make_client();
  const names xy{"x", "y"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto single = co_await a.async_lock("y", {}, asio::use_awaitable);
    auto [ec, set] = co_await try_all(b, xy, {}, diag);
    BOOST_TEST(ec == redlock::error::contended);
    co_await a.async_unlock(std::move(single), asio::use_awaitable);
    auto set2 = co_await lock_all(b, xy, {});
    auto [ec2, single2] = co_await a.async_try_lock("x", {}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::contended);
    co_await b.async_unlock(std::move(set2), asio::use_awaitable);
    auto single3 = co_await a.async_try_lock("x", {}, asio::use_awaitable);
    BOOST_TEST(single3.valid());
  }());
}

BOOST_AUTO_TEST_CASE(opposite_orders_never_deadlock_nor_overlap) {
  // Independent clients (own connections): two name the set in opposite orders, a third
  // takes the middle resource alone. Per resource, count who is inside.
  std::vector<redlock::client> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(make_client());
  std::map<std::string, int> inside;
  int overlaps = 0, entries = 0;
  auto enter = [&](const names& rs) {
    for (const auto& r : rs)
      if (++inside[r] != 1) ++overlaps;
    ++entries;
  };
  auto leave = [&](const names& rs) {
    for (const auto& r : rs) --inside[r];
  };
  const names forward{"o:1", "o:2", "o:3"}, backward{"o:3", "o:2", "o:1"}, middle{"o:2"};
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        auto hold_briefly = [&]() -> asio::awaitable<void> {
          asio::steady_timer t{co_await asio::this_coro::executor, 1ms};
          co_await t.async_wait(asio::use_awaitable);
        };
        auto set_worker = [&](redlock::client& c, names order) -> asio::awaitable<void> {
          for (int round = 0; round < 15; ++round) {
            auto lk =
                co_await c.async_lock_all(order, {.ttl = 2s, .wait = 20s}, asio::use_awaitable);
            enter(lk.resources());
            co_await hold_briefly();
            leave(lk.resources());
            co_await c.async_unlock(std::move(lk), asio::use_awaitable);
          }
        };
        auto single_worker = [&](redlock::client& c) -> asio::awaitable<void> {
          for (int round = 0; round < 15; ++round) {
            auto lk = co_await c.async_lock("o:2", {.ttl = 2s, .wait = 20s}, asio::use_awaitable);
            enter(middle);
            co_await hold_briefly();
            leave(middle);
            co_await c.async_unlock(std::move(lk), asio::use_awaitable);
          }
        };
        using namespace asio::experimental::awaitable_operators;
        co_await (set_worker(clients[0], forward) && set_worker(clients[1], backward) &&
                  set_worker(clients[0], backward) && set_worker(clients[1], forward) &&
                  single_worker(clients[2]));
      }(),
      60s);
  BOOST_TEST(entries == 75);
  BOOST_TEST(overlaps == 0);
  BOOST_TEST(copies_of_any(forward) == 0u);
}

BOOST_AUTO_TEST_CASE(processes_naming_a_set_in_opposite_orders_never_overlap) {
  // Three processes with their own io_context and client: two take the set in opposite
  // orders, one takes the middle resource alone. Per resource, who is inside is counted
  // in shared memory: [0..2] inside per resource, [3] overlaps, [4] entries.
  auto* shared = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  BOOST_TEST_REQUIRE(shared != MAP_FAILED);
  for (int i = 0; i < 5; ++i) new (&shared[i]) std::atomic<int>{0};
  const std::vector<names> orders{{"x:0", "x:1", "x:2"}, {"x:2", "x:1", "x:0"}, {"x:1"}};
  std::vector<pid_t> kids;
  for (const auto& order : orders) {
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(take_sets_in_child(fleet.uris(), order, shared));
    kids.push_back(pid);
  }
  for (const pid_t k : kids) BOOST_TEST(redlock::test::wait_exit(k, 60s) == 0);
  BOOST_TEST(shared[4].load() == 30);
  BOOST_TEST(shared[3].load() == 0);
  ::munmap(shared, 4096);
}

BOOST_AUTO_TEST_CASE(a_partial_attempt_leaves_no_key) {
  // Node 0 holds one key of the set for someone else and node 1 is down: node 2 alone
  // takes the whole set, which is no majority, so it must be released there.
  auto c = make_client();
  fleet[0].command({"SET", "p:2", "someone-else", "PX", "10000"});
  fleet[1].kill();
  const names set{"p:1", "p:2", "p:3"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await try_all(c, set, {}, diag);
    BOOST_TEST(ec == redlock::error::no_quorum, diag.message);
    BOOST_TEST(!lk.owns());
    const bool released = co_await eventually(
        [&] {
          return fleet[2].command({"EXISTS", "p:1", "p:2", "p:3"}).integer == 0;
        },
        5s);
    BOOST_TEST(released);
  }());
  BOOST_TEST(fleet[0].command({"EXISTS", "p:1", "p:3"}).integer == 0);
  BOOST_TEST(fleet[0].command({"GET", "p:2"}).text == "someone-else");
}

BOOST_AUTO_TEST_CASE(cancelling_a_waiting_set_leaves_nothing) {
  auto c = make_client();
  for (std::size_t i = 0; i < 3; ++i)
    fleet[i].command({"SET", "w:2", "someone-else", "PX", "60000"});
  const names set{"w:1", "w:2", "w:3"}, others{"w:1", "w:3"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer t{co_await asio::this_coro::executor, 100ms};
    auto r = co_await (lock_all(c, set, {.ttl = 60s}) || t.async_wait(asio::use_awaitable));
    BOOST_TEST(r.index() == 1u);
    const bool clean = co_await eventually([&] { return copies_of_any(others) == 0; }, 5s);
    BOOST_TEST(clean);
  }());
}

BOOST_AUTO_TEST_CASE(fenced_sets_get_one_increasing_token_per_resource) {
  auto c = make_client();
  const names ba{"f:b", "f:a"}, ab{"f:a", "f:b"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options fenced{.ttl = 5s, .wait = 5s, .fenced = true};
    auto first = co_await lock_all(c, ba, fenced);
    BOOST_TEST_REQUIRE(first.fences().size() == 2u);
    const auto a1 = first.fence("f:a"), b1 = first.fence("f:b");
    BOOST_TEST(a1 > 0u);
    BOOST_TEST(b1 > 0u);
    BOOST_TEST(first.fences()[0] == a1);
    BOOST_TEST(first.fence("f:zzz") == 0u);
    co_await c.async_unlock(std::move(first), asio::use_awaitable);
    // A single fenced lock of one resource follows the set's token for it...
    auto single = co_await c.async_lock("f:a", fenced, asio::use_awaitable);
    BOOST_TEST(single.fence() > a1);
    const auto a2 = single.fence();
    co_await c.async_unlock(std::move(single), asio::use_awaitable);
    // ...and the next set follows both.
    auto second = co_await lock_all(c, ab, fenced);
    BOOST_TEST(second.fence("f:a") > a2);
    BOOST_TEST(second.fence("f:b") > b1);
  }());
}

BOOST_AUTO_TEST_CASE(a_fenced_set_writes_back_only_when_a_resource_has_counters_apart) {
  auto c = make_client();
  const names set{"w:a", "w:b"};
  const std::string_view raise_sha = redlock::detail::multi_raise_script.sha;
  auto raises = [&] {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i) n += fleet[i].calls_naming("evalsha", raise_sha);
    return n;
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options fenced{.ttl = 5s, .wait = 5s, .fenced = true};
    auto warm = co_await lock_all(c, set, fenced);  // nodes marked, counters in step
    const auto w = warm.fence("w:a");
    BOOST_TEST(warm.fence("w:b") == w);
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].log_every_command();
    // Both resources' counters in step: one round.
    auto in_step = co_await lock_all(c, set, fenced);
    BOOST_TEST(in_step.fence("w:a") == w + 1);
    BOOST_TEST(in_step.fence("w:b") == w + 1);
    co_await c.async_unlock(std::move(in_step), asio::use_awaitable);
    BOOST_TEST(raises() == 0);
    // w:b's counters apart on every node (10, 20, 30): the set's tokens wait for the
    // write-back, which every node holding the set runs.
    for (std::size_t i = 0; i < fleet.size(); ++i)
      fleet[i].command(
          {"HSET", "redlock:fence", redlock::fence_field("w:b", 0), std::to_string(10 * (i + 1))});
    auto apart = co_await lock_all(c, set, fenced);
    BOOST_TEST(apart.fence("w:a") == w + 2);
    BOOST_TEST(apart.fence("w:b") > 20u);
    co_await c.async_unlock(std::move(apart), asio::use_awaitable);
    const bool written_back = co_await eventually([&] { return raises() == 3; });
    BOOST_TEST(written_back);
  }());
}

BOOST_AUTO_TEST_CASE(a_frozen_minority_still_lets_a_set_be_taken) {
  redlock::test::redis_fleet five{5};
  redlock::client c{io.get_executor(), fast_config(five.uris())};
  const names two{"z:1", "z:2"}, three{"z:1", "z:2", "z:3"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto warm = co_await lock_all(c, two, {});  // every node connected
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
  }());
  five[3].freeze();
  five[4].freeze();
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        auto lk = co_await lock_all(c, three, {.ttl = 5s, .wait = 3s});
        BOOST_TEST(lk.valid());
        co_await c.async_extend(lk, 5s, asio::use_awaitable);
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
      }(),
      10s);
  five[3].thaw();
  five[4].thaw();
}

BOOST_AUTO_TEST_CASE(a_set_extension_answered_by_a_minority_is_no_quorum_and_keeps_its_deadline) {
  auto c = make_client();
  // The TTL outlasts a slow run up to the thaw (under load the 5 s this once was did not):
  // a key that expired while its node was frozen cannot show the late extension.
  auto lk = take_then_freeze_majority(*this, c, {"e:1", "e:2"}, 12s);
  const auto deadline = lk.deadline();
  redlock::diagnostics diag;
  const auto ec = run_diagnosed(
      io, diag, [&](auto& d, auto token) { return c.async_extend(lk, 30s, d, token); });
  BOOST_TEST(ec == redlock::error::no_quorum, diag.message);
  check_only_node_0_answered(diag, "extend all of \"e:1, e:2\"", fleet);
  // Only node 0 extended: the set keeps the deadline and TTL it had, and is not lost.
  BOOST_TEST((lk.deadline() == deadline));
  BOOST_TEST(lk.ttl() == 12s);
  BOOST_TEST(!lk.lost());
  BOOST_TEST(lk.valid());
  fleet[1].thaw();
  fleet[2].thaw();
  // Whether the abandoned extension still reaches the thawed nodes is not promised (its
  // connection may have been given up), and neither is that node 1 or 2 ever took the set
  // (a majority without one of them may have granted it, its answer late). What is: a
  // majority of the nodes keeps each key at least until the deadline the client keeps.
  // A node that ran PTTL at or after `asked` keeps the key at least until asked + PTTL.
  for (const auto& k : lk.keys()) {
    int keep = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      const auto asked = redlock::boot_clock::now();
      const auto pttl = fleet[i].command({"PTTL", k}).integer;
      BOOST_TEST(pttl != -1, "node " << i << " holds " << k << " without a TTL");
      if (pttl >= 0 && asked + std::chrono::milliseconds(pttl) >= deadline) ++keep;
    }
    BOOST_TEST(keep >= 2, keep << " of 3 nodes keep " << k << " until the set's deadline");
  }
}

BOOST_AUTO_TEST_CASE(a_set_release_answered_by_a_minority_is_no_quorum_naming_silent_nodes) {
  auto c = make_client();
  auto lk = take_then_freeze_majority(*this, c, {"u:1", "u:2"}, 30s);
  const auto keys = lk.keys();
  redlock::diagnostics diag;
  const auto ec = run_diagnosed(
      io, diag, [&](auto& d, auto token) { return c.async_unlock(std::move(lk), d, token); });
  BOOST_TEST(ec == redlock::error::no_quorum, diag.message);
  check_only_node_0_answered(diag, "unlock all of \"u:1, u:2\"", fleet);
  BOOST_TEST(!lk.owns());
  BOOST_TEST(copies_of_any(keys) == 0u);  // node 0 released; 1 and 2 are frozen
  fleet[1].thaw();
  fleet[2].thaw();
  // The release was sent to every node: the thawed ones run it long before the 30 s TTL.
  const bool released = run_bounded(io, eventually([&] { return fleet.total_keys() == 0; }, 5s));
  BOOST_TEST(released);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_refused_with_a_clear_message) {
  auto c = make_client();
  names many;
  for (std::size_t i = 0; i <= redlock::max_multi_lock; ++i)
    many.push_back("n" + std::to_string(i));
  struct bad_set {
    names rs;
    redlock::error code;
    std::string text;
  };
  const std::vector<bad_set> cases{
      {names{}, redlock::error::invalid_resource, "the set of resources is empty"},
      {many, redlock::error::too_many_resources, "at most 64 are allowed"},
      {names{"a", ""}, redlock::error::invalid_resource, "resource 1 of the set is an empty name"},
      {names{"a", "b", "a"}, redlock::error::invalid_resource,
       "resource \"a\" is named twice in the set"},
  };
  const names one{"a"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (const auto& [rs, code, text] : cases) {
      redlock::diagnostics diag;
      auto [ec, lk] = co_await try_all(c, rs, {}, diag);
      BOOST_TEST(ec == code, ec.message());
      BOOST_TEST(diag.message.find(text) != std::string::npos, diag.message);
    }
    redlock::diagnostics diag;
    auto [ec, lk] = co_await try_all(c, one, {.ttl = 0ms}, diag);
    BOOST_TEST(ec == redlock::error::invalid_ttl);
    BOOST_TEST(diag.message.find("TTL") != std::string::npos, diag.message);
  }());
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(shutdown_releases_held_and_dropped_sets) {
  auto c = make_client();
  redlock::multi_lock kept;
  const names k12{"k:1", "k:2"}, d12{"d:1", "d:2"};
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        kept = co_await lock_all(c, k12, {.ttl = 60s});
        {
          auto dropped = co_await lock_all(c, d12, {.ttl = 60s});
        }                                                // released in the background...
        co_await c.async_shutdown(asio::use_awaitable);  // ...and sent before the close
      },
      asio::detached);
  io.run();
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(a_waiting_set_takes_its_resources_at_another_clients_release) {
  auto holder = make_client();
  auto waiter = patient_client();
  const names set{"p:1", "p:2"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await holder.async_lock("p:2", {.ttl = 20s}, asio::use_awaitable);
    wait_for_set(waiter, set);
    // Refused once, then listening on both keys (and refused again when the
    // subscriptions were confirmed): only a release can let it in before its delay.
    BOOST_TEST_REQUIRE(co_await eventually([&] { return listened_to(set); }));
    BOOST_TEST(!waited.has_value());
    const auto released = std::chrono::steady_clock::now();
    co_await holder.async_unlock(std::move(held), asio::use_awaitable);
    co_await expect_taken_since(released);
    // Done waiting: no longer listening.
    BOOST_TEST(co_await eventually([&] { return listened_to(set, 0); }));
    co_await waiter.async_unlock(std::move(waited_set), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_waiting_set_takes_its_resources_at_a_release_in_its_own_client) {
  // No subscriptions: the local release alone must wake the set.
  auto c = patient_client(false);
  const names held_set{"o:2", "o:3"}, set{"o:1", "o:2"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await lock_all(c, held_set, {.ttl = 20s});
    wait_for_set(c, set);
    // Queued behind the set's first attempt: once the probe is taken, a majority has
    // refused the set, which now waits.
    co_await round_trip(c);
    BOOST_TEST(!waited.has_value());
    const auto released = std::chrono::steady_clock::now();
    co_await c.async_unlock(std::move(held), asio::use_awaitable);
    co_await expect_taken_since(released);
    co_await c.async_unlock(std::move(waited_set), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(shutdown_ends_a_waiting_set) {
  auto waiter = patient_client();
  for (std::size_t i = 0; i < 3; ++i)
    fleet[i].command({"SET", "e:2", "someone-else", "PX", "60000"});
  const names set{"e:1", "e:2"}, mine{"e:1"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    wait_for_set(waiter, set);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return listened_to(set); }));
    co_await waiter.async_shutdown(asio::use_awaitable);
    // Its next retry is 15 s away at the earliest.
    BOOST_TEST_REQUIRE(co_await eventually([&] { return waited.has_value(); }, 5s));
    BOOST_TEST(*waited == redlock::error::shut_down, waited->message());
    BOOST_TEST(copies_of_any(mine) == 0u);
  }());
}

BOOST_AUTO_TEST_CASE(a_release_of_several_of_its_keys_wakes_a_set_once) {
  // Local releases only: one release of two of the set's keys is one wake, however
  // many keys it frees; the third key, held elsewhere, refuses that attempt, and the
  // set then sleeps for its retry delay.
  auto c = patient_client(false);
  for (std::size_t i = 0; i < 3; ++i) fleet[i].log_every_command();
  for (std::size_t i = 0; i < 3; ++i)
    fleet[i].command({"SET", "u:3", "someone-else", "PX", "60000"});
  const names held_set{"u:1", "u:2"}, set{"u:1", "u:2", "u:3"};
  // Attempts of the waiting set that node i ran: its script is the only one naming u:3.
  const auto attempts_everywhere = [&](std::int64_t n) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet[i].calls_naming("evalsha", "u:3") != n) return false;
    return true;
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await lock_all(c, held_set, {.ttl = 20s});
    wait_for_set(c, set);
    // Refused everywhere: waiting, with nothing in flight.
    co_await answered_everywhere(c);
    BOOST_TEST_REQUIRE(attempts_everywhere(1));
    co_await c.async_unlock(std::move(held), asio::use_awaitable);
    // The woken attempt reaches every node...
    BOOST_TEST_REQUIRE(co_await eventually([&] { return attempts_everywhere(2); }));
    // ...and once every node has answered it, a second wake would have queued another
    // attempt; the next pass is behind that one on every connection.
    co_await answered_everywhere(c);
    co_await answered_everywhere(c);
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const auto runs = fleet[i].calls_naming("evalsha", "u:3");
      BOOST_TEST(runs == 2, "node " << i << " ran the set's script " << runs << " times");
    }
    BOOST_TEST(!waited.has_value());
    co_await c.async_shutdown(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return waited.has_value(); }, 5s));
    BOOST_TEST(*waited == redlock::error::shut_down, waited->message());
  }());
}

BOOST_AUTO_TEST_SUITE_END()
