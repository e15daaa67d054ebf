// SPDX-License-Identifier: BSL-1.0
// Leader election (include/redlock/election.hpp) on the lock, the keeper and the
// election's two rounds (src/client/election_round.hpp). Every Asio template of it is
// here: campaign, resignation, the record's refresher and the observer are coroutines on
// the client's strand (off the hot path: one per campaign or observer change, not per
// request), entered from the public templates through any_completion_handler.

#include "redlock/election.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "client/client_state.hpp"
#include "client/election_round.hpp"
#include "guard/renewal.hpp"
#include "quorum/rules.hpp"

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using boot_timer = asio::basic_waitable_timer<boot_clock>;
constexpr auto tupled = asio::as_tuple(asio::use_awaitable);

struct election_access {
  static const std::shared_ptr<client_state>& state(const client& c) { return c.state_; }
  static std::shared_ptr<leader_state>& state(leadership& l) { return l.st_; }
};

struct leader_state {
  explicit leader_state(std::shared_ptr<client_state> state)
      : s(std::move(state)), timer(s->strand) {}
  std::shared_ptr<client_state> s;
  keeper k;
  std::string name, value, lock_key, record_key;
  std::uint64_t term = 0;
  std::chrono::milliseconds record_ttl{0};
  boot_timer timer;  // the record's refresher waits on it (on the strand)
  // Resigned or dropped: the refresher ends. Set from the thread that drops the leadership.
  std::atomic<bool> stopped{false};
};

struct observer_state {
  explicit observer_state(std::shared_ptr<client_state> state)
      : s(std::move(state)), timer(s->strand) {}
  std::shared_ptr<client_state> s;
  std::string lock_key, record_key;
  observe_options opts;
  observer_memory memory;  // what it reported (on the strand)
  // The last report as election_observer::last() reads it, from any thread.
  mutable std::mutex published_mutex;
  leader_info published;
  boot_timer timer;     // between reads (on the strand)
  bool closed = false;  // the observer was destroyed (on the strand)
  bool woken = false;   // a release or a new record was announced since the last read
  // Its entries in client_state::release_listeners (lock key, record key), once listening.
  std::vector<std::unordered_multimap<std::string, std::function<void()>>::iterator> listening;
};

namespace {

[[noreturn]] void fail(error_code ec, const char* what = "") {
  throw boost::system::system_error(ec, what);
}

// What a coroutine's exception says, for a handler that takes an error_code: our own
// errors travel as system_error; a cancellation surfaces as operation_aborted (thrown by
// the next co_await after it).
error_code error_of(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& x) {
    if (x.code() == asio::error::operation_aborted) return error::cancelled;
    return x.code();
  } catch (const std::bad_alloc&) {
    return make_error_code(std::errc::not_enough_memory);
  } catch (...) {
    return make_error_code(std::errc::state_not_recoverable);
  }
}

// Runs `a` on the client's strand and completes `h` with its result on the handler's
// executor; the handler's cancellation slot cancels the coroutine.
template <typename T>
void spawn_for(const std::shared_ptr<client_state>& s, asio::awaitable<T> a,
               erased_handler<void(error_code, T)> h) {
  auto done = take_handler(std::move(h), s);
  const auto slot = done.slot();
  asio::co_spawn(s->strand, std::move(a),
                 asio::bind_cancellation_slot(
                     slot, [done = std::move(done)](std::exception_ptr e, T v) mutable {
                       done.dispatch(error_of(e), std::move(v));
                     }));
}

void spawn_for(const std::shared_ptr<client_state>& s, asio::awaitable<error_code> a,
               void_handler h) {
  auto done = take_handler(std::move(h), s);
  const auto slot = done.slot();
  asio::co_spawn(s->strand, std::move(a),
                 asio::bind_cancellation_slot(
                     slot, [done = std::move(done)](std::exception_ptr e, error_code ec) mutable {
                       done.dispatch(e ? error_of(e) : ec);
                     }));
}

