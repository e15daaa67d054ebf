// SPDX-License-Identifier: BSL-1.0
// The lock kinds' state machines, fed events without a socket or a server: what an
// acquisition does after each round, failure, wake, timer and cancellation.

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "client/call_checks.hpp"
#include "client/parts.hpp"
#include "machines/acquire_fsm.hpp"
#include "machines/lock_answer.hpp"
#include "machines/shared_decisions.hpp"
#include "redlock/multi_lock.hpp"
#include "waiting/lines.hpp"
#include "waiting/permit_line.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::acquire_action;
using detail::acquire_fsm;
using detail::retry_context;
using detail::vote_state;
using kind = acquire_action::kind;
using phase = acquire_fsm::phase;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;

// A waiting call with `wait` left, its first attempt sent.
acquire_fsm sent_waiting(std::chrono::milliseconds wait = 10s) {
  acquire_fsm f{true, t0 + wait};
  f.attempt_sent();
  return f;
}

// A waiting call whose first attempt was lost as contended and is to be retried.
acquire_fsm retrying(std::chrono::milliseconds wait = 10s) {
  auto f = sent_waiting(wait);
  const auto lost = f.first_round_decided(vote_state::lost, false, error::contended);
  BOOST_REQUIRE(lost.what == kind::lost);
  BOOST_REQUIRE(f.attempt_failed(lost.ec, t0).what == kind::retry);
  return f;
}

// The same, waiting for its retry timer (returned as `wait`).
acquire_fsm waiting_for_timer(acquire_action& wait) {
  auto f = retrying();
  wait = f.plan_retry(t0, {.delay = 50ms});
  BOOST_REQUIRE(wait.what == kind::wait);
  return f;
}

// A fenced win whose write-back round is out.
acquire_fsm writing_back() {
  auto f = sent_waiting();
  BOOST_REQUIRE(f.first_round_decided(vote_state::won, true, {}).what == kind::won);
  f.write_back_sent();
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(acquisition_rounds)

BOOST_AUTO_TEST_CASE(a_first_round_won_in_time_is_handed_out) {
  auto f = sent_waiting();
  BOOST_TEST((f.first_round_decided(vote_state::won, true, {}).what == kind::won));
  BOOST_TEST(f.decided());
  BOOST_TEST(!f.in_flight());
}

BOOST_AUTO_TEST_CASE(a_first_round_won_too_late_fails_the_attempt_as_validity_exhausted) {
  auto f = sent_waiting();
  const auto a = f.first_round_decided(vote_state::won, false, {});
  BOOST_TEST((a.what == kind::lost));
  BOOST_TEST((a.ec == error::validity_exhausted));
}

BOOST_AUTO_TEST_CASE(a_lost_first_round_fails_the_attempt_with_its_reason) {
  auto f = sent_waiting();
  const auto a = f.first_round_decided(vote_state::lost, false, error::no_quorum);
  BOOST_TEST((a.what == kind::lost));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(an_undecided_tally_changes_nothing) {
  auto f = sent_waiting();
  BOOST_TEST((f.first_round_decided(vote_state::undecided, true, {}).what == kind::none));
  BOOST_TEST(!f.decided());
  BOOST_TEST(f.in_flight());
}

BOOST_AUTO_TEST_CASE(a_second_decision_of_the_same_round_is_ignored) {
  auto f = sent_waiting();
  BOOST_REQUIRE(f.first_round_decided(vote_state::won, true, {}).what == kind::won);
  // A late answer tips the tally once more: the round was decided already.
  BOOST_TEST((f.first_round_decided(vote_state::lost, false, error::no_quorum).what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_fenced_win_is_handed_out_only_after_its_write_back_wins) {
  auto f = writing_back();
  BOOST_TEST(f.in_flight());
  BOOST_TEST((f.write_back_decided(vote_state::undecided, true).what == kind::none));
  const auto a = f.write_back_decided(vote_state::won, true);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST((f.state() == phase::done));
}

BOOST_AUTO_TEST_CASE(a_write_back_refused_by_a_majority_fails_as_no_quorum) {
  auto f = writing_back();
  const auto a = f.write_back_decided(vote_state::lost, true);
  BOOST_TEST((a.what == kind::lost));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_write_back_confirmed_too_late_fails_as_validity_exhausted) {
  auto f = writing_back();
  const auto a = f.write_back_decided(vote_state::won, false);
  BOOST_TEST((a.what == kind::lost));
  BOOST_TEST((a.ec == error::validity_exhausted));
}

BOOST_AUTO_TEST_CASE(a_write_back_tally_without_a_write_back_out_is_ignored) {
  auto f = sent_waiting();
  BOOST_TEST((f.write_back_decided(vote_state::won, true).what == kind::none));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(acquisition_failures)

BOOST_AUTO_TEST_CASE(a_single_try_completes_with_the_attempts_reason) {
  acquire_fsm f{false, t0};
  f.attempt_sent();
  const auto lost = f.first_round_decided(vote_state::lost, false, error::contended);
  const auto a = f.attempt_failed(lost.ec, t0);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::contended));  // a try is not a wait: no wait_timeout
  BOOST_TEST((f.state() == phase::done));
}

BOOST_AUTO_TEST_CASE(a_single_try_lost_to_unrepaired_nodes_is_tried_once_more_after_the_repair) {
  acquire_fsm f{false, t0};
  f.attempt_sent();
  auto lost = f.first_round_decided(vote_state::lost, false, error::no_quorum);
  auto a = f.attempt_failed(lost.ec, t0, false, 600ms);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 600ms));  // the bound; the repair's end wakes it sooner
  BOOST_TEST((f.wake(0).what == kind::send_round));
  f.attempt_sent();
  // Once only: the retry's loss ends the try, whatever it lost to.
  lost = f.first_round_decided(vote_state::lost, false, error::no_quorum);
  a = f.attempt_failed(lost.ec, t0, false, 600ms);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_wait_that_is_over_turns_contended_into_wait_timeout) {
  auto f = sent_waiting(100ms);
  const auto a = f.attempt_failed(error::contended, t0 + 100ms);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::wait_timeout));
}

