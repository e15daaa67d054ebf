// SPDX-License-Identifier: BSL-1.0
// Waking waiters across clients: a release announces itself by pub/sub on every node,
// and the first waiter in another client's line tries at once instead of after its retry
// delay; lost announcements fall back to that delay. Real redis-server processes.

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::eventually;
using redlock::test::run_bounded;

namespace {

// Far longer than any test runs: an acquisition that follows a release within a test's
// bound was woken, not retried (each retry delay is drawn from [15 s, 45 s]).
constexpr auto never = 30s;

struct three_nodes : redlock::test::fleet_fixture<3> {
  redlock::config cfg(std::chrono::milliseconds retry_delay) const {
    auto c = config();
    c.retry_delay = retry_delay;
    return c;
  }
  // Subscribers to `channel` on node i (PUBSUB NUMSUB).
  std::int64_t subscribers(std::size_t i, const std::string& channel) {
    const auto r = fleet[i].command({"PUBSUB", "NUMSUB", channel});
    return r.elements.size() == 2 ? r.elements[1].integer : -1;
  }
  bool subscribed_everywhere(const std::string& channel, std::int64_t n = 1) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (subscribers(i, channel) != n) return false;
    return true;
  }
  // The waiting call's outcome and lock (members: the call refers to them until it
  // completes, which may be after a failed test's coroutine ended).
  std::optional<error_code> second;
  redlock::lock second_lock;

  // `holder` takes `resource`, then `waiter` starts waiting for it; returns the holder's
  // lock once the waiter is subscribed on every node (or, when `listening` is false,
  // right away).
  asio::awaitable<redlock::lock> hold_and_queue(redlock::client& holder, redlock::client& waiter,
                                                std::string resource, bool listening = true);
  // Releases `first` and checks that the waiter gets the lock within 10 s; then releases
  // it and shuts both clients down.
  asio::awaitable<void> hand_over(redlock::client& holder, redlock::client& waiter,
                                  redlock::lock first);

  // Calls of `SET` on node i so far.
  std::int64_t set_calls(std::size_t i) { return fleet[i].calls("set"); }
};

// Takes `resource` with `c` (waiting): the outcome into `out`, the lock into `lk`.
asio::awaitable<void> take(redlock::client& c, std::string resource, std::optional<error_code>& out,
                           redlock::lock& lk, std::chrono::milliseconds wait = 60s) {
  const redlock::lock_options opts{.ttl = 20s, .wait = wait};
  auto [ec, got] = co_await c.async_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
  lk = std::move(got);
  out = ec;
}

asio::awaitable<redlock::lock> three_nodes::hold_and_queue(redlock::client& holder,
                                                           redlock::client& waiter,
                                                           std::string resource, bool listening) {
  auto first = co_await holder.async_lock(resource, {.ttl = 20s}, asio::use_awaitable);
  asio::co_spawn(io, take(waiter, resource, second, second_lock), asio::detached);
  if (listening) {
    const bool subscribed = co_await eventually([&] { return subscribed_everywhere(resource); });
    BOOST_TEST_REQUIRE(subscribed);
  }
  BOOST_TEST(!second.has_value());
  co_return first;
}

asio::awaitable<void> three_nodes::hand_over(redlock::client& holder, redlock::client& waiter,
                                             redlock::lock first) {
  co_await holder.async_unlock(std::move(first), asio::use_awaitable);
  const bool done = co_await eventually([&] { return second.has_value(); }, 10s);
  BOOST_TEST_REQUIRE(done);
  BOOST_TEST(!*second, second->message());
  BOOST_TEST(second_lock.valid());
  co_await waiter.async_unlock(std::move(second_lock), asio::use_awaitable);
  co_await waiter.async_shutdown(asio::use_awaitable);
  co_await holder.async_shutdown(asio::use_awaitable);
}