template <typename Token>
auto write_record(const leader_state& st, Token&& token) {
  return asio::async_initiate<Token, void(error_code, election_round_result)>(
      [&st](auto h) {
        start_election_write(st.s, st.lock_key, st.record_key, std::string{st.k.token()}, st.term,
                             st.value, st.record_ttl, std::move(h));
      },
      token);
}

template <typename Token>
auto read_election(const observer_state& st, Token&& token) {
  return asio::async_initiate<Token, void(error_code, election_round_result)>(
      [&st](auto h) { start_election_read(st.s, st.lock_key, st.record_key, std::move(h)); },
      token);
}

bool majority(const client_state& s, std::size_t n) {
  return n >= quorum(s.size());
}

// The record outlives a missed refresh or two (a record without its lock key is never
// trusted, so living on after the leader costs only memory), within the 24 h any key we
// write may live.
std::chrono::milliseconds record_ttl_for(const campaign_options& o) {
  using namespace std::chrono_literals;
  const auto longest = std::max(o.ttl, o.renew.ttl);
  return std::min<std::chrono::milliseconds>(2 * longest, 24h);
}

// Rewrites the record every quarter of its TTL while leading (sooner, at the client's
// retry delay, while it has not reached a majority), so that observers keep seeing it.
// Ends at once when leadership ends (resigned, lost, or the client shut down), so that a
// shut-down client's io_context::run() is not held up by its timer.
asio::awaitable<void> keep_record(std::shared_ptr<leader_state> st, bool on_majority) {
  using namespace asio::experimental::awaitable_operators;
  for (;;) {
    st->timer.expires_after(on_majority ? st->record_ttl / 4 : st->s->cfg.retry_delay);
    auto woke = co_await (st->timer.async_wait(tupled) || st->k.async_wait_lost(tupled));
    if (woke.index() == 1 || st->stopped || !st->k.valid()) co_return;
    auto [ec, found] = co_await write_record(*st, tupled);
    if (ec) co_return;  // shut down
    on_majority = majority(*st->s, found.written);
  }
}

void stop_refresher(const std::shared_ptr<leader_state>& st) noexcept {
  // If the hop cannot be allocated, the refresher ends at its next wake-up instead.
  st->stopped = true;
  try {
    asio::dispatch(st->s->strand, [st] { st->timer.cancel(); });
  } catch (...) {
  }
}

asio::awaitable<leadership> campaign(client& c, std::string name, std::string value,
                                     campaign_options o, diagnostics* diag) {
  if (value.size() > max_resource_bytes) {
    if (diag) diag->message = "campaign: the value is over 64 KiB";
    fail(error::invalid_argument, "campaign: the value is over 64 KiB");
  }
  // A renewal TTL the keeper would refuse is refused before anything is taken (one above
  // the lock's TTL, with max_ttl unset, would outlive the restart guard).
  const auto renew_ttl = o.renew.ttl.count() > 0 ? o.renew.ttl : o.ttl;
  if (auto why = check_renewal_ttl(renew_ttl, o.ttl, election_access::state(c)->cfg);
      !why.empty()) {
    why = "campaign: renewal: " + why;
    if (diag) diag->message = why;
    fail(error::invalid_ttl, why.c_str());
  }
  // Waiting for the lock honours partial cancellation too, as async_lock does.
  co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation());
  lock_options acquire;  // not braced inside co_await (GCC 12)
  acquire.ttl = o.ttl;
  acquire.wait = o.wait;
  acquire.fenced = true;
  lock lk;
  if (diag) {
    auto [ec, won] = co_await c.async_lock(name, acquire, *diag, tupled);
    if (ec) fail(ec);
    lk = std::move(won);
  } else {
    auto [ec, won] = co_await c.async_lock(name, acquire, tupled);
    if (ec) fail(ec);
    lk = std::move(won);
  }
  // Won: from here the campaign completes with its leadership; a late cancellation must
  // not throw the lock away after others were made to wait for it.
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());

  const auto& s = election_access::state(c);
  auto st = std::make_shared<leader_state>(s);
  st->name = std::move(name);
  st->value = std::move(value);
  st->lock_key = std::string{lk.key()};
  st->record_key = election_record_key(*s, st->name);
  st->term = lk.fence();
  st->record_ttl = record_ttl_for(o);
  try {
    st->k = keeper{c, std::move(lk), o.renew};
  } catch (const boost::system::system_error& e) {
    if (diag) diag->message = e.what();
    throw;  // the lock, left in `lk`, is released in the background
  }
  auto [ec, found] = co_await write_record(*st, tupled);
  if (ec) fail(ec);
  // A record short of a majority is retried soon by the refresher; the leader leads
  // meanwhile (it holds the lock), observers only learn it a little later.
  asio::co_spawn(s->strand, keep_record(st, majority(*s, found.written)), asio::detached);
  leadership l;
  election_access::state(l) = std::move(st);
  co_return l;
}

