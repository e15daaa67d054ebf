#pragma once
/// Run a coroutine under a lock: renewed while it runs, cancelled if the lock is lost,
/// released on every exit path.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "redlock/client.hpp"
#include "redlock/keeper.hpp"

namespace redlock {

/// Settings of with_lock.
struct hold_options {
  /// TTL of the lock and of each renewal. Default 10 s.
  std::chrono::milliseconds ttl = std::chrono::seconds{10};
  /// How long to wait for the lock (as lock_options::wait). Default: until cancelled.
  std::chrono::milliseconds wait = wait_forever;
  /// Renewal settings; renew.ttl zero means `ttl`.
  renew_options renew{};
};

namespace detail {

template <typename T>
struct work_outcome {
  std::exception_ptr error{};
  std::optional<T> value{};
};
template <>
struct work_outcome<void> {
  std::exception_ptr error{};
};

// Runs the work and turns its exception into a value, so that the race below ends when
// the work ends, whichever way it ends.
template <typename T, typename Work>
boost::asio::awaitable<work_outcome<T>> run_work(Work& work, keeper& k) {
  work_outcome<T> out;
  try {
    if constexpr (std::is_void_v<T>) {
      co_await work(k);
    } else {
      T v = co_await work(k);
      out.value.emplace(std::move(v));
    }
  } catch (...) {
    out.error = std::current_exception();
  }
  co_return out;
}

[[noreturn]] inline void throw_error(error e, const char* what) {
  throw boost::system::system_error(make_error_code(e), what);
}

}  // namespace detail

/// Acquires `resource`, then runs `work(keeper&)` (a coroutine returning
/// `asio::awaitable<T>`) while the lock is renewed in the background.
///
/// - The work ends normally: the lock is released and its result returned.
/// - The lock is lost (a majority no longer holds it, or its deadline arrives without a
///   confirmed renewal): the work is cancelled at once, before the deadline passes (its
///   pending and next asynchronous operations complete with operation_aborted), and when
///   it has ended with_lock throws system_error(error::lock_lost). A lost lock stays lost.
/// - The work throws: the lock is released in the background at once and the exception
///   propagates. Cancelling with_lock cancels the work the same way and throws
///   system_error(error::cancelled).
/// - The client is shut down or destroyed (which releases the lock): the work is cancelled
///   the same way and with_lock throws system_error(error::shut_down).
/// - The lock cannot be acquired: the acquisition's system_error (wait_timeout,
///   no_quorum, ...) is thrown and the work never runs.
template <typename Work>
auto with_lock(client& c, std::string resource, hold_options opts, Work work)
    -> boost::asio::awaitable<typename std::invoke_result_t<Work&, keeper&>::value_type> {
  namespace asio = boost::asio;
  using namespace asio::experimental::awaitable_operators;
  using T = typename std::invoke_result_t<Work&, keeper&>::value_type;

  const lock_options acquire{opts.ttl, opts.wait};  // not braced inside co_await (GCC 12)
  lock lk = co_await c.async_lock(resource, acquire, asio::use_awaitable);
  keeper k{c, std::move(lk), opts.renew};

  auto raced = co_await (detail::run_work<T>(work, k) ||
                         k.async_wait_lost(asio::as_tuple(asio::use_awaitable)));

  if (raced.index() == 1) {
    // The loss (or a cancellation of with_lock) won; the work has been cancelled and has
    // ended. The keeper's destructor releases whatever may still be ours.
    const auto [ec] = std::get<1>(raced);
    if (ec == error::lock_lost) detail::throw_error(error::lock_lost, "with_lock");
    if (ec == error::shut_down) detail::throw_error(error::shut_down, "with_lock");
    detail::throw_error(error::cancelled, "with_lock");
  }

  auto outcome = std::move(std::get<0>(raced));
  if (outcome.error) std::rethrow_exception(outcome.error);  // keeper releases in background

  // The cleanup below must run even if with_lock was cancelled as the work ended.
  co_await asio::this_coro::reset_cancellation_state();
  auto [stop_ec, held] = co_await k.async_stop(asio::as_tuple(asio::use_awaitable));
  if (stop_ec == error::lock_lost) detail::throw_error(error::lock_lost, "with_lock");
  if (held.owns()) {
    auto [unlock_ec] =
        co_await c.async_unlock(std::move(held), asio::as_tuple(asio::use_awaitable));
    (void)unlock_ec;  // an unconfirmed release expires with its TTL; the work succeeded
  }
  if constexpr (!std::is_void_v<T>) co_return std::move(*outcome.value);
}

}  // namespace redlock
