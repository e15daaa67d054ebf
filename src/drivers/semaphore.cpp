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
// One call is the one acquisition operation (acquisition_op, acquisition.hpp) over
// sweep_target, a single lock's target whose every attempt is one try of a permit. A sweep
// reads the permits in windows of up to 16, from a random index (so that concurrent acquirers
// spread over the permits instead of all racing for permit 0), each window one try that asks
// for its first permit and points at a free one among the others: permit_sweep decides the
// next try and what a sweep's failures add up to. A lost try whose sweep goes on is followed
// by the next at once (once its last answers are in: the tries share the request slots); a
// lost sweep is a lost attempt, and the waits between sweeps are acquire_fsm's, as for any
// lock kind. A waiting call's last try of a sweep also takes (or keeps) its place in the
// semaphore's line on each node that found every permit of the window taken; a release there
// hands its permit to the head of the line and tells that call alone on its client's channel
// (permit_line.hpp), and the call then asks for that permit at once. The retry delay is the
// fallback for an offer it did not hear.

#include "redlock/semaphore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "client/call_checks.hpp"
#include "client/client_state.hpp"
#include "drivers/acquisition.hpp"
#include "drivers/permit_place.hpp"
#include "drivers/single_lock.hpp"
#include "drivers/single_target.hpp"
#include "machines/acquire_fsm.hpp"
#include "machines/permit_sweep_fsm.hpp"
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
// code's message), then what the last permit tried said (`last`, empty when none was tried).
std::string permit_failure_text(error_code ec, std::string_view resource, std::size_t permits,
                                std::string_view why, std::string_view last,
                                std::uint64_t nodes_count) {
  // One line: the count to fix is the whole story.
  if (ec == error::permit_count_mismatch)
    return fmt::format(
        "lock a permit of {} ({} permits): the nodes hold this semaphore with {} permits; "
        "every client of it must ask for the same count",
        quoted_resource(resource), permits, nodes_count);
  std::string text = fmt::format("lock a permit of {} ({} permits): {}", quoted_resource(resource),
                                 permits, why.empty() ? ec.message() : why);
  if (why.empty() && !last.empty()) text += fmt::format("; the last permit tried: {}", last);
  return text;
}

// What a semaphore call asks of acquisition_op: a single lock's target (single_target.hpp)
// whose attempt is one try of the permit the sweep picks, with the semaphore's script; a sweep
// that goes on after a lost try; the permit handed out; and, for a waiting call, its place in
// the semaphore's lines, whose offers wake it and whose grants may win it a permit.
template <typename Op>
class sweep_target : public single_target<Op>, public permit_waiter {
  using lock_base = single_target<Op>;

 public:
  // A node handed this call permit `key` (or, empty, a wake to sweep again). It never
  // completes here (wake_attempt guards the attempt): the client may be walking its waiting
  // calls.
  void offered(std::string_view key) override { offer(key); }

  // Node `node` granted this call's place permit `key` (permit_grant_decisions.hpp). A win
  // completes here, on the strand, as a reply would.
  void granted(std::size_t node, std::string_view key, std::uint64_t epoch) override {
    grant(node, key, epoch);
  }

 protected:
  using lock_part = single_target<Op>;

  sweep_target(std::string resource, std::size_t permits, lock_options opts, bool wait)
      : lock_base(buffer{resource}, opts, wait),  // each try names its permit
        name_(std::move(resource)),
        permits_(permits),
        sweep_(permits == 0 ? 1 : permits) {  // 0 is refused by check()
    this->permit_ = &target_;
  }