// One of a client's workers passing a lock around: takes `resource`, lets a turn of the
// event loop pass, releases it, and again, until `stop`; counts its acquisitions in
// `taken`.
asio::awaitable<void> circle(redlock::client& c, std::string resource, const bool& stop,
                             std::size_t& taken) {
  const auto ex = co_await asio::this_coro::executor;
  const redlock::lock_options opts{.ttl = 20s, .wait = 20s};
  while (!stop) {
    auto [ec, lk] = co_await c.async_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;  // shut down
    ++taken;
    co_await asio::post(ex, asio::use_awaitable);
    auto [released] = co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
    if (released) co_return;
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(wake, three_nodes)

BOOST_AUTO_TEST_CASE(a_lock_circling_inside_one_client_reaches_another_clients_waiter) {
  // Three workers of `busy` hand the lock to one another. A local hand-off's SET leaves in
  // the same write as the release and beats any other client's, so without a bound the
  // lock never leaves `busy`. Counted in hand-offs: neither client ever polls (30 s).
  auto busy = make_client(cfg(never));
  auto other = make_client(cfg(never));
  constexpr std::size_t workers = 3, limit = 400;
  bool stop = false;
  std::size_t taken = 0, running = workers;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Both clients queue while the lock is held: the other client's waiter is in its line
    // (refused once, subscribed), not a newcomer that finds the lock free by chance.
    const redlock::lock_options held{.ttl = 20s};
    auto first = co_await busy.async_lock("circling", held, asio::use_awaitable);
    for (std::size_t i = 0; i < workers; ++i)
      asio::co_spawn(io, circle(busy, "circling", stop, taken),
                     [&running](std::exception_ptr) { --running; });
    asio::co_spawn(io, take(other, "circling", second, second_lock), asio::detached);
    const bool queued = co_await eventually([&] { return subscribed_everywhere("circling", 2); });
    BOOST_TEST_REQUIRE(queued);
    co_await answered_everywhere(busy);
    co_await answered_everywhere(other);
    co_await busy.async_unlock(std::move(first), asio::use_awaitable);
    const std::size_t from = taken;
    const bool ended = co_await eventually([&] { return second || taken - from > limit; });
    BOOST_TEST_REQUIRE(ended);
    BOOST_TEST(second.has_value(), "the other client still waits after "
                                       << taken - from << " hand-offs inside the busy one");
    BOOST_TEST_MESSAGE("the other client's waiter got the lock after " << taken - from
                                                                       << " hand-offs");
    stop = true;
    if (second) {
      BOOST_TEST(!*second, second->message());
      co_await other.async_unlock(std::move(second_lock), asio::use_awaitable);
    }
    co_await other.async_shutdown(asio::use_awaitable);
    co_await busy.async_shutdown(asio::use_awaitable);
    const bool finished = co_await eventually([&] { return running == 0; });
    BOOST_TEST(finished);
  }());
}

BOOST_AUTO_TEST_CASE(a_waiter_in_another_client_takes_the_lock_at_its_release) {
  auto holder = make_client(cfg(10ms));
  auto waiter = make_client(cfg(never));
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_and_queue(holder, waiter, "w1");
    // The release is the only event that can let the waiter in before its retry delay.
    co_await hand_over(holder, waiter, std::move(first));
    // The line is gone, the client shut down: so are the subscriptions.
    BOOST_TEST(co_await eventually([&] { return subscribed_everywhere("w1", 0); }));
  }());
}

