// SPDX-License-Identifier: BSL-1.0
// Fair mode: a line of waiters kept on each node, per resource.
//
// The line is two sorted sets: `redlock:line:R` orders waiters by their ticket (the wall
// clock, in ms, at the start of their call; equal tickets by the waiter's random id, so
// every node orders the same waiters the same way), and `redlock:line-expiry:R` holds
// when each place lapses (the node's own clock). Every attempt of a waiting call joins
// (ZADD NX: the ticket chosen once) and renews its place, purges lapsed places, and may
// set the lock key only if it is first in line; the winner leaves the line in the same
// script. Both keys expire with the newest place, so a line nobody renews disappears.

#include "client/client_state.hpp"
#include "resp/resp.hpp"
#include "scripts/script_calls.hpp"

namespace redlock::detail {

void client_state::leave_line_detached(std::string_view line_key, std::string_view expiry_key,
                                       std::string_view id,
                                       const std::array<bool, max_nodes>& only) {
  // EVAL: nobody reads the reply, so a flushed script cache must not make it a NOSCRIPT.
  std::string payload;
  write_line_leave(payload, line_key, expiry_key, id);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (only[i]) nodes[i]->submit_detached(payload);
}

}  // namespace redlock::detail
