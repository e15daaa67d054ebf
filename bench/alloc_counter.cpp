// SPDX-License-Identifier: BSL-1.0
// Replacement global operator new/delete: plain malloc/free plus atomic counters. Live
// bytes use malloc_usable_size on both sides, so unsized deletes balance exactly.

#include "alloc_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace redlock::bench::alloc {
namespace {

std::atomic<std::uint64_t> allocations{0};
std::atomic<std::uint64_t> frees{0};
std::atomic<std::uint64_t> bytes{0};
std::atomic<std::int64_t> live_bytes{0};

void* counted_alloc(std::size_t size, std::size_t align) noexcept {
  if (size == 0) size = 1;  // operator new must return a unique pointer
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(size);
  } else if (::posix_memalign(&p, align, size) != 0) {
    p = nullptr;
  }
  if (p) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(size, std::memory_order_relaxed);
    live_bytes.fetch_add(static_cast<std::int64_t>(::malloc_usable_size(p)),
                         std::memory_order_relaxed);
  }
  return p;
}

void* counted_alloc_or_throw(std::size_t size, std::size_t align) {
  for (;;) {
    if (void* p = counted_alloc(size, align)) return p;
    // The standard's loop: give a new_handler the chance to free memory.
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc{};
    h();
  }
}

void counted_free(void* p) noexcept {
  if (!p) return;
  frees.fetch_add(1, std::memory_order_relaxed);
  live_bytes.fetch_sub(static_cast<std::int64_t>(::malloc_usable_size(p)),
                       std::memory_order_relaxed);
  std::free(p);
}

constexpr std::size_t plain = alignof(std::max_align_t);

}  // namespace

counts snapshot() noexcept {
  return {allocations.load(std::memory_order_relaxed), frees.load(std::memory_order_relaxed),
          bytes.load(std::memory_order_relaxed), live_bytes.load(std::memory_order_relaxed)};
}

}  // namespace redlock::bench::alloc

using redlock::bench::alloc::counted_alloc;
using redlock::bench::alloc::counted_alloc_or_throw;
using redlock::bench::alloc::counted_free;
using redlock::bench::alloc::plain;

void* operator new(std::size_t n) {
  return counted_alloc_or_throw(n, plain);
}
void* operator new[](std::size_t n) {
  return counted_alloc_or_throw(n, plain);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, plain);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, plain);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}
