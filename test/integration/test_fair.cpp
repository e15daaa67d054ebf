// SPDX-License-Identifier: BSL-1.0
// Fair mode: waiters queue in a line kept on the nodes and acquire in the order their
// calls started, across clients; a try does not jump the line; a queued client that stops
// holds the line up only until its place lapses; a waiter that gives up leaves the line.
// A node that freezes or restarts empty while waiters are queued does not break the order.
// Real redis-server processes.

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
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

const redlock::lock_options fair_wait{.ttl = 20s, .wait = 30s, .fair = true};

struct fair_fleet : redlock::test::fleet_fixture<3> {
  // Places in the line of `resource` on node i (ZCARD), and whether every node has n.
  std::int64_t places(std::size_t i, const std::string& resource) const {
    return fleet[i].command({"ZCARD", "redlock:line:" + resource}).integer;
  }
  bool places_everywhere(const std::string& resource, std::int64_t n) const {
    return places_on_all_but(fleet.size(), resource, n);
  }
  // As places_everywhere, leaving out node `skip` (a faulty one; fleet.size(): none).
  bool places_on_all_but(std::size_t skip, const std::string& resource, std::int64_t n) const {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (i != skip && places(i, resource) != n) return false;
    return true;
  }
  // The ticket (ms) of the newest place in the line of `resource` on node 0.
  std::int64_t newest_ticket(const std::string& resource) const {
    const auto r =
        fleet[0].command({"ZRANGE", "redlock:line:" + resource, "-1", "-1", "WITHSCORES"});
    return r.elements.size() == 2 ? std::stoll(r.elements[1].text) : 0;
  }
  // Node 0's clock in ms (TIME).
  std::int64_t server_ms() const {
    const auto r = fleet[0].command({"TIME"});
    return std::stoll(r.elements[0].text) * 1000 + std::stoll(r.elements[1].text) / 1000;
  }
  // Waits until a new call's ticket cannot equal the newest place's (the wall clock moved
  // past it): then the order of tickets is the order of the calls, not of random ids.
  asio::awaitable<bool> past_newest_ticket(const std::string& resource) {
    const auto ticket = newest_ticket(resource);
    return eventually([ticket] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count() > ticket;
    });
  }
  // Takes `resource` with `c` on every node (a client just made may not have connected
  // to all of them yet, and a lock needs only a majority).
  asio::awaitable<redlock::lock> hold_everywhere(redlock::client& c, const std::string& resource) {
    for (;;) {
      auto lk = co_await c.async_lock(resource, fair_wait, asio::use_awaitable);
      bool everywhere = true;
      for (std::size_t i = 0; i < fleet.size(); ++i)
        everywhere = everywhere && fleet[i].command({"EXISTS", resource}).integer == 1;
      if (everywhere) co_return lk;
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    }
  }
  // Calls of `command` on node i so far (INFO commandstats).
  std::int64_t calls(std::size_t i, const std::string& command) const {
    const auto info = fleet[i].command({"INFO", "commandstats"}).text;
    const auto at = info.find("cmdstat_" + command + ":calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + command.size() + 15));
  }
};

// One waiting call that records when it got the lock, then releases it.
struct queued_call {
  std::string name;
  std::optional<error_code> outcome;
  std::uint64_t fence = 0;
};

asio::awaitable<void> take_then_release(redlock::client& c, std::string resource,
                                        redlock::lock_options opts, queued_call& call,
                                        std::vector<std::string>& order) {
  auto [ec, lk] = co_await c.async_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
  call.outcome = ec;
  if (ec) co_return;
  order.push_back(call.name);
  call.fence = lk.fence();
  co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
}

// A fault of one node while waiters are queued: `inject` runs on node `node` once `after`
// waiters are queued; `repair` (if any) once all of them have acquired. Until then the
// line is looked at only on the other nodes. Without `inject`, no fault.
struct node_fault {
  std::size_t node = 2;
  std::size_t after = 1;
  std::function<void(redlock::test::redis_server&)> inject;
  std::function<void(redlock::test::redis_server&)> repair;
};
const node_fault no_fault;

