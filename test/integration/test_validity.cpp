// SPDX-License-Identifier: BSL-1.0
// The lock's promise on the paths outside acquisition: while valid() says yes, no other
// client can hold the resource. Extension (too short, failed, cancelled), renewal (TTL
// above max_ttl, failed with a shorter TTL) and shutdown or destruction, each against
// three real nodes and a contender with its own connections, which keeps trying until it
// wins: the moment it does, the holder's lock must already say it is not valid.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "async_helpers.hpp"
#include "fault_proxy.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::boot_clock;
using redlock::test::run_bounded;

namespace {

struct three_nodes : redlock::test::fleet_fixture<3> {
  redlock::client make_client() {
    auto cfg = config();
    cfg.node_timeout = 100ms;
    cfg.reconnect_max = 100ms;
    return fleet_fixture::make_client(std::move(cfg));
  }

  /// `contender` tries `resource` until it wins (for at most `limit`); at the moment it
  /// wins, `holder_valid()` must be false. Returns whether it won.
  template <typename Valid>
  asio::awaitable<bool> contender_wins_only_when_invalid(redlock::client& contender,
                                                         std::string resource, Valid holder_valid,
                                                         std::chrono::milliseconds limit = 6s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    asio::steady_timer pause{co_await asio::this_coro::executor};
    while (std::chrono::steady_clock::now() < end) {
      auto [ec, lk] = co_await contender.async_try_lock(resource, {.ttl = 5s},
                                                        asio::as_tuple(asio::use_awaitable));
      if (!ec) {
        const bool holder_still_valid = holder_valid();
        BOOST_TEST(!holder_still_valid, "the contender holds \""
                                            << resource
                                            << "\" while the first holder says valid()");
        co_await contender.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
        co_return true;
      }
      pause.expires_after(5ms);  // the next try; the outcome is awaited, not slept for
      co_await pause.async_wait(asio::use_awaitable);
    }
    co_return false;
  }

  long long pttl(std::size_t node, const std::string& key) const {
    return fleet[node].command({"PTTL", key}).integer;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(validity, three_nodes)

BOOST_AUTO_TEST_CASE(an_extension_within_the_drift_allowance_is_refused_before_it_is_sent) {
  auto holder = make_client();
  auto contender = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await holder.async_lock("short", {.ttl = 10s}, asio::use_awaitable);
    redlock::diagnostics diag;
    auto [ec] = co_await holder.async_extend(lk, 2ms, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::invalid_ttl);
    BOOST_TEST(diag.message.find("drift") != std::string::npos, diag.message);
    // Nothing reached a node: the keys keep their 10 s, and so does the lock.
    co_await answered_everywhere(holder);
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(pttl(i, "short") > 5000);
    BOOST_TEST(lk.valid());
    auto [ec2, other] =
        co_await contender.async_try_lock("short", {}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::contended);
    co_await holder.async_unlock(std::move(lk), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(an_extension_too_short_to_confirm_in_time_ends_the_lock) {
  auto holder = make_client();
  auto contender = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await holder.async_lock("short3", {.ttl = 10s}, asio::use_awaitable);
    const auto sent = boot_clock::now();
    auto [ec] = co_await holder.async_extend(lk, 4ms, asio::as_tuple(asio::use_awaitable));
    // Whatever the outcome, the lock promises no more than 4 ms from the call.
    BOOST_TEST((lk.deadline() <= sent + 4ms));
    if (ec) BOOST_TEST(!lk.valid());
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "short3", [&] { return lk.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_CASE(a_failed_shorter_extension_shortens_the_lock) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("nq", {.ttl = 10s}, asio::use_awaitable);
  }());
  fleet[1].freeze();
  fleet[2].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const auto sent = boot_clock::now();
    auto [ec] = co_await holder.async_extend(lk, 1000ms, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    // The frozen nodes will run the PEXPIRE 1000 when they thaw.
    BOOST_TEST((lk.deadline() <= sent + 1000ms));
    BOOST_TEST(!lk.lost());
  }());
  fleet[1].thaw();
  fleet[2].thaw();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "nq", [&] { return lk.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_CASE(a_cancelled_shorter_extension_shortens_the_lock) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("cx", {.ttl = 10s}, asio::use_awaitable);
  }());
  fleet[1].freeze();
  fleet[2].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    asio::cancellation_signal cancel;
    error_code ext_ec;
    bool done = false;
    const auto sent = boot_clock::now();
    holder.async_extend(lk, 800ms, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec) {
                          ext_ec = ec;
                          done = true;
                        }));
    // Cancelled while the frozen nodes have not answered (their timeout is 100 ms).
    asio::steady_timer soon{co_await asio::this_coro::executor, 20ms};
    co_await soon.async_wait(asio::use_awaitable);
    cancel.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await redlock::test::eventually([&] { return done; }));
    BOOST_TEST(ext_ec == redlock::error::cancelled);
    BOOST_TEST((lk.deadline() <= sent + 800ms));
  }());
  fleet[1].thaw();
  fleet[2].thaw();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "cx", [&] { return lk.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_CASE(a_failed_shorter_extension_of_a_set_shortens_the_set) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::multi_lock set;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Braced names and options inside co_await, as docs/api.md writes it (GCC 12 refused
    // this form while the names were a std::vector parameter).
    set = co_await holder.async_lock_all({"s2", "s1"}, {.ttl = 10s}, asio::use_awaitable);
    BOOST_TEST((set.resources() == std::vector<std::string>{"s1", "s2"}));
  }());
  fleet[1].freeze();
  fleet[2].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const auto sent = boot_clock::now();
    auto [ec] = co_await holder.async_extend(set, 1000ms, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST((set.deadline() <= sent + 1000ms));
  }());
  fleet[1].thaw();
  fleet[2].thaw();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "s2", [&] { return set.valid(); });
    BOOST_TEST(won);
  }());
}

