// SPDX-License-Identifier: BSL-1.0
// Leader election (include/redlock/election.hpp) on the lock, the keeper and the
// election's two rounds (src/drivers/election_round.hpp). Every Asio template of it is
// here: campaign, resignation, the record's refresher and the observer are operations on the
// client's strand whose steps are handlers (no coroutine: the lifetime is the engine's one,
// the op held by its own pending handlers), entered from the public templates through
// any_completion_handler. What each step decides is election_decisions.hpp's.

#include "redlock/election.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <functional>
#include <mutex>
#include <new>
#include <vector>

#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "drivers/election_round.hpp"
#include "guard/renewal.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using boot_timer = asio::basic_waitable_timer<boot_clock>;

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
  bool ended = false;  // lost, or the keeper stopped: the refresher ends (on the strand)
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
  // Once listening: its listener, waiting in the client's lines on the lock key and the
  // record key (client_state::listeners owns it too).
  std::shared_ptr<set_waiter> listener;
};

namespace {

[[noreturn]] void fail(error_code ec, const char* what = "") {
  throw boost::system::system_error(ec, what);
}

bool majority(const client_state& s, std::size_t n) {
  return n >= quorum(s.size());
}

// Binds an internal step's handler to the client's strand, where every step runs.
template <typename F>
auto on_strand(const std::shared_ptr<client_state>& s, F f) {
  return asio::bind_executor(s->strand, std::move(f));
}

// ---- the record's refresher -------------------------------------------------------
//
// Rewrites the record while leading (election_refresh_delay says when), so that observers keep
// seeing it. Its timer's handler and write hold the leader's state; it ends at once when
// leadership ends (resigned or dropped: `stopped`; lost, or the client shut down: the keeper's
// loss cancels the timer), so that a shut-down client's io_context::run() is not held up by it.

void refresh_after(const std::shared_ptr<leader_state>& st, bool on_majority);

void refresh_now(std::shared_ptr<leader_state> st) {
  if (st->stopped || st->ended || !st->k.valid()) return;
  auto s = st->s;
  start_election_write(s, st->lock_key, st->record_key, std::string{st->k.token()}, st->term,
                       st->value, st->record_ttl,
                       on_strand(s, [st](error_code ec, election_round_result found) {
                         if (!ec) refresh_after(st, majority(*st->s, found.written));
                       }));
}

void refresh_after(const std::shared_ptr<leader_state>& st, bool on_majority) {
  if (st->stopped || st->ended) return;
  st->timer.expires_after(
      election_refresh_delay(on_majority, st->record_ttl, st->s->cfg.retry_delay));
  st->timer.async_wait([st](error_code) { refresh_now(st); });
}

void start_refresher(const std::shared_ptr<leader_state>& st, bool on_majority) {
  // The keeper's loss (or stop) ends it; the wait does not keep the state alive.
  keeper_wait_lost(keeper_access::entry(st->k),
                   on_strand(st->s, [w = std::weak_ptr<leader_state>(st)](error_code) {
                     if (auto st = w.lock()) {
                       st->ended = true;
                       st->timer.cancel();
                     }
                   }));
  refresh_after(st, on_majority);
}

void stop_refresher(const std::shared_ptr<leader_state>& st) noexcept {
  // If the hop cannot be allocated, the refresher ends at its next wake-up instead.
  st->stopped = true;
  try {
    asio::dispatch(st->s->strand, [st] { st->timer.cancel(); });
  } catch (...) {
  }
}

// ---- campaign ---------------------------------------------------------------------
//
// Waits for the election's lock (fenced: its token is the term), then keeps it renewed and
// writes the leader's record beside it. Cancellable (terminal or partial, as async_lock) while
// it waits for the lock; once won, it completes with its leadership: a late cancellation must
// not throw the lock away after others were made to wait for it.

class campaign_op final : public composed_op<void(error_code, leadership)> {
 public:
  campaign_op(client& c, std::string name, std::string value, campaign_options o, diagnostics* diag,
              leader_handler h)
      : composed_op(election_access::state(c)->strand,
                    take_handler(std::move(h), election_access::state(c))),
        c_(&c),
        s_(election_access::state(c)),
        name_(std::move(name)),
        value_(std::move(value)),
        o_(o),
        diag_(diag) {}

  void start() {
    // What the keeper would refuse is refused before anything is taken.
    if (auto problem = campaign_problem(value_.size(), o_.ttl, o_.renew.ttl, s_->cfg))
      return refuse(problem.code, std::move(problem.why));
    watch_cancellation(cancel_with_effects);
    const lock_options acquire{.ttl = o_.ttl, .wait = o_.wait, .fenced = true};
    start_lock(s_, buffer{name_}, acquire, true, diag_,
               asio::bind_cancellation_slot(inner_.slot(), step([this](error_code ec, lock lk) {
                                              locked(ec, std::move(lk));
                                            })));
  }