// A holder takes `resource`; waiters in three clients queue one after the other (each
// once the previous one's place is on every node and the clock moved past its ticket);
// the holder releases. Returns the order in which they acquired.
// clients[0] holds, clients[1..3] queue in that order.
// GCC 12 at -O2 reports a false -Wmismatched-new-delete for this coroutine's frame (as in
// test_bad_input.cpp): the frame's operator new and delete are Asio's, and they match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<void> queue_three(fair_fleet& f, std::array<redlock::client*, 4> all,
                                  redlock::lock_options opts, std::vector<std::string>& order,
                                  std::array<queued_call, 3>& calls,
                                  const node_fault& fault = no_fault) {
  const std::string resource = opts.fenced ? "fenced-line" : "line";
  redlock::client& holder = *all[0];
  const std::array<redlock::client*, 3> clients{all[1], all[2], all[3]};
  std::size_t faulty = f.fleet.size();  // none yet
  auto first = co_await f.hold_everywhere(holder, resource);
  for (std::size_t k = 0; k < 3; ++k) {
    calls[k].name = std::string(1, static_cast<char>('x' + k));
    asio::co_spawn(f.io, take_then_release(*clients[k], resource, opts, calls[k], order),
                   asio::detached);
    const bool placed = co_await eventually(
        [&] { return f.places_on_all_but(faulty, resource, static_cast<std::int64_t>(k + 1)); });
    BOOST_TEST_REQUIRE(placed);
    const bool later = co_await f.past_newest_ticket(resource);
    BOOST_TEST_REQUIRE(later);
    if (fault.inject && k + 1 == fault.after) {
      faulty = fault.node;
      fault.inject(f.fleet[faulty]);
    }
  }
  co_await holder.async_unlock(std::move(first), asio::use_awaitable);
  const bool ended = co_await eventually([&] {
    return std::all_of(calls.begin(), calls.end(),
                       [](const queued_call& q) { return q.outcome.has_value(); });
  });
  BOOST_TEST_REQUIRE(ended);
  for (const auto& q : calls) BOOST_TEST(!*q.outcome, q.name << ": " << q.outcome->message());
  // Every place was taken back: the line keys are gone, and no key lacks a TTL.
  const bool gone = co_await eventually([&] { return f.places_on_all_but(faulty, resource, 0); });
  BOOST_TEST(gone);
  const auto immortal = f.fleet.keys_without_ttl("redlock:fence");
  BOOST_TEST(immortal.empty(), "without a TTL:" << immortal);
  if (fault.inject && fault.repair) {
    fault.repair(f.fleet[faulty]);
    // The repaired node's leftovers lapse or are cleaned up.
    const bool gone_there = co_await eventually([&] { return f.places_everywhere(resource, 0); });
    BOOST_TEST(gone_there);
    const auto immortal_there = f.fleet.keys_without_ttl("redlock:fence");
    BOOST_TEST(immortal_there.empty(), "without a TTL:" << immortal_there);
  }
  for (auto* cl : all) co_await cl->async_shutdown(asio::use_awaitable);
}
#pragma GCC diagnostic pop

struct four_clients {
  redlock::client holder, a, b, c;
  explicit four_clients(fair_fleet& f)
      : holder(f.io.get_executor(), f.config()),
        a(f.io.get_executor(), f.config()),
        b(f.io.get_executor(), f.config()),
        c(f.io.get_executor(), f.config()) {}
  // c queues first: the order is not that of construction.
  std::array<redlock::client*, 4> all() { return {&holder, &c, &a, &b}; }
};