  // The permit count, fair and shared mode, and what the single lock of the last permit
  // would refuse (the longest name; the TTL and wait are the same for all).
  call_problem check(const config& cfg) {
    call_problem problem = check_permit_call(name_, permits_, this->opts_, this->wait_, cfg);
    why_ = problem.why;
    return problem;
  }
  std::string subject() const { return quoted_resource(name_); }
  void name_keys() {
    client_state& s = *op().s_;
    target_.record_key = s.names.key(permit_record_name(name_));
    target_.permits = permits_;
    target_.line = permit_line_of(target_.record_key);
    target_.place_ttl = permit_place_lasts(s.cfg);
    target_.keys.reserve(permits_);
    for (std::size_t i = 0; i < permits_; ++i)
      target_.keys.push_back(s.names.key(permit_key_name(name_, i)));
    // The place's order in every node's line: when the call started, by this client's clock.
    target_.ticket = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    this->call_start_ = boot_clock::now();
    if (this->wait_) place_.emplace(s, *this, this->opts_);
  }
  bool queue_behind_yield() { return false; }

  // Each attempt tries the permit the sweep picked: the window after a lost try, else a new
  // sweep from an offered permit or a random one.
  void begin_target_attempt() {
    lock_base::begin_target_attempt();
    client_state& s = *op().s_;
    sweep_step step = next_ ? *std::exchange(next_, std::nullopt) : new_sweep(s);
    index_ = step.detail.index;
    this->resource_.assign(permit_key_name(name_, index_));
    single_lock_call::name_keys(s, *this);  // the permit's key and fencing names
    target_.first = index_;
    target_.span = step.detail.span;
    const bool with_place = place_ && !place_->str().empty() && step.detail.last;
    if (with_place) place_->sending(target_);
    target_.place = with_place ? place_->str() : std::string{};
    target_.answers.sent(++target_.tries, with_place);
    if (op().diag_) op().subject_ = quoted_resource(this->resource_);
  }

  // A won try: its permit, unless grants won the call one while it was out (the try's is let
  // go). A won call leaves the line where its try only kept its place (those nodes still held
  // the permit): a place left there would be offered a permit nobody takes. Answers that come
  // after this one leave it as they come (permit_target::held_answer).
  void succeed() {
    Op& o = op();
    if (grant_won_) {
      this->undo(*o.s_, o.round_);
      return win_by_grant(*grant_won_);
    }
    const auto kept = target_.answers.won();
    for (std::size_t i = 0; i < o.s_->size(); ++i)
      if (kept[i]) target_.leave_line(*o.s_, i);
    o.complete({}, permit{this->won_lock(), index_});
  }

  // A lost try (undone already): the sweep's next try now, or the call wins by grants, or the
  // sweep ends (every permit tried: `reason` becomes the sweep's) and the op decides the wait.
  bool next_try_after_loss(error_code& reason) {
    Op& o = op();
    if (grant_won_) {
      win_by_grant(*grant_won_);
      return true;
    }
    const sweep_step step = sweep_.tried(reason, target_.answers.pointed(o.s_->size()));
    if (step.what == action_kind::send_round) {
      next_ = step;
      o.wake_attempt();  // once the try's last answers are in
      return true;
    }
    if (step.what == action_kind::complete) {
      o.refuse(step.ec);
      return true;
    }
    reason = step.ec;
    return false;
  }
  // An offer heard while the sweep was out: ask for that permit now.
  bool retry_now() const { return lock_base::retry_now() || rewake_ || offer_.has_value(); }
  void after_loss() {
    lock_base::after_loss();
    rewake_ = false;
  }
  // The place in the nodes' lines, and their offers, stand for the local line.
  void wait_for_release() {}
  retry_context retry_plan() {
    client_state& s = *op().s_;
    return {.delay = s.jitter(s.cfg.retry_delay)};
  }

