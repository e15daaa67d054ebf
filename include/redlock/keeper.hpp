// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Automatic renewal of a held lock, and the moment it is lost.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "redlock/client.hpp"
#include "redlock/clock.hpp"
#include "redlock/lock.hpp"
#include "redlock/with_diagnostics.hpp"

namespace redlock {

namespace detail {
struct renewal_entry;
struct keeper_access;
/// keeper::async_wait_lost; a loss completes with `lost_as` (leadership uses its own code).
void keeper_wait_lost(std::shared_ptr<renewal_entry> e, void_handler h,
                      error lost_as = error::lock_lost);
void keeper_stop(std::shared_ptr<renewal_entry> e, lock_handler h);
}  // namespace detail

/// How a keeper renews its lock.
struct renew_options {
  /// TTL set by each renewal; zero (the default) means the lock's own ttl(). Above the
  /// lock's ttl() only with config::max_ttl set (the restart guard must cover it).
  std::chrono::milliseconds ttl{0};
  /// Renew once this fraction of the TTL has passed since the last successful renewal
  /// started. In (0, 0.9]; default 1/3, so two renewals can fail before the lock is lost.
  double fraction = 1.0 / 3.0;
  /// Stop renewing once the lock has been held this long (zero: no cap). The lock then
  /// runs out at its deadline and is reported lost, like any other loss.
  std::chrono::milliseconds max_hold{0};
  /// How long before the validity deadline a lock whose renewal is not confirmed is
  /// declared lost; zero (the default) means ttl / 50, clamped to [1 ms, 100 ms]. The
  /// loss is always signalled before the deadline, never after it.
  std::chrono::milliseconds loss_margin{0};
};

/// Keeps one lock alive in the background and says, once and for good, when it is lost.
///
/// Renewal is compare-and-pexpire on every node (a missing key is never re-created) and
/// needs a majority within the remaining validity; a failed renewal is retried with
/// jitter while validity remains. Renewals of all the keepers of one client that fall
/// due close together share one script call per node (up to 256 locks per call).
/// The lock is lost when a majority no longer holds its token, or when its deadline
/// (minus the loss margin) arrives without a confirmed renewal; it then stays lost.
///
/// Runs on the client's strand; deadline(), valid(), validity() and lost() may be called
/// from any thread. Movable, not copyable. The client must outlive the keeper.
class keeper {
 public:
  keeper() = default;
  /// Takes `lk` over and starts renewing it. Throws system_error: invalid_ttl for a
  /// renewal TTL the client would refuse, invalid_argument for other bad options or a
  /// lock that is not held.
  keeper(client& c, lock&& lk, renew_options opts = {});
  /// Stops renewing; a lock still held is released in the background (best effort).
  ~keeper();
  keeper(keeper&&) noexcept = default;
  keeper& operator=(keeper&& other) noexcept;
  keeper(const keeper&) = delete;
  keeper& operator=(const keeper&) = delete;

  /// The resource and token of the lock kept (empty once it was handed back or for a
  /// moved-from keeper); views valid while the keeper keeps the lock.
  std::string_view resource() const noexcept;
  std::string_view token() const noexcept;
  /// The lock's fencing token (lock::fence()): zero for a lock taken without fencing or an
  /// empty keeper. Fixed for the keeper's life; any thread.
  std::uint64_t fence() const noexcept;
  /// The current validity deadline (moves with each renewal).
  boot_clock::time_point deadline() const noexcept;
  std::chrono::milliseconds validity() const noexcept;
  /// Held, not lost, and before the deadline (reads the clock); false once the client was
  /// shut down or destroyed (which releases the lock).
  bool valid() const noexcept;
  bool lost() const noexcept;
  /// Why the lock is no longer held, for a person or a branch, without an observer: empty
  /// while it is; error::not_held when a majority of nodes refused a renewal (our token is
  /// gone there: it expired or was deleted or taken), error::lock_lost when its deadline
  /// came without a confirmed renewal (nodes unreachable or too slow), error::shut_down
  /// when the client was shut down or destroyed. Any thread.
  boost::system::error_code loss_reason() const noexcept;

  /// Completes with error::lock_lost when the lock is lost (at once if it already is),
  /// with error::shut_down when the client is shut down or destroyed (the lock is then
  /// released and no longer valid), with error::cancelled if the operation is cancelled
  /// or the keeper stopped first.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                CompletionToken = default_token_t>
  auto async_wait_lost(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<detail::renewal_entry> e) {
          detail::keeper_wait_lost(std::move(e), std::move(handler));
        },
        token, entry_);
  }

  /// Stops renewing and hands the lock back, with its latest deadline (to unlock it, or
  /// to keep it without renewal). Completes with lock_lost (and an empty lock) if it was
  /// lost, or if its deadline has passed by the time the stop runs on the strand, declared
  /// lost or not (the process was paused, or its timer had not run yet): what may still be
  /// ours on the nodes is then released in the background. The keeper is empty afterwards.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, lock))
                CompletionToken = default_token_t>
  auto async_stop(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, lock)>(
        [](auto handler, std::shared_ptr<detail::renewal_entry> e) {
          detail::keeper_stop(std::move(e), std::move(handler));
        },
        token, std::move(entry_));
  }

 private:
  friend struct detail::keeper_access;
  void stop_in_background() noexcept;
  std::shared_ptr<detail::renewal_entry> entry_;
};

}  // namespace redlock
