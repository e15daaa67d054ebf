// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Leader election on a Redlock lock: campaign, lead while the lock is held, resign, and
/// observe who leads (docs/api.md, "Leader election"; docs/safety.md for what it promises).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "redlock/client.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/error.hpp"
#include "redlock/keeper.hpp"
#include "redlock/with_diagnostics.hpp"
#include "redlock/with_lock.hpp"

namespace redlock {

/// Settings of a campaign.
struct campaign_options {
  /// TTL of the leadership lock and of each renewal. Default 10 s. A leader that stops
  /// renewing (crashed, paused, cut off) is replaced within about this long.
  std::chrono::milliseconds ttl = std::chrono::seconds{10};
  /// How long to wait for leadership. Default: until cancelled.
  std::chrono::milliseconds wait = wait_forever;
  /// Renewal settings (renew.ttl zero means `ttl`). A renew.ttl above `ttl` needs
  /// config::max_ttl set (and at least renew.ttl): the restart guard, which otherwise lasts
  /// `ttl`, must cover every TTL the leader sets; else the campaign fails with invalid_ttl.
  renew_options renew{};
};

/// Who leads an election, as an observer saw it.
struct leader_info {
  /// True when a leader is agreed by a majority of the nodes; false between leaders.
  bool leading = false;
  /// The leader's term (its lock's fencing token): higher for every later leader. With
  /// `leading` false, the last term this observer reported (0 before any).
  std::uint64_t term = 0;
  /// The value the leader campaigned with ("" with `leading` false).
  std::string value;
};

/// Settings of an election_observer.
struct observe_options {
  /// How often the nodes are read while nothing changes. Default 1 s. A resignation is
  /// heard sooner where releases are announced (config::wake_on_release); a new leader
  /// and a leader that lost its lock without releasing it are learnt by this polling.
  std::chrono::milliseconds poll_interval = std::chrono::seconds{1};
};

class leadership;

namespace detail {
struct leader_state;
struct observer_state;
struct election_access;
using leader_handler = erased_handler<void(boost::system::error_code, leadership)>;
using leader_info_handler = erased_handler<void(boost::system::error_code, leader_info)>;
void start_campaign(client& c, std::string name, std::string value, campaign_options opts,
                    diagnostics* diag, leader_handler h);
void start_resign(std::shared_ptr<leader_state> st, void_handler h);
void leadership_wait_lost(const std::shared_ptr<leader_state>& st, void_handler h);
std::shared_ptr<observer_state> make_observer(client& c, std::string_view name,
                                              observe_options opts);
void start_observe_next(std::shared_ptr<observer_state> st, leader_info_handler h);
}  // namespace detail

/// This client's leadership of an election, from async_campaign: the election's lock,
/// renewed in the background by a keeper, with the term and value observers see.
///
/// Movable, not copyable; not safe to use from several threads at once (valid(), lost()
/// and term() may be called from any thread). Dropping a leadership that still leads
/// resigns in the background (best effort), as a dropped lock is released. The client
/// must outlive it.
class leadership {
 public:
  leadership() = default;
  leadership(leadership&&) noexcept = default;
  leadership& operator=(leadership&& other) noexcept;
  leadership(const leadership&) = delete;
  leadership& operator=(const leadership&) = delete;
  ~leadership();

  /// The election's name and the value this client campaigned with ("" when empty).
  std::string_view name() const noexcept;
  std::string_view value() const noexcept;
  /// The term: the leadership lock's fencing token, strictly greater than every earlier
  /// leader's, also when a minority of nodes restarted empty. Check it in the storage the
  /// leader writes to (docs/safety.md). Zero when empty.
  std::uint64_t term() const noexcept;
  /// The keeper renewing the leadership lock (its deadline, validity, loss_reason).
  /// Undefined for an empty leadership.
  const keeper& lock_keeper() const noexcept;
  /// Leading now: the lock is held, not lost, and before its deadline (reads the clock).
  bool valid() const noexcept;
  /// True once the leadership lock was lost; final.
  bool lost() const noexcept;

