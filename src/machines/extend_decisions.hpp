// SPDX-License-Identifier: BSL-1.0
#pragma once
// What an extension decides without I/O: whether it may be sent at all, and what a
// node's answer counts as. The vote and the new deadline are the extension rule's
// (quorum/rules.hpp); extend.hpp's operation gathers the lock's facts, sends, and asks.

#include <chrono>
#include <string>

#include "quorum/round.hpp"
#include "quorum/rules.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// What the checks before an extension know of the client and the lock.
struct extension_facts {
  bool closed = false;     ///< the client shut down
  bool has_token = false;  ///< the lock object holds a lock at all
  bool owns = false;       ///< ... of this client, which still runs
  bool extending = false;  ///< another extension of it is in flight
  bool lost = false;       ///< known lost
  boot_clock::time_point deadline{};
};

/// Whether an extension may go out, and if not why.
struct extension_check {
  error_code refusal{};  ///< success: send it
  std::string detail{};  ///< added to the failure's text
  /// The lock is lost from now on (past its deadline: another owner may exist, so even
  /// keys that still hold our token must not be extended).
  bool mark_lost = false;
};

/// The checks, in the order a caller hears of them: shut_down, no_lock, not_held,
/// extension_in_flight (two in flight would leave the nodes with whichever TTL ran last,
/// while the lock kept whichever verdict came last), invalid_ttl (check_ttl), lock_lost.
extension_check check_extension(const extension_facts& f, std::chrono::milliseconds ttl,
                                const config& cfg, boot_clock::time_point now);

/// A compare-and-pexpire's answer: 1 extended, any other integer refused (not our token),
/// anything else no usable answer.
inline vote extension_answer(const resp::reply& r) {
  if (r.empty() || r[0].kind != resp::type::integer) return vote::failed;
  return r[0].integer == 1 ? vote::yes : vote::no;
}

}  // namespace redlock::detail
