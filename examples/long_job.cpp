// SPDX-License-Identifier: BSL-1.0
// A long job under a lock with a short TTL: the lock is renewed in the background for as
// long as the job runs, and if the lock is lost (try freezing a majority of the nodes
// with SIGSTOP while it runs: examples/long_job.sh does) the job is cancelled at once.
//
//   long_job redis://127.0.0.1:7001,redis://127.0.0.1:7002,... [steps]

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <iostream>
#include <sstream>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: long_job redis://host:port,... [steps]\n";
    return 64;
  }
  std::vector<std::string> nodes;
  std::stringstream in{argv[1]};
  for (std::string item; std::getline(in, item, ',');) nodes.push_back(item);
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;

  asio::io_context io;
  redlock::client locks{io.get_executor(), redlock::config{.nodes = nodes, .node_timeout = 50ms}};
  int exit_code = 0;

  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // Each step takes 100 ms; the TTL is 500 ms, so the job outlives many TTLs.
        auto job = [&](redlock::keeper& k) -> asio::awaitable<int> {
          // GCC 12 mishandles co_await inside braces and braced arguments of a coroutine
          // call: each co_await here is a statement or initialises a named local.
          const auto ex = co_await asio::this_coro::executor;
          asio::steady_timer step{ex};
          for (int i = 1; i <= steps; ++i) {
            step.expires_after(100ms);
            co_await step.async_wait(asio::use_awaitable);  // cancelled here if the lock is lost
            // The fencing token: what a store would check to refuse a stale holder.
            fmt::print("step {:>3}/{}: lock valid for {} ms more (fence {})\n", i, steps,
                       k.validity().count(), k.fence());
            std::fflush(stdout);
          }
          co_return steps;
        };
        const redlock::hold_options hold{.ttl = 500ms, .fenced = true};
        try {
          const int done = co_await redlock::with_lock(locks, "report:nightly", hold, job);
          fmt::print("job finished all {} steps; lock released\n", done);
        } catch (const boost::system::system_error& e) {
          // with_lock's errors carry diagnostics: what() names the resource and why.
          fmt::print("job stopped: {}\n", e.what());
          exit_code = e.code() == redlock::error::lock_lost ? 76 : 1;
        }
        co_await locks.async_shutdown(asio::use_awaitable);
      },
      asio::detached);
  io.run();
  return exit_code;
}
