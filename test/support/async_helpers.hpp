#pragma once
// Running coroutines in tests: every run is bounded in time, and a run that does not
// finish fails the test instead of hanging CI.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
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

}  // namespace redlock::test