// Waiters x, y, z queue through `fault` (queue_three): they must acquire in that order,
// and in the end no node keeps a key.
void queue_three_through(fair_fleet& f, const node_fault& fault) {
  std::vector<std::string> order;
  std::array<queued_call, 3> calls;
  four_clients cl{f};
  run_bounded(f.io, queue_three(f, cl.all(), fair_wait, order, calls, fault));
  const std::vector<std::string> expected{"x", "y", "z"};
  BOOST_TEST(order == expected, boost::test_tools::per_element());
  const bool emptied = run_bounded(f.io, eventually([&] { return f.fleet.total_keys() == 0; }));
  BOOST_TEST(emptied, "keys left: " << f.fleet.total_keys());
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(fair, fair_fleet)

BOOST_AUTO_TEST_CASE(waiters_in_several_clients_acquire_in_the_order_they_came) {
  std::vector<std::string> order;
  std::array<queued_call, 3> calls;
  four_clients cl{*this};
  run_bounded(io, queue_three(*this, cl.all(), fair_wait, order, calls));
  const std::vector<std::string> expected{"x", "y", "z"};
  BOOST_TEST(order == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fenced_waiters_keep_the_order_and_get_increasing_tokens) {
  std::vector<std::string> order;
  std::array<queued_call, 3> calls;
  auto opts = fair_wait;
  opts.fenced = true;
  four_clients cl{*this};
  run_bounded(io, queue_three(*this, cl.all(), opts, order, calls));
  const std::vector<std::string> expected{"x", "y", "z"};
  BOOST_TEST(order == expected, boost::test_tools::per_element());
  BOOST_TEST(calls[0].fence > 0u);
  BOOST_TEST(calls[0].fence < calls[1].fence);
  BOOST_TEST(calls[1].fence < calls[2].fence);
}

BOOST_AUTO_TEST_CASE(waiters_keep_their_order_while_a_node_is_frozen) {
  // x queues on all three nodes, then node 2 stops answering: y and z queue on the other
  // two, which are a majority and serve the line in order. Thawed, node 2 runs what
  // queued up for it; its places are taken back or lapse.
  queue_three_through(*this, {.inject = [](auto& node) { node.freeze(); },
                              .repair = [](auto& node) { node.thaw(); }});
}

BOOST_AUTO_TEST_CASE(waiters_keep_their_order_when_a_node_restarts_empty) {
  // x and y queue on all three nodes, then node 2 restarts with nothing: the holder's
  // key and the line are gone there, and z queues into it. The other two nodes still
  // hold the line, so z, first on node 2 until x and y renew their places there,
  // cannot jump it.
  queue_three_through(*this, {.after = 2, .inject = [](auto& node) { node.restart(); }});
}

BOOST_AUTO_TEST_CASE(a_queued_client_that_stops_holds_the_line_until_its_place_lapses) {
  auto c = config();
  c.fair_entry_ttl = 300ms;
  // The stopped client runs on its own io_context, which the test stops driving: to the
  // nodes it is a paused (or dead) process whose place stays in the line.
  asio::io_context paused_io;
  redlock::client holder{io.get_executor(), c};
  redlock::client stopped{paused_io.get_executor(), c};
  redlock::client other{io.get_executor(), c};
  std::optional<error_code> stopped_outcome;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_everywhere(holder, "stall");
    asio::co_spawn(
        paused_io,
        [&]() -> asio::awaitable<void> {
          auto [ec, lk] =
              co_await stopped.async_lock("stall", fair_wait, asio::as_tuple(asio::use_awaitable));
          stopped_outcome = ec;
        },
        asio::detached);
    // Drive the stopped client until its place is on every node, then never again.
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!places_everywhere("stall", 1) && std::chrono::steady_clock::now() < until)
      paused_io.run_for(5ms);
    BOOST_TEST_REQUIRE(places_everywhere("stall", 1),
                       "places " << places(0, "stall") << " " << places(1, "stall") << " "
                                 << places(2, "stall") << " outcome "
                                 << (stopped_outcome ? stopped_outcome->message() : "none"));
    // The line's keys expire (no key without a TTL).
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      BOOST_TEST(fleet[i].command({"PTTL", "redlock:line:stall"}).integer > 0);
      BOOST_TEST(fleet[i].command({"PTTL", "redlock:line-expiry:stall"}).integer > 0);
    }
    co_await holder.async_unlock(std::move(first), asio::use_awaitable);
    // The lock is free, but the stopped client is first in line: a try is refused...
    redlock::diagnostics diag;
    auto [ec, lk] = co_await other.async_try_lock("stall", fair_wait, diag,
                                                  asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended, ec.message());
    BOOST_TEST(diag.message.find("an earlier waiter is first in the line") != std::string::npos,
               diag.message);
    // ...and a waiting call gets the lock only once that place has lapsed on the nodes.
    std::int64_t lapses_at = INT64_MAX;  // the earliest node: a majority lapsed after it
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const auto r =
          fleet[i].command({"ZRANGE", "redlock:line-expiry:stall", "0", "0", "WITHSCORES"});
      BOOST_TEST_REQUIRE(r.elements.size() == 2u);
      lapses_at = std::min<std::int64_t>(lapses_at, std::stoll(r.elements[1].text));
    }
    auto got = co_await other.async_lock("stall", fair_wait, asio::use_awaitable);
    BOOST_TEST(server_ms() >= lapses_at);
    BOOST_TEST(!stopped_outcome.has_value());
    co_await other.async_unlock(std::move(got), asio::use_awaitable);
    co_await other.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
    // The stopped client resumes and shuts down: its waiting call ends, nothing is left.
    bool stopped_shut = false;
    asio::co_spawn(
        paused_io,
        [&]() -> asio::awaitable<void> {
          co_await stopped.async_shutdown(asio::use_awaitable);
          stopped_shut = true;
        },
        asio::detached);
    const auto resume_until = std::chrono::steady_clock::now() + 10s;
    while (!(stopped_shut && stopped_outcome) && std::chrono::steady_clock::now() < resume_until)
      paused_io.run_for(5ms);
    BOOST_TEST(stopped_shut);
    BOOST_TEST_REQUIRE(stopped_outcome.has_value());
    BOOST_TEST(*stopped_outcome == redlock::error::shut_down, stopped_outcome->message());
  }());
}

