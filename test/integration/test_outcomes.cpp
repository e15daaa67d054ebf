// SPDX-License-Identifier: BSL-1.0
// Outcomes are the truth when they are reported: work under a lock (with_lock, lead, a
// keeper) that ends after the lock ran out is reported lost, whichever completion token
// asked, even when the keeper never had the chance to declare the loss. The holder's io
// thread is paused (blocked inside the work) while another client, on its own thread and
// connections, takes the resource over; then the work returns normally.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <optional>
#include <string>
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

constexpr auto holder_ttl = 300ms;

struct three_nodes : redlock::test::fleet_fixture<3> {
  redlock::client holder = make_client();
  // Another client with its own io_context and connections, run on a thread of its own.
  asio::io_context other_io;
  redlock::client other{other_io.get_executor(), config()};
  std::uint64_t taken_fence = 0;

  ~three_nodes() { run_bounded(other_io, other.async_shutdown(asio::use_awaitable)); }

  // Blocks the calling thread (the holder's io thread: a pause, as far as the holder can
  // tell) until the other client holds `resource`, which it can only once the holder's
  // keys have expired unrenewed. Returns whether it got it.
  bool pause_until_taken_over(const std::string& resource) {
    auto taken = std::async(std::launch::async, [&] {
      auto [ec, lk] =
          run_bounded(other_io, other.async_lock(resource, {.ttl = 2s, .wait = 10s, .fenced = true},
                                                 asio::as_tuple(asio::use_awaitable)));
      taken_fence = lk.fence();
      return !ec && lk.valid();
    });
    return taken.get();
  }

  // The work: pauses until taken over, then returns 7 as if nothing had happened.
  template <typename Held>
  auto paused_work(std::string resource) {
    return [this, resource](Held&) -> asio::awaitable<int> {
      BOOST_TEST(pause_until_taken_over(resource));
      co_return 7;
    };
  }

  // Runs `io` until `fut` is ready, and expects it to hold lock_lost.
  void expect_lost(std::future<int>& fut, redlock::error code = redlock::error::lock_lost) {
    BOOST_TEST_REQUIRE(redlock::test::run_until(
        io, [&] { return fut.wait_for(0s) == std::future_status::ready; }, 30s));
    BOOST_CHECK_EXCEPTION(fut.get(), boost::system::system_error,
                          [code](const auto& e) { return e.code() == code; });
  }

  // Runs `io` until `done` is set.
  void run_until_set(const std::optional<std::exception_ptr>& done) {
    BOOST_TEST_REQUIRE(redlock::test::run_until(
        io, [&] { return done.has_value(); }, 30s));
  }
};

// The code of the error_with_diagnostics in `e` (none: the work's result was reported).
error_code code_of(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& err) {
    return err.code();
  }
}

const redlock::hold_options hold{.ttl = holder_ttl, .fenced = true};
const redlock::campaign_options campaign{.ttl = holder_ttl};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(work_past_its_lock, three_nodes)

BOOST_AUTO_TEST_CASE(with_lock_awaited_reports_work_that_outlived_its_lock_as_lost) {
  const auto ec =
      run_bounded(io, error_of(redlock::with_lock(holder, "past:await", hold,
                                                  paused_work<redlock::keeper>("past:await"))));
  BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
  BOOST_TEST(taken_fence > 0u);
}

BOOST_AUTO_TEST_CASE(with_lock_with_diagnostics_says_the_lock_ran_out) {
  redlock::diagnostics diag;
  const auto ec =
      run_bounded(io, error_of(redlock::with_lock(holder, "past:diag", hold, diag,
                                                  paused_work<redlock::keeper>("past:diag"))));
  BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
  BOOST_TEST(diag.message.find("\"past:diag\"") != std::string::npos, diag.message);
}

BOOST_AUTO_TEST_CASE(async_with_lock_reports_the_loss_to_a_callback) {
  std::optional<std::exception_ptr> done;
  std::optional<int> result;
  redlock::async_with_lock(holder, "past:callback", hold,
                           paused_work<redlock::keeper>("past:callback"),
                           [&](std::exception_ptr e, int r) {
                             result = r;
                             done = e;
                           });
  run_until_set(done);
  BOOST_TEST(code_of(*done) == redlock::error::lock_lost);
}

BOOST_AUTO_TEST_CASE(async_with_lock_reports_the_loss_to_a_future) {
  auto fut = redlock::async_with_lock(
      holder, "past:future", hold, paused_work<redlock::keeper>("past:future"), asio::use_future);
  expect_lost(fut);
}