BOOST_AUTO_TEST_CASE(a_wait_that_is_over_keeps_any_other_reason) {
  auto f = sent_waiting(100ms);
  const auto a = f.attempt_failed(error::no_quorum, t0 + 200ms);
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_ends_the_wait_at_once) {
  auto f = sent_waiting(10s);
  const auto a = f.attempt_failed(error::wrong_type, t0);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::wrong_type));
}

BOOST_AUTO_TEST_CASE(a_failure_with_wait_left_is_retried_after_the_retry_delay) {
  auto f = retrying(10s);
  const auto a = f.plan_retry(t0, {.delay = 50ms});
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 50ms));
  BOOST_TEST((f.state() == phase::between));
}

BOOST_AUTO_TEST_CASE(the_retry_delay_is_cut_at_the_wait_deadline) {
  auto f = retrying(30ms);
  BOOST_TEST((f.plan_retry(t0 + 10ms, {.delay = 50ms}).delay == 20ms));
}

BOOST_AUTO_TEST_CASE(a_release_heard_during_the_attempt_retries_it_at_once) {
  auto f = sent_waiting();
  BOOST_TEST((f.wake(1).what == kind::none));  // remembered, not acted on mid-round
  f.first_round_decided(vote_state::lost, false, error::contended);
  const auto a = f.attempt_failed(error::contended, t0);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 0ns));
}

BOOST_AUTO_TEST_CASE(a_wake_is_used_once) {
  auto f = sent_waiting();
  f.wake(1);
  f.first_round_decided(vote_state::lost, false, error::contended);
  BOOST_REQUIRE(f.attempt_failed(error::contended, t0).delay == 0ns);
  f.attempt_sent();
  f.first_round_decided(vote_state::lost, false, error::contended);
  BOOST_TEST((f.attempt_failed(error::contended, t0).what == kind::retry));
}

BOOST_AUTO_TEST_CASE(a_refusal_by_a_holder_whose_release_was_heard_retries_at_once) {
  auto f = sent_waiting();
  f.first_round_decided(vote_state::lost, false, error::contended);
  const auto a = f.attempt_failed(error::contended, t0, true);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 0ns));
}

BOOST_AUTO_TEST_CASE(a_waiter_parked_behind_the_head_waits_for_its_deadline) {
  auto f = retrying(5s);
  const auto a = f.plan_retry(t0, {.delay = 50ms, .parked = true});
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 5s));
}

BOOST_AUTO_TEST_CASE(a_parked_waiter_without_a_deadline_wakes_at_least_daily) {
  acquire_fsm f{true, boot_clock::time_point::max()};
  f.attempt_sent();
  f.first_round_decided(vote_state::lost, false, error::contended);
  BOOST_REQUIRE(f.attempt_failed(error::contended, t0).what == kind::retry);
  BOOST_TEST((f.plan_retry(t0, {.delay = 50ms, .parked = true}).delay == 24h));
}

BOOST_AUTO_TEST_CASE(fair_mode_caps_a_parked_wait_at_the_renew_interval) {
  auto f = retrying(5s);
  BOOST_TEST((f.plan_retry(t0, {.delay = 50ms, .parked = true, .renew = 333ms}).delay == 333ms));
}

BOOST_AUTO_TEST_CASE(fair_mode_caps_the_retry_delay_at_the_renew_interval) {
  auto f = retrying(5s);
  BOOST_TEST((f.plan_retry(t0, {.delay = 400ms, .renew = 333ms}).delay == 333ms));
}

BOOST_AUTO_TEST_CASE(a_call_queued_behind_a_yielded_release_parks_before_any_attempt) {
  acquire_fsm f{true, t0 + 2s};
  const auto a = f.park(t0, std::nullopt);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST((a.delay == 2s));
  // Its wake tries at once: no attempt is in flight.
  BOOST_TEST((f.wake(0).what == kind::send_round));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(acquisition_waits)

BOOST_AUTO_TEST_CASE(an_expired_retry_timer_starts_the_next_attempt) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  BOOST_TEST((f.timer_fired(wait.detail.generation, 0).what == kind::send_round));
}

BOOST_AUTO_TEST_CASE(a_wake_between_attempts_starts_one_at_once_and_stales_the_timer) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  const auto a = f.wake(0);
  BOOST_TEST((a.what == kind::send_round));
  BOOST_TEST(a.detail.cancel_timer);
  f.attempt_sent();
  // The old timer fires anyway (its cancellation raced the expiry): stale.
  BOOST_TEST((f.timer_fired(wait.detail.generation, 0).what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_wake_while_the_last_attempts_requests_are_out_waits_for_them) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  const auto a = f.wake(2);
  BOOST_TEST((a.what == kind::none));
  BOOST_TEST(a.detail.cancel_timer);
  BOOST_TEST((f.requests_back(1).what == kind::none));
  BOOST_TEST((f.requests_back(0).what == kind::send_round));
  BOOST_TEST((f.requests_back(0).what == kind::none));  // once
}

BOOST_AUTO_TEST_CASE(an_expired_timer_with_requests_out_waits_for_them) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  BOOST_TEST((f.timer_fired(wait.detail.generation, 3).what == kind::none));
  BOOST_TEST((f.requests_back(0).what == kind::send_round));
}

BOOST_AUTO_TEST_CASE(late_answers_without_a_retry_due_start_nothing) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  BOOST_TEST((f.requests_back(0).what == kind::none));
}

BOOST_AUTO_TEST_CASE(each_wait_makes_the_ones_before_it_stale) {
  auto f = retrying();
  const auto first = f.plan_retry(t0, {.delay = 50ms});
  const auto second = f.wake_after(10ms, t0);
  BOOST_TEST(second.detail.generation != first.detail.generation);
  BOOST_TEST((f.timer_fired(first.detail.generation, 0).what == kind::none));
  BOOST_TEST((f.timer_fired(second.detail.generation, 0).what == kind::send_round));
}

BOOST_AUTO_TEST_CASE(a_delayed_wake_between_attempts_rearms_the_timer_within_the_deadline) {
  auto f = retrying(30ms);
  const auto a = f.wake_after(100ms, t0);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST(a.detail.cancel_timer);
  BOOST_TEST((a.delay == 30ms));
}

