// SPDX-License-Identifier: BSL-1.0
// A scheduler that runs on one process of many: each instance campaigns for the election
// "scheduler"; the leader fires the periodic jobs, stamping each with its term (the fencing
// token a store would check), and the others wait their turn. Stop the leader (Ctrl-C, or
// SIGSTOP it past its TTL) and another instance takes over with a higher term. An instance
// started with "observe" only reports who leads.
//
//   leader_scheduler redis://127.0.0.1:7001,redis://127.0.0.1:7002,... NAME [ticks]
//   leader_scheduler redis://127.0.0.1:7001,... observe

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// Prints each change of leader until `changes` have been seen.
asio::awaitable<void> observe(redlock::client& locks, int changes) {
  redlock::election_observer watch{locks, "scheduler", {.poll_interval = 500ms}};
  for (int i = 0; i < changes; ++i) {
    const redlock::leader_info who = co_await watch.async_next();
    if (who.leading)
      fmt::print("leader: {} (term {})\n", who.value, who.term);
    else
      fmt::print("no leader (last term {})\n", who.term);
    std::fflush(stdout);
  }
}

// While leading: one tick a second, each a job stamped with the term.
asio::awaitable<void> schedule(redlock::leadership& l, int ticks) {
  asio::steady_timer tick{co_await asio::this_coro::executor};
  for (int i = 1; i <= ticks; ++i) {
    tick.expires_after(1s);
    co_await tick.async_wait(asio::use_awaitable);  // cancelled here if leadership is lost
    fmt::print("{} (term {}): running job {}\n", l.value(), l.term(), i);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: leader_scheduler redis://host:port,... NAME|observe [ticks]\n";
    return 64;
  }
  std::vector<std::string> nodes;
  std::stringstream in{argv[1]};
  for (std::string item; std::getline(in, item, ',');) nodes.push_back(item);
  const std::string name = argv[2];
  const int count = argc > 3 ? std::atoi(argv[3]) : 10;

  asio::io_context io;
  redlock::client locks{io.get_executor(), redlock::config{.nodes = nodes, .node_timeout = 50ms}};
  int exit_code = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          if (name == "observe") {
            co_await observe(locks, count);
          } else {
            fmt::print("{}: campaigning\n", name);
            std::fflush(stdout);
            co_await redlock::lead(locks, "scheduler", name, {.ttl = 3s},
                                   [&](redlock::leadership& l) -> asio::awaitable<void> {
                                     fmt::print("{}: leading with term {}\n", name, l.term());
                                     co_await schedule(l, count);
                                   });
            fmt::print("{}: resigned after {} jobs\n", name, count);
          }
        } catch (const boost::system::system_error& e) {
          fmt::print("{}: {}\n", name, e.what());
          exit_code = e.code() == redlock::condition::lock_lost ? 76 : 1;
        }
        co_await locks.async_shutdown(asio::use_awaitable);
      },
      asio::detached);
  io.run();
  return exit_code;
}