BOOST_AUTO_TEST_CASE(a_waiter_that_gives_up_leaves_the_line) {
  redlock::client holder{io.get_executor(), config()};
  redlock::client waiter{io.get_executor(), config()};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_everywhere(holder, "leave");
    auto opts = fair_wait;
    opts.wait = 200ms;
    // Timed out: its place goes with it.
    auto [ec, lk] = co_await waiter.async_lock("leave", opts, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::wait_timeout, ec.message());
    const bool left = co_await eventually([&] { return places_everywhere("leave", 0); });
    BOOST_TEST(left);
    // Cancelled: the same.
    asio::cancellation_signal cancel;
    std::optional<error_code> outcome;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto [ec2, lk2] = co_await waiter.async_lock(
              "leave", fair_wait,
              asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
          outcome = ec2;
        },
        asio::detached);
    const bool placed = co_await eventually([&] { return places_everywhere("leave", 1); });
    BOOST_TEST(placed);  // not REQUIRE: the call must end before the test does
    cancel.emit(asio::cancellation_type::terminal);
    const bool ended = co_await eventually([&] { return outcome.has_value(); });
    BOOST_TEST_REQUIRE(ended);
    BOOST_TEST(*outcome == redlock::error::cancelled, outcome->message());
    const bool left_too = co_await eventually([&] { return places_everywhere("leave", 0); });
    BOOST_TEST(left_too);
    co_await holder.async_unlock(std::move(first), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(workers_in_several_clients_share_a_busy_lock_evenly) {
  // 2 clients x 4 workers take the same lock again and again: in line order, each gets
  // about an eighth. Without fair mode, a release in one client hands the lock to that
  // client's next waiter in the same write, and the other client starves.
  constexpr int workers = 8, total = 160;
  std::array<std::unique_ptr<redlock::client>, 2> clients;
  for (auto& cl : clients) cl = std::make_unique<redlock::client>(io.get_executor(), config());
  std::array<int, workers> wins{};
  int taken = 0;
  int running = workers;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int w = 0; w < workers; ++w) {
      asio::co_spawn(
          io,
          [&, w]() -> asio::awaitable<void> {
            auto& cl = *clients[static_cast<std::size_t>(w % 2)];
            while (taken < total) {
              auto [ec, lk] =
                  co_await cl.async_lock("busy", fair_wait, asio::as_tuple(asio::use_awaitable));
              if (ec) break;
              ++taken;
              ++wins[static_cast<std::size_t>(w)];
              co_await cl.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
            }
            --running;
          },
          asio::detached);
    }
    const bool finished = co_await eventually([&] { return running == 0; }, 25s);
    BOOST_TEST_REQUIRE(finished);
    for (auto& cl : clients) co_await cl->async_shutdown(asio::use_awaitable);
  }());
  BOOST_TEST(taken >= total);
  // No worker below half its share.
  for (int w = 0; w < workers; ++w)
    BOOST_TEST(wins[static_cast<std::size_t>(w)] >= total / workers / 2,
               "worker " << w << " won " << wins[static_cast<std::size_t>(w)]);
}

