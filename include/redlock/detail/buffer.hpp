// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Internal to the library: strings whose buffers are recycled from call to call.

#include <string>
#include <string_view>

namespace redlock::detail {

/// A cleared string from this thread's pool of spare buffers (empty when it has none).
std::string take_buffer() noexcept;
/// Gives `s`'s buffer to this thread's pool (or frees it when the pool is full or the
/// buffer large).
void give_buffer(std::string&& s) noexcept;

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
