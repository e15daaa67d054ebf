// SPDX-License-Identifier: BSL-1.0
// A single lock's acquisition answer: see lock_answer.hpp.

#include "client/lock_answer.hpp"

namespace redlock::detail {

bool may_have_taken(vote v, const error_code& ec, bool scripted) {
  if (v == vote::yes || v == vote::pending) return true;
  if (v != vote::failed) return false;
  return ec == error::node_timeout || ec == error::connection_lost || ec == error::node_held_back ||
         (scripted && ec == error::server_error);
}

}  // namespace redlock::detail
