// SPDX-License-Identifier: BSL-1.0
#pragma once
// How every operation completes, as every Asio operation does: on the handler's
// associated executor (the client's when it has none), with outstanding work counted on
// that executor from initiation until the handler has been handed over, so that a
// `run()` of the handler's io_context does not return while the operation is pending.
//
// Cost: a handler on an io_context (a coroutine's or a plain io_context executor, the
// common case) is kept as the concrete io_context executor: one work increment and one
// decrement per operation, no allocation beyond what Asio spends to hand the handler
// over. Other executors (strands, thread pools) stay type-erased.

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/system_executor.hpp>
#include <memory>
#include <tuple>
#include <utility>
#include <variant>

#include "redlock/detail/erased_handler.hpp"

namespace redlock::detail {

template <typename Signature>
class completion;

/// A completion handler plus the tracked work on the executor it will run on. Empty when
/// default-constructed or moved from. Not thread-safe: used by one operation at a time.
template <typename... Args>
class completion<void(Args...)> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(Args...)>;
  using erased_type = erased_handler<void(Args...)>;

  completion() = default;

  /// Takes `h` and starts counting work on its associated executor, or on `fallback`
  /// (the client's executor) when it has none.
  completion(erased_type h, const boost::asio::any_io_executor& fallback)
      : handler_(std::move(static_cast<handler_type&>(h))) {
    if (!handler_) return;
    namespace asio = boost::asio;
    // An io_context executor named at initiation (a coroutine's, most often) is used as
    // it is: no type-erased conversion.
    if (const auto* io = h.executor_hint().template target<io_executor>()) {
      work_.template emplace<io_work>(asio::prefer(*io, asio::execution::outstanding_work.tracked));
      return;
    }
    // A concrete candidate keeps a plain callback's executor in the small buffer.
    const asio::any_completion_executor ex =
        fallback.target<io_executor>() != nullptr
            ? asio::get_associated_executor(handler_, *fallback.target<io_executor>())
            : asio::get_associated_executor(handler_, fallback);
    if (const auto* io = ex.target<io_executor>())
      work_.template emplace<io_work>(asio::prefer(*io, asio::execution::outstanding_work.tracked));
    else
      work_.template emplace<any_work>(asio::prefer(ex, asio::execution::outstanding_work.tracked));
  }

  completion(completion&&) noexcept = default;
  // Not by member-wise assignment: Asio 1.81's any_completion_handler move assignment
  // copies its argument as an lvalue and recurses without end.
  completion& operator=(completion&& other) noexcept {
    if (this != &other) {
      std::destroy_at(this);
      std::construct_at(this, std::move(other));
    }
    return *this;
  }

  explicit operator bool() const noexcept { return static_cast<bool>(handler_); }

  /// The handler's cancellation slot (unconnected when empty).
  boost::asio::cancellation_slot slot() const noexcept {
    return boost::asio::get_associated_cancellation_slot(handler_);
  }

  /// Runs the handler on its executor: inline when the calling thread already runs it.
  /// Never from inside the initiating call (use post()).
  void dispatch(Args... args) { hand_over(false, std::move(args)...); }

  /// Queues the handler on its executor, never inline: for a completion decided inside
  /// the initiating call.
  void post(Args... args) { hand_over(true, std::move(args)...); }

 private:
  using io_executor = boost::asio::io_context::executor_type;
  using io_work = decltype(boost::asio::prefer(std::declval<io_executor>(),
                                               boost::asio::execution::outstanding_work.tracked));
  using any_work = boost::asio::any_completion_executor;

  void hand_over(bool never_inline, Args... args) {
    namespace asio = boost::asio;
    // The work is released after the handler was handed over (or ran), not before.
    auto work = std::exchange(work_, std::monostate{});
    auto call = [h = std::move(handler_), args = std::make_tuple(std::move(args)...)]() mutable {
      std::apply([&h](auto&&... a) { std::move(h)(std::move(a)...); }, std::move(args));
    };
    if (auto* io = std::get_if<io_work>(&work)) {
      if (never_inline)
        asio::require(*io, asio::execution::blocking.never).execute(std::move(call));
      else
        io->execute(std::move(call));
    } else if (auto* any = std::get_if<any_work>(&work)) {
      // A type-erased completion executor cannot promise never to block: hop through
      // another executor first, then dispatch (it cannot be inside the caller then).
      if (never_inline)
        asio::post(asio::system_executor{},
                   [ex = std::move(*any), call = std::move(call)]() mutable {
                     asio::dispatch(ex, std::move(call));
                   });
      else
        asio::dispatch(*any, std::move(call));
    }
  }

  handler_type handler_;
  std::variant<std::monostate, io_work, any_work> work_;
};

}  // namespace redlock::detail
