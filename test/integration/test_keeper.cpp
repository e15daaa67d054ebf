// SPDX-License-Identifier: BSL-1.0
// Holding locks for long work: renewal, loss as a final event that cancels the work,
// release on every exit path, and many locks renewed in batches. Five real nodes.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <optional>
#include <thread>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::error_of;
using redlock::test::run_bounded;

namespace {

struct five_nodes : redlock::test::fleet_fixture<5> {
  redlock::client make_client() {
    auto cfg = config();
    cfg.connect_timeout = 300ms;
    cfg.node_timeout = 50ms;
    cfg.reconnect_max = 100ms;
    return fleet_fixture::make_client(std::move(cfg));
  }
  std::int64_t evalsha_calls(std::size_t node) const {
    auto info = fleet[node].command({"INFO", "commandstats"}).text;
    auto at = info.find("cmdstat_evalsha:calls=");
    if (at == std::string::npos) return 0;
    return std::stoll(info.substr(at + 22));
  }
};

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::use_awaitable);
}

// Waits until cancelled (a lock's loss cancels the work that awaits this): no polling.
asio::awaitable<void> until_cancelled() {
  asio::steady_timer t{co_await asio::this_coro::executor, asio::steady_timer::time_point::max()};
  co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(keeping_locks, five_nodes)

BOOST_AUTO_TEST_CASE(work_lasting_ten_ttls_keeps_the_lock_against_a_contender) {
  auto holder = make_client();
  auto contender = make_client();
  int contender_wins = 0, contender_tries = 0;
  bool work_done = false;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        auto work = [&](redlock::keeper& k) -> asio::awaitable<int> {
          // 20 x 250 ms = 10 TTLs of 500 ms. A TTL of 100 ms left the renewal too little
          // slack on a loaded machine (the suite at -j4): a late renewal is a lost lock.
          for (int i = 0; i < 20; ++i) {
            BOOST_TEST(k.valid());
            co_await sleep_for(250ms);
          }
          work_done = true;
          co_return 42;
        };
        auto contend = [&]() -> asio::awaitable<void> {
          co_await sleep_for(20ms);
          while (!work_done) {
            ++contender_tries;
            auto [ec, lk] = co_await contender.async_try_lock("job", {.ttl = 100ms},
                                                              asio::as_tuple(asio::use_awaitable));
            // A try sent just before the work ended can win once with_lock has released:
            // only a win while the work still runs breaks exclusion.
            if (!ec && !work_done) ++contender_wins;
            co_await sleep_for(5ms);
          }
        };
        auto result =
            co_await (redlock::with_lock(holder, "job", {.ttl = 500ms}, work) && contend());
        BOOST_TEST(result == 42);
      }(),
      20s);
  BOOST_TEST(work_done);
  BOOST_TEST(contender_tries > 50);
  BOOST_TEST(contender_wins == 0);
  // Released at the end: the contender can take it now.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await contender.async_try_lock("job", {}, asio::use_awaitable);
    BOOST_TEST(lk.valid());
  }());
}

BOOST_AUTO_TEST_CASE(a_frozen_majority_cancels_the_work_before_the_deadline) {
  auto c = make_client();
  redlock::boot_clock::time_point last_deadline{}, cancelled_at{};
  bool cancelled_with_abort = false;
  const auto ec = run_bounded(
      io,
      [&]() -> asio::awaitable<error_code> {
        auto work = [&](redlock::keeper& k) -> asio::awaitable<void> {
          co_await sleep_for(30ms);
          fleet[0].freeze();
          fleet[1].freeze();
          fleet[2].freeze();
          auto ex = co_await asio::this_coro::executor;
          asio::steady_timer tick{ex};
          // The loss cancels the wait in progress, or, when it lands between two waits,
          // the next await throws (the coroutine's cancellation state is set).
          try {
            for (;;) {
              last_deadline = k.deadline();
              tick.expires_after(5ms);
              auto [e] = co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
              if (e == asio::error::operation_aborted) break;
            }
          } catch (const boost::system::system_error& e) {
            if (e.code() != asio::error::operation_aborted) throw;
          }
          cancelled_at = redlock::boot_clock::now();
          cancelled_with_abort = true;
        };
        auto e = co_await error_of(redlock::with_lock(c, "frozen-job", {.ttl = 300ms}, work));
        co_return e;
      }(),
      10s);
  BOOST_TEST(ec == redlock::error::lock_lost);
  BOOST_TEST(cancelled_with_abort);
  BOOST_TEST((cancelled_at < last_deadline), "the work was cancelled after the validity deadline");
  for (std::size_t i = 0; i < 3; ++i) fleet[i].thaw();
}

