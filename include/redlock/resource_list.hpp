// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// The names a call on several resources takes (async_lock_all, async_try_lock_all,
/// async_try_claim): a std::vector<std::string>, or a braced list of anything a
/// std::string_view can be made from, written in the call itself:
///
///     co_await locks.async_lock_all({"acct:7", "acct:3"}, {.ttl = 5s}, asio::use_awaitable);
///
/// A braced list builds the names from its elements one by one; it never makes a
/// std::initializer_list, whose backing array GCC 12 cannot keep in a coroutine frame
/// ("array used as initializer" inside co_await).

#include <concepts>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock {

class resource_list {
 public:
  resource_list() = default;
  /// Takes the names over (a copy for an lvalue).
  resource_list(std::vector<std::string> names) noexcept : names_(std::move(names)) {}
  /// One name per argument, in order: `{"a", "b"}`, `{name, "other"}`.
  template <typename... Names>
  requires(sizeof...(Names) > 0 && (std::convertible_to<const Names&, std::string_view> && ...))
      resource_list(const Names&... names) {
    names_.reserve(sizeof...(Names));
    (names_.emplace_back(std::string_view{names}), ...);
  }

  const std::vector<std::string>& names() const noexcept { return names_; }
  /// Hands the names over; the list is empty afterwards.
  std::vector<std::string> take() && noexcept { return std::move(names_); }

 private:
  std::vector<std::string> names_;
};

}  // namespace redlock
