// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// The lock manager: Redlock over N independent Redis masters.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <concepts>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "redlock/claim.hpp"
#include "redlock/config.hpp"
#include "redlock/detail/buffer.hpp"
#include "redlock/detail/erased_handler.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/error.hpp"
#include "redlock/inspect.hpp"
#include "redlock/lock.hpp"
#include "redlock/multi_lock.hpp"
#include "redlock/resource_list.hpp"
#include "redlock/with_diagnostics.hpp"

namespace redlock {

class keeper;

namespace detail {
struct election_access;
struct testing_access;  // src/client/testing.hpp: hooks for our own tests

using lock_handler = erased_handler<void(boost::system::error_code, lock)>;
using void_handler = erased_handler<void(boost::system::error_code)>;

void start_lock(std::shared_ptr<client_state> s, buffer resource, lock_options opts, bool wait,
                diagnostics* diag, lock_handler h);
void start_unlock(std::shared_ptr<client_state> s, lock lk, diagnostics* diag, void_handler h);
void start_extend(std::shared_ptr<client_state> s, lock& lk, std::chrono::milliseconds ttl,
                  diagnostics* diag, void_handler h);
void start_shutdown(std::shared_ptr<client_state> s, void_handler h);
using inspect_handler = erased_handler<void(boost::system::error_code, std::vector<node_report>)>;
void start_inspect(std::shared_ptr<client_state> s, std::string resource, inspect_handler h);

using claims_handler = erased_handler<void(boost::system::error_code, std::vector<claim_result>)>;
using claim_handler = erased_handler<void(boost::system::error_code, claim_result)>;
using count_handler = erased_handler<void(boost::system::error_code, std::size_t)>;
void start_try_claim(std::shared_ptr<client_state> s, std::vector<std::string> resources,
                     std::chrono::milliseconds ttl, claim_mode mode, claims_handler h);
void start_claim(std::shared_ptr<client_state> s, std::string resource,
                 std::chrono::milliseconds ttl, claim_mode mode, claim_handler h);
void start_settle(std::shared_ptr<client_state> s, std::span<lock> claims,
                  std::chrono::milliseconds keep, count_handler h);
void start_settle_one(std::shared_ptr<client_state> s, lock& lk, std::chrono::milliseconds keep,
                      void_handler h);

using multi_lock_handler = erased_handler<void(boost::system::error_code, multi_lock)>;
void start_lock_all(std::shared_ptr<client_state> s, std::vector<std::string> resources,
                    lock_options opts, bool wait, diagnostics* diag, multi_lock_handler h);
void start_unlock_all(std::shared_ptr<client_state> s, multi_lock lk, diagnostics* diag,
                      void_handler h);
void start_extend_all(std::shared_ptr<client_state> s, multi_lock& lk,
                      std::chrono::milliseconds ttl, diagnostics* diag, void_handler h);

struct semaphore_access;  // redlock/semaphore.hpp

/// The lock types async_unlock and async_extend take.
template <typename T>
concept lock_type = std::same_as<T, lock> || std::same_as<T, multi_lock>;
}  // namespace detail

/// A Redlock client: one pipelined connection per node, shared by every operation.
///
/// Every operation runs on an internal strand of the executor given at construction,
/// so a client may be used from several threads of a multi-threaded io_context.
/// Completion handlers run on their associated executor (for co_await: the coroutine's).
/// Each async_* function accepts any completion token (use_awaitable, callbacks,
/// deferred, use_future), constrained by asio::completion_token_for, and defaults to
/// default_token_t (with_diagnostics(asio::use_awaitable)): `co_await c.async_lock(r,
/// opts);` throws error_with_diagnostics on failure. Each honours per-operation cancellation
/// for the types listed in docs/api.md ("Cancel") and ignores the others: lock, unlock,
/// extend, async_try_claim and async_claim honour terminal and partial (their commands may
/// already run on the servers, so never total), async_inspect all three, async_settle
/// terminal only, async_shutdown none. Objects passed by
/// reference (lock& to extend, diagnostics&) must outlive the operation; async_unlock
/// takes its lock by value.
class client {
  using ec_sig = void(boost::system::error_code);
  using lock_sig = void(boost::system::error_code, lock);
  using multi_lock_sig = void(boost::system::error_code, multi_lock);
  using inspect_sig = void(boost::system::error_code, std::vector<node_report>);

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
  /// no_quorum, validity_exhausted, wrong_type, cancelled, shut_down, and before anything
  /// is sent invalid_resource, invalid_ttl or invalid_wait (is_argument_error).
  /// On cancellation or failure, whatever part of the lock was taken is released.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(lock_sig) CompletionToken = default_token_t>
  auto async_lock(std::string_view resource, lock_options opts,
                  CompletionToken&& token = default_token_t{}) {
    return initiate_lock(resource, opts, true, nullptr, token);
  }
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(lock_sig) CompletionToken = default_token_t>
  auto async_lock(std::string_view resource, lock_options opts, diagnostics& diag,
                  CompletionToken&& token = default_token_t{}) {
    return initiate_lock(resource, opts, true, &diag, token);
  }

