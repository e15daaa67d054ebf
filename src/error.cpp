// SPDX-License-Identifier: BSL-1.0
#include "redlock/error.hpp"

#include <boost/system/errc.hpp>

namespace redlock {
namespace {

bool is_argument(error e) noexcept {
  return e == error::invalid_argument || e == error::invalid_ttl || e == error::invalid_resource ||
         e == error::invalid_wait || e == error::too_many_resources;
}

class category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "redlock"; }

  std::string message(int ev) const override {
    switch (static_cast<error>(ev)) {
      case error::contended:
        return "the resource is locked by another owner on a majority of nodes";
      case error::wait_timeout:
        return "gave up waiting: the resource was still locked by another owner";
      case error::no_quorum:
        return "too few Redis nodes answered to form a majority (see diagnostics for each node)";
      case error::validity_exhausted:
        return "a majority granted the lock, but it took longer than the lock's TTL allows";
      case error::not_held:
        return "the lock is not held by this owner (it expired or was taken by another)";
      case error::lock_lost:
        return "the lock was lost: its validity ran out or a majority no longer holds it";
      case error::cancelled:
        return "the operation was cancelled";
      case error::wrong_type:
        return "Redis keys of another type (not strings) exist under the resource name on too many "
               "nodes for a majority";
      case error::node_timeout:
        return "the Redis node did not answer in time";
      case error::node_unavailable:
        return "not connected to the Redis node (connecting, backing off, or unresponsive)";
      case error::connection_lost:
        return "the connection to the Redis node closed before the reply arrived";
      case error::connect_failed:
        return "could not connect to the Redis node (refused, unreachable or timed out)";
      case error::auth_failed:
        return "the Redis node refused the credentials, the database, or (ACL) a command the "
               "client needs";
      case error::protocol_error:
        return "the Redis node sent data that is not valid RESP";
      case error::server_error:
        return "the Redis node answered with an error";
      case error::unexpected_reply:
        return "the Redis node sent a reply of a type the command cannot return";
      case error::overloaded:
        return "too many requests are queued for this Redis node";
      case error::node_held_back:
        return "the Redis node does not vote now (it restarted recently, its clock jumped, it is "
               "a replica or the same server as another node)";
      case error::invalid_config:
        return "invalid redlock configuration";
      case error::invalid_argument:
        return "invalid argument";
      case error::shut_down:
        return "the lock client has been shut down";
      case error::tls_failed:
        return "the TLS handshake with the Redis node failed (certificate not trusted, expired or "
               "for another host, or not a TLS port)";
      case error::no_lock:
        return "the lock object holds no lock: it is empty, was moved from, or was already "
               "released";
      case error::unsupported:
        return "not supported on this fleet (a kind of lock that a node which is a Redis "
               "Cluster cannot take)";
      case error::extension_in_flight:
        return "another extension of this lock is still in flight: wait for it before extending "
               "again (the nodes keep whichever TTL arrives last)";
      case error::invalid_ttl:
        return "invalid TTL";
      case error::invalid_resource:
        return "invalid resource name";
      case error::invalid_wait:
        return "invalid wait (negative)";
      case error::too_many_resources:
        return "too many resources in one call";
      case error::upgrade_refused:
        return "refused: this client already holds the resource in the other mode (shared or "
               "exclusive) and would wait on itself; release it first";
      case error::leadership_lost:
        return "the leadership was lost: its lock's validity ran out or a majority no longer "
               "holds it (another campaigner may lead now)";
      case error::permit_count_mismatch:
        return "the nodes hold this semaphore with a different number of permits: every client "
               "of a semaphore must ask for the same count (the diagnostics name the nodes' count)";
    }
    return "unknown redlock error";
  }

  // Lets callers test for cancellation the standard way:
  // ec == boost::system::errc::operation_canceled.
  boost::system::error_condition default_error_condition(int ev) const noexcept override {
    if (static_cast<error>(ev) == error::cancelled)
      return boost::system::errc::make_error_condition(boost::system::errc::operation_canceled);
    if (is_argument(static_cast<error>(ev)))
      return boost::system::errc::make_error_condition(boost::system::errc::invalid_argument);
    if (static_cast<error>(ev) == error::node_timeout)
      return boost::system::errc::make_error_condition(boost::system::errc::timed_out);
    // A lost leadership is a lost lock: ec == condition::lock_lost holds for both.
    if (static_cast<error>(ev) == error::leadership_lost)
      return make_error_condition(condition::lock_lost);
    return {ev, *this};
  }
};

}  // namespace

bool is_argument_error(const boost::system::error_code& ec) noexcept {
  return ec.category() == category() && is_argument(static_cast<error>(ec.value()));
}

const boost::system::error_category& category() noexcept {
  static const category_impl instance;
  return instance;
}

}  // namespace redlock
