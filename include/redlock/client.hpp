#pragma once
/// The lock manager: Redlock over N independent Redis masters.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "redlock/lock.hpp"

namespace redlock {

class keeper;

namespace detail {
using lock_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lock)>;
using void_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

void start_lock(std::shared_ptr<client_state> s, std::string resource, lock_options opts,
                bool wait, diagnostics* diag, lock_handler h);
void start_unlock(std::shared_ptr<client_state> s, lock& lk, diagnostics* diag, void_handler h);
void start_extend(std::shared_ptr<client_state> s, lock& lk, std::chrono::milliseconds ttl,
                  diagnostics* diag, void_handler h);
void start_shutdown(std::shared_ptr<client_state> s, void_handler h);
}  // namespace detail

/// A Redlock client: one pipelined connection per node, shared by every operation.
///
/// Every operation runs on an internal strand of the executor given at construction,
/// so a client may be used from several threads of a multi-threaded io_context.
/// Completion handlers run on their associated executor (for co_await: the coroutine's).
/// Each async_* function accepts any completion token (use_awaitable, callbacks,
/// deferred, use_future) and honours per-operation cancellation (terminal, partial and
/// total are all treated as "stop now"). Objects passed by reference (lock&,
/// diagnostics&) must outlive the operation.
class client {
 public:
  using executor_type = boost::asio::any_io_executor;

  /// Validates `cfg` and starts connecting to every node. Throws
  /// boost::system::system_error(error::invalid_config) naming the bad field.
  client(executor_type ex, config cfg);
  /// Starts a shutdown (see async_shutdown) without waiting for it: while the executor's
  /// io_context keeps running, locks still held are released and queued releases sent.
  ~client();
  client(client&&) noexcept = default;
  client& operator=(client&&) noexcept;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  executor_type get_executor() const noexcept { return ex_; }
  /// Number of nodes; a lock needs node_count() / 2 + 1 of them.
  std::size_t node_count() const noexcept;

  /// Acquires `resource`, retrying with jittered delays while it is contended or too few
  /// nodes answer, until `opts.wait` has passed (the last attempt starts by then).
  /// Completes with (error_code, lock). Errors: wait_timeout (still held by another),
  /// no_quorum, validity_exhausted, wrong_type, invalid_argument, cancelled, shut_down.
  /// On cancellation or failure, whatever part of the lock was taken is released.
  template <typename CompletionToken>
  auto async_lock(std::string_view resource, lock_options opts, CompletionToken&& token) {
    return initiate_lock(resource, opts, true, nullptr, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken>
  auto async_lock(std::string_view resource, lock_options opts, diagnostics& diag,
                  CompletionToken&& token) {
    return initiate_lock(resource, opts, true, &diag, std::forward<CompletionToken>(token));
  }

  /// One attempt, no waiting. Errors as async_lock, but contended instead of wait_timeout.
  template <typename CompletionToken>
  auto async_try_lock(std::string_view resource, lock_options opts, CompletionToken&& token) {
    return initiate_lock(resource, opts, false, nullptr, std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken>
  auto async_try_lock(std::string_view resource, lock_options opts, diagnostics& diag,
                      CompletionToken&& token) {
    return initiate_lock(resource, opts, false, &diag, std::forward<CompletionToken>(token));
  }

  /// Releases `lk` on every node (compare-and-delete: only where the key still holds
  /// lk's token). `lk` is emptied when the operation starts. Completes with success when
  /// a majority answered and at least one still held our token; not_held when none did
  /// (the lock had expired or been taken); no_quorum when too few answered (the keys
  /// left behind expire with their TTL).
  template <typename CompletionToken>
  auto async_unlock(lock& lk, CompletionToken&& token) {
    return initiate_void(
        [&lk](auto s, detail::void_handler h) {
          detail::start_unlock(std::move(s), lk, nullptr, std::move(h));
        },
        std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken>
  auto async_unlock(lock& lk, diagnostics& diag, CompletionToken&& token) {
    return initiate_void(
        [&lk, &diag](auto s, detail::void_handler h) {
          detail::start_unlock(std::move(s), lk, &diag, std::move(h));
        },
        std::forward<CompletionToken>(token));
  }

  /// Sets the lock's TTL to `ttl` on every node where the key still holds lk's token
  /// (compare-and-pexpire; a missing key is never re-created). Succeeds with a majority
  /// within the remaining validity; lk.deadline() then moves. Errors: lock_lost (lk was
  /// already past its deadline or lost: nothing is sent), not_held (a majority no longer
  /// holds it; lk becomes lost for good), no_quorum (lk keeps its old deadline),
  /// validity_exhausted, cancelled. `lk` must outlive the operation.
  template <typename CompletionToken>
  auto async_extend(lock& lk, std::chrono::milliseconds ttl, CompletionToken&& token) {
    return initiate_void(
        [&lk, ttl](auto s, detail::void_handler h) {
          detail::start_extend(std::move(s), lk, ttl, nullptr, std::move(h));
        },
        std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken>
  auto async_extend(lock& lk, std::chrono::milliseconds ttl, diagnostics& diag,
                    CompletionToken&& token) {
    return initiate_void(
        [&lk, ttl, &diag](auto s, detail::void_handler h) {
          detail::start_extend(std::move(s), lk, ttl, &diag, std::move(h));
        },
        std::forward<CompletionToken>(token));
  }

  /// Releases every lock handed out and not yet released, sends what is queued
  /// (background releases included) and reads the replies already due (at most
  /// node_timeout), then closes every connection and stops reconnecting, so that
  /// io_context::run() can return. Operations still running complete with
  /// error::shut_down, and so do later ones.
  template <typename CompletionToken>
  auto async_shutdown(CompletionToken&& token) {
    return initiate_void(
        [](auto s, detail::void_handler h) { detail::start_shutdown(std::move(s), std::move(h)); },
        std::forward<CompletionToken>(token));
  }

 private:
  friend class keeper;

  template <typename CompletionToken>
  auto initiate_lock(std::string_view resource, lock_options opts, bool wait, diagnostics* diag,
                     CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, lock)>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::string r,
           lock_options o, bool w, diagnostics* d) {
          detail::start_lock(std::move(s), std::move(r), o, w, d, std::move(handler));
        },
        token, state_, std::string{resource}, opts, wait, diag);
  }

  template <typename Start, typename CompletionToken>
  auto initiate_void(Start start, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [start](auto handler, std::shared_ptr<detail::client_state> s) mutable {
          start(std::move(s), std::move(handler));
        },
        token, state_);
  }

  executor_type ex_;
  std::shared_ptr<detail::client_state> state_;
};

}  // namespace redlock
