// SPDX-License-Identifier: BSL-1.0
#include "guard/renewal.hpp"

#include <algorithm>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/system_error.hpp>
#include <map>

#include "drivers/carry_out.hpp"
#include "drivers/single_lock.hpp"
#include "machines/batch_answers.hpp"
#include "machines/renewal_fsm.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "redlock/keeper.hpp"
#include "scripts/script_calls.hpp"

namespace redlock {
namespace detail {

void renewal_entry::publish_deadline() {
  deadline_ns.store(lock_access::deadline(lk).time_since_epoch().count(),
                    std::memory_order_release);
}

namespace {

// One batch-extend call to every node for up to max_batch locks with the same TTL, as a
// quorum_op driving a renewal_fsm: the op sends and reads, the machine counts a vote per
// lock and says when every node is in. It completes to nobody: the scheduler learns the
// outcome.
class batch_extend_op final : public quorum_op<client_state, void(error_code)> {
 public:
  batch_extend_op(std::shared_ptr<client_state> s, renewal_scheduler& sched,
                  std::vector<std::shared_ptr<renewal_entry>> batch)
      : quorum_op(std::move(s), nullptr, {}),
        sched_(sched),
        batch_(std::move(batch)),
        fsm_(s_->size(), batch_.size(), batch_.front()->ttl, s_->cfg.drift_factor),
        codes_(batch_.size()) {
    reports_ = false;  // the observer hears of each lock, from answers_
  }

  void start() {
    const auto ttl = fsm_.ttl();
    const std::size_t n = batch_.size();
    using entry = std::shared_ptr<renewal_entry>;
    write_batch_extend(
        payload_, batch_, [](const entry& e) { return lock_access::key(e->lk); },
        [](const entry& e) { return lock_access::token(e->lk); }, ttl);
    auto deadline = boot_clock::time_point::max();
    for (auto& e : batch_) deadline = std::min(deadline, lock_access::deadline(e->lk));
    const auto start = boot_clock::now();  // before the first byte can leave
    for (auto& e : batch_) e->renew_start = start;
    deadline = request_deadline(start, s_->cfg.node_timeout, deadline);
    if (s_->obs) {
      answers_.assign(s_->size() * n, node_answer::no_answer);
      replied_at_.assign(s_->size(), boot_clock::time_point{});
    }
    fsm_.sent(start);
    send_to_all(payload_, &batch_extend_script, deadline);
    for (auto& e : batch_) refresh_permit_record(*s_, lock_access::data(e->lk).record_key, ttl);
    on_tally();
  }

 private:
  // A node held back by the restart guard (or a replica, a duplicate) does not vote.
  bool counts(std::size_t i) override { return voter(i, fsm_.ttl(), boot_clock::now()); }

  vote classify(std::size_t i, const resp::reply& r) override {
    if (s_->obs) replied_at_[i] = boot_clock::now();
    if (!batch_answer_well_formed(r, batch_.size())) return vote::failed;  // on_failed tells
    for (std::size_t j = 0; j < batch_.size(); ++j) {
      codes_[j] = r[j + 1].integer;
      if (s_->obs)
        answers_[i * batch_.size() + j] = codes_[j] == 1 ? node_answer::yes : node_answer::refused;
    }
    fsm_.answered(i, codes_);
    return vote::yes;  // the node answered for every lock
  }

  void on_failed(std::size_t i) override { fsm_.failed(i); }

  void on_tally() override {
    // Shutdown stopped every keeper: none of these locks is to be decided.
    if (s_->closed) fsm_.shut_down();
    action_runner::carry_out(*this, fsm_.tally());
  }

  // The round decided every lock (carry_out.hpp); shut_down: nothing to decide.
  friend action_runner;
  void do_complete(const renewal_action& a) {
    finish(!a.ec);
    complete({});
  }

  void on_cancel() override {}  // nobody can cancel a renewal round

  void report(std::size_t j, error_code outcome, boot_clock::time_point now) {
    std::array<node_reply, max_nodes> replies;
    const std::size_t n = s_->size();
    for (std::size_t i = 0; i < n; ++i) {
      replies[i] = observed(i, fsm_.start(), replied_at_[i]);
      // A node that answered said something of its own for each lock.
      if (round_.votes[i] != vote::failed) replies[i].answer = answers_[i * batch_.size() + j];
    }
    const extend_event e{
        .resource = batch_[j]->lk.resource(),
        .by_keeper = true,
        .outcome = outcome,
        .elapsed = std::chrono::duration_cast<std::chrono::microseconds>(now - fsm_.start()),
        .nodes = {replies.data(), n}};
    s_->obs->on_extend(e);
  }

