// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Error codes of redlock-asio. Every asynchronous operation completes with a
/// boost::system::error_code; the values below belong to the "redlock" category.

#include <boost/system/error_code.hpp>
#include <string>
#include <type_traits>

namespace redlock {

enum class error {
  // Lock outcomes
  contended = 1,       ///< a majority of nodes hold the resource for another owner
  wait_timeout,        ///< the wait ended while another owner still held the resource
  no_quorum,           ///< too few nodes answered (down, frozen, restarting or failing)
  validity_exhausted,  ///< a majority agreed, but too late: no validity was left
  not_held,            ///< unlock/extend of a lock this owner no longer holds
  lock_lost,           ///< the lock's validity ran out or a majority lost it
  cancelled,           ///< the operation was cancelled by the caller
  wrong_type,  ///< keys of another type (not strings) at the name on too many nodes for a majority
  // Node / connection outcomes
  node_timeout,      ///< a node did not answer within its deadline
  node_unavailable,  ///< not connected to the node (connecting, backing off or unresponsive)
  connection_lost,   ///< the connection closed while the request was in flight
  connect_failed,    ///< TCP connect or the handshake failed or timed out
  auth_failed,       ///< the server refused AUTH or SELECT, or a handshake command (ACL)
  protocol_error,    ///< the server sent bytes that are not valid RESP
  server_error,      ///< the server answered with an error reply (text in diagnostics)
  unexpected_reply,  ///< a well-formed reply of a type the command cannot return
  overloaded,        ///< too many requests queued for one node
  node_held_back,    ///< the node does not vote now (restart guard, clock jump, replica, duplicate)
  // Usage
  invalid_config,    ///< the configuration is invalid (text in the exception / diagnostics)
  invalid_argument,  ///< an argument is invalid (one without a code of its own below)
  shut_down,         ///< the client was shut down
  // Added later (values are stable)
  tls_failed,   ///< the TLS handshake failed (certificate refused, not a TLS port, ...)
  no_lock,      ///< unlock/extend of a lock object that holds none (empty, moved from, released)
  unsupported,  ///< not available with this fleet (a kind of lock a Redis Cluster node cannot
                ///< take; no call returns it today)
  /// an extension of a lock while another extension of the same lock is still in flight:
  /// the nodes would end with whichever ran last, so the second is refused (nothing sent)
  extension_in_flight,
  // Argument errors, each its own code so that the code alone says what was wrong. All of
  // them (and invalid_argument) compare equal to boost::system::errc::invalid_argument:
  // `ec == boost::system::errc::invalid_argument` catches every argument error.
  invalid_ttl,         ///< a TTL outside 1 ms to 24 h, above config::max_ttl, or so short that
                       ///< the clock drift allowance leaves under 1 ms of validity
  invalid_resource,    ///< a resource name empty or over max_resource_bytes, a name twice in
                       ///< one set, or an empty set
  invalid_wait,        ///< a negative lock_options::wait
  too_many_resources,  ///< more names in one call than max_multi_lock / max_claim_batch allow
  /// a lock call for a resource this client already holds in the other mode (a writer's
  /// lock asked while it holds a reader's lease, or a lease while it holds the writer's):
  /// it would wait on itself, so it is refused (lock_options::shared)
  upgrade_refused,
  /// a leadership (election.hpp) lost its lock: another campaigner may lead now. Compares
  /// equal to condition::lock_lost, as error::lock_lost does
  leadership_lost,
  /// a semaphore's permit asked with a number of permits other than the one the nodes
  /// record for it (another client passes another count): nothing was taken. The
  /// diagnostics name the count the nodes hold.
  permit_count_mismatch,
};

/// Conditions: codes that mean the same thing to a caller, whichever operation sent them.
/// `ec == redlock::condition::lock_lost` is true for error::lock_lost and for
/// error::leadership_lost (a lost lock under another name); `ec == error::lock_lost` stays
/// an exact comparison. (Cancellation and argument errors compare equal to
/// boost::system::errc::operation_canceled and errc::invalid_argument instead.)
enum class condition {
  lock_lost = static_cast<int>(error::lock_lost),  ///< the lock (or the leadership) was lost
};

/// True for every argument error: invalid_argument and the codes that say which argument
/// (invalid_ttl, invalid_resource, invalid_wait, too_many_resources).
bool is_argument_error(const boost::system::error_code& ec) noexcept;

/// The "redlock" error category.
const boost::system::error_category& category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept {
  return {static_cast<int>(e), category()};
}

/// A condition of the "redlock" category: the value of the error it names.
inline boost::system::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), category()};
}

}  // namespace redlock

template <>
struct boost::system::is_error_code_enum<redlock::error> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<redlock::condition> : std::true_type {};