// Two extensions in flight at once: the nodes end with whichever ran last, while the lock
// kept whichever verdict was decided last (the second captured the deadline from before
// the first was decided). The second is refused at once; the lock's deadline is the
// first's, and the contender wins only once the holder says invalid.
BOOST_AUTO_TEST_CASE(a_second_extension_while_one_is_in_flight_is_refused) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("ov", {.ttl = 10s}, asio::use_awaitable);
  }());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    error_code first_ec = redlock::error::cancelled;
    bool first_done = false;
    const auto sent = boot_clock::now();
    holder.async_extend(lk, 1500ms, [&](error_code ec) {
      first_ec = ec;
      first_done = true;
    });
    auto [second_ec] = co_await holder.async_extend(lk, 20s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(second_ec == redlock::error::extension_in_flight, second_ec.message());
    BOOST_TEST(co_await redlock::test::eventually([&] { return first_done; }));
    BOOST_TEST(!first_ec, first_ec.message());
    BOOST_TEST((lk.deadline() <= sent + 1500ms));
    for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(pttl(i, "ov") <= 1500);
    // Once the first is in, extending again is allowed.
    auto [again_ec] = co_await holder.async_extend(lk, 1500ms, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!again_ec, again_ec.message());
  }());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "ov", [&] { return lk.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_CASE(a_keeper_whose_shorter_renewal_fails_shortens_its_deadline) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("kp", {.ttl = 10s}, asio::use_awaitable);
  }());
  const auto acquired = boot_clock::now();
  fleet[1].freeze();
  fleet[2].freeze();
  // Renewal every 300 ms with a 1 s TTL: the first one reaches only node 0 in time, and the
  // frozen ones run it when they thaw.
  redlock::keeper kp{holder, std::move(lk), {.ttl = 1000ms, .fraction = 0.3}};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await kp.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::lock_lost);
    // Lost before the renewal's keys could run out, not at the lock's old 10 s deadline.
    BOOST_TEST((boot_clock::now() < acquired + 2s));
    BOOST_TEST(!kp.valid());
  }());
  fleet[1].thaw();
  fleet[2].thaw();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "kp", [&] { return kp.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_CASE(a_keeper_renewal_ttl_above_max_ttl_is_refused) {
  auto cfg = config();
  cfg.max_ttl = 1s;
  auto holder = fleet_fixture::make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await holder.async_lock("cap", {.ttl = 1s}, asio::use_awaitable);
    try {
      redlock::keeper kp{holder, std::move(lk), {.ttl = 30s}};
      BOOST_FAIL("a keeper renewing with 30 s on a fleet whose max_ttl is 1 s was accepted");
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == redlock::error::invalid_ttl);
      BOOST_TEST(std::string{e.what()}.find("max_ttl") != std::string::npos, e.what());
    }
    // Refused before the keeper took the lock over: it is still the caller's.
    BOOST_TEST(lk.owns());
    redlock::keeper ok{holder, std::move(lk), {.ttl = 1s}};
    BOOST_TEST(ok.valid());
    auto [ec, back] = co_await ok.async_stop(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    co_await holder.async_unlock(std::move(back), asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(shutdown_ends_the_validity_of_everything_it_released) {
  auto holder = make_client();
  auto contender = make_client();
  redlock::lock lk;
  redlock::multi_lock set;
  redlock::keeper kp;
  error_code wait_lost_ec;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("sd1", {.ttl = 30s}, asio::use_awaitable);
    std::vector<std::string> names{"sd2", "sd3"};  // not braced inside co_await (GCC 12)
    const redlock::lock_options opts{.ttl = 30s};
    set = co_await holder.async_lock_all(std::move(names), opts, asio::use_awaitable);
    auto kept = co_await holder.async_lock("sd4", {.ttl = 30s}, asio::use_awaitable);
    kp = redlock::keeper{holder, std::move(kept)};
    BOOST_TEST_REQUIRE((lk.valid() && set.valid() && kp.valid()));
    kp.async_wait_lost([&](error_code ec) { wait_lost_ec = ec; });
    co_await holder.async_shutdown(asio::use_awaitable);
    BOOST_TEST(!lk.valid());
    BOOST_TEST(!lk.owns());
    BOOST_TEST(lk.validity().count() == 0);
    BOOST_TEST(!set.valid());
    BOOST_TEST(!set.owns());
    BOOST_TEST(!kp.valid());
    BOOST_TEST(kp.validity().count() == 0);
    BOOST_TEST(co_await redlock::test::eventually([&] { return bool(wait_lost_ec); }));
    BOOST_TEST(wait_lost_ec == redlock::error::shut_down);
    for (const char* r : {"sd1", "sd2", "sd3", "sd4"}) {
      const bool won = co_await contender_wins_only_when_invalid(
          contender, r, [&] { return lk.valid() || set.valid() || kp.valid(); });
      BOOST_TEST(won, r);
    }
  }());
}

BOOST_AUTO_TEST_CASE(shutdown_with_a_frozen_node_ends_within_the_node_timeout) {
  // The unlock's request to the frozen node times out while the connection drains: the
  // drain's deadline (node_timeout) must still end it, not the much longer watch for a
  // vanished host (10 x connect_timeout) that the timeout starts.
  auto holder = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("frozen-exit", {.ttl = 30s}, asio::use_awaitable);
  }());
  fleet[2].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const auto began = std::chrono::steady_clock::now();
    // Granted by nodes 0 and 1; node 2's release is still out when the shutdown begins.
    co_await holder.async_unlock(std::move(lk), asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
    const auto took = std::chrono::steady_clock::now() - began;
    // node_timeout is 100 ms and the watch 5 s; 2 s leaves room for a slow machine.
    BOOST_TEST((took < 2s),
               "async_shutdown took "
                   << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  }());
  fleet[2].thaw();
}

