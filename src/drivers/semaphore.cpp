// SPDX-License-Identifier: BSL-1.0
// Semaphores: one of N permits, each permit an ordinary single lock on its own key.
//
// Why N mutexes and not a counter: counting holders on each node and taking a majority
// does not bound them (2 permits, 3 nodes: three clients can each win a different
// majority of per-node counts). With one key per permit, two holders of permit i would
// be two holders of one Redlock lock, which the mutex's own argument excludes; so at most
// N hold a permit at once. The acquirer therefore never decides anything about
// exclusion itself: it only chooses which permit to ask for, and asks with the single
// lock's whole machinery (restart guard, fencing, release of a failed attempt).
//
// One call is a sequence of sweeps. A sweep reads the permits in windows of up to 16, from
// a random index (so that concurrent acquirers spread over the permits instead of all
// racing for permit 0), each window one try that asks for its first permit and points at a
// free one among the others: permit_sweep decides the next try and what a sweep's failures
// add up to. The waits between sweeps are acquire_fsm's, as for any lock kind: a failed
// sweep is a failed attempt. A waiting call's last try of a sweep also takes (or keeps) its
// place in the semaphore's line on each node that found every permit of the window taken;
// a release there hands its permit to the head of the line and tells that call alone on its
// client's channel (permit_line.hpp), and the call then asks for that permit at once. The
// retry delay is the fallback for an offer it did not hear.
//
// A composed op (quorum/lifetime.hpp), by the engine's rule of lifetime: made with new, it
// deletes itself once completed and no handler holds it; its inner try, its retry timer and
// the cancellation hop each hold it while they are pending.

#include "redlock/semaphore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "client/call_checks.hpp"
#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "drivers/permit_place.hpp"
#include "drivers/single_lock.hpp"
#include "machines/acquire_fsm.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "quorum/completion.hpp"
#include "quorum/lifetime.hpp"
#include "waiting/permit_line.hpp"

namespace redlock {

std::string permit_resource(std::string_view resource, std::size_t index) {
  return detail::permit_key_name(resource, index);
}

std::string permit_count_resource(std::string_view resource) {
  return detail::permit_record_name(resource);
}

namespace detail {
namespace {

// The failure for people: the call's reason (`why`, an argument error's explanation, or the
// code's message), then what the last permit tried said (the diagnostics so far).
void describe_permit_failure(diagnostics& diag, error_code ec, std::string_view resource,
                             std::size_t permits, std::string_view why, std::uint64_t nodes_count) {
  const std::string last = std::move(diag.message);
  if (ec == error::permit_count_mismatch) {
    // One line: the count to fix is the whole story.
    diag.message = fmt::format(
        "lock a permit of {} ({} permits): the nodes hold this semaphore with {} permits; "
        "every client of it must ask for the same count",
        quoted_resource(resource), permits, nodes_count);
    return;
  }
  diag.message = fmt::format("lock a permit of {} ({} permits): {}", quoted_resource(resource),
                             permits, why.empty() ? ec.message() : why);
  if (why.empty() && !last.empty()) diag.message += "; the last permit tried: " + last;
}

class permit_op final : public permit_waiter, public composed_op<void(error_code, permit)> {
 public:
  permit_op(std::shared_ptr<client_state> s, std::string resource, std::size_t permits,
            lock_options opts, bool wait, diagnostics* diag, permit_handler h)
      : composed_op(s->strand, take_handler(std::move(h), s)),
        s_(std::move(s)),
        resource_(std::move(resource)),
        permits_(permits),
        opts_(opts),
        wait_(wait),
        diag_(diag),
        sweep_(permits == 0 ? 1 : permits) {}  // 0 is refused in start()

  // Freed unfinished (abandoned: its io_context went away), it leaves the client's list of
  // waiting calls, which must not name it any more.
  ~permit_op() override {
    if (place_) s_->leave_permit_line(place_->str());
  }

  /// On the strand, never inside the initiating call.
  void start() {
    if (s_->closed) return complete(error::shut_down);
    if (!check_arguments()) return;
    target_ = std::make_shared<permit_target>(
        permit_target{.record_key = s_->names.key(permit_record_name(resource_)),
                      .permits = permits_,
                      .line = permit_line_of(s_->names.key(permit_record_name(resource_))),
                      .place_ttl = permit_place_lasts(s_->cfg)});
    target_->keys.reserve(permits_);
    for (std::size_t i = 0; i < permits_; ++i)
      target_->keys.push_back(s_->names.key(permit_key_name(resource_, i)));
    // The place's order in every node's line: when the call started, by this client's clock.
    target_->ticket = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    fsm_ = acquire_fsm{wait_, wait_deadline(boot_clock::now(), wait_, opts_.wait)};
    if (wait_) place_.emplace(*s_, *this, opts_);
    watch_cancellation(cancel_with_effects);
    sweep();
  }