BOOST_AUTO_TEST_CASE(a_key_deleted_behind_our_back_is_detected_and_never_recreated) {
  auto c = make_client();
  redlock::lock lk;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    lk = co_await c.async_lock("stolen", {.ttl = 300ms}, asio::use_awaitable);
  }());
  redlock::keeper k{c, std::move(lk)};
  run_bounded(io, delete_once_held("stolen", 3));
  const auto ec = run_bounded(
      io,
      [&]() -> asio::awaitable<error_code> {
        auto [e] = co_await k.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        co_return e;
      }(),
      5s);
  BOOST_TEST(ec == redlock::error::lock_lost);
  BOOST_TEST(k.lost());
  BOOST_TEST(!k.valid());
  // Why, without an observer: a majority refused the renewal.
  BOOST_TEST(k.loss_reason() == redlock::error::not_held, k.loss_reason().message());
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(!fleet.has_key(i, "stolen"));
  // Lost stays lost, even though two nodes still hold our token.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await sleep_for(150ms);
    BOOST_TEST(k.lost());
  }());
}

BOOST_AUTO_TEST_CASE(a_keeper_says_why_it_lost_its_lock) {
  auto c = make_client();
  redlock::lock a, b;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    a = co_await c.async_lock("why-frozen", {.ttl = 300ms}, asio::use_awaitable);
    b = co_await c.async_lock("why-shut", {.ttl = 5s}, asio::use_awaitable);
  }());
  redlock::keeper frozen{c, std::move(a)};
  redlock::keeper shut{c, std::move(b)};
  BOOST_TEST(!frozen.loss_reason());
  // A frozen majority (three of five): no renewal is confirmed before the deadline.
  for (std::size_t i = 0; i < 3; ++i) fleet[i].freeze();
  const auto ec = run_bounded(io, [&]() -> asio::awaitable<error_code> {
    auto [e] = co_await frozen.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    co_return e;
  }());
  for (std::size_t i = 0; i < 3; ++i) fleet[i].thaw();
  BOOST_TEST(ec == redlock::error::lock_lost);
  BOOST_TEST(frozen.loss_reason() == redlock::error::lock_lost, frozen.loss_reason().message());
  // Shut down: released, and no longer valid.
  BOOST_TEST(!shut.loss_reason());
  run_bounded(io,
              [&]() -> asio::awaitable<void> { co_await c.async_shutdown(asio::use_awaitable); }());
  BOOST_TEST(shut.loss_reason() == redlock::error::shut_down);
}

BOOST_AUTO_TEST_CASE(a_paused_thread_finds_its_lock_lost_on_resume) {
  auto c = make_client();
  bool valid_after_pause = true;
  const auto ec = run_bounded(
      io,
      [&]() -> asio::awaitable<error_code> {
        auto work = [&](redlock::keeper& k) -> asio::awaitable<void> {
          co_await sleep_for(20ms);
          // A "GC pause": the io_context thread is blocked for longer than the TTL.
          std::this_thread::sleep_for(400ms);
          valid_after_pause = k.valid();
          for (;;) co_await sleep_for(5ms);  // cancelled when the loss is noticed
        };
        auto e = co_await error_of(redlock::with_lock(c, "paused", {.ttl = 200ms}, work));
        co_return e;
      }(),
      10s);
  BOOST_TEST(!valid_after_pause);
  BOOST_TEST(ec == redlock::error::lock_lost);
}