  /// Completes with error::leadership_lost when leadership is lost (at once if it already
  /// is; it compares equal to condition::lock_lost), error::shut_down when the client is
  /// shut down, error::cancelled when the operation is cancelled or the leadership resigns
  /// first. Honours the cancellation types of keeper::async_wait_lost.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                CompletionToken = default_token_t>
  auto async_wait_lost(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, const std::shared_ptr<detail::leader_state>& st) {
          detail::leadership_wait_lost(st, std::move(handler));
        },
        token, st_);
  }

  /// Steps down: stops renewing and releases the lock (compare-and-delete on every node,
  /// announced to waiting campaigners), so that another campaigner can win at once; the
  /// leader's record beside the lock key goes in the same script where it names this
  /// leader.
  /// Completes as client::async_unlock does (success, not_held, no_quorum), with
  /// lock_lost when leadership had already been lost, no_lock for an empty leadership.
  /// The leadership is empty afterwards. Not cancellable (the release is already out).
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                CompletionToken = default_token_t>
  auto async_resign(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<detail::leader_state> st) {
          detail::start_resign(std::move(st), std::move(handler));
        },
        token, std::move(st_));
  }

 private:
  friend struct detail::election_access;
  void resign_in_background() noexcept;
  std::shared_ptr<detail::leader_state> st_;
};

/// Campaigns for election `name` with `value` (what observers are told, up to 64 KiB):
/// waits until this client holds the election's fenced lock, writes the leader's record
/// (term, value) beside it on the nodes, and completes with (error_code, leadership),
/// renewed in the background from then on. The lock key is `name` itself (with the key
/// prefix), so a lock client taking `name` competes with the campaigners.
///
/// Errors: as client::async_lock (wait_timeout after `opts.wait`, no_quorum, cancelled,
/// shut_down, invalid_resource, invalid_ttl, ...), invalid_argument for a value over
/// 64 KiB or renewal options a keeper refuses, invalid_ttl for a renewal TTL it refuses
/// (checked before anything is sent), leadership_lost when the lock's validity ran out
/// before the leader's record was written. On failure or cancellation nothing is held.
/// Honours terminal and partial cancellation while it waits for the lock (as async_lock);
/// once the lock is won the campaign completes (a cancellation then is ignored). `c` must
/// outlive the operation.
template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, leadership))
              CompletionToken = default_token_t>
auto async_campaign(client& c, std::string_view name, std::string_view value, campaign_options opts,
                    CompletionToken&& token = default_token_t{}) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, leadership)>(
      [](auto handler, client* cl, std::string n, std::string v, campaign_options o,
         diagnostics* d) {
        detail::start_campaign(*cl, std::move(n), std::move(v), o, d, std::move(handler));
      },
      token, &c, std::string{name}, std::string{value}, opts, static_cast<diagnostics*>(nullptr));
}

namespace detail {

template <typename Work>
using lead_result_t = typename std::invoke_result_t<Work&, leadership&>::value_type;

template <typename Work>
auto run_lead(client& c, std::string name, std::string value, campaign_options opts, Work work)
    -> boost::asio::awaitable<lead_result_t<Work>> {
  namespace asio = boost::asio;
  using namespace asio::experimental::awaitable_operators;
  using T = lead_result_t<Work>;

  leadership l = co_await async_campaign(c, name, value, opts);
  auto raced =
      co_await (run_work<T>(work, l) || l.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    // Lost (or lead cancelled): the work was cancelled and has ended; dropping the
    // leadership releases whatever may still be ours.
    const auto [ec] = std::get<1>(raced);
    const boost::system::error_code why = ec == error::leadership_lost || ec == error::shut_down
                                              ? ec
                                              : boost::system::error_code{error::cancelled};
    diagnostics diag;
    diag.message = "leadership of \"" + name + "\" ended: " + why.message();
    throw error_with_diagnostics(why, diag);
  }
  auto outcome = std::move(std::get<0>(raced));
  if (outcome.error) std::rethrow_exception(outcome.error);  // resigns in the background
  // The resignation must run even if lead was cancelled as the work ended.
  co_await asio::this_coro::reset_cancellation_state();
  auto [resign_ec] = co_await l.async_resign(asio::as_tuple(asio::use_awaitable));
  if (resign_ec == error::lock_lost) {
    // The work ended after the lock ran out: it did not run wholly as the leader.
    diagnostics diag;
    diag.message = "leadership of \"" + name + "\" ran out before the work ended";
    throw error_with_diagnostics(error::leadership_lost, diag);
  }
  // Any other outcome: the work ended while leading; an unconfirmed release expires with
  // its TTL.
  if constexpr (!std::is_void_v<T>) co_return std::move(*outcome.value);
}

}  // namespace detail