BOOST_AUTO_TEST_CASE(async_with_lock_reports_the_loss_through_deferred) {
  std::optional<std::exception_ptr> done;
  auto op = redlock::async_with_lock(holder, "past:deferred", hold,
                                     paused_work<redlock::keeper>("past:deferred"), asio::deferred);
  std::move(op)([&](std::exception_ptr e, int) { done = e; });
  run_until_set(done);
  BOOST_TEST(code_of(*done) == redlock::error::lock_lost);
}

BOOST_AUTO_TEST_CASE(a_keeper_stopped_after_its_deadline_reports_the_loss) {
  auto& c = holder;
  // Awaited with as_tuple, then with a callback: both hear lock_lost and get no lock.
  for (const bool callback : {false, true}) {
    const std::string resource = callback ? "past:keeper-cb" : "past:keeper";
    auto lk = run_bounded(io, c.async_lock(resource, {.ttl = holder_ttl}, asio::use_awaitable));
    redlock::keeper k{c, std::move(lk)};
    BOOST_TEST_REQUIRE(pause_until_taken_over(resource));  // blocks this (the io) thread
    BOOST_TEST(!k.valid());
    error_code ec;
    bool owns = true;
    if (callback) {
      std::optional<std::exception_ptr> done;
      k.async_stop([&](error_code e, redlock::lock back) {
        ec = e;
        owns = back.owns();
        done = std::exception_ptr{};
      });
      run_until_set(done);
    } else {
      auto [e, back] = run_bounded(io, k.async_stop(asio::as_tuple(asio::use_awaitable)));
      ec = e;
      owns = back.owns();
    }
    BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
    BOOST_TEST(!owns);
  }
}

BOOST_AUTO_TEST_CASE(a_keeper_waited_on_after_its_deadline_reports_the_loss_at_once) {
  auto lk =
      run_bounded(io, holder.async_lock("past:wait", {.ttl = holder_ttl}, asio::use_awaitable));
  redlock::keeper k{holder, std::move(lk)};
  BOOST_TEST_REQUIRE(pause_until_taken_over("past:wait"));  // blocks this (the io) thread
  auto [ec] = run_bounded(io, k.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(ec == redlock::error::lock_lost, ec.message());
  BOOST_TEST(k.lost());
  BOOST_TEST(k.loss_reason() == redlock::error::lock_lost);
}

BOOST_AUTO_TEST_CASE(lead_awaited_reports_work_that_outlived_its_leadership_as_lost) {
  const auto ec =
      run_bounded(io, error_of(redlock::lead(holder, "past:lead", "a", campaign,
                                             paused_work<redlock::leadership>("past:lead"))));
  BOOST_TEST(ec == redlock::error::leadership_lost, ec.message());
}

BOOST_AUTO_TEST_CASE(async_lead_reports_the_loss_to_a_callback_a_future_and_deferred) {
  auto& c = holder;
  std::optional<std::exception_ptr> by_callback;
  redlock::async_lead(c, "past:lead-cb", "a", campaign,
                      paused_work<redlock::leadership>("past:lead-cb"),
                      [&](std::exception_ptr e, int) { by_callback = e; });
  run_until_set(by_callback);
  BOOST_TEST(code_of(*by_callback) == redlock::error::leadership_lost);

  auto fut =
      redlock::async_lead(c, "past:lead-future", "a", campaign,
                          paused_work<redlock::leadership>("past:lead-future"), asio::use_future);
  expect_lost(fut, redlock::error::leadership_lost);

  std::optional<std::exception_ptr> by_deferred;
  auto op =
      redlock::async_lead(c, "past:lead-deferred", "a", campaign,
                          paused_work<redlock::leadership>("past:lead-deferred"), asio::deferred);
  std::move(op)([&](std::exception_ptr e, int) { by_deferred = e; });
  run_until_set(by_deferred);
  BOOST_TEST(code_of(*by_deferred) == redlock::error::leadership_lost);
}

BOOST_AUTO_TEST_CASE(work_that_ends_in_time_still_returns_its_result) {
  // The same work without the pause: the outcome is the work's result.
  auto& c = holder;
  auto quick = [](redlock::keeper& k) -> asio::awaitable<int> { co_return k.valid() ? 7 : -1; };
  BOOST_TEST(run_bounded(io, redlock::with_lock(c, "past:none", hold, quick)) == 7);
  auto quick_lead = [](redlock::leadership& l) -> asio::awaitable<int> {
    co_return l.valid() ? 7 : -1;
  };
  BOOST_TEST(run_bounded(io, redlock::lead(c, "past:none-lead", "a", campaign, quick_lead)) == 7);
}

BOOST_AUTO_TEST_SUITE_END()