BOOST_AUTO_TEST_CASE(destroying_the_client_ends_the_validity_of_its_locks) {
  auto contender = make_client();
  redlock::lock lk;
  {
    auto holder = make_client();
    run_bounded(io, [&]() -> asio::awaitable<void> {
      lk = co_await holder.async_lock("gone", {.ttl = 30s}, asio::use_awaitable);
    }());
    BOOST_TEST_REQUIRE(lk.valid());
  }  // the destructor releases the lock in the background
  // Not valid from the destructor on, before the release has even been sent.
  BOOST_TEST(!lk.valid());
  BOOST_TEST(!lk.owns());
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool won =
        co_await contender_wins_only_when_invalid(contender, "gone", [&] { return lk.valid(); });
    BOOST_TEST(won);
  }());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- a release reaches every node that may hold the key ------------------------------

namespace {

// Node 2 is reached through a fault proxy, so that its connection can be cut while a
// command is on its way, and the other two directly.
struct proxied_third : redlock::test::fleet_fixture<3> {
  redlock::test::fault_proxy proxy{fleet[2].port()};

  redlock::client make_client() {
    auto cfg = config();
    cfg.nodes[2] = proxy.uri();
    cfg.node_timeout = 100ms;
    cfg.reconnect_max = 50ms;
    return fleet_fixture::make_client(std::move(cfg));
  }

