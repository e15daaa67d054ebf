// SPDX-License-Identifier: BSL-1.0
#pragma once
// The common fixture of the integration tests: N real redis-server nodes, the io_context
// the clients under test run on, and clients configured with fast_config for those nodes.
// A test file derives from it to add what only its own tests need.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "async_helpers.hpp"
#include "fast_config.hpp"
#include "redis_fleet.hpp"
#include "redlock/client.hpp"
#include "redlock/config.hpp"

namespace redlock::test {

template <std::size_t N>
struct fleet_fixture {
  redis_fleet fleet{N};
  boost::asio::io_context io;

  /// fast_config for this fixture's nodes: to adjust before make_client(cfg).
  redlock::config config() const { return fast_config(fleet.uris()); }
  /// A client of its own (its own connections) on `io`, with config().
  redlock::client make_client() { return make_client(config()); }
  redlock::client make_client(redlock::config cfg) {
    return redlock::client{io.get_executor(), std::move(cfg)};
  }

  /// Returns once every node has answered `c` for all that `c` queued before (an
  /// acquisition ends at a majority, behind which a slow node may still lag): in two
  /// rounds, `c` takes "sync:R" while N - quorum other nodes hold it for someone else,
  /// which it wins only when all the rest answered; the second round's holders are among
  /// the first round's rest, so every connection is covered. Throws if a try fails.
  boost::asio::awaitable<void> answered_everywhere(redlock::client& c) {
    const std::size_t others = N - (N / 2 + 1);
    for (std::size_t round = 0; round < 2; ++round) {
      const std::string name = "sync:" + std::to_string(round);
      for (std::size_t i = round * others; i < (round + 1) * others; ++i)
        fleet[i].command({"SET", name, "someone-else", "PX", "60000"});
      auto lk = co_await c.async_try_lock(name, {.ttl = std::chrono::seconds{20}},
                                          boost::asio::use_awaitable);
      co_await c.async_unlock(std::move(lk), boost::asio::use_awaitable);
    }
  }

  /// Deletes `key` on nodes 0 to n-1 once each of them holds it, as someone stealing a
  /// lock would. An acquisition ends at a majority: a SET still queued on a slow node would
  /// land after the DEL and give that node the key back (and the lock its majority).
  boost::asio::awaitable<void> delete_once_held(std::string key, std::size_t n) {
    const bool held = co_await eventually([&] {
      for (std::size_t i = 0; i < n; ++i)
        if (!fleet.has_key(i, key)) return false;
      return true;
    });
    BOOST_TEST_REQUIRE(held, "\"" << key << "\" never reached nodes 0 to " << n - 1);
    for (std::size_t i = 0; i < n; ++i) fleet[i].command({"DEL", key});
  }

  /// How many nodes, running and not frozen, hold `key` now.
  int copies(std::string_view key) const {
    int n = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet[i].running() && !fleet[i].frozen() && fleet.has_key(i, key)) ++n;
    return n;
  }
};

}  // namespace redlock::test