  /// One attempt, no waiting. Errors as async_lock, but contended instead of wait_timeout.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(lock_sig) CompletionToken = default_token_t>
  auto async_try_lock(std::string_view resource, lock_options opts,
                      CompletionToken&& token = default_token_t{}) {
    return initiate_lock(resource, opts, false, nullptr, token);
  }
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(lock_sig) CompletionToken = default_token_t>
  auto async_try_lock(std::string_view resource, lock_options opts, diagnostics& diag,
                      CompletionToken&& token = default_token_t{}) {
    return initiate_lock(resource, opts, false, &diag, token);
  }

  /// Releases `lk`, a lock or a multi_lock, on every node (compare-and-delete: only
  /// where a key still holds lk's token; for a set, each of its keys). Takes the lock
  /// over (pass it with std::move): the operation owns it from the call on, so nothing
  /// of the caller's must outlive it, and an operation that is never started releases it
  /// in the background, as a dropped lock is. Completes with success when a majority
  /// answered and at least one still held our token; not_held when none did (the lock
  /// had expired or been taken); no_quorum when too few answered (the keys left behind
  /// expire with their TTL); no_lock when `lk` held none (empty, moved from, released).
  template <detail::lock_type Lock,
            BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_unlock(Lock lk, CompletionToken&& token = default_token_t{}) {
    return initiate_unlock(std::move(lk), nullptr, token);
  }
  template <detail::lock_type Lock,
            BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_unlock(Lock lk, diagnostics& diag, CompletionToken&& token = default_token_t{}) {
    return initiate_unlock(std::move(lk), &diag, token);
  }

  /// Sets the TTL of `lk`, a lock or a multi_lock, to `ttl` on every node where the key
  /// still holds lk's token (compare-and-pexpire; a missing key is never re-created; a
  /// node where one key of a set is missing extends none). Succeeds with a majority
  /// within the remaining validity; lk.deadline() then moves. Errors: lock_lost (lk was
  /// already past its deadline or lost: nothing is sent), not_held (a majority no longer
  /// holds it; lk becomes lost for good), no_quorum (lk keeps its old deadline),
  /// validity_exhausted, no_lock, cancelled. `lk` is updated in place, so it must outlive
  /// the operation (with a deferred token: until the operation completes, not only until
  /// it is created).
  template <detail::lock_type Lock,
            BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_extend(Lock& lk, std::chrono::milliseconds ttl,
                    CompletionToken&& token = default_token_t{}) {
    return initiate_extend(lk, ttl, nullptr, token);
  }
  template <detail::lock_type Lock,
            BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_extend(Lock& lk, std::chrono::milliseconds ttl, diagnostics& diag,
                    CompletionToken&& token = default_token_t{}) {
    return initiate_extend(lk, ttl, &diag, token);
  }

  /// Claims (docs/claims.md): one attempt each, no waiting, no fencing, for many
  /// resources at once. Tries to take every name in `resources` with the same `ttl`, in
  /// one script call per node for the whole batch: a majority of the nodes is asked
  /// first, the others only for names still undecided. Per name the Redlock rule holds
  /// (a majority within validity); names not won are released wherever they were taken.
  /// Completes with (error_code, std::vector<claim_result>), one result per name, in
  /// order; a name repeated in the batch is claim_status::duplicate after its first.
  /// The error_code is for the whole call: too_many_resources (more than max_claim_batch
  /// names), invalid_resource (an empty name or one over 64 KiB), invalid_ttl (nothing is
  /// sent for any of these), shut_down
  /// or cancelled (terminal or partial: every name the batch took is released). An
  /// empty batch completes at once with no results. Completes within two node_timeouts.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                 std::vector<claim_result>))
                CompletionToken = default_token_t>
  auto async_try_claim(resource_list resources, std::chrono::milliseconds ttl,
                       CompletionToken&& token = default_token_t{}) {
    return async_try_claim(std::move(resources), ttl, claim_mode::spread_marker,
                           std::forward<CompletionToken>(token));
  }