  void finish(bool decide) {
    const auto now = boot_clock::now();
    for (std::size_t j = 0; j < batch_.size(); ++j) {
      renewal_entry& e = *batch_[j];
      e.in_flight = false;
      if (!decide || e.stopped || e.lost) continue;
      const auto step = fsm_.outcome(j, e, lock_access::deadline(e.lk), now);
      if (s_->obs) report(j, step.outcome, now);
      apply(e, step);
    }
    sched_.reschedule();
  }

  void apply(renewal_entry& e, const renewal_step& step) {
    using kind = renewal_step::kind;
    if (step.what == kind::lost_not_held) return sched_.lose(e, error::not_held);
    lock_access::deadline(e.lk) = step.deadline;
    e.publish_deadline();
    e.loss_at = step.loss_at;
    if (step.what == kind::lost) return sched_.lose(e, error::lock_lost);
    if (step.what == kind::renewed) lock_access::ttl(e.lk) = fsm_.ttl();
    e.next_due = step.next_due;
  }

  renewal_scheduler& sched_;
  std::vector<std::shared_ptr<renewal_entry>> batch_;
  renewal_fsm fsm_;
  std::vector<std::int64_t> codes_;  // one node's answers, handed to the machine
  // Kept only with an observer: each node's answer per lock (node-major) and reply time.
  std::vector<node_answer> answers_;
  std::vector<boot_clock::time_point> replied_at_;
  std::string payload_;
};

}  // namespace

renewal_scheduler::renewal_scheduler(client_state& s) : s_(s), timer_(s.strand) {}

void renewal_scheduler::add(std::shared_ptr<renewal_entry> e) {
  // O(1): only the new entry can make the timer due earlier (a full reschedule per add
  // made taking 40,000 keepers quadratic).
  const auto due = std::min(e->loss_at, e->next_due);
  e->slot = entries_.size();
  entries_.push_back(std::move(e));
  if (!armed_ || due < armed_for_) reschedule();
}

void renewal_scheduler::remove(const renewal_entry* e) {
  // O(1): swap with the last entry (the order of entries does not matter).
  const std::size_t i = e->slot;
  if (i >= entries_.size() || entries_[i].get() != e) return;
  if (i + 1 != entries_.size()) {
    entries_[i] = std::move(entries_.back());
    entries_[i]->slot = i;
  }
  entries_.pop_back();
}

namespace {
// Records the loss for the keeper's readers and the observer; final.
void mark_lost(renewal_entry& e, error_code why) {
  if (e.state->obs) {
    const loss_event l{.resource = e.lk.resource(), .by_keeper = true, .reason = why};
    e.state->obs->on_loss(l);
  }
  e.lost = true;
  e.lost_why.store(why.value(), std::memory_order_relaxed);
  lock_access::lost(e.lk) = true;
  e.lost_flag.store(true, std::memory_order_release);
}
}  // namespace

void renewal_scheduler::lose(renewal_entry& e, error_code why) {
  if (e.lost) return;
  mark_lost(e, why);
  remove(&e);
  auto waiters = std::move(e.waiters);
  e.waiters.clear();
  // Posted, not dispatched: a waiter's handler (the work's cancellation) must not run
  // inside the scheduler's loops.
  for (auto& w : waiters) w.h.post(error_code{w.lost_as});
}

void renewal_scheduler::reschedule() {
  auto next = boot_clock::time_point::max();
  for (const auto& e : entries_) next = std::min(next, renewal_wake(*e, e->in_flight));
  if (next == boot_clock::time_point::max()) return;
  if (armed_ && next >= armed_for_) return;
  armed_ = true;
  armed_for_ = next;
  timer_.expires_at(next);
  timer_.async_wait([this, at = next, alive = s_.weak_from_this()](error_code ec) {
    if (ec || alive.expired() || at != armed_for_) return;
    armed_ = false;
    on_timer();
  });
}

void renewal_scheduler::on_timer() {
  const auto now = boot_clock::now();
  std::vector<std::shared_ptr<renewal_entry>> due;
  std::vector<std::shared_ptr<renewal_entry>> expired;
  for (const auto& e : entries_) {
    const auto tick = on_renewal_tick(*e, e->in_flight, now);
    if (tick == renewal_tick::expired) expired.push_back(e);
    if (tick == renewal_tick::renew) due.push_back(e);
  }
  for (auto& e : expired) lose(*e, error::lock_lost);
  if (!due.empty()) start_batches(due);
  reschedule();
}

void renewal_scheduler::start_batches(std::vector<std::shared_ptr<renewal_entry>>& due) {
  std::map<std::chrono::milliseconds::rep, std::vector<std::shared_ptr<renewal_entry>>> by_ttl;
  for (auto& e : due) by_ttl[e->ttl.count()].push_back(std::move(e));
  auto keep = s_.shared_from_this();
  // A Redis Cluster node runs a script only on keys of one slot: one lock per call there.
  const std::size_t per_call = s_.keys_per_call(max_batch);
  for (auto& [ttl, group] : by_ttl) {
    for (std::size_t i = 0; i < group.size(); i += per_call) {
      const auto end = std::min(group.size(), i + per_call);
      std::vector<std::shared_ptr<renewal_entry>> batch(
          group.begin() + static_cast<std::ptrdiff_t>(i),
          group.begin() + static_cast<std::ptrdiff_t>(end));
      for (auto& e : batch) e->in_flight = true;
      auto* op = new batch_extend_op(keep, *this, std::move(batch));
      op->run_guarded([op] { op->start(); });  // it frees itself by quorum_op's rule
    }
  }
}

void renewal_scheduler::shutdown() {
  timer_.cancel();
  auto all = std::move(entries_);
  entries_.clear();
  for (auto& e : all) {
    e->stopped = true;
    auto waiters = std::move(e->waiters);
    e->waiters.clear();
    for (auto& w : waiters) w.h.post(error_code{error::shut_down});
  }
}

void stop_renewals(renewal_scheduler& r) {
  r.shutdown();
}

renewal_scheduler& scheduler_of(client_state& s) {
  if (!s.renewals) s.renewals = std::make_shared<renewal_scheduler>(s);
  return *s.renewals;
}

// ---- keeper's compiled operations --------------------------------------------------

void keeper_wait_lost(std::shared_ptr<renewal_entry> e, void_handler handler, error lost_as) {
  auto h = take_handler(std::move(handler), e ? e->state : nullptr);
  if (!e) return h.post(error_code{error::cancelled});
  auto strand = e->state->strand;
  asio::dispatch(strand, [e = std::move(e), h = std::move(h), lost_as]() mutable {
    auto& s = *e->state;
    if (e->lost) return h.post(error_code{lost_as});
    if (s.shut.load()) return h.post(error_code{error::shut_down});
    if (e->stopped) return h.post(error_code{error::cancelled});
    if (boot_clock::now() >= lock_access::deadline(e->lk)) {
      // Past its deadline it is lost, whether or not the scheduler's timer has run yet.
      scheduler_of(s).lose(*e, error::lock_lost);
      return h.post(error_code{lost_as});
    }
    const auto id = e->next_waiter_id++;
    auto slot = h.slot();
    if (slot.is_connected()) {
      slot.assign([w = std::weak_ptr<renewal_entry>(e), id](asio::cancellation_type_t) {
        auto e = w.lock();
        if (!e) return;
        auto strand = e->state->strand;
        asio::dispatch(strand, [e, id] {
          auto it = std::find_if(e->waiters.begin(), e->waiters.end(),
                                 [id](const auto& w) { return w.id == id; });
          if (it == e->waiters.end()) return;
          auto handler = std::move(it->h);
          e->waiters.erase(it);
          handler.dispatch(error_code{error::cancelled});
        });
      });
    }
    e->waiters.push_back({.id = id, .h = std::move(h), .lost_as = lost_as});
  });
}

namespace {
void stop_entry(renewal_entry& e) {
  if (e.stopped) return;
  e.stopped = true;
  if (e.state->renewals) e.state->renewals->remove(&e);
  auto waiters = std::move(e.waiters);
  e.waiters.clear();
  for (auto& w : waiters) w.h.post(error_code{error::cancelled});
}
}  // namespace

void keeper_stop(std::shared_ptr<renewal_entry> e, lock_handler handler) {
  auto h = take_handler(std::move(handler), e ? e->state : nullptr);
  if (!e) return h.post(error_code{error::not_held}, lock{});
  auto strand = e->state->strand;
  asio::dispatch(strand, [e = std::move(e), h = std::move(h)]() mutable {
    const bool was_lost = e->lost;
    stop_entry(*e);
    auto s = e->state;
    // A renewal on its way may still shorten the keys (a renewal TTL below the lock's):
    // the lock handed back must not promise more than that renewal leaves.
    auto& deadline = lock_access::deadline(e->lk);
    deadline =
        deadline_after_stop(deadline, e->in_flight, e->renew_start, e->ttl, s->cfg.drift_factor);
    if (on_keeper_stop(was_lost, deadline, boot_clock::now()) == stop_verdict::handed_back)
      return h.post(error_code{}, std::move(e->lk));
    if (was_lost) {
      // Nothing to release: it is not ours any more.
      if (!lock_access::token(e->lk).empty()) s->unhold(*lock_access::take(e->lk));
      return h.post(error_code{error::lock_lost}, lock{});
    }
    // Its deadline passed before the keeper declared it lost (the timer had not run, or
    // the whole process was paused): lost all the same. Our token may still be on some
    // nodes: released in the background, which deletes only our own token.
    mark_lost(*e, error::lock_lost);
    e->lk = lock{};
    h.post(error_code{error::lock_lost}, lock{});
  });
}

}  // namespace detail

// ---- keeper ------------------------------------------------------------------------

namespace asio = boost::asio;

namespace {
[[noreturn]] void bad_argument(const char* what) {
  throw boost::system::system_error(error::invalid_argument, what);
}
}  // namespace

keeper::keeper(client& c, lock&& lk, renew_options opts) {
  if (!lk.owns()) bad_argument("keeper: the lock is not held");
  if (!(opts.fraction > 0.0 && opts.fraction <= 0.9))
    bad_argument("keeper: fraction must be in (0, 0.9]");
  auto state = c.state_;
  if (!state) bad_argument("keeper: the client was moved from");
  auto e = std::make_shared<detail::renewal_entry>();
  e->state = state;
  e->ttl = opts.ttl.count() > 0 ? opts.ttl : lk.ttl();
  if (const auto why = detail::check_renewal_ttl(e->ttl, lk.ttl(), state->cfg); !why.empty())
    throw boost::system::system_error(error::invalid_ttl, "keeper: renewal: " + why);
  static_cast<detail::renewal_times&>(*e) = detail::plan_renewals(
      lk.deadline(), lk.ttl(), e->ttl, opts.fraction, detail::loss_margin(e->ttl, opts.loss_margin),
      opts.max_hold, state->cfg.drift_factor);
  const auto now = boot_clock::now();
  e->lk = std::move(lk);
  e->publish_deadline();
  if (now >= e->loss_at) {
    e->lost = true;
    e->lost_flag = true;
  }
  entry_ = e;
  asio::dispatch(state->strand, [e] {
    if (e->stopped || e->lost || e->state->closed) return;
    detail::scheduler_of(*e->state).add(e);
  });
}

keeper::~keeper() {
  stop_in_background();
}

keeper& keeper::operator=(keeper&& other) noexcept {
  if (this != &other) {
    stop_in_background();
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void keeper::stop_in_background() noexcept {
  if (!entry_) return;
  try {
    auto strand = entry_->state->strand;
    asio::dispatch(strand, [e = std::move(entry_)] {
      detail::stop_entry(*e);
      e->lk = lock{};  // a lock still held is released in the background
    });
  } catch (...) {
    // Best effort: the keys expire with their TTL.
  }
  entry_.reset();
}

std::string_view keeper::resource() const noexcept {
  return entry_ ? entry_->lk.resource() : std::string_view{};
}
std::string_view keeper::token() const noexcept {
  return entry_ ? entry_->lk.token() : std::string_view{};
}
std::uint64_t keeper::fence() const noexcept {
  return entry_ ? entry_->lk.fence() : 0;
}
boot_clock::time_point keeper::deadline() const noexcept {
  if (!entry_) return {};
  return boot_clock::time_point{
      boot_clock::duration{entry_->deadline_ns.load(std::memory_order_acquire)}};
}
bool keeper::lost() const noexcept {
  return entry_ && entry_->lost_flag.load();
}
boost::system::error_code keeper::loss_reason() const noexcept {
  if (!entry_) return {};
  if (entry_->lost_flag.load(std::memory_order_acquire))
    return static_cast<error>(entry_->lost_why.load(std::memory_order_relaxed));
  if (entry_->state->shut.load(std::memory_order_acquire)) return error::shut_down;
  return {};
}

bool keeper::valid() const noexcept {
  return entry_ && !lost() && boot_clock::now() < deadline() &&
         !entry_->state->shut.load(std::memory_order_acquire);
}
std::chrono::milliseconds keeper::validity() const noexcept {
  if (!valid()) return std::chrono::milliseconds{0};
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - boot_clock::now());
}

}  // namespace redlock