 private:
  // While waiting for the lock only.
  void cancelled(asio::cancellation_type_t type) override {
    if (waiting_) inner_.emit(type);
  }

  void refuse(error e, std::string why) {
    if (diag_) diag_->message = why;
    finish(e, {});
  }

  void locked(error_code ec, lock lk) {
    waiting_ = false;
    if (ec) return finish(ec, {});
    auto st = std::make_shared<leader_state>(s_);
    st->name = std::move(name_);
    st->value = std::move(value_);
    st->lock_key = std::string{lk.key()};
    st->record_key = election_record_key(*s_, st->name);
    st->term = lk.fence();
    st->record_ttl = election_record_ttl(o_.ttl, o_.renew.ttl);
    try {
      st->k = keeper{*c_, std::move(lk), o_.renew};
    } catch (const boost::system::system_error& e) {
      // The lock, left in `lk`, is released in the background.
      if (diag_) diag_->message = e.what();
      return finish(e.code(), {});
    }
    start_election_write(s_, st->lock_key, st->record_key, std::string{st->k.token()}, st->term,
                         st->value, st->record_ttl,
                         step([this, st](error_code ec, election_round_result found) {
                           written(ec, st, found.written);
                         }));
  }

  // A record short of a majority is retried soon by the refresher; the leader leads meanwhile
  // (it holds the lock), observers only learn it a little later. A write that ended past the
  // lock's validity hands out nothing: the leadership would be over before it began.
  void written(error_code ec, std::shared_ptr<leader_state> st, std::size_t nodes) {
    leader_ = std::move(st);
    action_runner::carry_out(*this, after_first_record(ec, leader_->k.valid(), nodes, s_->size()));
  }

  // What after_first_record decided (carry_out.hpp). On an error the state goes, and its
  // keeper releases the lock.
  friend action_runner;
  void do_complete(const campaign_action& a) {
    auto st = std::move(leader_);
    if (a.ec) return finish(a.ec, {});
    start_refresher(st, a.detail.on_majority);
    leadership l;
    election_access::state(l) = std::move(st);
    finish({}, std::move(l));
  }

  client* c_;  // the caller keeps the client for the campaign (the keeper is made on it)
  std::shared_ptr<client_state> s_;
  std::string name_, value_;
  campaign_options o_;
  diagnostics* diag_;
  asio::cancellation_signal inner_;  // the lock's wait
  bool waiting_ = true;
  std::shared_ptr<leader_state> leader_;  // between the first write and the completion
};

// ---- resignation ------------------------------------------------------------------

// Stepping down is not undone halfway (a cancellation would leave the lock to expire): the
// keeper stops, then the lock is released with the record in one script.
void resign(const std::shared_ptr<leader_state>& st, completion<void(error_code)> done) {
  st->stopped = true;
  st->timer.cancel();
  auto s = st->s;
  keeper_stop(keeper_access::entry(st->k),
              on_strand(s, [st, done = std::move(done)](error_code ec, lock held) mutable {
                if (ec) return done.dispatch(ec);  // lock_lost: nothing left to release
                start_election_resign(
                    st->s, std::move(held), st->record_key,
                    [done = std::move(done)](error_code ec) mutable { done.dispatch(ec); });
              }));
}

// ---- observer ---------------------------------------------------------------------

// Remembers a report and publishes it for last(), before its async_next completes.
leader_info report(observer_state& st, leader_view seen) {
  remember_report(st.memory, std::move(seen));
  const leader_report r = report_of(st.memory);
  leader_info out{r.leading, r.term, r.value};
  std::lock_guard<std::mutex> g{st.published_mutex};
  st.published = out;
  return out;
}

// An observer's listener: a release of the election's lock key (a resignation), an
// announcement of a new record (a new leader), or shutdown, wakes the observer to read now.
class observer_listener final : public set_waiter {
 public:
  explicit observer_listener(std::weak_ptr<observer_state> st) : st_(std::move(st)) {}

  void wake(std::string_view) override {
    if (auto o = st_.lock()) {
      o->woken = true;
      o->timer.cancel();
    }
  }