  /// async_try_claim with the done marker the won claims become when settled with a keep
  /// time (claim_mode; the overload without it is claim_mode::spread_marker). A value
  /// outside claim_mode is invalid_argument.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                 std::vector<claim_result>))
                CompletionToken = default_token_t>
  auto async_try_claim(resource_list resources, std::chrono::milliseconds ttl, claim_mode mode,
                       CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, std::vector<claim_result>)>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::vector<std::string> r,
           std::chrono::milliseconds t, claim_mode m) {
          detail::start_try_claim(std::move(s), std::move(r), t, m, std::move(handler));
        },
        token, state_, std::move(resources).take(), ttl, mode);
  }

  /// One claim, batched for you: concurrent calls of this client (from any number of
  /// coroutines) are queued and sent together as async_try_claim batches, whatever is
  /// queued whenever a batch slot is free. Completes with (error_code, claim_result);
  /// the error_code is only for an argument error or shut_down: held, done and failed
  /// are outcomes in the result, not errors.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, claim_result))
                CompletionToken = default_token_t>
  auto async_claim(std::string_view resource, std::chrono::milliseconds ttl,
                   CompletionToken&& token = default_token_t{}) {
    return async_claim(resource, ttl, claim_mode::spread_marker,
                       std::forward<CompletionToken>(token));
  }

  /// async_claim with the done marker the claim becomes when settled with a keep time
  /// (claim_mode; a value outside it is invalid_argument). Calls of both modes share
  /// batches.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, claim_result))
                CompletionToken = default_token_t>
  auto async_claim(std::string_view resource, std::chrono::milliseconds ttl, claim_mode mode,
                   CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, claim_result)>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::string r,
           std::chrono::milliseconds t, claim_mode m) {
          detail::start_claim(std::move(s), std::move(r), t, m, std::move(handler));
        },
        token, state_, std::string{resource}, ttl, mode);
  }

  /// Ends won claims (or any locks of this client) in one script call per node: with
  /// `keep_for` zero each is released (compare-and-delete); otherwise each becomes, where
  /// it still holds our token, a done marker that lives `keep_for` (up to 30 days), and
  /// claims of that name then answer claim_status::done. Which marker is the claim's
  /// claim_mode: "done", also written in the background on the nodes the claim never
  /// went to (spread_marker, and any lock not taken as a claim), or the claim's own key
  /// with its state byte flipped, on the claim's nodes only (own_marker). The locks are
  /// emptied when the call starts and must outlive it. Completes with (error_code, settled):
  /// settled counts the locks done; the error_code is the first failure: not_held (a
  /// lock was empty, or its key had expired or been taken), no_quorum (a done marker did
  /// not reach a majority, or too few nodes answered a release), too_many_resources,
  /// invalid_argument (a keep time out of range).
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::size_t))
                CompletionToken = default_token_t>
  auto async_settle(std::span<lock> claims, std::chrono::milliseconds keep_for,
                    CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, std::size_t)>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::span<lock> c,
           std::chrono::milliseconds k) {
          detail::start_settle(std::move(s), c, k, std::move(handler));
        },
        token, state_, claims, keep_for);
  }

  /// async_settle for one lock, batched with concurrent calls like async_claim.
  /// Completes with error_code: success, not_held, no_quorum, invalid_argument, shut_down,
  /// no_lock (the lock object holds none: empty, moved from or already settled).
  /// `claim` is emptied when the call starts and must outlive it.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_settle(lock& claim, std::chrono::milliseconds keep_for,
                    CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, ec_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, lock* c,
           std::chrono::milliseconds k) {
          detail::start_settle_one(std::move(s), *c, k, std::move(handler));
        },
        token, state_, &claim, keep_for);
  }

  /// Acquires every resource in `resources`, all or none (docs/api.md, "Several resources
  /// at once"): one script call per node takes the whole set only if no key of it is
  /// held there, and the set is ours with a majority of such nodes within validity.
  /// Deadlock-free whatever order callers name the resources (no partial hold outlives
  /// an attempt). Retries, waits, fencing (one token per resource) and errors as
  /// async_lock; invalid_resource also for an empty set, an empty or too long name, or a
  /// name given twice, too_many_resources for more than max_multi_lock names, and
  /// invalid_argument for lock_options::fair. Completes with (error_code,
  /// multi_lock). On cancellation or failure, whatever the attempt took is released.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(multi_lock_sig) CompletionToken = default_token_t>
  auto async_lock_all(resource_list resources, lock_options opts,
                      CompletionToken&& token = default_token_t{}) {
    return initiate_lock_all(std::move(resources).take(), opts, true, nullptr, token);
  }
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(multi_lock_sig) CompletionToken = default_token_t>
  auto async_lock_all(resource_list resources, lock_options opts, diagnostics& diag,
                      CompletionToken&& token = default_token_t{}) {
    return initiate_lock_all(std::move(resources).take(), opts, true, &diag, token);
  }
  /// One attempt, no waiting. Errors as async_lock_all, but contended instead of wait_timeout.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(multi_lock_sig) CompletionToken = default_token_t>
  auto async_try_lock_all(resource_list resources, lock_options opts,
                          CompletionToken&& token = default_token_t{}) {
    return initiate_lock_all(std::move(resources).take(), opts, false, nullptr, token);
  }
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(multi_lock_sig) CompletionToken = default_token_t>
  auto async_try_lock_all(resource_list resources, lock_options opts, diagnostics& diag,
                          CompletionToken&& token = default_token_t{}) {
    return initiate_lock_all(std::move(resources).take(), opts, false, &diag, token);
  }

  /// Reads every node without taking anything: how it answers, whether it may vote, what
  /// the server says of itself and, unless `resource` is empty, what its lock key and
  /// fencing counter hold there. Waits for connections still being made (at most
  /// connect_timeout + node_timeout). Completes with (error_code, one node_report per
  /// node); a node that did not answer says why in its report, not in the error_code.
  /// Errors: invalid_resource (resource too long), cancelled, shut_down.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(inspect_sig) CompletionToken = default_token_t>
  auto async_inspect(std::string_view resource, CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, inspect_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::string r) {
          detail::start_inspect(std::move(s), std::move(r), std::move(handler));
        },
        token, state_, std::string{resource});
  }

  /// Releases every lock handed out and not yet released, sends what is queued
  /// (background releases included) and reads the replies already due (at most
  /// node_timeout), then closes every connection and stops reconnecting, so that
  /// io_context::run() can return. Operations still running complete with
  /// error::shut_down, and so do later ones.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(ec_sig) CompletionToken = default_token_t>
  auto async_shutdown(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, ec_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s) {
          detail::start_shutdown(std::move(s), std::move(handler));
        },
        token, state_);
  }

 private:
  friend class keeper;
  friend struct detail::semaphore_access;
  friend struct detail::election_access;
  friend struct detail::testing_access;

  // Each initiation takes the operation's diagnostics as a `diagnostics*` argument (null
  // when the caller passed none): with_diagnostics finds it there and supplies its own.

  template <typename CompletionToken>
  auto initiate_lock(std::string_view resource, lock_options opts, bool wait, diagnostics* diag,
                     CompletionToken& token) {
    return boost::asio::async_initiate<CompletionToken, lock_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, detail::buffer r, lock_options o,
           bool w, diagnostics* d) {
          detail::start_lock(std::move(s), std::move(r), o, w, d, std::move(handler));
        },
        token, state_, detail::buffer{resource}, opts, wait, diag);
  }

  template <typename CompletionToken>
  auto initiate_lock_all(std::vector<std::string> resources, lock_options opts, bool wait,
                         diagnostics* diag, CompletionToken& token) {
    return boost::asio::async_initiate<CompletionToken, multi_lock_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, std::vector<std::string> r,
           lock_options o, bool w, diagnostics* d) {
          detail::start_lock_all(std::move(s), std::move(r), o, w, d, std::move(handler));
        },
        token, state_, std::move(resources), opts, wait, diag);
  }

  // The lock is moved only where it must be: the initiation
  // receives it as an rvalue from every token, and start_unlock takes it over.
  template <typename Lock, typename CompletionToken>
  auto initiate_unlock(Lock&& lk, diagnostics* diag, CompletionToken& token) {
    return boost::asio::async_initiate<CompletionToken, ec_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, Lock&& l, diagnostics* d) {
          if constexpr (std::is_same_v<Lock, lock>)
            detail::start_unlock(std::move(s), std::move(l), d, std::move(handler));
          else
            detail::start_unlock_all(std::move(s), std::move(l), d, std::move(handler));
        },
        token, state_, std::move(lk), diag);
  }

  template <typename Lock, typename CompletionToken>
  auto initiate_extend(Lock& lk, std::chrono::milliseconds ttl, diagnostics* diag,
                       CompletionToken& token) {
    return boost::asio::async_initiate<CompletionToken, ec_sig>(
        [](auto handler, std::shared_ptr<detail::client_state> s, Lock* l,
           std::chrono::milliseconds t, diagnostics* d) {
          if constexpr (std::is_same_v<Lock, lock>)
            detail::start_extend(std::move(s), *l, t, d, std::move(handler));
          else
            detail::start_extend_all(std::move(s), *l, t, d, std::move(handler));
        },
        token, state_, &lk, ttl, diag);
  }

  executor_type ex_;
  std::shared_ptr<detail::client_state> state_;
};

}  // namespace redlock