BOOST_AUTO_TEST_CASE(work_that_throws_releases_the_lock_at_once) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto work = [&](redlock::keeper&) -> asio::awaitable<void> {
      co_await sleep_for(5ms);
      throw std::runtime_error("boom");
    };
    try {
      co_await redlock::with_lock(c, "throws", {.ttl = 30s}, work);
      BOOST_ERROR("the exception did not propagate");
    } catch (const std::runtime_error& e) {
      BOOST_TEST(std::string{e.what()} == "boom");
    }
  }());
  // The TTL is 30 s: only the release can make the keys go away this fast.
  for (int i = 0; i < 200 && copies("throws") > 0; ++i) io.run_for(5ms);
  BOOST_TEST(copies("throws") == 0);
}

BOOST_AUTO_TEST_CASE(cancelling_with_lock_cancels_the_work_and_releases_the_lock) {
  auto c = make_client();
  bool work_saw_abort = false;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    auto work = [&](redlock::keeper&) -> asio::awaitable<void> {
      auto ex = co_await asio::this_coro::executor;
      asio::steady_timer long_wait{ex, 10s};
      auto [e] = co_await long_wait.async_wait(asio::as_tuple(asio::use_awaitable));
      work_saw_abort = e == asio::error::operation_aborted;
    };
    auto r = co_await (error_of(redlock::with_lock(c, "cancelled", {.ttl = 30s}, work)) ||
                       sleep_for(100ms));
    BOOST_TEST(r.index() == 1u);
  }());
  BOOST_TEST(work_saw_abort);
  for (int i = 0; i < 200 && copies("cancelled") > 0; ++i) io.run_for(5ms);
  BOOST_TEST(copies("cancelled") == 0);
}

BOOST_AUTO_TEST_CASE(max_hold_caps_the_renewals) {
  auto c = make_client();
  const auto t0 = std::chrono::steady_clock::now();
  const auto ec = run_bounded(
      io,
      [&]() -> asio::awaitable<error_code> {
        auto work = [&](redlock::keeper&) -> asio::awaitable<void> {
          for (;;) co_await sleep_for(10ms);
        };
        auto e = co_await error_of(
            redlock::with_lock(c, "capped", {.ttl = 100ms, .renew = {.max_hold = 250ms}}, work));
        co_return e;
      }(),
      10s);
  BOOST_TEST(ec == redlock::error::lock_lost);
  BOOST_TEST((std::chrono::steady_clock::now() - t0 >= 250ms));
}

BOOST_AUTO_TEST_CASE(a_thousand_locks_renew_in_batches) {
  auto c = make_client();
  std::vector<redlock::keeper> keepers;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 1000; ++i) {
          auto lk = co_await c.async_lock("many:" + std::to_string(i), {.ttl = 600ms},
                                          asio::use_awaitable);
          keepers.emplace_back(c, std::move(lk));
        }
      }(),
      60s);
  const auto before = evalsha_calls(0);
  // Hold them for ~5 TTLs: every one must survive.
  run_bounded(
      io, [&]() -> asio::awaitable<void> { co_await sleep_for(3000ms); }(), 20s);
  const auto calls = evalsha_calls(0) - before;
  int lost = 0;
  for (auto& k : keepers) lost += k.valid() ? 0 : 1;
  BOOST_TEST(lost == 0);
  // 1000 locks renewed every 200 ms for 3 s is 15 cycles; one script call per lock would
  // be 15,000 calls per node; batches of up to 256 need a few per cycle.
  BOOST_TEST_MESSAGE("EVALSHA calls on node 0 over 3 s of renewing 1000 locks: " << calls);
  BOOST_TEST(calls > 0);
  BOOST_TEST(calls < 1000);
  // Held means held on a majority: one node may have missed a renewal under load.
  BOOST_TEST(copies("many:999") >= 2);
}

