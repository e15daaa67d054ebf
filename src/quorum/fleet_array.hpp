// SPDX-License-Identifier: BSL-1.0
#pragma once
// Per-node storage sized to the fleet. An operation keeps a few values per node (its
// requests, the round's votes, errors and texts); a client has at most max_nodes nodes
// but usually three or five. `fleet_array` has room for max_nodes values in place (no
// allocation) and constructs only as many as the fleet has, when a round first needs
// them: a lock call on three nodes builds and destroys three of each, not fifteen.

#include <cassert>
#include <cstddef>
#include <memory>
#include <new>
#include <span>

#include "redlock/config.hpp"

namespace redlock::detail {

template <typename T>
class fleet_array {
 public:
  // User-provided, so that value-initialising an owner does not zero the storage.
  fleet_array() noexcept {}
  fleet_array(const fleet_array& other) {
    for (; built_ < other.built_; ++built_) std::construct_at(data() + built_, other[built_]);
  }
  fleet_array& operator=(const fleet_array& other) {
    if (this == &other) return *this;
    fit(other.built_);
    for (std::size_t i = 0; i < other.built_; ++i) (*this)[i] = other[i];
    return *this;
  }
  ~fleet_array() { std::destroy_n(data(), built_); }

  /// Makes the first `n` values exist (value-initialised when new; the ones built before
  /// keep theirs). `n` is at most max_nodes.
  void fit(std::size_t n) {
    assert(n <= max_nodes);
    for (; built_ < n; ++built_) std::construct_at(data() + built_);
  }

  /// How many values exist.
  std::size_t size() const { return built_; }
  T& operator[](std::size_t i) {
    assert(i < built_);
    return data()[i];
  }
  const T& operator[](std::size_t i) const {
    assert(i < built_);
    return data()[i];
  }
  /// The first `n` values (which must exist).
  std::span<const T> first(std::size_t n) const {
    assert(n <= built_);
    return {data(), n};
  }

 private:
  T* data() { return std::launder(reinterpret_cast<T*>(store_)); }
  const T* data() const { return std::launder(reinterpret_cast<const T*>(store_)); }

  alignas(T) std::byte store_[sizeof(T) * max_nodes];
  std::size_t built_ = 0;
};

}  // namespace redlock::detail