BOOST_AUTO_TEST_CASE(a_delayed_wake_during_an_attempt_retries_right_after_it) {
  auto f = sent_waiting();
  BOOST_TEST((f.wake_after(100ms, t0).what == kind::none));
  f.first_round_decided(vote_state::lost, false, error::contended);
  BOOST_TEST((f.attempt_failed(error::contended, t0).delay == 0ns));
}

BOOST_AUTO_TEST_CASE(a_promoted_waiter_polls_after_the_retry_delay) {
  auto f = retrying(10s);
  f.plan_retry(t0, {.delay = 50ms, .parked = true});
  const auto a = f.promote(t0, 40ms, std::nullopt);
  BOOST_TEST((a.what == kind::wait));
  BOOST_TEST(a.detail.cancel_timer);
  BOOST_TEST((a.delay == 40ms));
}

BOOST_AUTO_TEST_CASE(a_promotion_is_cut_at_the_deadline_and_the_renew_interval) {
  auto f = retrying(20ms);
  BOOST_TEST((f.promote(t0, 40ms, std::nullopt).delay == 20ms));
  auto g = retrying(10s);
  BOOST_TEST((g.promote(t0, 400ms, 333ms).delay == 333ms));
}

BOOST_AUTO_TEST_CASE(a_promotion_during_an_attempt_is_left_to_the_attempts_outcome) {
  auto f = sent_waiting();
  BOOST_TEST((f.promote(t0, 40ms, std::nullopt).what == kind::none));
  auto g = writing_back();
  BOOST_TEST((g.promote(t0, 40ms, std::nullopt).what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_contended_wait_retries_until_a_round_wins) {
  auto f = sent_waiting(10s);
  auto now = t0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto lost = f.first_round_decided(vote_state::lost, false, error::contended);
    BOOST_REQUIRE(f.attempt_failed(lost.ec, now).what == kind::retry);
    const auto wait = f.plan_retry(now, {.delay = 50ms});
    now += wait.delay;
    BOOST_REQUIRE(f.timer_fired(wait.detail.generation, 0).what == kind::send_round);
    f.attempt_sent();
  }
  BOOST_TEST((f.first_round_decided(vote_state::won, true, {}).what == kind::won));
  f.finish();
  BOOST_TEST((f.state() == phase::done));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(acquisition_cancellation)

BOOST_AUTO_TEST_CASE(cancelled_during_the_first_round_the_attempt_is_undone) {
  auto f = sent_waiting();
  const auto a = f.cancel(true);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST(a.detail.release);
  BOOST_TEST(a.detail.cancel_timer);
}

BOOST_AUTO_TEST_CASE(cancelled_during_the_write_back_the_attempt_is_undone) {
  auto f = writing_back();
  BOOST_TEST(f.cancel(true).detail.release);
}

BOOST_AUTO_TEST_CASE(cancelled_between_attempts_nothing_is_undone) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  const auto a = f.cancel(true);
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST(!a.detail.release);  // the failed attempt was undone when it failed
  BOOST_TEST((f.timer_fired(wait.detail.generation, 0).what == kind::none));
}

BOOST_AUTO_TEST_CASE(cancelled_before_anything_was_sent_nothing_is_undone) {
  acquire_fsm f{true, t0 + 1s};
  f.attempt_sent();  // the first round could not leave (every node refused)
  BOOST_TEST(!f.cancel(false).detail.release);
}

BOOST_AUTO_TEST_CASE(a_shutdown_during_the_first_round_ends_the_call_at_once_and_undoes_it) {
  // Not after the round: a win decided then would be handed out after the client
  // released what it held, and a refusal would wait in a line that nobody wakes.
  auto f = sent_waiting();
  const auto a = f.client_closed(true);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::shut_down));
  BOOST_TEST(a.detail.release);
  BOOST_TEST((f.first_round_decided(vote_state::won, true, {}).what == kind::none));
  BOOST_TEST((f.attempt_failed(error::contended, t0).what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_shutdown_during_the_write_back_undoes_the_attempt) {
  auto f = writing_back();
  const auto a = f.client_closed(true);
  BOOST_TEST((a.ec == error::shut_down));
  BOOST_TEST(a.detail.release);
  BOOST_TEST((f.write_back_decided(vote_state::won, true).what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_shutdown_while_waiting_out_a_retry_ends_the_call_and_its_timer) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  const auto a = f.client_closed(true);
  BOOST_TEST((a.what == kind::complete));
  BOOST_TEST((a.ec == error::shut_down));
  BOOST_TEST(!a.detail.release);  // the failed attempt was undone when it failed
  BOOST_TEST(a.detail.cancel_timer);
  BOOST_TEST((f.timer_fired(wait.detail.generation, 0).what == kind::none));
}

BOOST_AUTO_TEST_CASE(nothing_happens_after_the_call_completed) {
  acquire_action wait;
  auto f = waiting_for_timer(wait);
  f.finish();
  BOOST_TEST((f.wake(0).what == kind::none));
  BOOST_TEST((f.wake_after(1ms, t0).what == kind::none));
  BOOST_TEST((f.promote(t0, 1ms, std::nullopt).what == kind::none));
  BOOST_TEST((f.timer_fired(wait.detail.generation, 0).what == kind::none));
  BOOST_TEST((f.requests_back(0).what == kind::none));
  BOOST_TEST((f.cancel(true).what == kind::none));
  BOOST_TEST((f.client_closed(true).what == kind::none));
  BOOST_TEST((f.attempt_failed(error::contended, t0).what == kind::none));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(acquisition_clock)

BOOST_AUTO_TEST_CASE(a_single_try_has_no_wait) {
  BOOST_TEST((detail::wait_deadline(t0, false, 5s) == t0));
}

BOOST_AUTO_TEST_CASE(a_wait_ends_after_its_length) {
  BOOST_TEST((detail::wait_deadline(t0, true, 5s) == t0 + 5s));
}

BOOST_AUTO_TEST_CASE(wait_forever_and_waits_beyond_a_century_never_end) {
  BOOST_TEST((detail::wait_deadline(t0, true, wait_forever) == boot_clock::time_point::max()));
  BOOST_TEST((detail::wait_deadline(t0, true, std::chrono::hours{24 * 365 * 101}) ==
              boot_clock::time_point::max()));
}

BOOST_AUTO_TEST_CASE(a_delay_past_the_deadline_is_never_negative) {
  BOOST_TEST((detail::delay_within(50ms, t0 + 1s, t0) == 0ns));
  BOOST_TEST((detail::delay_within(50ms, t0, t0 + 1s) == 50ms));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(waiting_lines)

namespace {

// A waiting call that counts what it is told.
struct fake_waiter final : detail::waiter {
  explicit fake_waiter(std::int64_t ticket = 0, std::string_view id = {}) {
    line_ticket = ticket;
    line_id = id;
  }
  void wake() override { ++wakes; }
  void promote() override { ++promotions; }
  void wake_after(std::chrono::nanoseconds) override { ++wakes; }
  int wakes = 0, promotions = 0;
};

struct fake_set final : detail::set_waiter {
  void wake(std::string_view) override { ++wakes; }
  int wakes = 0;
};

struct fake_call final : detail::acquisition {
  void end_at_shutdown() override {}
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_first_call_forms_the_line_and_is_its_head) {
  detail::waiter_lines lines;
  fake_waiter a, b;
  BOOST_TEST(lines.join("k", a));
  BOOST_TEST(!lines.join("k", b));
  BOOST_TEST(lines.head("k") == &a);
  BOOST_TEST(lines.head("other") == nullptr);
}

BOOST_AUTO_TEST_CASE(the_head_leaving_promotes_the_next_in_arrival_order) {
  detail::waiter_lines lines;
  fake_waiter a, b, c;
  lines.join("k", a);
  lines.join("k", b);
  lines.join("k", c);
  const auto left = lines.leave("k", a);
  BOOST_TEST(!left.gone);
  BOOST_TEST(left.promoted == &b);
  BOOST_TEST(lines.head("k") == &b);
}

BOOST_AUTO_TEST_CASE(a_call_leaving_from_behind_the_head_promotes_nobody) {
  detail::waiter_lines lines;
  fake_waiter a, b;
  lines.join("k", a);
  lines.join("k", b);
  const auto left = lines.leave("k", b);
  BOOST_TEST(left.promoted == nullptr);
  BOOST_TEST(!left.gone);
  BOOST_TEST(lines.head("k") == &a);
}

BOOST_AUTO_TEST_CASE(the_last_call_leaving_ends_the_line) {
  detail::waiter_lines lines;
  fake_waiter a;
  lines.join("k", a);
  BOOST_TEST(lines.leave("k", a).gone);
  BOOST_TEST(!lines.has_line("k"));
  BOOST_TEST(lines.join("k", a));  // a new line forms again
}

BOOST_AUTO_TEST_CASE(leaving_a_line_one_is_not_in_changes_nothing) {
  detail::waiter_lines lines;
  fake_waiter a, b;
  lines.join("k", a);
  const auto left = lines.leave("k", b);
  BOOST_TEST(!left.gone);
  BOOST_TEST(left.promoted == nullptr);
  BOOST_TEST(!lines.leave("nobody", a).gone);
  BOOST_TEST(lines.head("k") == &a);
}

BOOST_AUTO_TEST_CASE(fair_calls_are_ordered_by_their_place_on_the_nodes) {
  detail::waiter_lines lines;
  fake_waiter late{200, "b"}, early{100, "a"}, same_ms{100, "c"};
  lines.join("k", late);
  lines.join("k", same_ms);
  lines.join("k", early);
  BOOST_TEST(lines.head("k") == &early);
  BOOST_TEST(lines.leave("k", early).promoted == &same_ms);
  BOOST_TEST(lines.leave("k", same_ms).promoted == &late);
}

BOOST_AUTO_TEST_CASE(an_unfair_call_joins_behind_fair_ones_and_they_do_not_pass_it) {
  detail::waiter_lines lines;
  fake_waiter plain, fair{100, "a"};
  lines.join("k", plain);
  lines.join("k", fair);  // fair calls are placed among fair ones only
  BOOST_TEST(lines.head("k") == &plain);
}

BOOST_AUTO_TEST_CASE(lines_of_different_keys_are_apart) {
  detail::waiter_lines lines;
  fake_waiter a, b;
  BOOST_TEST(lines.join("k1", a));
  BOOST_TEST(lines.join("k2", b));
  BOOST_TEST(lines.leave("k1", a).gone);
  BOOST_TEST(lines.head("k2") == &b);
}

BOOST_AUTO_TEST_CASE(a_set_waits_on_each_of_its_keys_until_it_stops) {
  detail::waiter_lines lines;
  fake_set s;
  const std::vector<std::string> keys{"a", "b"};
  lines.set_waits(s, keys);
  BOOST_TEST(lines.sets_on("a").size() == 1u);
  BOOST_TEST(lines.sets_on("b").front() == &s);
  BOOST_TEST(lines.sets_on("c").empty());
  BOOST_TEST(lines.set_stops(s, keys).size() == 2u);
  BOOST_TEST(lines.sets_on("a").empty());
  BOOST_TEST(lines.set_stops(s, keys).empty());  // stopping twice releases nothing twice
}

BOOST_AUTO_TEST_CASE(every_waiting_set_is_found_once_at_shutdown) {
  detail::waiter_lines lines;
  fake_set s, t;
  lines.set_waits(s, {"x", "y"});
  lines.set_waits(t, {"y"});
  BOOST_TEST(lines.all_sets().size() == 2u);  // s on two keys, found once
}

BOOST_AUTO_TEST_CASE(every_call_in_progress_is_found_at_shutdown_in_a_line_or_not) {
  // A call whose attempt is out, or that waits out a retry delay after a failure that
  // was not contention, is in no line: shutdown must reach it all the same.
  detail::waiter_lines lines;
  fake_call a, b, c;
  for (fake_call* x : {&a, &b, &c}) lines.begin_call(*x);
  lines.begin_call(b);  // once only
  const auto has = [&lines](fake_call& x) {
    const auto all = lines.calls();
    return std::count(all.begin(), all.end(), &x) == 1;
  };
  BOOST_TEST(lines.calls().size() == 3u);
  BOOST_TEST((has(a) && has(b) && has(c)));
  lines.end_call(b);  // from the middle
  BOOST_TEST(lines.calls().size() == 2u);
  BOOST_TEST((has(a) && has(c)));
  lines.end_call(b);  // twice: nothing
  lines.end_call(c);  // the latest
  lines.end_call(a);  // the last
  BOOST_TEST(lines.calls().empty());
  lines.begin_call(b);  // listed again after it left
  BOOST_TEST(has(b));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(call_checks)

namespace {
const redlock::config cfg{};
}

BOOST_AUTO_TEST_CASE(a_sound_call_has_no_problem) {
  BOOST_TEST(!detail::check_lock_call("job", {}, true, cfg));
}

BOOST_AUTO_TEST_CASE(an_empty_name_is_an_invalid_resource) {
  const auto p = detail::check_lock_call("", {}, true, cfg);
  BOOST_TEST((p.code == error::invalid_resource));
  BOOST_TEST(p.why == "the resource name is empty");
}

BOOST_AUTO_TEST_CASE(a_name_over_the_limit_is_refused_and_quoted_by_its_start) {
  const std::string name(max_resource_bytes + 1, 'x');
  const auto p = detail::check_lock_call(name, {}, true, cfg);
  BOOST_TEST((p.code == error::invalid_resource));
  std::string count = std::to_string(max_resource_bytes + 1);
  count.append(" bytes");
  BOOST_TEST(p.why.find(count) != std::string::npos);
  std::string quoted(32, 'x');
  quoted.append("...");
  BOOST_TEST(detail::quoted_resource(name) == quoted);
  BOOST_TEST(!detail::check_lock_call(std::string(max_resource_bytes, 'x'), {}, true, cfg));
}

BOOST_AUTO_TEST_CASE(a_ttl_the_rules_refuse_is_an_invalid_ttl) {
  const auto p = detail::check_lock_call("job", {.ttl = 0ms}, true, cfg);
  BOOST_TEST((p.code == error::invalid_ttl));
  BOOST_TEST(!p.why.empty());
}

BOOST_AUTO_TEST_CASE(a_negative_wait_is_refused_only_when_the_call_waits) {
  BOOST_TEST(
      (detail::check_lock_call("job", {.wait = -1ms}, true, cfg).code == error::invalid_wait));
  BOOST_TEST(!detail::check_lock_call("job", {.wait = -1ms}, false, cfg));
}

BOOST_AUTO_TEST_CASE(a_set_is_sorted_into_the_order_every_node_sees) {
  std::vector<std::string> names{"c", "a", "b"};
  BOOST_TEST(!detail::check_set_call(names, {}, true, cfg));
  BOOST_TEST((names == std::vector<std::string>{"a", "b", "c"}));
}

BOOST_AUTO_TEST_CASE(a_fair_set_an_empty_set_and_an_oversized_set_are_refused) {
  std::vector<std::string> one{"a"};
  BOOST_TEST(
      (detail::check_set_call(one, {.fair = true}, true, cfg).code == error::invalid_argument));
  std::vector<std::string> none;
  BOOST_TEST((detail::check_set_call(none, {}, true, cfg).code == error::invalid_resource));
  std::vector<std::string> many(max_multi_lock + 1);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = "r" + std::to_string(i);
  BOOST_TEST((detail::check_set_call(many, {}, true, cfg).code == error::too_many_resources));
}

BOOST_AUTO_TEST_CASE(an_empty_name_in_a_set_is_named_by_its_place) {
  std::vector<std::string> names{"a", ""};
  const auto p = detail::check_set_call(names, {}, true, cfg);
  BOOST_TEST((p.code == error::invalid_resource));
  BOOST_TEST(p.why == "resource 1 of the set is an empty name");
}

BOOST_AUTO_TEST_CASE(a_name_given_twice_in_a_set_is_refused_and_named) {
  std::vector<std::string> names{"b", "a", "b"};
  const auto p = detail::check_set_call(names, {}, true, cfg);
  BOOST_TEST((p.code == error::invalid_resource));
  BOOST_TEST(p.why == "resource \"b\" is named twice in the set");
}

BOOST_AUTO_TEST_CASE(a_semaphore_has_one_to_max_permits) {
  BOOST_TEST((detail::check_permit_call("pool", 0, {}, true, cfg).code == error::invalid_argument));
  BOOST_TEST((detail::check_permit_call("pool", redlock::max_permits + 1, {}, true, cfg).code ==
              error::invalid_argument));
  BOOST_TEST(!detail::check_permit_call("pool", 1, {}, true, cfg));
  BOOST_TEST(!detail::check_permit_call("pool", redlock::max_permits, {}, true, cfg));
}

BOOST_AUTO_TEST_CASE(a_permit_is_neither_fair_nor_shared) {
  const auto fair = detail::check_permit_call("pool", 2, {.fair = true}, true, cfg);
  BOOST_TEST((fair.code == error::invalid_argument));
  BOOST_TEST(fair.why.find("fair") != std::string::npos);
  const auto shared = detail::check_permit_call("pool", 2, {.shared = true}, true, cfg);
  BOOST_TEST((shared.code == error::invalid_argument));
  BOOST_TEST(shared.why.find("shared") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_semaphore_name_is_checked_before_its_permits_keys) {
  BOOST_TEST((detail::check_permit_call("", 2, {}, true, cfg).code == error::invalid_resource));
  // A name whose last permit's key would be over the limit, though the name itself is not.
  const std::string long_name(redlock::max_resource_bytes - 4, 'n');
  BOOST_TEST(
      (detail::check_permit_call(long_name, 2, {}, true, cfg).code == error::invalid_resource));
}

BOOST_AUTO_TEST_CASE(a_permit_call_checks_the_ttl_and_wait_of_its_lock) {
  BOOST_TEST(
      (detail::check_permit_call("pool", 2, {.ttl = 0ms}, true, cfg).code == error::invalid_ttl));
  BOOST_TEST((detail::check_permit_call("pool", 2, {.wait = -5ms}, true, cfg).code ==
              error::invalid_wait));
  // A try does not wait: its wait is not read.
  BOOST_TEST(!detail::check_permit_call("pool", 2, {.wait = -5ms}, false, cfg));
}

BOOST_AUTO_TEST_CASE(a_set_checks_its_ttl_and_wait_after_its_names) {
  std::vector<std::string> names{"a"};
  BOOST_TEST((detail::check_set_call(names, {.ttl = 0ms}, true, cfg).code == error::invalid_ttl));
  BOOST_TEST(
      (detail::check_set_call(names, {.wait = -5ms}, true, cfg).code == error::invalid_wait));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lock_answers)

namespace {

using resp::type;
using answer = detail::lock_answer::kind;

resp::node integer(std::int64_t v) {
  return {.kind = type::integer, .depth = 1, .integer = v};
}
resp::node text(std::string_view t, std::uint32_t depth = 1) {
  return {.kind = type::bulk_string, .depth = depth, .text = t};
}
resp::node nil(std::uint32_t depth = 1) {
  return {.kind = type::null, .depth = depth};
}
// A script's array answer.
resp::reply array(std::vector<resp::node> elements) {
  resp::reply r{{.kind = type::array, .size = elements.size()}};
  r.insert(r.end(), elements.begin(), elements.end());
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_set_answered_nil_took_the_key) {
  BOOST_TEST((detail::read_lock_answer({nil(0)}, false, false).what == answer::taken));
}

BOOST_AUTO_TEST_CASE(a_plain_set_answered_with_a_token_names_the_holder) {
  const auto a = detail::read_lock_answer({text("3fa2/host:1", 0)}, false, false);
  BOOST_TEST((a.what == answer::held));
  BOOST_TEST(a.named);
  BOOST_TEST(a.holder == "3fa2/host:1");
}

BOOST_AUTO_TEST_CASE(a_plain_set_answered_with_anything_else_is_malformed) {
  BOOST_TEST(
      (detail::read_lock_answer({{.kind = type::integer, .integer = 1}}, false, false).what ==
       answer::malformed));
}

using set_kind = detail::set_answer::kind;

BOOST_AUTO_TEST_CASE(a_set_answered_one_took_every_key) {
  BOOST_TEST((detail::read_set_answer(array({integer(1)}), 3, false).what == set_kind::taken));
}

BOOST_AUTO_TEST_CASE(a_fenced_set_answer_gives_a_counter_and_a_marker_per_key) {
  const auto r = array({integer(1), integer(5), text("m1"), integer(7), text("m2")});
  BOOST_TEST_REQUIRE((detail::read_set_answer(r, 2, true).what == set_kind::taken));
  BOOST_TEST(detail::set_counter(r, 0) == 5u);
  BOOST_TEST(detail::set_counter(r, 1) == 7u);
  BOOST_TEST(detail::set_marker(r, 0).text == "m1");
  BOOST_TEST(detail::set_marker(r, 1).text == "m2");
}

BOOST_AUTO_TEST_CASE(a_fenced_set_answer_short_of_a_key_or_with_a_bad_counter_is_malformed) {
  // Two pairs for a set of three keys; a counter that is text; pairs for an unfenced set.
  const auto two = array({integer(1), integer(5), text("m1"), integer(7), text("m2")});
  BOOST_TEST((detail::read_set_answer(two, 3, true).what == set_kind::malformed));
  const auto bad = array({integer(1), text("5"), text("m1")});
  BOOST_TEST((detail::read_set_answer(bad, 1, true).what == set_kind::malformed));
  BOOST_TEST((detail::read_set_answer(two, 2, false).what == set_kind::malformed));
  // An unfenced {1} for a fenced set: the counters are missing.
  BOOST_TEST((detail::read_set_answer(array({integer(1)}), 1, true).what == set_kind::malformed));
}

BOOST_AUTO_TEST_CASE(a_set_held_names_the_first_key_held_and_its_holder) {
  const auto a = detail::read_set_answer(array({integer(0), integer(2), text("tok-w")}), 3, false);
  BOOST_TEST((a.what == set_kind::held));
  BOOST_TEST(a.blocker == 2u);
  BOOST_TEST(a.named);
  BOOST_TEST(a.holder == "tok-w");
  BOOST_TEST(!a.readers);  // a writer's token: nothing to mark
}

BOOST_AUTO_TEST_CASE(a_set_held_by_readers_names_the_key_to_mark) {
  const auto a =
      detail::read_set_answer(array({integer(0), integer(2), text("R|0 123 tok-r")}), 3, true);
  BOOST_TEST((a.what == set_kind::held));
  BOOST_TEST(a.readers);
  BOOST_TEST(a.blocker == 2u);
  // An index outside the set names no key, so there is nothing to mark.
  for (std::int64_t k : {0, 4}) {
    const auto out =
        detail::read_set_answer(array({integer(0), integer(k), text("R|0 123 tok-r")}), 3, false);
    BOOST_TEST((out.what == set_kind::held));
    BOOST_TEST(out.blocker == 0u);
    BOOST_TEST(!out.readers);
  }
}

BOOST_AUTO_TEST_CASE(a_set_held_without_a_holder_is_still_held) {
  const auto a = detail::read_set_answer(array({integer(0), integer(1)}), 2, false);
  BOOST_TEST((a.what == set_kind::held));
  BOOST_TEST(a.blocker == 1u);
  BOOST_TEST(!a.named);
}

BOOST_AUTO_TEST_CASE(a_set_answer_of_another_shape_is_malformed) {
  BOOST_TEST((detail::read_set_answer(array({integer(7)}), 1, false).what == set_kind::malformed));
  BOOST_TEST((detail::read_set_answer(array({text("1")}), 1, false).what == set_kind::malformed));
  BOOST_TEST((detail::read_set_answer({nil(0)}, 1, false).what == set_kind::malformed));
  BOOST_TEST((detail::read_set_answer({integer(1)}, 1, false).what == set_kind::malformed));
}

BOOST_AUTO_TEST_CASE(a_readers_record_is_read_as_readers_not_as_a_token) {
  // A writer's SET NX GET, and a fenced try's {0, holder}: the record is not a holder's token.
  const auto plain = detail::read_lock_answer({text("R|0 123 tok-r", 0)}, false, false);
  BOOST_TEST((plain.what == answer::readers));
  BOOST_TEST(plain.holder == "R|0 123 tok-r");
  const auto fenced =
      detail::read_lock_answer(array({integer(0), text("R|9 123 tok-r")}), true, false);
  BOOST_TEST((fenced.what == answer::readers));
}

BOOST_AUTO_TEST_CASE(a_waiting_writers_mark_is_read_as_such_and_only_when_exact) {
  BOOST_TEST(
      (detail::read_lock_answer({text("W", 0)}, false, false).what == answer::writer_waiting));
  BOOST_TEST((detail::read_lock_answer(array({integer(0), text("W")}), true, false).what ==
              answer::writer_waiting));
  BOOST_TEST((detail::read_lock_answer({text("W/host:1", 0)}, false, false).what == answer::held));
}

namespace {

detail::lock_answer held_as(answer what, std::string_view holder = "tok") {
  return {.what = what, .named = !holder.empty(), .holder = holder};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_writer_refused_by_readers_marks_those_nodes_alone) {
  detail::mode_refusals modes{false};
  BOOST_TEST(!modes.held(1, held_as(answer::readers, "R|0 9 r")).empty());
  BOOST_TEST(modes.held(2, held_as(answer::held)).empty());  // another writer: as any lock
  BOOST_TEST(modes.mark_writer_waiting());
  BOOST_TEST(!modes.readers()[0]);
  BOOST_TEST(modes.readers()[1]);
  BOOST_TEST(!modes.readers()[2]);
}

BOOST_AUTO_TEST_CASE(a_reader_waits_for_a_writers_mark_and_marks_nothing) {
  detail::mode_refusals modes{true};
  BOOST_TEST(modes.held(0, held_as(answer::writer_waiting, "W")).find("writer waits") !=
             std::string_view::npos);
  BOOST_TEST(!modes.mark_writer_waiting());
  // Readers never refuse a reader, but a record in a reader's answer marks nothing either.
  modes.held(1, held_as(answer::readers, "R|0 9 r"));
  BOOST_TEST(!modes.mark_writer_waiting());
}

BOOST_AUTO_TEST_CASE(a_writer_takes_a_W_for_an_ordinary_holder) {
  detail::mode_refusals modes{false};
  BOOST_TEST(modes.held(0, held_as(answer::writer_waiting, "W")).empty());
  BOOST_TEST(!modes.mark_writer_waiting());
  BOOST_TEST(modes.waits_on_itself(true).empty());
}

BOOST_AUTO_TEST_CASE(a_writer_refused_by_readers_while_this_client_reads_is_an_upgrade) {
  detail::mode_refusals modes{false};
  modes.held(0, held_as(answer::readers, "R|0 9 r"));
  BOOST_TEST(modes.waits_on_itself(true).find("reader's lease") != std::string_view::npos);
  // The client holds no lease: the readers are others', so it waits.
  BOOST_TEST(modes.waits_on_itself(false).empty());
}

BOOST_AUTO_TEST_CASE(a_reader_refused_by_a_token_while_this_client_writes_is_refused) {
  detail::mode_refusals modes{true};
  BOOST_TEST(modes.held(0, held_as(answer::held, "3fa2")).empty());
  BOOST_TEST(modes.waits_on_itself(true).find("exclusively") != std::string_view::npos);
  // An unnamed holder could not be told from anything: not this client's for sure.
  detail::mode_refusals unnamed{true};
  unnamed.held(0, held_as(answer::held, ""));
  BOOST_TEST(unnamed.waits_on_itself(true).empty());
}

BOOST_AUTO_TEST_CASE(a_new_attempt_forgets_the_last_ones_refusals) {
  detail::mode_refusals modes{false};
  modes.held(0, held_as(answer::readers, "R|0 9 r"));
  modes.begin_attempt();
  BOOST_TEST(!modes.mark_writer_waiting());
  BOOST_TEST(!modes.readers()[0]);
  BOOST_TEST(modes.waits_on_itself(true).empty());
}

BOOST_AUTO_TEST_CASE(a_write_back_raised_the_counters_only_when_it_answers_one_and_markers) {
  BOOST_TEST(detail::write_back_raised(array({integer(1), text("m1")})));
  BOOST_TEST(detail::write_back_raised(array({integer(1), text("m1"), text("m2")})));
  // The keys were no longer ours there; no marker; not an array.
  BOOST_TEST(!detail::write_back_raised(array({integer(0), text("m1")})));
  BOOST_TEST(!detail::write_back_raised(array({integer(1)})));
  BOOST_TEST(!detail::write_back_raised({integer(1)}));
}

BOOST_AUTO_TEST_CASE(a_write_back_answer_whose_array_size_disagrees_raised_nothing) {
  // The header says three elements, two follow: a cut reply is not an ack.
  resp::reply cut{{.kind = type::array, .size = 3}};
  cut.push_back(integer(1));
  cut.push_back(text("m1"));
  BOOST_TEST(!detail::write_back_raised(cut));
}

BOOST_AUTO_TEST_CASE(a_readers_record_gives_its_mark_and_its_readers) {
  detail::readers_record r;
  BOOST_TEST_REQUIRE(detail::read_readers_record("R|0 1700000000123 tok-a 1700000000456 tok-b", r));
  BOOST_TEST(r.mark == 0u);
  BOOST_TEST(r.entries == 2u);
  BOOST_TEST_REQUIRE(detail::read_readers_record("R|1700000000999 1700000000123 tok-a", r));
  BOOST_TEST(r.mark == 1700000000999u);
  BOOST_TEST(r.entries == 1u);
}

BOOST_AUTO_TEST_CASE(a_token_or_an_offer_is_no_readers_record) {
  detail::readers_record r{.mark = 7, .entries = 9};
  BOOST_TEST(!detail::read_readers_record("3fa2c1d0/host:1", r));
  BOOST_TEST(!detail::read_readers_record("o|redlock:permit:offers:ab 4", r));
  BOOST_TEST(r.mark == 7u);  // untouched
  BOOST_TEST(detail::held_value_is_offer("o|redlock:permit:offers:ab 4"));
  BOOST_TEST(!detail::held_value_is_offer("3fa2c1d0/host:1"));
}

BOOST_AUTO_TEST_CASE(a_readers_record_with_a_bad_mark_or_a_torn_entry_is_refused) {
  detail::readers_record r;
  BOOST_TEST(!detail::read_readers_record("R|x 123 tok", r));
  BOOST_TEST(!detail::read_readers_record("R| 123 tok", r));
  BOOST_TEST(!detail::read_readers_record("R|0 123", r));
}

BOOST_AUTO_TEST_CASE(a_waiting_permit_calls_place_outlives_its_next_try_and_a_slow_node) {
  redlock::config cfg;
  cfg.retry_delay = 200ms;
  cfg.node_timeout = 300ms;
  BOOST_TEST((detail::permit_place_lasts(cfg) == 4 * 200ms + 2 * 300ms));
}

BOOST_AUTO_TEST_CASE(a_writers_mark_lasts_until_its_next_attempt_and_a_slow_node) {
  redlock::config cfg;
  cfg.retry_delay = 200ms;
  cfg.node_timeout = 50ms;
  BOOST_TEST(detail::writer_mark_lasts(cfg).count() == 850);
}

BOOST_AUTO_TEST_CASE(a_script_answering_zero_and_a_token_is_held_by_it) {
  const auto a = detail::read_lock_answer(array({integer(0), text("tok")}), true, false);
  BOOST_TEST((a.what == answer::held));
  BOOST_TEST(a.holder == "tok");
}

BOOST_AUTO_TEST_CASE(a_script_answering_zero_without_a_token_is_held_by_someone) {
  const auto a = detail::read_lock_answer(array({integer(0), nil()}), false, true);
  BOOST_TEST((a.what == answer::held));
  BOOST_TEST(!a.named);
}

BOOST_AUTO_TEST_CASE(an_earlier_waiter_first_is_an_answer_only_in_fair_mode) {
  const auto r = array({integer(3), text("waiter-id")});
  BOOST_TEST((detail::read_lock_answer(r, false, true).what == answer::waiter_first));
  BOOST_TEST((detail::read_lock_answer(r, true, false).what == answer::malformed));
}

BOOST_AUTO_TEST_CASE(a_fair_unfenced_take_is_one_and_zero) {
  BOOST_TEST((detail::read_lock_answer(array({integer(1), integer(0)}), false, true).what ==
              answer::taken));
}

BOOST_AUTO_TEST_CASE(a_fenced_take_carries_its_counter_and_the_marker_to_vet) {
  const auto r = array({integer(1), integer(42), text("runid:replid")});
  const auto a = detail::read_lock_answer(r, true, false);
  BOOST_TEST((a.what == answer::taken));
  BOOST_TEST(a.counter == 42u);
  BOOST_REQUIRE(a.marker != nullptr);
  BOOST_TEST(a.marker->text == "runid:replid");
}

BOOST_AUTO_TEST_CASE(a_fenced_take_without_its_marker_or_counter_is_malformed) {
  BOOST_TEST((detail::read_lock_answer(array({integer(1), integer(42)}), true, false).what ==
              answer::malformed));
  BOOST_TEST(
      (detail::read_lock_answer(array({integer(1), text("x"), text("m")}), true, false).what ==
       answer::malformed));
}

BOOST_AUTO_TEST_CASE(an_unknown_code_or_shape_is_malformed) {
  BOOST_TEST(
      (detail::read_lock_answer(array({integer(7), nil()}), true, true).what == answer::malformed));
  BOOST_TEST(
      (detail::read_lock_answer(array({text("1"), nil()}), true, true).what == answer::malformed));
  BOOST_TEST((detail::read_lock_answer({nil(0)}, true, false).what == answer::malformed));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(attempt_undo)

using detail::may_have_taken;
using detail::vote;

BOOST_AUTO_TEST_CASE(a_yes_or_no_answer_yet_may_hold_our_token) {
  BOOST_TEST(may_have_taken(vote::yes, {}, false));
  BOOST_TEST(may_have_taken(vote::pending, {}, false));
}

BOOST_AUTO_TEST_CASE(a_holder_or_a_refusal_took_nothing) {
  BOOST_TEST(!may_have_taken(vote::held, {}, true));
  BOOST_TEST(!may_have_taken(vote::no, {}, true));
}

BOOST_AUTO_TEST_CASE(a_lost_answer_may_have_taken_the_key) {
  BOOST_TEST(may_have_taken(vote::failed, error::node_timeout, false));
  BOOST_TEST(may_have_taken(vote::failed, error::connection_lost, false));
  BOOST_TEST(may_have_taken(vote::failed, error::node_held_back, false));
}

BOOST_AUTO_TEST_CASE(a_server_error_may_follow_a_scripts_set_but_not_a_plain_set) {
  BOOST_TEST(may_have_taken(vote::failed, error::server_error, true));
  BOOST_TEST(!may_have_taken(vote::failed, error::server_error, false));
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_took_nothing) {
  BOOST_TEST(!may_have_taken(vote::failed, error::wrong_type, true));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(held_lock_list)

BOOST_AUTO_TEST_CASE(held_locks_are_listed_newest_first) {
  detail::held_locks h;
  redlock::detail::lock_data a, b;
  h.hold(a);
  h.hold(b);
  BOOST_TEST(h.held == &b);
  BOOST_TEST(b.next == &a);
  BOOST_TEST(a.prev == &b);
}

BOOST_AUTO_TEST_CASE(a_lock_released_from_the_middle_leaves_the_list_whole) {
  detail::held_locks h;
  redlock::detail::lock_data a, b, c;
  h.hold(a);
  h.hold(b);
  h.hold(c);
  h.unhold(b);
  BOOST_TEST(h.held == &c);
  BOOST_TEST(c.next == &a);
  BOOST_TEST(a.prev == &c);
  BOOST_TEST(!b.linked);
}

BOOST_AUTO_TEST_CASE(releasing_the_newest_moves_the_head) {
  detail::held_locks h;
  redlock::detail::lock_data a, b;
  h.hold(a);
  h.hold(b);
  h.unhold(b);
  BOOST_TEST(h.held == &a);
  BOOST_TEST(a.prev == nullptr);
}

BOOST_AUTO_TEST_CASE(a_lock_released_twice_or_never_held_changes_nothing) {
  detail::held_locks h;
  redlock::detail::lock_data a, stranger;
  h.hold(a);
  h.unhold(a);
  h.unhold(a);
  h.unhold(stranger);
  BOOST_TEST(h.held == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
