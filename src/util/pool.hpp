// SPDX-License-Identifier: BSL-1.0
#pragma once
// Per-thread recycling of the memory an operation needs: its own object, and the
// handlers it posts to the strand (through pool_allocator). Blocks go back to the pool
// of the thread that frees them; each size class keeps a bounded number.

#include <cstddef>
#include <new>

namespace redlock::detail {

void* pool_allocate(std::size_t bytes);
void pool_deallocate(void* p, std::size_t bytes) noexcept;

/// An allocator over the pool, for handlers (their get_allocator()).
template <typename T>
struct pool_allocator {
  using value_type = T;
  pool_allocator() noexcept = default;
  template <typename U>
  pool_allocator(const pool_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const pool_allocator<U>&) const noexcept {
    return true;
  }
};

/// A base whose objects (operations made with new) come from the pool.
struct pooled {
  static void* operator new(std::size_t bytes) { return pool_allocate(bytes); }
  static void operator delete(void* p, std::size_t bytes) noexcept { pool_deallocate(p, bytes); }
};

}  // namespace redlock::detail
