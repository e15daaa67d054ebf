// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// A lock on several resources at once, as returned by client::async_lock_all.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/clock.hpp"

namespace redlock {

namespace detail {
struct client_state;
struct multi_lock_access;
}  // namespace detail

/// Most resources in one async_lock_all call. Each node takes the whole set in one Lua
/// script call, whose argument list Lua bounds (about 8,000); 64 keeps the script's run
/// (which blocks the node) short.
inline constexpr std::size_t max_multi_lock = 64;

/// Ownership of a set of resources on a majority of nodes, all or none, until deadline().
///
/// The same keys as single locks (key prefix + resource), so a single lock and a
/// multi_lock on the same resource exclude each other. One random token for the whole
/// set. Resources are kept sorted by name (byte order), whatever order the caller gave.
/// A value: movable, not copyable, not safe to use from several threads at once.
/// Destroying one that is still held releases it in the background, best effort (if the
/// client still exists); client::async_shutdown releases it too.
class multi_lock {
 public:
  multi_lock() = default;
  multi_lock(multi_lock&& other) noexcept;
  multi_lock& operator=(multi_lock&& other) noexcept;
  multi_lock(const multi_lock&) = delete;
  multi_lock& operator=(const multi_lock&) = delete;
  ~multi_lock();

  /// The resource names, sorted (without the client's key prefix).
  const std::vector<std::string>& resources() const noexcept { return resources_; }
  /// The Redis keys (key prefix + resource), in the order of resources().
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  /// The random value stored under every key on each node.
  const std::string& token() const noexcept { return token_; }
  /// Fencing tokens (lock_options::fenced), one per resource in the order of
  /// resources(): each strictly greater than the token of every earlier holder of that
  /// resource, by single or multi lock. Empty for a lock taken without fencing.
  std::span<const std::uint64_t> fences() const noexcept { return fences_; }
  /// The fencing token of `resource`; zero if it is not in the set or not fenced.
  std::uint64_t fence(std::string_view resource) const noexcept;
  /// The TTL the set was last taken or extended with.
  std::chrono::milliseconds ttl() const noexcept { return ttl_; }

  /// End of validity (attempt start + TTL - drift), for the whole set.
  boot_clock::time_point deadline() const noexcept { return deadline_; }
  /// Validity left now (zero once past the deadline, lost or released).
  std::chrono::milliseconds validity() const noexcept;
  /// True while held, not known lost, and before its deadline (reads the clock); false
  /// once its client was shut down or destroyed.
  bool valid() const noexcept;
  /// True once an extension found that a majority no longer holds the whole set, or the
  /// deadline passed before an extension: final.
  bool lost() const noexcept { return lost_; }
  /// True if this object still refers to an acquisition: not released, not moved from,
  /// and its client not shut down or destroyed (both release every set they hold).
  bool owns() const noexcept;
  explicit operator bool() const noexcept { return valid(); }

 private:
  friend struct detail::multi_lock_access;
  void release_in_background() noexcept;

  std::weak_ptr<detail::client_state> owner_;
  std::vector<std::string> resources_;
  std::vector<std::string> keys_;
  std::string token_;
  std::vector<std::uint64_t> fences_;
  std::chrono::milliseconds ttl_{0};
  boot_clock::time_point deadline_{};
  bool lost_ = false;
  bool extending_ = false;  // an extension is in flight (at most one at a time)
};

}  // namespace redlock