asio::awaitable<error_code> resign(std::shared_ptr<leader_state> st) {
  // Stepping down is not undone halfway: a cancellation would leave the lock to expire.
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  st->stopped = true;
  st->timer.cancel();
  auto [stop_ec, held] = co_await st->k.async_stop(tupled);
  if (stop_ec) co_return stop_ec;  // lock_lost: nothing left to release
  auto [ec] = co_await asio::async_initiate<decltype(tupled), void(error_code)>(
      [&](auto h) { start_election_resign(st->s, std::move(held), st->record_key, std::move(h)); },
      tupled);
  co_return ec;
}

// The keeper's wait, its loss named as a leadership's: leadership_lost, which compares
// equal to condition::lock_lost as the keeper's lock_lost does. Every cancellation type
// the keeper honours reaches it.
leader_info info_of(const observer_memory& m) {
  if (m.last.leading) return {true, m.last.term, m.last.value};
  return {false, m.highest, {}};
}

// Remembers a report and publishes it for last(), before its async_next completes.
leader_info report(observer_state& st, leader_view seen) {
  observer_memory& m = st.memory;
  m.reported = true;
  m.last = std::move(seen);
  if (m.last.leading) m.highest = std::max(m.highest, m.last.term);
  leader_info out = info_of(m);
  std::lock_guard<std::mutex> g{st.published_mutex};
  st.published = out;
  return out;
}

// Starts hearing the releases of the election's lock key (a resignation) and the
// announcements of new records (a new leader), from this client and from the nodes.
void listen(const std::shared_ptr<observer_state>& st) {
  client_state& s = *st->s;
  for (const std::string* key : {&st->lock_key, &st->record_key}) {
    st->listening.push_back(
        s.release_listeners.emplace(*key, [w = std::weak_ptr<observer_state>{st}] {
          if (auto o = w.lock()) {
            o->woken = true;
            o->timer.cancel();
          }
        }));
    s.line_formed(*key);
  }
}

void stop_listening(observer_state& st) {
  for (auto it : st.listening) {
    st.s->line_gone(it->first);
    st.s->release_listeners.erase(it);
  }
  st.listening.clear();
}

asio::awaitable<leader_info> observe_next(std::shared_ptr<observer_state> st) {
  // Reads and waits only: every cancellation type stops it cleanly.
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  if (st->listening.empty() && !st->closed) listen(st);
  for (;;) {
    if (st->closed) fail(error::cancelled);
    auto [ec, found] = co_await read_election(*st, tupled);
    if (ec) fail(ec);
    if (leader_news(st->memory, found.leader, found.nodes, st->s->size()))
      co_return report(*st, std::move(found.leader));
    if (std::exchange(st->woken, false)) continue;  // announced during the read
    st->timer.expires_after(st->opts.poll_interval);
    auto [wait_ec] = co_await st->timer.async_wait(tupled);
    (void)wait_ec;  // woken early (a release announced) or cancelled: the loop says which
  }
}

}  // namespace

void start_campaign(client& c, std::string name, std::string value, campaign_options opts,
                    diagnostics* diag, leader_handler h) {
  const auto& s = election_access::state(c);
  if (!s) return complete_without_client(std::move(h), leadership{});
  spawn_for(s, campaign(c, std::move(name), std::move(value), opts, diag), std::move(h));
}

