// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// with_diagnostics: a completion token adapter that turns an operation's error_code into
/// an exception carrying its diagnostics, and the default token of every async_* function.

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "redlock/diagnostics.hpp"

namespace redlock {

/// Adapts `token` to an operation that completes with (error_code, T...): the token sees
/// (std::exception_ptr, T...) instead, the pointer holding an error_with_diagnostics when
/// the operation failed (null on success). With use_awaitable, a failure therefore
/// throws error_with_diagnostics, whose what() says why. (With asio::deferred it works
/// for callbacks; Boost 1.81 cannot co_await such an operation that also has a value.)
///
/// When the call passed no `diagnostics&`, the adapter gives the operation one of its own
/// (one allocation per call, with the handler's associated allocator; by default Asio's
/// recycling allocator, which reuses memory per thread), read only on failure. An
/// operation that keeps no diagnostics (shutdown, claims, keeper) throws
/// error_with_diagnostics with empty ones.
template <typename CompletionToken>
struct with_diagnostics_t {
  CompletionToken token{};
};

/// with_diagnostics(asio::use_awaitable), with_diagnostics(callback), ...
template <typename CompletionToken>
constexpr with_diagnostics_t<std::decay_t<CompletionToken>> with_diagnostics(
    CompletionToken&& token) {
  return {std::forward<CompletionToken>(token)};
}

/// The completion token of every async_* function called without one:
/// with_diagnostics(asio::use_awaitable). `co_await c.async_lock("r", opts);` then works
/// in an asio::awaitable<T> (whose executor is any_io_executor, the default) and throws
/// error_with_diagnostics on failure; not awaited, the operation never starts (a lock
/// given to it is released in the background, as a dropped lock is).
///
/// Not asio::deferred, as Boost.MySQL 1.85 chooses: Boost 1.81's Asio cannot co_await a
/// deferred operation that completes with (std::exception_ptr, T) (its
/// awaitable_async_op_handler does not compile for that signature), and the executor
/// type, any_io_executor, names no default token of its own in 1.81.
using default_token_t = with_diagnostics_t<boost::asio::use_awaitable_t<>>;

namespace detail {

template <typename Signature>
struct with_diagnostics_signature;

template <typename R, typename... Args>
struct with_diagnostics_signature<R(boost::system::error_code, Args...)> {
  using type = R(std::exception_ptr, Args...);
};

// The diagnostics the adapter supplies when the caller passed none, in memory from the
// handler's allocator; freed before the handler runs, as Asio frees an operation's.
template <typename Alloc>
class owned_diagnostics {
  using traits = std::allocator_traits<Alloc>;

 public:
  owned_diagnostics(const Alloc& alloc, bool needed) : alloc_(alloc) {
    if (!needed) return;
    p_ = traits::allocate(alloc_, 1);
    traits::construct(alloc_, p_);
  }
  owned_diagnostics(owned_diagnostics&& other) noexcept
      : alloc_(other.alloc_), p_(std::exchange(other.p_, nullptr)) {}
  owned_diagnostics& operator=(owned_diagnostics&&) = delete;
  ~owned_diagnostics() { reset(); }

  diagnostics* get() const noexcept { return p_; }
  void reset() noexcept {
    if (!p_) return;
    traits::destroy(alloc_, p_);
    traits::deallocate(alloc_, p_, 1);
    p_ = nullptr;
  }

 private:
  Alloc alloc_;
  diagnostics* p_ = nullptr;
};

template <typename Handler, typename Alloc>
struct with_diagnostics_handler {
  Handler handler;
  owned_diagnostics<Alloc> owned;
  const diagnostics* diag;  // the caller's, the owned one, or null (an op without any)