  /// Whether node 2 holds no key `key` within `limit` (it was released there).
  asio::awaitable<bool> gone_from_node_2(const std::string& key,
                                         std::chrono::milliseconds limit = 5s) {
    co_return co_await redlock::test::eventually([&] { return !fleet.has_key(2, key); }, limit);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(release_reach, proxied_third)

BOOST_AUTO_TEST_CASE(a_release_queued_to_a_node_marked_down_runs_when_it_thaws) {
  // The node freezes while a renewal is on its way to it; the holder releases (a majority
  // answers) and goes. When the node thaws it runs the renewal, then must run the release:
  // a key left there, renewed for 20 s, would outlive its holder.
  auto holder = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("thawed", {.ttl = 10s}, asio::use_awaitable);
  }());
  fleet[2].freeze();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await holder.async_extend(lk, 20s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);  // nodes 0 and 1 said yes
    // A try that needs node 2's answer (node 0 refuses) ends with node 2's timeout, after
    // which its connection takes no requests until the node answers a PING.
    fleet[0].command({"SET", "probe", "someone-else", "PX", "60000"});
    auto [probe_ec, probe] =
        co_await holder.async_try_lock("probe", {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(probe_ec);
    co_await holder.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  fleet[2].thaw();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool gone = co_await gone_from_node_2("thawed");
    BOOST_TEST(gone, "node 2 still holds the released key, PTTL "
                         << fleet[2].command({"PTTL", "thawed"}).integer << " ms");
  }());
}

BOOST_AUTO_TEST_CASE(an_unlock_reaches_a_node_that_is_reconnecting) {
  auto holder = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await holder.async_lock("away", {.ttl = 30s}, asio::use_awaitable);
    const bool set_there =
        co_await redlock::test::eventually([&] { return fleet.has_key(2, "away"); });
    BOOST_TEST_REQUIRE(set_there);
  }());
  // Node 2's connection breaks and cannot come back yet: the unlock finds it reconnecting.
  proxy.blackhole();
  proxy.reset_all();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await holder.async_unlock(std::move(lk), asio::use_awaitable);  // a majority: nodes 0 and 1
  }());
  BOOST_TEST(fleet.has_key(2, "away"));
  proxy.heal();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool gone = co_await gone_from_node_2("away");
    BOOST_TEST(gone, "the unlock never reached node 2");
  }());
}

BOOST_AUTO_TEST_CASE(a_background_release_lost_with_its_connection_is_sent_again) {
  auto holder = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await holder.async_lock("dropped", {.ttl = 30s}, asio::use_awaitable);
    // The lock needs a majority; node 2's SET may still be on its way.
    const bool set_there =
        co_await redlock::test::eventually([&] { return fleet.has_key(2, "dropped"); });
    BOOST_TEST_REQUIRE(set_there);
    // Whatever is written to node 2 from now on is held by the proxy and then thrown
    // away with the connection.
    proxy.blackhole();
    {
      auto gone = std::move(lk);  // dropped: released in the background
    }
    // The release has gone out on node 0's connection, so node 2's went out too.
    const bool released = co_await redlock::test::eventually(
        [&] { return !fleet.has_key(0, "dropped") && !fleet.has_key(1, "dropped"); });
    BOOST_TEST_REQUIRE(released);
  }());
  proxy.reset_all();
  BOOST_TEST(fleet.has_key(2, "dropped"));
  proxy.heal();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const bool gone = co_await gone_from_node_2("dropped");
    BOOST_TEST(gone, "the release written before the connection broke was not sent again");
  }());
}

BOOST_AUTO_TEST_SUITE_END()