BOOST_AUTO_TEST_CASE(a_release_wakes_only_the_first_waiter_and_shutdown_ends_the_others) {
  auto holder = make_client(cfg(10ms));
  auto waiter = make_client(cfg(never));
  constexpr std::size_t n = 8;
  std::array<std::optional<error_code>, n> got;
  std::array<redlock::lock, n> locks;
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].log_every_command();
  // SETs of w2 that node i ran.
  const auto sets = [&](std::size_t i) { return fleet[i].calls_naming("set", "w2"); };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await holder.async_lock("w2", {.ttl = 20s}, asio::use_awaitable);
    for (std::size_t i = 0; i < n; ++i)
      asio::co_spawn(io, take(waiter, "w2", got[i], locks[i]), asio::detached);
    // The holder's SET, each waiter's first attempt, and the head's one attempt when its
    // subscription was confirmed: then every waiter is in line, none polls.
    BOOST_TEST_REQUIRE(co_await eventually([&] {
      if (!subscribed_everywhere("w2")) return false;
      for (std::size_t i = 0; i < fleet.size(); ++i)
        if (sets(i) < std::int64_t{1 + n + 1}) return false;
      return true;
    }));
    co_await answered_everywhere(waiter);
    std::array<std::int64_t, 3> before{};
    for (std::size_t i = 0; i < fleet.size(); ++i) before[i] = sets(i);
    co_await holder.async_unlock(std::move(first), asio::use_awaitable);
    auto taken = [&] {
      return std::count_if(got.begin(), got.end(), [](const auto& g) { return g.has_value(); });
    };
    BOOST_TEST_REQUIRE(co_await eventually([&] { return taken() > 0; }, 10s));
    // One attempt per release, not one per waiter: the rest wait their turn. Counted
    // once every node has answered the winner's attempt and then run what came after.
    co_await answered_everywhere(waiter);
    co_await answered_everywhere(waiter);
    for (std::size_t i = 0; i < fleet.size(); ++i)
      BOOST_TEST(sets(i) - before[i] == 1, "node " << i << ": " << sets(i) - before[i] << " SETs");
    BOOST_TEST(taken() == 1);
    for (auto& lk : locks)
      if (lk.owns()) co_await waiter.async_unlock(std::move(lk), asio::use_awaitable);
    // Shutting down ends the waits still parked in the line (their retry delay is 30 s).
    co_await waiter.async_shutdown(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return taken() == n; }, 5s));
    for (const auto& g : got) BOOST_TEST((!*g || *g == redlock::error::shut_down), g->message());
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(
    shutting_down_both_clients_ends_every_call_at_once_also_one_whose_attempt_is_out) {
  // `a` holds w6; three workers of each client wait for it in their client's line. Each
  // client is then shut down in the same turn as two new calls (no co_await between), so
  // their first attempts are out, in no line, when the shutdown runs on the client's
  // strand: one for w6 (refused after the shutdown), one for a free resource (won after
  // it). Waits (60 s) and retry delays (15 s to 45 s) are far beyond the test's bound:
  // each call ends with shut_down because of the shutdown or not in time.
  auto a = make_client(cfg(never));
  auto b = make_client(cfg(never));
  constexpr std::size_t workers = 3, calls = 2 * workers + 4;
  std::array<std::optional<error_code>, calls> got;
  std::array<redlock::lock, calls> locks;
  std::vector<std::string> free_resources;
  std::size_t down = 0;  // shutdowns completed
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].log_every_command();
  const auto sets = [&](std::size_t i) { return fleet[i].calls_naming("set", "w6"); };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await a.async_lock("w6", {.ttl = 20s}, asio::use_awaitable);
    for (std::size_t i = 0; i < 2 * workers; ++i)
      asio::co_spawn(io, take(i < workers ? a : b, "w6", got[i], locks[i]), asio::detached);
    // The holder's SET, each worker's refused attempt, and each head's one attempt when its
    // subscription was confirmed: then every worker is in its line, and none polls.
    const bool queued = co_await eventually([&] {
      if (!subscribed_everywhere("w6", 2)) return false;
      for (std::size_t i = 0; i < fleet.size(); ++i)
        if (sets(i) < std::int64_t{1 + 2 * workers + 2}) return false;
      return true;
    });
    BOOST_TEST_REQUIRE(queued);
    std::size_t k = 2 * workers;
    for (redlock::client* c : {&b, &a}) {
      free_resources.push_back("w6-free-" + std::to_string(k));
      for (const std::string& resource : {std::string{"w6"}, free_resources.back()}) {
        c->async_lock(resource, {.ttl = 20s, .wait = 60s},
                      [&got, &locks, k](error_code ec, redlock::lock lk) {
                        got[k] = ec;
                        locks[k] = std::move(lk);
                      });
        ++k;
      }
      c->async_shutdown([&down](error_code) { ++down; });
    }
    const auto pending = [&] {
      return std::count_if(got.begin(), got.end(), [](const auto& g) { return !g.has_value(); });
    };
    const bool ended = co_await eventually([&] { return down == 2 && pending() == 0; });
    BOOST_TEST(ended, pending() << " calls still pending, " << down << " shutdowns done");
    for (std::size_t i = 0; i < calls; ++i)
      if (got[i])
        BOOST_TEST(*got[i] == redlock::error::shut_down, "call " << i << ": " << got[i]->message());
    BOOST_TEST_REQUIRE(ended);
    // What the calls whose attempts were out took was released behind them: the
    // connections sent it before they closed.
    for (std::size_t i = 0; i < fleet.size(); ++i)
      for (const auto& resource : free_resources)
        BOOST_TEST(fleet[i].command({"EXISTS", resource}).integer == 0,
                   resource << " left on node " << i);
    // The lock `a` held was released by its shutdown: unlocking it now is refused at once.
    auto [unlocked] =
        co_await a.async_unlock(std::move(first), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(unlocked == redlock::error::shut_down, unlocked.message());
  }());
}

BOOST_AUTO_TEST_CASE(shutdown_ends_a_call_waiting_out_its_retry_delay_in_no_line) {
  // Node 0 holds w7 for someone else and node 1 is frozen: the attempt fails for want of
  // nodes (no_quorum), not for contention, so the call waits out its retry delay (15 s to
  // 45 s) in no line. Shutdown must end it anyway.
  struct failed_attempts : redlock::observer {
    std::size_t n = 0;
    void on_attempt(const redlock::attempt_event& e) override { n += e.outcome ? 1 : 0; }
  };
  auto seen = std::make_shared<failed_attempts>();
  auto c = cfg(never);
  c.observer = seen;
  auto waiter = make_client(c);
  fleet[0].command({"SET", "w7", "someone-else", "PX", "60000"});
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await answered_everywhere(waiter);  // connected to all three
    fleet[1].freeze();
    asio::co_spawn(io, take(waiter, "w7", second, second_lock), asio::detached);
    // Decided when node 1's request times out (node_timeout).
    const bool failed = co_await eventually([&] { return seen->n == 1; });
    BOOST_TEST_REQUIRE(failed);
    BOOST_TEST(!second.has_value());
    co_await waiter.async_shutdown(asio::use_awaitable);
    const bool ended = co_await eventually([&] { return second.has_value(); });
    fleet[1].thaw();
    BOOST_TEST_REQUIRE(ended);
    BOOST_TEST(*second == redlock::error::shut_down, second->message());
  }());
}

