// SPDX-License-Identifier: BSL-1.0
// Asio's completion conventions, against real servers: a completion runs on the handler's
// associated executor (the client's when it has none), and the operation keeps work
// counted on that executor until the handler ran, so the handler's io_context does not
// run out of work while the operation is pending.

#include <atomic>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

struct completion_fleet : redlock::test::fleet_fixture<3> {
  template <typename Done>
  bool run_until(Done done) {
    return redlock::test::run_until(io, std::move(done));
  }

  // Initiates with a handler bound to a second io_context, whose run() starts (and has
  // nothing else to do) before the client's io_context runs at all; checks that the
  // handler ran inside that run(), which did not return before it.
  template <typename Initiate>
  void completes_on_second_context(Initiate initiate) {
    asio::io_context io2;
    std::atomic<bool> ran{false}, ran_on_it{false};
    initiate(asio::bind_executor(io2, [&](error_code, auto&&...) {
      ran_on_it = io2.get_executor().running_in_this_thread();
      ran = true;
    }));
    std::promise<void> io2_running;
    asio::post(io2, [&] { io2_running.set_value(); });
    std::atomic<bool> ran_at_return{false};
    std::thread runner([&] {
      io2.run();
      ran_at_return = ran.load();
    });
    BOOST_TEST_REQUIRE((io2_running.get_future().wait_for(10s) == std::future_status::ready));
    run_until([&] { return ran.load(); });
    if (!ran) io2.stop();  // do not hang the test when the handler is lost
    runner.join();
    BOOST_TEST(ran.load());
    BOOST_TEST(ran_on_it.load());
    BOOST_TEST(ran_at_return.load());
  }

  // Initiates with a plain callback while the client's io_context runs on another
  // thread; whether the callback ran on a thread running it.
  template <typename Initiate>
  bool runs_on_the_clients_context(Initiate initiate) {
    auto work = asio::make_work_guard(io);
    io.restart();
    std::thread runner([&] { io.run(); });
    std::atomic<bool> ran{false}, in_io{false};
    std::promise<void> done;
    auto finished = done.get_future();
    initiate([&](error_code, auto&&...) {
      in_io = io.get_executor().running_in_this_thread();
      ran = true;
      done.set_value();
    });
    finished.wait_for(10s);  // the handler's own signal; the assertion below fails on timeout
    work.reset();
    io.stop();
    runner.join();
    BOOST_TEST(ran.load());
    return in_io;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(completion_executor, completion_fleet)

BOOST_AUTO_TEST_CASE(a_lock_bound_to_another_io_context_completes_there_and_keeps_it_running) {
  auto c = make_client();
  completes_on_second_context(
      [&](auto handler) { c.async_lock("bound:lock", {.ttl = 5s}, std::move(handler)); });
  bool down = false;
  c.async_shutdown([&](error_code) { down = true; });
  BOOST_TEST(run_until([&] { return down; }));
}

BOOST_AUTO_TEST_CASE(a_refused_call_bound_to_another_io_context_completes_there) {
  // Decided inside the initiating call: posted to the handler's executor, with its work.
  auto c = make_client();
  completes_on_second_context(
      [&](auto handler) { c.async_try_lock("bound:bad", {.ttl = 0ms}, std::move(handler)); });
}

BOOST_AUTO_TEST_CASE(a_claim_bound_to_another_io_context_completes_there_and_keeps_it_running) {
  auto c = make_client();
  completes_on_second_context(
      [&](auto handler) { c.async_claim("bound:claim", 5s, std::move(handler)); });
}

BOOST_AUTO_TEST_CASE(a_shutdown_bound_to_another_io_context_completes_there_and_keeps_it_running) {
  auto c = make_client();
  completes_on_second_context([&](auto handler) { c.async_shutdown(std::move(handler)); });
}

BOOST_AUTO_TEST_CASE(a_plain_callback_runs_on_a_thread_running_the_clients_io_context) {
  auto c = make_client();
  BOOST_TEST(runs_on_the_clients_context(
      [&](auto handler) { c.async_lock("plain:lock", {.ttl = 5s}, std::move(handler)); }));
  BOOST_TEST(runs_on_the_clients_context(
      [&](auto handler) { c.async_try_lock("plain:bad", {.ttl = 0ms}, std::move(handler)); }));
  BOOST_TEST(runs_on_the_clients_context(
      [&](auto handler) { c.async_claim("plain:claim", 5s, std::move(handler)); }));
  BOOST_TEST(
      runs_on_the_clients_context([&](auto handler) { c.async_shutdown(std::move(handler)); }));
}

BOOST_AUTO_TEST_SUITE_END()
