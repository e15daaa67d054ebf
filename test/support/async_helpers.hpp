// SPDX-License-Identifier: BSL-1.0
#pragma once
// Running coroutines in tests: every run is bounded in time, and a run that does not
// finish fails the test instead of hanging CI.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <ostream>
#include <stdexcept>

#include "redlock/error.hpp"

namespace redlock {
// Lets BOOST_TEST print an expected error code when a comparison fails.
inline std::ostream& operator<<(std::ostream& os, error e) {
  return os << make_error_code(e).message();
}
}  // namespace redlock

namespace redlock::test {

/// Runs `a` on `io` until it completes, for at most `limit`; rethrows its exception.
template <typename T>
T run_bounded(boost::asio::io_context& io, boost::asio::awaitable<T> a,
              std::chrono::milliseconds limit = std::chrono::seconds{30}) {
  auto fut = boost::asio::co_spawn(io, std::move(a), boost::asio::use_future);
  const auto end = std::chrono::steady_clock::now() + limit;
  io.restart();
  while (fut.wait_for(std::chrono::seconds{0}) != std::future_status::ready) {
    if (std::chrono::steady_clock::now() >= end) {
      BOOST_FAIL("the test's coroutine did not finish within " << limit.count() << " ms");
    }
    io.run_for(std::chrono::milliseconds{5});
  }
  return fut.get();
}

/// Awaits `a` and answers the code of the system_error it throws (none: it returned).
template <typename T>
boost::asio::awaitable<boost::system::error_code> error_of(boost::asio::awaitable<T> a) {
  try {
    co_await std::move(a);
  } catch (const boost::system::system_error& e) {
    co_return e.code();
  }
  co_return boost::system::error_code{};
}

/// Runs `io` in slices of 5 ms until `done()` holds or `limit` passes; returns whether it
/// held. `done` may be made true by another thread after `io` ran out of work.
template <typename Done>
bool run_until(boost::asio::io_context& io, Done done,
               std::chrono::milliseconds limit = std::chrono::seconds{10}) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < end) {
    io.restart();
    io.run_for(std::chrono::milliseconds{5});
  }
  return done();
}

/// Waits, polling every millisecond, until `done()` holds or `limit` passes; returns
/// whether it held. For conditions that another thread or process makes true (a fake
/// server counting what it read), where there is no completion to await.
inline boost::asio::awaitable<bool> eventually(
    std::function<bool()> done, std::chrono::milliseconds limit = std::chrono::seconds{10}) {
  const auto end = std::chrono::steady_clock::now() + limit;
  boost::asio::steady_timer t{co_await boost::asio::this_coro::executor};
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) co_return false;
    t.expires_after(std::chrono::milliseconds{1});
    co_await t.async_wait(boost::asio::use_awaitable);
  }
  co_return true;
}

}  // namespace redlock::test
