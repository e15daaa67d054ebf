#pragma once
// The common fixture of the integration tests: N real redis-server nodes, the io_context
// the clients under test run on, and clients configured with fast_config for those nodes.
// A test file derives from it to add what only its own tests need.

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <string_view>
#include <utility>

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

  /// How many nodes, running and not frozen, hold `key` now.
  int copies(std::string_view key) const {
    int n = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet[i].running() && !fleet[i].frozen() && fleet.has_key(i, key)) ++n;
    return n;
  }
};

}  // namespace redlock::test