BOOST_AUTO_TEST_CASE(stop_hands_the_lock_back_for_unlock) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("manual", {.ttl = 200ms}, asio::use_awaitable);
    redlock::keeper k{c, std::move(lk)};
    co_await sleep_for(500ms);  // 2.5 TTLs: alive only thanks to renewal
    BOOST_TEST(k.valid());
    auto back = co_await k.async_stop(asio::use_awaitable);
    BOOST_TEST(back.valid());
    co_await c.async_unlock(std::move(back), asio::use_awaitable);
  }());
  BOOST_TEST(copies("manual") == 0);
}

BOOST_AUTO_TEST_CASE(a_fenced_with_lock_shows_the_work_a_token_that_grows_across_runs) {
  auto c = make_client();
  std::uint64_t first = 0, second = 0, unfenced = 1;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::hold_options fenced{.ttl = 300ms, .fenced = true};
    auto read_fence = [](redlock::keeper& k) -> asio::awaitable<std::uint64_t> {
      co_return k.fence();
    };
    // Outlives the TTL: the token stays the same while the lock is renewed.
    auto long_work = [](redlock::keeper& k) -> asio::awaitable<std::uint64_t> {
      const auto at_start = k.fence();
      co_await sleep_for(400ms);
      BOOST_TEST(k.valid());
      BOOST_TEST(k.fence() == at_start);
      co_return at_start;
    };
    first = co_await redlock::with_lock(c, "fenced-job", fenced, read_fence);
    second = co_await redlock::with_lock(c, "fenced-job", fenced, long_work);
    const redlock::hold_options plain{.ttl = 300ms};
    unfenced = co_await redlock::with_lock(c, "fenced-job", plain, read_fence);
  }());
  BOOST_TEST(first > 0u);
  BOOST_TEST(second > first);
  BOOST_TEST(unfenced == 0u);
}

namespace {
// Checks that `diag` names every node of `fleet`, in its message and in its entries.
void expect_each_node_named(const redlock::diagnostics& diag,
                            const redlock::test::redis_fleet& fleet) {
  BOOST_TEST_MESSAGE(diag.message);
  BOOST_TEST_REQUIRE(diag.nodes.size() == fleet.size());
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const auto address = "127.0.0.1:" + std::to_string(fleet[i].port());
    BOOST_TEST(diag.message.find(address) != std::string::npos, address);
    BOOST_TEST(diag.nodes[i].address == address);
  }
}

// Runs with_lock's diagnostics form on `resource` with `opts`; returns the error it threw
// (empty if none) and checks that the exception carried the same diagnostics.
asio::awaitable<error_code> hold_with_diagnostics(redlock::client& c, std::string resource,
                                                  redlock::hold_options opts,
                                                  redlock::diagnostics& diag, bool& work_ran,
                                                  asio::steady_timer* started = nullptr) {
  auto work = [&](redlock::keeper&) -> asio::awaitable<void> {
    work_ran = true;
    if (started) started->cancel();  // wakes whoever waits for the work to start
    co_await until_cancelled();      // until the lock is lost
  };
  try {
    co_await redlock::with_lock(c, std::move(resource), opts, diag, work);
  } catch (const redlock::error_with_diagnostics& e) {
    BOOST_TEST(e.get_diagnostics().message == diag.message);
    BOOST_TEST(std::string{e.what()}.find(diag.message) != std::string::npos);
    co_return e.code();
  }
  co_return error_code{};
}