  // A node handed this call permit `key` (or, empty, a wake to sweep again).
  void offered(std::string_view key) override {
    if (done_) return;
    if (!key.empty()) {
      const auto& keys = target_->keys;
      const auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) return;
      offer_ = static_cast<std::size_t>(it - keys.begin());
    }
    // A try in flight that fails goes on with the offer, or sweeps again at once (tried()):
    // a subscription that came up while it was out did not hear its place's grants.
    if (in_flight_)
      rewake_ = true;
    else
      act(fsm_.wake(0));
  }

  // Node `node` granted this call's place permit `key` (permit_grant_decisions.hpp).
  void granted(std::size_t node, std::string_view key, std::uint64_t epoch) override {
    if (done_ || !place_) return;
    const auto& keys = target_->keys;
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) return;
    const bool first = !place_->has_grants();
    const auto won = place_->granted(node, static_cast<std::size_t>(it - keys.begin()), epoch);
    if (won) {
      // A try in flight may take a permit too: its completion decides (tried()).
      if (in_flight_)
        grant_won_ = won;
      else
        win_by_grant(*won);
      return;
    }
    // No permit won (one won while a try is out stays won) and the grants split (two releases
    // reached the nodes in different orders) or no majority left to come: handed on at once,
    // the call waiting under a new place, at the head of the line (same ticket). Else a node
    // timeout for the rest (a release reaches every node at about the same time), no longer.
    if (place_->give_back()) return give_back_grants();
    if (first) wait_for_grants();
  }

 private:
  // Before any I/O: the permit count, fair and shared mode, and what the single lock of the last
  // permit would refuse (the longest name; the TTL and wait are the same for all).
  bool check_arguments() {
    if (auto problem = check_permit_call(resource_, permits_, opts_, wait_, s_->cfg))
      return refuse(problem.code, problem.why);
    return true;
  }

  bool refuse(error e, std::string_view why) {
    why_ = why;
    complete(e);
    return false;
  }

  void cancelled(asio::cancellation_type_t) override {
    cancel_requested_ = true;
    // A try in flight is cancelled in turn (its own rule releases what it took); its
    // completion ends the call.
    if (in_flight_) return inner_cancel_.emit(asio::cancellation_type::terminal);
    fsm_.cancel(false);
    complete(error::cancelled);
  }

  // Carries out what the acquisition machine decided (carry_out.hpp): a new attempt is a
  // sweep of the permits, a wait the retry timer.
  void act(const acquire_action& a) {
    if (a.detail.cancel_timer && timer_) timer_->cancel();
    action_runner::carry_out(*this, a);
  }
  friend action_runner;
  void do_send_round(const acquire_action&) { sweep(); }
  void do_wait(const acquire_action& a) { wait(a); }
  void do_complete(const acquire_action& a) { complete(a.ec); }

  void sweep() {
    if (s_->closed) return complete(error::shut_down);
    fsm_.attempt_sent();
    const std::size_t first =
        offer_ ? *offer_ : std::uniform_int_distribution<std::size_t>{0, permits_ - 1}(s_->rng);
    offer_.reset();
    next(sweep_.start(first));
  }

  // The sweep's steps (carry_out.hpp), beside the acquisition's above.
  void next(const sweep_step& step) { action_runner::carry_out(*this, step); }
  void do_send_round(const sweep_step& step) { try_permit(step); }
  void do_won(const sweep_step& step) { complete({}, permit{std::move(won_), step.detail.index}); }
  void do_lost(const sweep_step& step) { sweep_failed(step.ec); }
  void do_complete(const sweep_step& step) { complete(step.ec); }

  void try_permit(const sweep_step& step) {
    in_flight_ = true;
    target_->first = step.detail.index;
    target_->span = step.detail.span;
    const bool with_place = place_ && !place_->str().empty() && step.detail.last;
    if (with_place) place_->sending(*target_);
    target_->place = with_place ? place_->str() : std::string{};
    target_->answers.sent(++target_->tries, !target_->place.empty());
    start_permit_try(s_, buffer{permit_key_name(resource_, step.detail.index)}, target_, opts_,
                     diag_,
                     asio::bind_cancellation_slot(
                         inner_cancel_.slot(),
                         this->step([this](error_code ec, lock lk) { tried(ec, std::move(lk)); })));
  }

