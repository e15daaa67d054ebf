// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Internal to the library: strings whose buffers are recycled from call to call.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace redlock::detail {

/// This thread's stack of spare buffers (src/util/pool.cpp makes it at first use, and
/// forgets it when the thread's pools are destroyed). Reached through a plain pointer, so
/// that taking and giving a buffer is a move with no call and no thread-local guard.
struct buffer_stack {
  std::string* slots = nullptr;
  std::size_t count = 0;
  std::size_t capacity = 0;
};
inline thread_local buffer_stack* spare_buffers = nullptr;

/// Buffers larger than this are freed, not kept.
inline constexpr std::size_t largest_spare_buffer = 1024;

/// The paths that make this thread's stack, or find it gone or full.
std::string take_buffer_slow() noexcept;
void give_buffer_slow(std::string&& s) noexcept;

/// A cleared string from this thread's pool of spare buffers (empty when it has none).
inline std::string take_buffer() noexcept {
  if (buffer_stack* st = spare_buffers; st && st->count > 0)
    return std::move(st->slots[--st->count]);
  return take_buffer_slow();
}
/// Gives `s`'s buffer to this thread's pool (or frees it when the pool is full or the
/// buffer large).
inline void give_buffer(std::string&& s) noexcept {
  if (s.capacity() <= 15 || s.capacity() > largest_spare_buffer) return;
  if (buffer_stack* st = spare_buffers; st && st->count < st->capacity) {
    s.clear();
    st->slots[st->count++] = std::move(s);
    return;
  }
  give_buffer_slow(std::move(s));
}

/// A std::string that takes its buffer from the pool and gives it back when destroyed:
/// the strings a call builds (its resource name, key, token, commands) allocate nothing
/// once a few calls have run.
class buffer : public std::string {
 public:
  buffer() noexcept : std::string(take_buffer()) {}
  explicit buffer(std::string_view v) : buffer() { assign(v); }
  buffer(buffer&&) noexcept = default;
  buffer& operator=(buffer&&) noexcept = default;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { give_buffer(std::move(static_cast<std::string&>(*this))); }
};

}  // namespace redlock::detail
