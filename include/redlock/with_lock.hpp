// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Run a coroutine under a lock: renewed while it runs, cancelled if the lock is lost,
/// released on every exit path.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redlock/client.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/error.hpp"
#include "redlock/keeper.hpp"

namespace redlock {

/// Settings of with_lock.
struct hold_options {
  /// TTL of the lock and of each renewal. Default 10 s.
  std::chrono::milliseconds ttl = std::chrono::seconds{10};
  /// How long to wait for the lock (as lock_options::wait). Default: until cancelled.
  std::chrono::milliseconds wait = wait_forever;
  /// Take a fenced lock (as lock_options::fenced): the work reads its fencing token from
  /// keeper::fence(), strictly greater than every earlier holder's. Default off.
  bool fenced = false;
  /// Take a reader's lease (as lock_options::shared): the work runs beside other readers'
  /// and never beside a writer's; with `fenced`, keeper::fence() is a reader's fence, as
  /// lock::fence() says. Default off.
  bool shared = false;
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

// Runs the work on what it holds (a keeper, a leadership) and turns its exception into a
// value, so that the race below ends when the work ends, whichever way it ends.
template <typename T, typename Work, typename Held>
boost::asio::awaitable<work_outcome<T>> run_work(Work& work, Held& k) {
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

/// Fills `diag` for a with_lock on `resource` that ended with `ec` after the lock was
/// taken (lost, cancelled, shut down): which resource, and why, in words. `k` says why a
/// lost lock was lost (an empty keeper: not known).
void describe_hold_failure(const keeper& k, std::string_view resource, boost::system::error_code ec,
                           diagnostics& diag);

/// keeper{c, lk, opts}, its argument error thrown as error_with_diagnostics with `diag`
/// saying why (the lock is then released in the background).
keeper keep_for_work(client& c, lock&& lk, const renew_options& opts, diagnostics& diag);

/// Adds to a lost lock's `diag` what each node holds now (from async_inspect of the
/// resource): whether it still holds `token`, holds another's, lost the key, or did not
/// answer, in the message and as one node_diagnostic per node.
void describe_nodes_after_loss(const std::vector<node_report>& nodes, std::string_view token,
                               diagnostics& diag);

[[noreturn]] inline void throw_with(boost::system::error_code ec, const diagnostics& diag) {
  throw error_with_diagnostics(ec, diag);
}

template <typename Work>
using work_result_t = typename std::invoke_result_t<Work&, keeper&>::value_type;

// async_with_lock's completion signature: co_spawn's for the work's result type.
template <typename T>
struct hold_signature {
  using type = void(std::exception_ptr, T);
};
template <>
struct hold_signature<void> {
  using type = void(std::exception_ptr);
};
template <typename Work>
using hold_signature_t = typename hold_signature<work_result_t<Work>>::type;

template <typename Work>
auto run_with_lock(client& c, std::string resource, hold_options opts, diagnostics* given,
                   Work work) -> boost::asio::awaitable<work_result_t<Work>> {
  namespace asio = boost::asio;
  using namespace asio::experimental::awaitable_operators;
  using T = work_result_t<Work>;

  diagnostics own;
  diagnostics& diag = given ? *given : own;
  diag = {};
  lock_options acquire;  // not braced inside co_await (GCC 12)
  acquire.ttl = opts.ttl;
  acquire.wait = opts.wait;
  acquire.fenced = opts.fenced;
  acquire.shared = opts.shared;
  auto [lock_ec, lk] =
      co_await c.async_lock(resource, acquire, diag, asio::as_tuple(asio::use_awaitable));
  if (lock_ec) throw_with(lock_ec, diag);
  keeper k = keep_for_work(c, std::move(lk), opts.renew, diag);

  auto raced =
      co_await (run_work<T>(work, k) || k.async_wait_lost(asio::as_tuple(asio::use_awaitable)));

  if (raced.index() == 1) {
    // The loss (or a cancellation of with_lock) won; the work has been cancelled and has
    // ended. The keeper's destructor releases whatever may still be ours.
    const auto [ec] = std::get<1>(raced);
    const boost::system::error_code why = ec == error::lock_lost || ec == error::shut_down
                                              ? ec
                                              : boost::system::error_code{error::cancelled};
    describe_hold_failure(k, resource, why, diag);
    if (given && why == error::lock_lost) {
      // The caller asked for diagnostics: say what each node holds now. A cancellation
      // of with_lock meanwhile only cuts this short: the lock was lost all the same.
      try {
        auto [inspect_ec, nodes] =
            co_await c.async_inspect(resource, asio::as_tuple(asio::use_awaitable));
        if (!inspect_ec) describe_nodes_after_loss(nodes, k.token(), diag);
      } catch (const boost::system::system_error&) {
      }
    }
    throw_with(why, diag);
  }

  auto outcome = std::move(std::get<0>(raced));
  if (outcome.error) std::rethrow_exception(outcome.error);  // keeper releases in background

  // The cleanup below must run even if with_lock was cancelled as the work ended.
  co_await asio::this_coro::reset_cancellation_state();
  auto [stop_ec, held] = co_await k.async_stop(asio::as_tuple(asio::use_awaitable));
  if (stop_ec == error::lock_lost) {
    describe_hold_failure(k, resource, stop_ec, diag);
    throw_with(stop_ec, diag);
  }
  if (held.owns()) {
    auto [unlock_ec] =
        co_await c.async_unlock(std::move(held), asio::as_tuple(asio::use_awaitable));
    (void)unlock_ec;  // an unconfirmed release expires with its TTL; the work succeeded
  }
  if constexpr (!std::is_void_v<T>) co_return std::move(*outcome.value);
}

}  // namespace detail

/// Acquires `resource`, then runs `work(keeper&)` (a coroutine returning
/// `asio::awaitable<T>`) while the lock is renewed in the background. With
/// `opts.fenced`, the work reads the lock's fencing token from `keeper::fence()`.
///
/// - The work ends normally while the lock is valid: the lock is released and its result
///   returned. The work ends after the lock's deadline (this process or its io thread was
///   paused, or the work did not yield while the loss was due): with_lock throws
///   error_with_diagnostics(error::lock_lost) and the result is dropped, since the work
///   did not run wholly under the lock.
/// - The lock is lost (a majority no longer holds it, or its deadline arrives without a
///   confirmed renewal): the work is cancelled at once, before the deadline passes (its
///   pending and next asynchronous operations complete with operation_aborted), and when
///   it has ended with_lock throws error_with_diagnostics(error::lock_lost). A lost lock
///   stays lost.
/// - The work throws: the lock is released in the background at once and the exception
///   propagates. Cancelling with_lock cancels the work the same way and throws
///   error_with_diagnostics(error::cancelled).
/// - The client is shut down or destroyed (which releases the lock): the work is cancelled
///   the same way and with_lock throws error_with_diagnostics(error::shut_down).
/// - The lock cannot be acquired: the acquisition's error (wait_timeout, no_quorum, ...)
///   is thrown as error_with_diagnostics, whose what() names each node's answer, and the
///   work never runs. Renewal options the keeper refuses: invalid_ttl or invalid_argument, after
///   which the lock just taken is released at once.
/// error_with_diagnostics is a boost::system::system_error: code() is the error.
template <typename Work>
auto with_lock(client& c, std::string resource, hold_options opts, Work work)
    -> boost::asio::awaitable<detail::work_result_t<Work>> {
  return detail::run_with_lock(c, std::move(resource), opts, nullptr, std::move(work));
}

/// with_lock that also fills `diag` (which must outlive the returned awaitable) when it
/// throws one of its own errors: the acquisition's diagnostics (message and each node's
/// answer); for a lock lost while the work ran, why, and what each node holds once the
/// work has ended (read with async_inspect, which delays the throw by at most
/// connect_timeout + node_timeout): `yes` still our token, `held` another's, `refused`
/// the key is gone, `failed` no answer; for with_lock cancelled or the client shut down,
/// a message naming the resource (nodes empty). Cleared when with_lock starts; an
/// exception of the work's own leaves it empty.
template <typename Work>
auto with_lock(client& c, std::string resource, hold_options opts, diagnostics& diag, Work work)
    -> boost::asio::awaitable<detail::work_result_t<Work>> {
  return detail::run_with_lock(c, std::move(resource), opts, &diag, std::move(work));
}

/// with_lock for any completion token (callbacks, asio::use_future, asio::deferred, ...),
/// for code that is not itself a coroutine: runs with_lock as `asio::co_spawn` on the
/// client's executor and completes as co_spawn does, with (std::exception_ptr, T), or
/// (std::exception_ptr) for a void work. The pointer is null when the work returned, and
/// holds what with_lock would have thrown otherwise (error_with_diagnostics for its own
/// errors, the work's exception as it is). The work itself is still a coroutine
/// (`work(keeper&)` returning `asio::awaitable<T>`). Cancelling the operation (terminal)
/// cancels with_lock as above. `c` must outlive the operation.
template <typename Work,
          BOOST_ASIO_COMPLETION_TOKEN_FOR(detail::hold_signature_t<Work>) CompletionToken>
auto async_with_lock(client& c, std::string resource, hold_options opts, Work work,
                     CompletionToken&& token) {
  return boost::asio::co_spawn(
      c.get_executor(),
      detail::run_with_lock(c, std::move(resource), opts, nullptr, std::move(work)),
      std::forward<CompletionToken>(token));
}

/// async_with_lock that also fills `diag` as the with_lock form taking one does; `diag`
/// must outlive the operation.
template <typename Work,
          BOOST_ASIO_COMPLETION_TOKEN_FOR(detail::hold_signature_t<Work>) CompletionToken>
auto async_with_lock(client& c, std::string resource, hold_options opts, diagnostics& diag,
                     Work work, CompletionToken&& token) {
  return boost::asio::co_spawn(
      c.get_executor(), detail::run_with_lock(c, std::move(resource), opts, &diag, std::move(work)),
      std::forward<CompletionToken>(token));
}

}  // namespace redlock