BOOST_AUTO_TEST_CASE(a_waiter_that_wins_only_a_minority_does_not_spin) {
  // The holder's key is missing on node 1 (lost, or never written there): every attempt
  // of a waiter sets it there, loses, and undoes it. The undoing must not announce a
  // release, or the waiter's own subscription would wake it at once, again and again.
  for (const bool fair : {false, true}) {
    BOOST_TEST_CONTEXT("fair " << fair) {
      auto slow = config();
      slow.retry_delay = 30s;  // only wakes could make more than a few attempts
      redlock::client holder{io.get_executor(), config()};
      redlock::client waiter{io.get_executor(), slow};
      const std::string resource = fair ? "minority-fair" : "minority";
      run_bounded(io, [&]() -> asio::awaitable<void> {
        auto first = co_await hold_everywhere(holder, resource);
        fleet[1].command({"DEL", resource});
        const auto before = calls(1, fair ? "evalsha" : "set");
        auto opts = fair_wait;
        opts.fair = fair;
        opts.wait = 300ms;
        auto [ec, lk] =
            co_await waiter.async_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::wait_timeout, ec.message());
        // The first attempt, one more when the subscription is confirmed, the last one at
        // the deadline: a handful, not thousands.
        BOOST_TEST(calls(1, fair ? "evalsha" : "set") - before <= 5);
        co_await holder.async_unlock(std::move(first), asio::use_awaitable);
        co_await waiter.async_shutdown(asio::use_awaitable);
        co_await holder.async_shutdown(asio::use_awaitable);
      }());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_waiting_set_that_wins_only_a_minority_does_not_spin) {
  // As above, for a multi-resource set: the undoing of its attempt releases both keys
  // on node 1 and must not wake the set itself.
  auto slow = config();
  slow.retry_delay = 30s;
  redlock::client holder{io.get_executor(), config()};
  redlock::client waiter{io.get_executor(), slow};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await hold_everywhere(holder, "set-a");
    fleet[1].command({"DEL", "set-a"});
    const auto before = calls(1, "evalsha");
    std::vector<std::string> names{"set-a", "set-b"};
    const redlock::lock_options opts{.ttl = 20s, .wait = 300ms};
    auto [ec, set] =
        co_await waiter.async_lock_all(names, opts, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::wait_timeout, ec.message());
    BOOST_TEST(calls(1, "evalsha") - before <= 5);
    // The last attempt's undoing leaves after the call's outcome.
    const bool undone = co_await eventually([&] {
      return fleet[1].command({"EXISTS", "set-a", "set-b"}).integer == 0;
    });
    BOOST_TEST(undone);
    co_await holder.async_unlock(std::move(first), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(sets_and_bad_settings_are_refused) {
  redlock::client c{io.get_executor(), config()};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    std::vector<std::string> names{"a", "b"};
    auto [ec, set] =
        co_await c.async_lock_all(names, fair_wait, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::invalid_argument, ec.message());
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  auto bad = config();
  bad.fair_entry_ttl = 10ms;
  BOOST_CHECK_EXCEPTION(redlock::client(io.get_executor(), bad), boost::system::system_error,
                        [](const boost::system::system_error& e) {
                          return e.code() == redlock::error::invalid_config &&
                                 std::string(e.what()).find("fair_entry_ttl") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_SUITE_END()