// Runs with_lock's diagnostics form on `resource` (TTL 300 ms) with work that runs until
// the lock is lost, and awaits `disturb()` (which upsets nodes 0 to 2) once the work runs.
template <typename Disturb>
error_code lose_while_working(asio::io_context& io, redlock::client& c, std::string resource,
                              redlock::diagnostics& diag, Disturb disturb) {
  bool work_ran = false;
  asio::steady_timer started{io, asio::steady_timer::time_point::max()};
  const auto ec = run_bounded(
      io,
      [&]() -> asio::awaitable<error_code> {
        auto disturb_majority = [&]() -> asio::awaitable<void> {
          co_await started.async_wait(asio::as_tuple(asio::use_awaitable));  // the work runs
          co_await disturb();
        };
        using namespace asio::experimental::awaitable_operators;
        const redlock::hold_options hold{.ttl = 300ms};
        auto r = co_await (hold_with_diagnostics(c, resource, hold, diag, work_ran, &started) &&
                           disturb_majority());
        co_return r;
      }(),
      10s);
  BOOST_TEST(work_ran);
  return ec;
}
}  // namespace

BOOST_AUTO_TEST_CASE(with_lock_diagnostics_name_each_node_holding_the_resource_for_another) {
  auto c = make_client();
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"SET", "taken-job", "someone-else", "PX", "60000"});
  redlock::diagnostics diag;
  bool work_ran = false;
  const redlock::hold_options once{.ttl = 1s, .wait = 0ms};
  const auto ec = run_bounded(io, hold_with_diagnostics(c, "taken-job", once, diag, work_ran), 10s);
  BOOST_TEST(ec == redlock::error::wait_timeout, ec.message());
  BOOST_TEST(!work_ran);
  expect_each_node_named(diag, fleet);
  // A majority said "held" (the attempt was decided then, without waiting for the rest).
  int held = 0;
  for (const auto& n : diag.nodes) {
    if (n.answer == redlock::node_answer::held)
      ++held;
    else
      BOOST_TEST((n.answer == redlock::node_answer::no_answer), n.address);
  }
  BOOST_TEST(held >= 3);
}

BOOST_AUTO_TEST_CASE(with_lock_diagnostics_name_each_node_when_a_majority_is_frozen) {
  auto c = make_client();
  for (std::size_t i = 0; i < 3; ++i) fleet[i].freeze();
  redlock::diagnostics diag;
  bool work_ran = false;
  const redlock::hold_options briefly{.ttl = 1s, .wait = 300ms};
  const auto ec =
      run_bounded(io, hold_with_diagnostics(c, "frozen-start", briefly, diag, work_ran), 10s);
  for (std::size_t i = 0; i < 3; ++i) fleet[i].thaw();
  BOOST_TEST(ec == redlock::error::no_quorum, ec.message());
  BOOST_TEST(!work_ran);
  expect_each_node_named(diag, fleet);
  for (const auto& n : diag.nodes) {
    const bool answered =
        n.answer != redlock::node_answer::failed && n.answer != redlock::node_answer::no_answer;
    BOOST_TEST(answered == (n.node >= 3), n.address << ": " << n.detail);
  }
}

BOOST_AUTO_TEST_CASE(with_lock_diagnostics_say_why_the_lock_was_lost_while_the_work_ran) {
  auto c = make_client();
  redlock::diagnostics diag;
  const auto ec = lose_while_working(io, c, "stolen-job", diag,
                                     [&] { return delete_once_held("stolen-job", 3); });
  BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
  BOOST_TEST(diag.message.find("\"stolen-job\"") != std::string::npos);
  BOOST_TEST(diag.message.find("refused a renewal") != std::string::npos);
  // What each node holds once the work ended: the three where the key was deleted say so.
  expect_each_node_named(diag, fleet);
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST((diag.nodes[i].answer == redlock::node_answer::refused), diag.nodes[i].detail);
}

