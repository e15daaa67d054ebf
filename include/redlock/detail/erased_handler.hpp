// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Internal to the library's initiating functions: a type-erased completion handler.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <type_traits>
#include <utility>

namespace redlock::detail {

/// A type-erased completion handler that remembers its associated executor when that is
/// an io_context's (plain or as any_io_executor, a coroutine's), taken before erasure:
/// asking the erased handler for it would convert it to any_completion_executor through
/// a heap-allocated wrapper, once per operation.
template <typename Signature>
class erased_handler : public boost::asio::any_completion_handler<Signature> {
  using base = boost::asio::any_completion_handler<Signature>;

 public:
  erased_handler() = default;
  template <typename Handler>
  requires(!std::is_same_v<std::decay_t<Handler>, erased_handler> &&
           std::is_constructible_v<base, Handler&&>)
      erased_handler(Handler&& h)  // NOLINT: converts like any_completion_handler
      : erased_handler(hint_of(h), std::forward<Handler>(h)) {}
  erased_handler(erased_handler&&) noexcept = default;
  // Not member-wise: Asio 1.81's any_completion_handler move assignment recurses.
  erased_handler& operator=(erased_handler&& other) noexcept {
    if (this != &other) {
      std::destroy_at(this);
      std::construct_at(this, std::move(other));
    }
    return *this;
  }

  /// The handler's io_context executor, or an empty one when it has another (or none).
  const boost::asio::any_io_executor& executor_hint() const noexcept { return hint_; }

 private:
  template <typename Handler>
  erased_handler(boost::asio::any_io_executor hint, Handler&& h)
      : base(std::forward<Handler>(h)), hint_(std::move(hint)) {}

  template <typename Handler>
  static boost::asio::any_io_executor hint_of(const Handler& h) {
    using ex = boost::asio::associated_executor_t<std::decay_t<Handler>>;
    if constexpr (std::is_same_v<ex, boost::asio::any_io_executor> ||
                  std::is_same_v<ex, boost::asio::io_context::executor_type>)
      return boost::asio::any_io_executor{boost::asio::get_associated_executor(h)};
    else
      return {};
  }

  boost::asio::any_io_executor hint_;
};

}  // namespace redlock::detail