  void tried(error_code ec, lock lk) {
    in_flight_ = false;
    if (done_) return;  // a won lock dropped here is released in the background
    if (cancel_requested_) return complete(error::cancelled);
    if (grant_won_) return win_by_grant(*grant_won_);  // a permit this try won is dropped
    won_ = std::move(lk);
    // A won call leaves the line where its try only kept its place (those nodes still held
    // the permit): a place left there would be offered a permit nobody takes. Answers that
    // come after this one leave it as they come (permit_target::held_answer).
    if (!ec) {
      const auto kept = target_->answers.won();
      for (std::size_t i = 0; i < s_->size(); ++i)
        if (kept[i]) target_->leave_line(*s_, i);
    }
    next(sweep_.tried(ec, target_->answers.pointed(s_->size())));
  }

  void sweep_failed(error_code reason) {
    const auto now = boot_clock::now();
    const acquire_action next = fsm_.attempt_failed(reason, now);
    if (next.what != action_kind::retry) return act(next);
    act(fsm_.plan_retry(now, {.delay = s_->jitter(s_->cfg.retry_delay)}));
    // An offer heard while the sweep was out: ask for that permit now.
    if ((offer_ || std::exchange(rewake_, false)) && !done_) act(fsm_.wake(0));
  }

  void wait(const acquire_action& a) {
    if (!timer_) timer_.emplace(s_->strand);
    timer_->expires_after(a.delay);
    timer_->async_wait(step([this, gen = a.detail.generation](error_code ec) {
      if (!ec && !done_) act(fsm_.timer_fired(gen, 0));
    }));
  }

  // The grants' permit is the call's (the other grants are dropped by permit_place::leave). The
  // place stays in the lines of the nodes that granted nothing yet: their lagging release of this
  // permit gives it to this lock there too (client_state::grant_unclaimed keeps it).
  void win_by_grant(std::size_t index) {
    lock lk = place_->take(*target_, resource_, index);
    // The current try's late "held" answers leave the line as they come
    // (permit_target::held_answer). A try does not put back a place its node granted a permit
    // in the try's window (permit_acquire_script).
    target_->answers.won();
    complete({}, permit{std::move(lk), index});
  }

  void give_back_grants() {
    place_->renew(*target_);
    offered({});
  }

  void wait_for_grants() {
    if (!grant_timer_) grant_timer_.emplace(s_->strand);
    grant_timer_->expires_after(s_->cfg.node_timeout);
    grant_timer_->async_wait(step([this, place = place_->str()](error_code ec) {
      if (!ec && !done_ && place == place_->str() && place_->has_grants() && !grant_won_)
        give_back_grants();
    }));
  }

  void complete(error_code ec, permit p = {}) {
    if (done_) return;
    fsm_.finish();
    if (place_) place_->leave(target_.get());
    if (timer_) timer_->cancel();
    if (grant_timer_) grant_timer_->cancel();
    if (ec && diag_)
      describe_permit_failure(*diag_, ec, resource_, permits_, why_,
                              target_ ? target_->nodes_count : 0);
    finish(ec, std::move(p));
  }

  std::shared_ptr<client_state> s_;
  std::string resource_;
  std::size_t permits_;
  lock_options opts_;
  bool wait_;
  diagnostics* diag_;
  std::shared_ptr<permit_target> target_;  // the count asked, and the one the nodes hold
  acquire_fsm fsm_;
  permit_sweep sweep_{1};
  std::optional<std::size_t> grant_won_;  // grants won while a try was out
  bool rewake_ = false;                   // woken while a try was out: sweep again after it
  lock won_;                              // the last try's lock (empty unless it won)
  bool in_flight_ = false;
  std::optional<permit_place> place_;  // a waiting call's place in the line, and its grants
  std::optional<std::size_t> offer_;   // a permit a node offered, to ask for next
  bool cancel_requested_ = false;
  std::string why_;  // an argument error's explanation
  std::optional<boot_timer> timer_;
  std::optional<boot_timer> grant_timer_;  // how long the place's grants may wait for a majority
  asio::cancellation_signal inner_cancel_;
};

}  // namespace

void start_lock_permit(std::shared_ptr<client_state> s, std::string resource, std::size_t permits,
                       lock_options opts, bool wait, diagnostics* diag, permit_handler h) {
  if (!s) return complete_without_client(std::move(h), permit{});
  post_start(new permit_op(s, std::move(resource), permits, opts, wait, diag, std::move(h)),
             s->strand);
}

}  // namespace detail
}  // namespace redlock