/// Campaigns for `name` with `value` (async_campaign), then runs `work(leadership&)` (a
/// coroutine returning `asio::awaitable<T>`) while leading, the leadership renewed in the
/// background. The work ends: the leadership is resigned (handed to the next
/// campaigner) and its result returned, unless the leadership had run out by then (the
/// process was paused past the lock's deadline): lead throws error_with_diagnostics
/// (error::leadership_lost) and drops the result. Leadership lost (error::leadership_lost,
/// equal to condition::lock_lost) or the client
/// shut down (error::shut_down): the work is cancelled at once, before the lock's deadline,
/// and when it has ended lead throws error_with_diagnostics with that code. The work
/// throws: leadership is resigned in the background and the exception propagates.
/// Cancelling lead cancels the campaign, or the work (error::cancelled). Campaign errors
/// are thrown as by async_campaign. The work's term is `leadership::term()`.
template <typename Work>
auto lead(client& c, std::string name, std::string value, campaign_options opts, Work work)
    -> boost::asio::awaitable<detail::lead_result_t<Work>> {
  return detail::run_lead(c, std::move(name), std::move(value), opts, std::move(work));
}

/// lead for any completion token: runs it as `asio::co_spawn` on the client's executor,
/// completing with (std::exception_ptr, T), or (std::exception_ptr) for a void work, as
/// async_with_lock does. `c` must outlive the operation.
template <typename Work, typename CompletionToken>
auto async_lead(client& c, std::string name, std::string value, campaign_options opts, Work work,
                CompletionToken&& token) {
  return boost::asio::co_spawn(
      c.get_executor(),
      detail::run_lead(c, std::move(name), std::move(value), opts, std::move(work)),
      std::forward<CompletionToken>(token));
}

/// Follows who leads election `name`, for clients that do not campaign: each
/// async_next() completes with the next change. A leader is reported once a majority of
/// the nodes hold its token in the election's lock key and its record beside it, and each
/// term at most once: a leader whose term is not above every term already reported is not
/// reported (a stale read, or the same leader again after a gap). "No leader" (leading
/// false) is reported first if a majority answer and agree on none, and after a leader
/// once a majority answer without that leader's token in the lock key (it can lead no
/// more); a read that only misses the leader's record, or too few answers, is no news.
/// Reads every poll_interval while nothing changes, and at once when a release is
/// announced.
///
/// Runs on the client's strand; one async_next at a time (last() from any thread).
/// Movable, not copyable. The client must outlive it.
class election_observer {
 public:
  election_observer() = default;
  /// Throws system_error(invalid_resource) for a name async_lock would refuse,
  /// invalid_argument for a poll interval under 1 ms, shut_down for a moved-from client.
  election_observer(client& c, std::string_view name, observe_options opts = {});
  election_observer(election_observer&&) noexcept = default;
  /// Stops following the election this one followed (as the destructor does), then takes
  /// `other`'s over.
  election_observer& operator=(election_observer&& other) noexcept;
  election_observer(const election_observer&) = delete;
  election_observer& operator=(const election_observer&) = delete;
  ~election_observer();

  /// The last report (leading false, term 0 before the first): what the latest completed
  /// async_next said, published before that completion. Any thread, also while an
  /// async_next runs (a copy taken under a lock).
  leader_info last() const;

  /// Completes with (error_code, leader_info) at the next change (the first call: with
  /// the state now, once it can be read). Errors: cancelled (any cancellation type; the
  /// observer stays usable), shut_down, no_lock for a moved-from observer. Nodes that do not
  /// answer are not an error: it reads again until a majority does.
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, leader_info))
                CompletionToken = default_token_t>
  auto async_next(CompletionToken&& token = default_token_t{}) {
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, leader_info)>(
        [](auto handler, std::shared_ptr<detail::observer_state> st) {
          detail::start_observe_next(std::move(st), std::move(handler));
        },
        token, st_);
  }

 private:
  void close() noexcept;
  std::shared_ptr<detail::observer_state> st_;
};

}  // namespace redlock