  template <typename... Args>
  void operator()(boost::system::error_code ec, Args&&... args) {
    std::exception_ptr ex;
    if (ec) {
      diagnostics d;
      if (owned.get())
        d = std::move(*owned.get());
      else if (diag)
        d = *diag;  // the caller's stay as they are
      ex = std::make_exception_ptr(error_with_diagnostics(ec, std::move(d)));
    }
    owned.reset();
    std::move(handler)(std::move(ex), std::forward<Args>(args)...);
  }
};

// The operation's diagnostics* argument, or the one supplied in its place.
template <typename Arg>
decltype(auto) supply_diagnostics(Arg&& arg, diagnostics* supplied) {
  if constexpr (std::is_same_v<std::decay_t<Arg>, diagnostics*>) {
    (void)arg;
    return supplied;
  } else {
    (void)supplied;
    return std::forward<Arg>(arg);
  }
}

template <typename Arg>
diagnostics* given_diagnostics(const Arg& arg) {
  if constexpr (std::is_same_v<std::decay_t<Arg>, diagnostics*>) {
    return arg;
  } else {
    (void)arg;
    return nullptr;
  }
}

template <typename Initiation>
struct with_diagnostics_init {
  Initiation init;

  template <typename Handler, typename... Args>
  void operator()(Handler&& handler, Args&&... args) && {
    launch(std::move(init), std::forward<Handler>(handler), std::forward<Args>(args)...);
  }
  template <typename Handler, typename... Args>
  void operator()(Handler&& handler, Args&&... args) const& {
    launch(init, std::forward<Handler>(handler), std::forward<Args>(args)...);
  }

 private:
  template <typename Init, typename Handler, typename... Args>
  static void launch(Init&& init, Handler&& handler, Args&&... args) {
    // Our initiations take the operation's diagnostics as a diagnostics* argument (null
    // when the caller passed none); some operations keep none.
    constexpr bool takes_diagnostics = (std::is_same_v<std::decay_t<Args>, diagnostics*> || ...);
    diagnostics* given = nullptr;
    ((given = given ? given : given_diagnostics(args)), ...);
    using base_alloc = boost::asio::associated_allocator_t<std::decay_t<Handler>,
                                                           boost::asio::recycling_allocator<void>>;
    using alloc = typename std::allocator_traits<base_alloc>::template rebind_alloc<diagnostics>;
    owned_diagnostics<alloc> owned{alloc(boost::asio::get_associated_allocator(
                                       handler, boost::asio::recycling_allocator<void>())),
                                   takes_diagnostics && !given};
    diagnostics* diag = given ? given : owned.get();
    std::forward<Init>(init)(
        with_diagnostics_handler<std::decay_t<Handler>, alloc>{std::forward<Handler>(handler),
                                                               std::move(owned), diag},
        supply_diagnostics(std::forward<Args>(args), diag)...);
  }
};

}  // namespace detail
}  // namespace redlock

template <typename CompletionToken, typename Signature>
struct boost::asio::async_result<redlock::with_diagnostics_t<CompletionToken>, Signature>
    : boost::asio::async_result<
          CompletionToken, typename redlock::detail::with_diagnostics_signature<Signature>::type> {
  template <typename Initiation, typename RawToken, typename... Args>
  static auto initiate(Initiation&& initiation, RawToken&& token, Args&&... args) {
    using inner = std::conditional_t<std::is_const_v<std::remove_reference_t<RawToken>>,
                                     const CompletionToken, CompletionToken>;
    return boost::asio::async_initiate<
        inner, typename redlock::detail::with_diagnostics_signature<Signature>::type>(
        redlock::detail::with_diagnostics_init<std::decay_t<Initiation>>{
            std::forward<Initiation>(initiation)},
        token.token, std::forward<Args>(args)...);
  }
};

template <template <typename, typename> class Associator, typename Handler, typename Alloc,
          typename DefaultCandidate>
struct boost::asio::associator<
    Associator, redlock::detail::with_diagnostics_handler<Handler, Alloc>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const redlock::detail::with_diagnostics_handler<Handler, Alloc>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const redlock::detail::with_diagnostics_handler<Handler, Alloc>& h,
                  const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
