// SPDX-License-Identifier: BSL-1.0
#pragma once
// Maps keyed by a Redis key that can be searched with a view of one (a lock's key)
// without building a string.

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace redlock::detail {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view v) const noexcept {
    return std::hash<std::string_view>{}(v);
  }
};

template <typename T>
using string_map = std::unordered_map<std::string, T, string_hash, std::equal_to<>>;

}  // namespace redlock::detail
