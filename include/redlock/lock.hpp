#pragma once
/// A held lock, as returned by client::async_lock.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "redlock/clock.hpp"
#include "redlock/diagnostics.hpp"

namespace redlock {

namespace detail {
struct client_state;
struct lock_access;
}  // namespace detail

/// Ownership of one resource on a majority of nodes, until deadline().
///
/// A lock is a value: movable, not copyable, not safe to use from several threads at
/// once. The token is unique per acquisition (20 random bytes from getrandom, as hex).
/// Destroying a lock that is still held releases it in the background, best effort
/// (if the client still exists); call client::async_unlock to know the outcome.
class lock {
 public:
  lock() = default;
  lock(lock&& other) noexcept;
  lock& operator=(lock&& other) noexcept;
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;
  ~lock();

  /// The resource name as given to async_lock (without the client's key prefix).
  const std::string& resource() const noexcept { return resource_; }
  /// The Redis key (key prefix + resource).
  const std::string& key() const noexcept { return key_; }
  /// The random value stored under the key on each node.
  const std::string& token() const noexcept { return token_; }
  /// The fencing token (lock_options::fenced): strictly greater than the token of every
  /// earlier holder of this resource. Zero for a lock taken without fencing.
  std::uint64_t fence() const noexcept { return fence_; }
  /// The TTL the lock was last set or extended with.
  std::chrono::milliseconds ttl() const noexcept { return ttl_; }

  /// End of validity: usable directly as the expiry of a basic_waitable_timer<boot_clock>.
  /// Past it, other owners may hold the resource. Computed as attempt start + TTL - drift.
  boot_clock::time_point deadline() const noexcept { return deadline_; }
  /// Validity left now (zero once past the deadline, lost or released).
  std::chrono::milliseconds validity() const noexcept;
  /// True while the lock is held, not known lost, and before its deadline (reads the
  /// clock); false once its client was shut down or destroyed.
  bool valid() const noexcept;
  /// True once an extension found that a majority no longer holds it, or its deadline
  /// passed before an extension: final, no later extension brings it back.
  bool lost() const noexcept { return lost_; }
  /// True if this object still refers to an acquisition: not released, not moved from,
  /// and its client not shut down or destroyed (both release every lock they hold).
  bool owns() const noexcept;
  explicit operator bool() const noexcept { return valid(); }

 private:
  friend struct detail::lock_access;
  void release_in_background() noexcept;

  std::weak_ptr<detail::client_state> owner_;
  std::string resource_;
  std::string key_;
  std::string token_;
  std::chrono::milliseconds ttl_{0};
  boot_clock::time_point deadline_{};
  std::uint64_t fence_ = 0;
  std::uint16_t nodes_ = 0xffff;  // nodes the key may be on (claims ask a majority first)
  bool lost_ = false;
};

}  // namespace redlock