  void end_call(error_code ec) {
    if (place_) place_->leave(&target_);
    if (grant_timer_) grant_timer_->cancel();
    lock_base::end_call(ec);
  }
  // Freed unfinished (abandoned: its io_context went away), it leaves the client's list of
  // waiting calls, which must not name it any more.
  void forget_waits() {
    if (place_) op().s_->leave_permit_line(place_->str());
  }
  std::string failure_text(error_code ec, std::string text) const {
    if (!op().sent_) text.clear();
    return permit_failure_text(ec, name_, permits_, why_, text, target_.nodes_count);
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  sweep_step new_sweep(client_state& s) {
    const std::size_t first =
        offer_ ? *offer_ : std::uniform_int_distribution<std::size_t>{0, permits_ - 1}(s.rng);
    offer_.reset();
    return sweep_.start(first);
  }

  // A try is out, or the sweep's next one waits for its last answers.
  bool trying() const { return op().fsm_.in_flight() || next_.has_value(); }

  std::optional<std::size_t> index_of(std::string_view key) const {
    const auto it = std::find(target_.keys.begin(), target_.keys.end(), key);
    if (it == target_.keys.end()) return std::nullopt;
    return static_cast<std::size_t>(it - target_.keys.begin());
  }

  void offer(std::string_view key) {
    if (op().done_) return;
    if (!key.empty()) {
      const auto index = index_of(key);
      if (!index) return;
      offer_ = *index;
    }
    // A try out that fails goes on with the offer, or sweeps again at once (retry_now): a
    // subscription that came up while it was out did not hear its place's grants.
    if (trying())
      rewake_ = true;
    else
      op().wake_attempt();
  }

  void grant(std::size_t node, std::string_view key, std::uint64_t epoch) {
    if (op().done_ || !place_) return;
    const auto index = index_of(key);
    if (!index) return;
    const bool first = !place_->has_grants();
    if (const auto won = place_->granted(node, *index, epoch)) {
      // A try out may take a permit too: its decision decides (succeed, next_try_after_loss).
      if (op().fsm_.in_flight())
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

  // The grants' permit is the call's (the other grants are dropped by permit_place::leave). The
  // place stays in the lines of the nodes that granted nothing yet: their lagging release of this
  // permit gives it to this lock there too (client_state::grant_unclaimed keeps it). The current
  // try's late "held" answers leave the line as they come (permit_target::held_answer); a try
  // does not put back a place its node granted a permit in the try's window.
  void win_by_grant(std::size_t index) {
    Op& o = op();
    o.fsm_.finish();
    this->reported_ = true;  // observers hear of it from the place (permit_place::take)
    lock lk = place_->take(target_, name_, index);
    target_.answers.won();
    o.complete({}, permit{std::move(lk), index});
  }

  void give_back_grants() {
    place_->renew(target_);
    offer({});
  }

  void wait_for_grants() {
    Op& o = op();
    if (!grant_timer_) grant_timer_.emplace(o.s_->strand);
    grant_timer_->expires_after(o.s_->cfg.node_timeout);
    grant_timer_->async_wait(
        [keep = op_lifetime::hold{&o}, this, place = place_->str()](error_code ec) {
          if (ec || op().done_ || place != place_->str() || !place_->has_grants() || grant_won_)
            return;
          give_back_grants();
        });
  }

  std::string name_;  // the semaphore's resource
  std::size_t permits_;
  std::string why_;       // an argument error's explanation
  permit_target target_;  // the count asked, the permits' keys, the window of the try out
  permit_sweep sweep_;
  std::optional<sweep_step> next_;  // the sweep's next try, sent once the last one's answers are in
  std::size_t index_ = 0;           // the permit the try out asks for
  std::optional<std::size_t> grant_won_;   // grants won while a try was out
  bool rewake_ = false;                    // woken while a try was out: sweep again after it
  std::optional<permit_place> place_;      // a waiting call's place in the line, and its grants
  std::optional<std::size_t> offer_;       // a permit a node offered, to ask for next
  std::optional<boot_timer> grant_timer_;  // how long the place's grants may wait for a majority
};

}  // namespace

void start_lock_permit(std::shared_ptr<client_state> s, std::string resource, std::size_t permits,
                       lock_options opts, bool wait, diagnostics* diag, permit_handler h) {
  if (!s) return complete_without_client(std::move(h), permit{});
  launch_acquisition<permit, sweep_target>(std::move(s), diag, std::move(h), std::move(resource),
                                           permits, opts, wait);
}

}  // namespace detail
}  // namespace redlock
