// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// A held lock, as returned by client::async_lock.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "redlock/clock.hpp"
#include "redlock/diagnostics.hpp"

namespace redlock {

namespace detail {
struct client_state;
struct lock_access;

/// What a lock refers to, out of line so that moving a lock copies one pointer. Made
/// and recycled by a per-thread pool (lock.cpp), which keeps each entry's text buffer:
/// a steady stream of locks allocates nothing.
struct lock_data {
  std::weak_ptr<client_state> owner;
  std::string text;  // the key (key prefix + resource), then the token
  std::uint32_t resource_at = 0, key_size = 0;
  std::chrono::milliseconds ttl{0};
  boot_clock::time_point deadline{};
  std::uint64_t fence = 0;
  std::uint16_t nodes = 0xffff;  // nodes the key may be on (claims ask a majority first)
  bool lost = false;
  bool shared = false;     // a reader's lease (lock_options::shared)
  bool extending = false;  // an extension is in flight (at most one at a time)
  // A semaphore's permit: the key of the nodes' record of its count, kept alive by every
  // extension and renewal of the permit (empty for every other lock).
  std::string record_key;
  // The client's list of what it holds (client_state::held), used on its strand only.
  lock_data* prev = nullptr;
  lock_data* next = nullptr;
  bool linked = false;

  /// Sets the text: `key`, whose resource starts at `resource_at`, then `token`.
  void assign(std::string_view key, std::size_t resource_at, std::string_view token);

  std::string_view key() const noexcept { return {text.data(), key_size}; }
  std::string_view token() const noexcept { return std::string_view{text}.substr(key_size); }
  std::string_view resource() const noexcept {
    return {text.data() + resource_at, key_size - resource_at};
  }
};

/// Returns a lock_data to its pool.
struct lock_data_recycler {
  void operator()(lock_data* d) const noexcept;
};
using lock_ptr = std::unique_ptr<lock_data, lock_data_recycler>;
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

  /// The resource name as given to async_lock (without the client's key prefix). Empty
  /// for an empty lock. Views the lock's own storage: valid until the lock is moved
  /// from, assigned, released or destroyed.
  std::string_view resource() const noexcept { return d_ ? d_->resource() : std::string_view{}; }
  /// The Redis key (key prefix + resource). Empty for an empty lock.
  std::string_view key() const noexcept { return d_ ? d_->key() : std::string_view{}; }
  /// The random value stored under the key on each node. Empty for an empty lock.
  std::string_view token() const noexcept { return d_ ? d_->token() : std::string_view{}; }
  /// The fencing token (lock_options::fenced): strictly greater than the token of every
  /// earlier holder of this resource. Zero for a lock taken without fencing. A reader's
  /// (shared()) is at least every earlier writer's and below every later writer's
  /// (docs/safety.md, "The promise of a reader's fence"), not necessarily the latest's.
  std::uint64_t fence() const noexcept { return d_ ? d_->fence : 0; }
  /// The TTL the lock was last set or extended with.
  std::chrono::milliseconds ttl() const noexcept {
    return d_ ? d_->ttl : std::chrono::milliseconds{0};
  }

  /// End of validity: usable directly as the expiry of a basic_waitable_timer<boot_clock>.
  /// Past it, other owners may hold the resource. Computed as attempt start + TTL - drift.
  boot_clock::time_point deadline() const noexcept {
    return d_ ? d_->deadline : boot_clock::time_point{};
  }
  /// Validity left now (zero once past the deadline, lost or released).
  std::chrono::milliseconds validity() const noexcept;
  /// True while the lock is held, not known lost, and before its deadline (reads the
  /// clock); false once its client was shut down or destroyed.
  bool valid() const noexcept;
  /// True once an extension found that a majority no longer holds it, or its deadline
  /// passed before an extension: final, no later extension brings it back.
  bool lost() const noexcept { return d_ && d_->lost; }
  /// True for a reader's lease (lock_options::shared): others may hold it shared too.
  bool shared() const noexcept { return d_ && d_->shared; }
  /// True if this object still refers to an acquisition: not released, not moved from,
  /// and its client not shut down or destroyed (both release every lock they hold).
  bool owns() const noexcept;
  explicit operator bool() const noexcept { return valid(); }

 private:
  friend struct detail::lock_access;
  void release_in_background() noexcept;

  detail::lock_ptr d_;  // empty: no acquisition (default-made, moved from, released)
};

}  // namespace redlock