BOOST_AUTO_TEST_CASE(with_the_subscriber_connections_killed_waiters_still_acquire_by_retrying) {
  auto holder = make_client(cfg(10ms));
  auto slow = cfg(200ms);
  // Killed subscribers stay away for the whole test.
  slow.reconnect_min = 20s;
  slow.reconnect_max = 20s;
  auto waiter = make_client(slow);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_and_queue(holder, waiter, "w3");
    for (std::size_t i = 0; i < fleet.size(); ++i)
      BOOST_TEST(fleet[i].command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer == 1);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return subscribed_everywhere("w3", 0); }));
    co_await hand_over(holder, waiter, std::move(first));
  }());
}

BOOST_AUTO_TEST_CASE(a_killed_subscriber_reconnects_and_listens_again) {
  auto holder = make_client(cfg(10ms));
  auto waiter = make_client(cfg(never));
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_and_queue(holder, waiter, "w4");
    const auto ids = [&] {
      std::vector<std::string> out;
      for (std::size_t i = 0; i < fleet.size(); ++i) {
        const auto list = fleet[i].command({"CLIENT", "LIST", "TYPE", "pubsub"}).text;
        out.push_back(list.substr(0, list.find(' ')));  // "id=N"
      }
      return out;
    };
    const auto old_ids = ids();
    for (std::size_t i = 0; i < fleet.size(); ++i)
      BOOST_TEST(fleet[i].command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer == 1);
    // Back (reconnect back-off 10 to 50 ms) as new clients, subscribed again everywhere.
    BOOST_TEST_REQUIRE(co_await eventually([&] {
      if (!subscribed_everywhere("w4")) return false;
      const auto now = ids();
      for (std::size_t i = 0; i < now.size(); ++i)
        if (now[i] == old_ids[i]) return false;
      return true;
    }));
    co_await hand_over(holder, waiter, std::move(first));
  }());
}

BOOST_AUTO_TEST_CASE(without_wake_on_release_no_subscriber_is_opened) {
  auto holder = make_client(cfg(10ms));
  auto polling = cfg(50ms);
  polling.wake_on_release = false;
  auto waiter = make_client(polling);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_and_queue(holder, waiter, "w5", false);
    // Polls (SETs beyond the holder's and the first attempt), never subscribes.
    BOOST_TEST_REQUIRE(co_await eventually([&] { return set_calls(0) >= 4; }));
    BOOST_TEST(subscribers(0, "w5") == 0);
    co_await hand_over(holder, waiter, std::move(first));
  }());
}

BOOST_AUTO_TEST_CASE(a_woken_waiter_refused_by_a_node_behind_the_release_retries_at_once) {
  // A release runs on node 0 first (the test plays it: DEL, then PUBLISH of the token, as
  // the release script does) while nodes 1 and 2 still hold the key. The waiter, woken by
  // node 0's announcement, finds the released token still on nodes 1 and 2: it must try
  // again at once, not sleep its retry delay (30 s) until an announcement it will ignore.
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"SET", "behind", "the-released-token", "PX", "20000"});
  redlock::client waiter{io.get_executor(), cfg(never)};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const auto base = set_calls(1);
    asio::co_spawn(io, take(waiter, "behind", second, second_lock), asio::detached);
    // Refused, queued, subscribed, and its one extra attempt at the confirmation made.
    const bool settled = co_await eventually(
        [&] { return subscribed_everywhere("behind") && set_calls(1) - base == 2; });
    BOOST_TEST_REQUIRE(settled);
    const auto before = set_calls(1);
    fleet[0].command({"DEL", "behind"});
    fleet[0].command({"PUBLISH", "behind", "the-released-token"});
    // The woken attempt, then one more at once (and no more: once per release).
    const bool retried = co_await eventually([&] { return set_calls(1) - before == 2; }, 5s);
    BOOST_TEST(retried, "SETs on node 1 after the announcement: " << set_calls(1) - before);
    BOOST_TEST(!second.has_value());
    co_await waiter.async_shutdown(asio::use_awaitable);
    const bool ended = co_await eventually([&] { return second.has_value(); });
    BOOST_TEST_REQUIRE(ended);
    BOOST_TEST(*second == redlock::error::shut_down, second->message());
  }());
}

BOOST_AUTO_TEST_SUITE_END()