void start_resign(std::shared_ptr<leader_state> st, void_handler h) {
  if (!st) return take_handler(std::move(h), nullptr).post(error_code{error::no_lock});
  const auto s = st->s;
  spawn_for(s, resign(std::move(st)), std::move(h));
}

void leadership_wait_lost(const std::shared_ptr<leader_state>& st, void_handler h) {
  if (!st) return take_handler(std::move(h), nullptr).post(error_code{error::cancelled});
  // Not a coroutine: the keeper's own wait, which honours cancellation without a
  // co_spawn whose cancellation could outlive it, reporting the loss by its election name.
  keeper_wait_lost(keeper_access::entry(st->k), std::move(h), error::leadership_lost);
}

std::shared_ptr<observer_state> make_observer(client& c, std::string_view name,
                                              observe_options opts) {
  const auto& s = election_access::state(c);
  if (!s) fail(error::shut_down, "election_observer: the client was moved from");
  if (name.empty() || name.size() > max_resource_bytes)
    fail(error::invalid_resource, "election_observer: the name is empty or over 64 KiB");
  if (opts.poll_interval < std::chrono::milliseconds{1})
    fail(error::invalid_argument, "election_observer: poll_interval under 1 ms");
  auto st = std::make_shared<observer_state>(s);
  st->lock_key = s->names.key(name);
  st->record_key = election_record_key(*s, name);
  st->opts = opts;
  return st;
}

void start_observe_next(std::shared_ptr<observer_state> st, leader_info_handler h) {
  if (!st)
    return take_handler(std::move(h), nullptr).post(error_code{error::no_lock}, leader_info{});
  const auto s = st->s;
  spawn_for(s, observe_next(std::move(st)), std::move(h));
}

}  // namespace detail

// ---- leadership and election_observer ------------------------------------------------

leadership& leadership::operator=(leadership&& other) noexcept {
  if (this != &other) {
    resign_in_background();
    st_ = std::move(other.st_);
  }
  return *this;
}

leadership::~leadership() {
  resign_in_background();
}

void leadership::resign_in_background() noexcept {
  // Once the refresher has ended, the last owner drops the keeper, whose destructor
  // releases the lock in the background.
  if (auto st = std::exchange(st_, nullptr)) detail::stop_refresher(st);
}

std::string_view leadership::name() const noexcept {
  return st_ ? std::string_view{st_->name} : std::string_view{};
}
std::string_view leadership::value() const noexcept {
  return st_ ? std::string_view{st_->value} : std::string_view{};
}
std::uint64_t leadership::term() const noexcept {
  return st_ ? st_->term : 0;
}
const keeper& leadership::lock_keeper() const noexcept {
  return st_->k;
}
bool leadership::valid() const noexcept {
  return st_ && st_->k.valid();
}
bool leadership::lost() const noexcept {
  return st_ && st_->k.lost();
}

election_observer::election_observer(client& c, std::string_view name, observe_options opts)
    : st_(detail::make_observer(c, name, opts)) {}

election_observer& election_observer::operator=(election_observer&& other) noexcept {
  if (this != &other) {
    close();
    st_ = std::move(other.st_);
  }
  return *this;
}

election_observer::~election_observer() {
  close();
}

void election_observer::close() noexcept {
  auto st = std::exchange(st_, nullptr);
  if (!st) return;
  // An async_next still waiting completes with cancelled; the announcements stop. (If the
  // hop cannot be allocated, the listeners stay until the client shuts down: harmless.)
  try {
    boost::asio::dispatch(st->s->strand, [st] {
      st->closed = true;
      st->timer.cancel();
      detail::stop_listening(*st);
    });
  } catch (...) {
  }
}

leader_info election_observer::last() const {
  if (!st_) return {};
  std::lock_guard<std::mutex> g{st_->published_mutex};
  return st_->published;
}

}  // namespace redlock
