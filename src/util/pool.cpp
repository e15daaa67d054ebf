// SPDX-License-Identifier: BSL-1.0
// The per-thread pools of pool.hpp and buffer.hpp.

#include "util/pool.hpp"

#include <array>
#include <string>
#include <vector>

#include "redlock/detail/buffer.hpp"

namespace redlock::detail {

namespace {

constexpr std::size_t step = 64;         // size classes: 64, 128, ... bytes
constexpr std::size_t classes = 256;     // up to 16 KiB; larger blocks are not pooled
constexpr std::size_t keep_blocks = 64;  // per class and thread
constexpr std::size_t keep_buffers = 256;

// Set when this thread's pools are destroyed (thread exit): what is freed later, from
// other thread-local or static destructors, goes straight to the heap.
thread_local bool pools_gone = false;

struct block_pool {
  std::array<std::vector<void*>, classes> free;
  ~block_pool() {
    pools_gone = true;
    for (auto& list : free)
      for (void* p : list) ::operator delete(p);
  }
};

block_pool* blocks() {
  if (pools_gone) return nullptr;
  thread_local block_pool p;
  return &p;
}

// The spare buffers of buffer.hpp's stack, in place: taking and giving one moves a string.
struct buffer_pool {
  std::array<std::string, keep_buffers> free;
  buffer_stack stack{free.data(), 0, keep_buffers};
  buffer_pool() noexcept { spare_buffers = &stack; }
  ~buffer_pool() {
    pools_gone = true;
    spare_buffers = nullptr;
  }
};

buffer_pool* buffers() {
  if (pools_gone) return nullptr;
  thread_local buffer_pool p;
  return &p;
}

}  // namespace

void* pool_allocate(std::size_t bytes) {
  const std::size_t c = (bytes + step - 1) / step;
  auto* pool = blocks();
  if (c == 0 || c > classes || pool == nullptr)
    return ::operator new(c* step > bytes ? c * step : bytes);
  auto& list = pool->free[c - 1];
  if (list.empty()) return ::operator new(c* step);
  void* p = list.back();
  list.pop_back();
  return p;
}

void pool_deallocate(void* p, std::size_t bytes) noexcept {
  const std::size_t c = (bytes + step - 1) / step;
  auto* pool = blocks();
  if (c == 0 || c > classes || pool == nullptr) return ::operator delete(p);
  auto& list = pool->free[c - 1];
  if (list.size() < keep_blocks) {
    try {
      list.reserve(keep_blocks);
      list.push_back(p);
      return;
    } catch (...) {
    }
  }
  ::operator delete(p);
}

std::string take_buffer_slow() noexcept {
  buffers();  // made here, the first time: empty, so nothing to take yet
  return {};
}

void give_buffer_slow(std::string&& s) noexcept {
  // Full, or not made yet: made now (unless the thread's pools are gone), then kept if room.
  auto* pool = buffers();
  if (pool == nullptr || pool->stack.count == pool->stack.capacity) return;
  s.clear();
  pool->free[pool->stack.count++] = std::move(s);
}

}  // namespace redlock::detail
