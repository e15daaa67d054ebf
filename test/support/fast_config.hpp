// SPDX-License-Identifier: BSL-1.0
#pragma once
// A client configuration for tests: short timeouts and retries, so that failures show in
// milliseconds, and no restart guard (fresh test servers would otherwise not vote for a
// whole TTL; the guard has tests of its own in test_fencing).

#include <string>
#include <utility>
#include <vector>

#include "redlock/config.hpp"

namespace redlock::test {

inline redlock::config fast_config(std::vector<std::string> nodes) {
  return redlock::config{.nodes = std::move(nodes),
                         .connect_timeout = std::chrono::milliseconds{500},
                         .node_timeout = std::chrono::milliseconds{200},
                         .reconnect_min = std::chrono::milliseconds{10},
                         .reconnect_max = std::chrono::milliseconds{50},
                         .retry_delay = std::chrono::milliseconds{10},
                         .restart_guard = false};
}

}  // namespace redlock::test