 private:
  std::weak_ptr<observer_state> st_;
};

// Starts hearing the releases of the election's lock key and the announcements of new
// records, from this client and from the nodes: a set waiting on those two keys.
void listen(const std::shared_ptr<observer_state>& st) {
  client_state& s = *st->s;
  st->listener = std::make_shared<observer_listener>(st);
  s.set_waits(*st->listener, {st->lock_key, st->record_key});
  s.listeners.push_back(st->listener);
}

void stop_listening(observer_state& st) {
  if (!st.listener) return;
  st.s->set_stops(*st.listener, {st.lock_key, st.record_key});
  std::erase(st.s->listeners, st.listener);
  st.listener.reset();
}

// One async_next: reads the nodes until a read is news (after_election_read), waiting between
// reads for the poll interval or an announcement. Reads and waits only: every cancellation
// type stops it.
class observe_op final : public composed_op<void(error_code, leader_info)> {
 public:
  observe_op(std::shared_ptr<observer_state> st, leader_info_handler h)
      : composed_op(st->s->strand, take_handler(std::move(h), st->s)), st_(std::move(st)) {}

  void start() {
    watch_cancellation(cancel_any);
    if (!st_->listener && !st_->closed) listen(st_);
    read();
  }

 private:
  void cancelled(asio::cancellation_type_t type) override {
    cancelled_ = true;
    if (reading_) return inner_.emit(type);  // the read completes cancelled
    st_->timer.cancel();
  }

  void read() {
    if (done_) return;
    if (cancelled_ || st_->closed) return finish(error::cancelled, {});
    reading_ = true;
    start_election_read(st_->s, st_->lock_key, st_->record_key,
                        asio::bind_cancellation_slot(
                            inner_.slot(), step([this](error_code ec, election_round_result found) {
                              got(ec, std::move(found));
                            })));
  }

  void got(error_code ec, election_round_result found) {
    reading_ = false;
    const bool news = !ec && leader_news(st_->memory, found.leader, found.nodes, st_->s->size());
    seen_ = std::move(found.leader);
    action_runner::carry_out(*this, after_election_read(ec, news, std::exchange(st_->woken, false),
                                                        st_->opts.poll_interval));
  }

  // What after_election_read decided (carry_out.hpp).
  friend action_runner;
  void do_complete(const observer_action& a) {
    if (a.ec) return finish(a.ec, {});
    finish({}, report(*st_, std::move(seen_)));
  }
  void do_send_round(const observer_action&) { read(); }
  void do_wait(const observer_action& a) {
    st_->timer.expires_after(a.delay);
    // Woken early (a release announced, or closed) or cancelled: read() says which.
    st_->timer.async_wait(step([this](error_code) { read(); }));
  }

  std::shared_ptr<observer_state> st_;
  asio::cancellation_signal inner_;  // the read in flight
  bool reading_ = false;
  bool cancelled_ = false;
  leader_view seen_;  // the last read's finding, reported if it is news
};

}  // namespace

void start_campaign(client& c, std::string name, std::string value, campaign_options opts,
                    diagnostics* diag, leader_handler h) {
  const auto& s = election_access::state(c);
  if (!s) return complete_without_client(std::move(h), leadership{});
  post_start(new campaign_op(c, std::move(name), std::move(value), opts, diag, std::move(h)),
             s->strand);
}

void start_resign(std::shared_ptr<leader_state> st, void_handler h) {
  if (!st) return take_handler(std::move(h), nullptr).post(error_code{error::no_lock});
  auto done = take_handler(std::move(h), st->s);
  const auto s = st->s;
  asio::post(s->strand, [st = std::move(st), done = std::move(done)]() mutable {
    resign(st, std::move(done));
  });
}

void leadership_wait_lost(const std::shared_ptr<leader_state>& st, void_handler h) {
  if (!st) return take_handler(std::move(h), nullptr).post(error_code{error::cancelled});
  // The keeper's own wait, which honours cancellation, reporting the loss by its election
  // name: leadership_lost, which compares equal to condition::lock_lost as lock_lost does.
  keeper_wait_lost(keeper_access::entry(st->k), std::move(h), error::leadership_lost);
}

std::shared_ptr<observer_state> make_observer(client& c, std::string_view name,
                                              observe_options opts) {
  const auto& s = election_access::state(c);
  if (!s) fail(error::shut_down, "election_observer: the client was moved from");
  if (auto problem = observer_problem(name, opts.poll_interval))
    fail(problem.code, problem.why.c_str());
  auto st = std::make_shared<observer_state>(s);
  st->lock_key = s->names.key(name);
  st->record_key = election_record_key(*s, name);
  st->opts = opts;
  return st;
}

void start_observe_next(std::shared_ptr<observer_state> st, leader_info_handler h) {
  if (!st)
    return take_handler(std::move(h), nullptr).post(error_code{error::no_lock}, leader_info{});
  const auto& strand = st->s->strand;  // the op keeps the state alive
  post_start(new observe_op(std::move(st), std::move(h)), strand);
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
