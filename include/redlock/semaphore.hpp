// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Semaphores: at most N holders of a resource at once, each holding one of N permits.
///
/// Each permit is an ordinary Redlock lock on its own key (key prefix +
/// "redlock:permit:{" + resource + "}:" + index, a name no plain lock call accepts): the
/// bound follows from each permit key's mutual exclusion, under the same fault model as a
/// single lock (docs/safety.md, "Semaphores"). The nodes record the number of permits the
/// semaphore is used with, and every permit attempt checks it in the script that takes the
/// permit: a call with another count is refused (error::permit_count_mismatch).

#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/detail/erased_handler.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/lock.hpp"
#include "redlock/with_diagnostics.hpp"

namespace redlock {

/// One of the N permits of a resource, as handed out by async_lock_permit.
///
/// `lock` is an ordinary lock on the permit's key: release it with client::async_unlock,
/// extend it with client::async_extend, keep it with keeper or with_lock, read its
/// validity and fencing token as any lock's. A value: movable, not copyable; dropped
/// while held, its lock is released in the background as any lock is.
struct permit {
  /// The lock of this permit's key; its resource() is permit_resource(resource, index).
  redlock::lock lock{};
  /// Which permit, 0 to permits - 1.
  std::size_t index = 0;

  /// The permit's fencing token (lock_options::fenced): strictly greater than that of
  /// every earlier holder of the same permit index (not across indices). Zero when the
  /// permit was taken without fencing.
  std::uint64_t fence() const noexcept { return lock.fence(); }
  /// True while the permit's lock is valid (see lock::valid).
  bool valid() const noexcept { return lock.valid(); }
  explicit operator bool() const noexcept { return valid(); }
};

/// The resource name of permit `index` of `resource`: the name its lock is taken under
/// (the key is the client's key prefix + this name), `redlock:permit:{resource}:index`.
/// Plain lock calls refuse every name that starts with `redlock:permit`, so no plain lock
/// can take a permit.
std::string permit_resource(std::string_view resource, std::size_t index);
/// The name of the nodes' record of `resource`'s permit count (after the key prefix),
/// `redlock:permit:{resource}:count`: the count the first permit was taken under, checked
/// by every permit attempt. It has a TTL (see async_lock_permit).
std::string permit_count_resource(std::string_view resource);

namespace detail {
using permit_handler = erased_handler<void(boost::system::error_code, permit)>;
void start_lock_permit(std::shared_ptr<client_state> s, std::string resource, std::size_t permits,
                       lock_options opts, bool wait, diagnostics* diag, permit_handler h);

/// Reaches the client's state for the semaphore's initiating functions.
struct semaphore_access {
  static const std::shared_ptr<client_state>& state(const client& c) noexcept { return c.state_; }

  template <typename CompletionToken>
  static auto initiate(client& c, std::string_view resource, std::size_t permits, lock_options opts,
                       bool wait, diagnostics* diag, CompletionToken& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, permit)>(
        [](auto handler, std::shared_ptr<client_state> s, std::string r, std::size_t n,
           lock_options o, bool w, diagnostics* d) {
          start_lock_permit(std::move(s), std::move(r), n, o, w, d, std::move(handler));
        },
        token, state(c), std::string{resource}, permits, opts, wait, diag);
  }
};
}  // namespace detail

/// Takes one of `permits` permits of `resource`, whichever is free: at most `permits`
/// callers (of any client) hold one at a time. Tries each permit once per sweep,
/// starting at a random one; while all are held (or too few nodes answer) it waits and
/// sweeps again, woken by the release of any permit of the resource (the client's
/// retry_delay is the fallback for a release it did not hear), until `opts.wait`.
/// lock_options as for async_lock (`fenced`: the permit's own token); `fair` is refused.
/// Completes with (error_code, permit). Errors: wait_timeout (every permit still held),
/// no_quorum, validity_exhausted, wrong_type (every permit key of another type),
/// permit_count_mismatch (at once, without waiting: the nodes record `resource` with
/// another number of permits; the diagnostics name it), cancelled, shut_down, and before
/// any I/O invalid_argument (permits 0 or above max_permits, or fair mode),
/// invalid_resource (empty, or starting with '}', which cannot be a hash tag),
/// invalid_ttl, invalid_wait. Honours terminal and partial cancellation; whatever the
/// attempt in flight took is released.
///
/// The count's record (permit_count_resource) is written by the first grant where none
/// lives, with a TTL of twice the permit's TTL; every later grant, extension and renewal of
/// a permit raises its TTL to at least twice the permit's new TTL (never lowers it). So it
/// outlives every permit of its node; after the last release it lives out its TTL (up to
/// twice the longest permit TTL), and only then may the semaphore be used with another
/// count. A node restarted empty forgets it as it forgets the permits (the restart guard
/// covers both).
template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
              CompletionToken = default_token_t>
auto async_lock_permit(client& c, std::string_view resource, std::size_t permits, lock_options opts,
                       CompletionToken&& token = default_token_t{}) {
  return detail::semaphore_access::initiate(c, resource, permits, opts, true, nullptr, token);
}
template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
              CompletionToken = default_token_t>
auto async_lock_permit(client& c, std::string_view resource, std::size_t permits, lock_options opts,
                       diagnostics& diag, CompletionToken&& token = default_token_t{}) {
  return detail::semaphore_access::initiate(c, resource, permits, opts, true, &diag, token);
}

/// One sweep, no waiting: each permit tried once. Errors as async_lock_permit, but
/// contended (every permit held) instead of wait_timeout.
template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
              CompletionToken = default_token_t>
auto async_try_lock_permit(client& c, std::string_view resource, std::size_t permits,
                           lock_options opts, CompletionToken&& token = default_token_t{}) {
  return detail::semaphore_access::initiate(c, resource, permits, opts, false, nullptr, token);
}
template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
              CompletionToken = default_token_t>
auto async_try_lock_permit(client& c, std::string_view resource, std::size_t permits,
                           lock_options opts, diagnostics& diag,
                           CompletionToken&& token = default_token_t{}) {
  return detail::semaphore_access::initiate(c, resource, permits, opts, false, &diag, token);
}

}  // namespace redlock