BOOST_AUTO_TEST_CASE(with_lock_diagnostics_name_each_node_when_a_majority_freezes_under_the_work) {
  auto c = make_client();
  redlock::diagnostics diag;
  const auto ec = lose_while_working(io, c, "frozen-work", diag, [&]() -> asio::awaitable<void> {
    for (std::size_t i = 0; i < 3; ++i) fleet[i].freeze();
    co_return;
  });
  for (std::size_t i = 0; i < 3; ++i) fleet[i].thaw();
  BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
  BOOST_TEST(diag.message.find("deadline came without a confirmed renewal") != std::string::npos);
  expect_each_node_named(diag, fleet);
  for (const auto& n : diag.nodes) {
    const bool answered = n.answer != redlock::node_answer::failed;
    BOOST_TEST(answered == (n.node >= 3), n.address << ": " << n.detail);
  }
}

BOOST_AUTO_TEST_CASE(with_lock_refuses_bad_renewal_options_with_diagnostics_and_releases) {
  auto c = make_client();
  redlock::diagnostics diag;
  bool work_ran = false;
  const redlock::hold_options bad{.ttl = 30s, .renew = {.fraction = 2.0}};
  const auto ec =
      run_bounded(io, hold_with_diagnostics(c, "bad-renewal", bad, diag, work_ran), 10s);
  BOOST_TEST(ec == redlock::error::invalid_argument, ec.message());
  BOOST_TEST(!work_ran);
  BOOST_TEST(diag.message.find("fraction") != std::string::npos, diag.message);
  // The code is named once, by the exception that carries the message, not in it too.
  BOOST_TEST(diag.message.find("[redlock:") == std::string::npos, diag.message);
  // The TTL is 30 s: only the release can make the keys go away this fast.
  for (int i = 0; i < 200 && copies("bad-renewal") > 0; ++i) io.run_for(5ms);
  BOOST_TEST(copies("bad-renewal") == 0);
}

BOOST_AUTO_TEST_CASE(async_with_lock_completes_a_plain_callback_with_result_or_loss) {
  auto c = make_client();
  std::optional<std::uint64_t> got;
  std::exception_ptr failure = std::make_exception_ptr(std::runtime_error("not completed"));
  auto read_fence = [](redlock::keeper& k) -> asio::awaitable<std::uint64_t> {
    co_await sleep_for(10ms);
    co_return k.fence();
  };
  const redlock::hold_options fenced{.ttl = 300ms, .fenced = true};
  redlock::async_with_lock(c, "callback-job", fenced, read_fence,
                           [&](std::exception_ptr e, std::uint64_t fence) {
                             failure = e;
                             got = fence;
                           });
  for (int i = 0; i < 1000 && !got; ++i) io.run_one_for(10ms);
  BOOST_TEST_REQUIRE(got.has_value());
  BOOST_TEST(!failure);
  BOOST_TEST(*got > 0u);
  BOOST_TEST(copies("callback-job") == 0);

  // A loss reaches the callback as the error with_lock would have thrown.
  bool done = false;
  redlock::diagnostics diag;
  auto lose_it = [&](redlock::keeper&) -> asio::awaitable<void> {
    co_await delete_once_held("callback-lost", 3);
    co_await until_cancelled();  // the loss cancels it
  };
  redlock::async_with_lock(c, "callback-lost", fenced, diag, lose_it, [&](std::exception_ptr e) {
    failure = e;
    done = true;
  });
  for (int i = 0; i < 1000 && !done; ++i) io.run_one_for(10ms);
  BOOST_TEST_REQUIRE(done);
  BOOST_TEST_REQUIRE(static_cast<bool>(failure));
  try {
    std::rethrow_exception(failure);
  } catch (const redlock::error_with_diagnostics& e) {
    BOOST_TEST(e.code() == redlock::error::lock_lost, e.what());
    BOOST_TEST(diag.message.find("\"callback-lost\"") != std::string::npos, diag.message);
  }
}

BOOST_AUTO_TEST_SUITE_END()
