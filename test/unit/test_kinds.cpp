// SPDX-License-Identifier: BSL-1.0
// The other lock kinds' decisions, without a socket or a server: which nodes a claim batch
// asks and what their answers make of each name, what a settle's answers mean, when an
// extension may go out, what the background renewal does after each tick and round, what
// a fence repair writes and where, how a round is worded for observers and diagnostics,
// and how each script's call is laid out. Replies are parsed from RESP bytes, as a
// connection would hand them over; calls are parsed back as a server would read them.

#include <array>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "machines/batch_answers.hpp"
#include "machines/claim_decisions.hpp"
#include "machines/extend_decisions.hpp"
#include "machines/renewal_decisions.hpp"
#include "machines/repair_decisions.hpp"
#include "quorum/observed.hpp"
#include "resp/resp.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"
#include "wire_reply.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::bit;
using detail::claim_candidate;
using detail::claim_tally;
using detail::node_mask;
using test::wire_reply;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;
constexpr double factor = 0.01;

// n nodes, all connected and voting.
std::vector<claim_candidate> able_nodes(std::size_t n) {
  return std::vector<claim_candidate>(
      n, claim_candidate{.ready = true, .accepts = true, .votes = true});
}

std::vector<std::size_t> asked(const detail::claim_first_round& r) {
  return {r.ask.begin(), r.ask.begin() + static_cast<std::ptrdiff_t>(r.asks)};
}

claim_tally tally(std::uint8_t yes, std::uint8_t held = 0, std::uint8_t done = 0,
                  std::uint8_t wrong = 0, std::uint8_t failed = 0) {
  return {.yes = yes, .held = held, .done = done, .wrong = wrong, .failed = failed};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(claim_rounds)

BOOST_AUTO_TEST_CASE(a_claims_first_round_asks_a_majority_and_keeps_the_rest_for_later) {
  const auto nodes = able_nodes(5);
  const auto r = detail::plan_claim_round(nodes, 0);
  BOOST_TEST((asked(r) == std::vector<std::size_t>{0, 1, 2}));
  BOOST_TEST(r.later == node_mask(bit(3) | bit(4)));
}

BOOST_AUTO_TEST_CASE(the_rotor_spreads_first_rounds_across_the_nodes) {
  const auto nodes = able_nodes(5);
  const auto r = detail::plan_claim_round(nodes, 7);  // 7 % 5: from node 2, wrapping
  BOOST_TEST((asked(r) == std::vector<std::size_t>{2, 3, 4}));
  BOOST_TEST(r.later == node_mask(bit(0) | bit(1)));
}

BOOST_AUTO_TEST_CASE(connected_nodes_are_asked_before_those_still_connecting) {
  auto nodes = able_nodes(3);
  nodes[0].ready = false;  // connecting: takes requests that wait for its handshake
  const auto r = detail::plan_claim_round(nodes, 0);
  BOOST_TEST((asked(r) == std::vector<std::size_t>{1, 2}));
  BOOST_TEST(r.later == bit(0));
}

BOOST_AUTO_TEST_CASE(a_node_that_may_not_vote_is_neither_asked_nor_kept_for_later) {
  auto nodes = able_nodes(3);
  nodes[1].votes = false;
  const auto r = detail::plan_claim_round(nodes, 0);
  BOOST_TEST((asked(r) == std::vector<std::size_t>{0, 2}));
  BOOST_TEST(r.later == 0);
}

BOOST_AUTO_TEST_CASE(a_node_that_takes_no_requests_is_left_out_even_if_it_would_vote) {
  auto nodes = able_nodes(3);
  nodes[0] = {.ready = false, .accepts = false, .votes = true};
  nodes[2] = {.ready = false, .accepts = false, .votes = true};
  const auto r = detail::plan_claim_round(nodes, 0);
  BOOST_TEST((asked(r) == std::vector<std::size_t>{1}));
  BOOST_TEST(r.later == 0);
}

BOOST_AUTO_TEST_CASE(with_fewer_able_nodes_than_a_majority_every_able_node_is_asked) {
  auto nodes = able_nodes(5);
  nodes[0].votes = nodes[2].votes = nodes[4].votes = false;
  const auto r = detail::plan_claim_round(nodes, 0);
  BOOST_TEST((asked(r) == std::vector<std::size_t>{1, 3}));
  BOOST_TEST(r.later == 0);
}

BOOST_AUTO_TEST_CASE(a_claim_yes_counts_and_must_be_undone_if_the_name_is_not_kept) {
  claim_tally t;
  BOOST_TEST(detail::count_claim_answer(t, 1));
  BOOST_TEST(t.yes == 1);
  BOOST_TEST(t.against() == 0u);
}

BOOST_AUTO_TEST_CASE(held_done_and_wrong_type_answers_count_against_and_need_no_undo) {
  claim_tally t;
  BOOST_TEST(!detail::count_claim_answer(t, 0));
  BOOST_TEST(!detail::count_claim_answer(t, 2));
  BOOST_TEST(!detail::count_claim_answer(t, 3));
  BOOST_TEST(t.held == 1);
  BOOST_TEST(t.done == 1);
  BOOST_TEST(t.wrong == 1);
  BOOST_TEST(t.yes == 0);
  BOOST_TEST(t.failed == 0);
}

BOOST_AUTO_TEST_CASE(a_failure_after_sending_may_have_landed_but_a_request_never_sent_did_not) {
  claim_tally t;
  BOOST_TEST(detail::count_claim_answer(t, -1));
  BOOST_TEST(!detail::count_claim_answer(t, -2));
  BOOST_TEST(t.failed == 2);
}

BOOST_AUTO_TEST_CASE(an_unknown_claim_code_is_a_failure_that_may_have_landed) {
  claim_tally t;
  BOOST_TEST(detail::count_claim_answer(t, 7));
  BOOST_TEST(t.failed == 1);
  BOOST_TEST(t.yes == 0);
}

BOOST_AUTO_TEST_CASE(the_second_round_needs_nodes_kept_an_open_client_and_validity_left) {
  const auto until = t0 + 1s;
  BOOST_TEST(detail::second_claim_round_due(bit(3) != 0, false, t0, until));
  BOOST_TEST(!detail::second_claim_round_due(false, false, t0, until));
  BOOST_TEST(!detail::second_claim_round_due(bit(3) != 0, true, t0, until));
  BOOST_TEST(!detail::second_claim_round_due(bit(3) != 0, false, until, until));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(claim_endings)

BOOST_AUTO_TEST_CASE(a_claim_won_in_time_is_kept_and_nothing_is_undone) {
  const auto e = detail::end_claim(3, tally(2), bit(0) | bit(1), false, true, false);
  BOOST_TEST((e.status == claim_status::won));
  BOOST_TEST(e.keep);
  BOOST_TEST(e.undo == 0);
}

BOOST_AUTO_TEST_CASE(a_won_claim_whose_caller_was_told_cancelled_is_undone_where_it_landed) {
  const node_mask maybe = bit(0) | bit(2);
  const auto e = detail::end_claim(3, tally(2), maybe, false, true, true);
  BOOST_TEST((e.status == claim_status::won));
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == maybe);
}

BOOST_AUTO_TEST_CASE(a_claim_won_too_late_fails_as_validity_exhausted_and_is_undone) {
  const node_mask maybe = bit(0) | bit(1) | bit(2);
  const auto e = detail::end_claim(3, tally(3), maybe, false, false, false);
  BOOST_TEST((e.status == claim_status::failed));
  BOOST_TEST((e.error == error::validity_exhausted));
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == maybe);
}

BOOST_AUTO_TEST_CASE(a_duplicate_name_ends_as_duplicate_and_touches_no_node) {
  const auto e = detail::end_claim(3, tally(3), bit(0), true, true, false);
  BOOST_TEST((e.status == claim_status::duplicate));
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == 0);
}

BOOST_AUTO_TEST_CASE(a_claim_held_elsewhere_ends_held_and_takes_back_its_partial_take) {
  const auto e = detail::end_claim(3, tally(1, 2), bit(1), false, true, false);
  BOOST_TEST((e.status == claim_status::held));
  BOOST_TEST(e.undo == bit(1));
}

BOOST_AUTO_TEST_CASE(a_done_marker_among_the_holders_ends_the_claim_as_done) {
  const auto e = detail::end_claim(5, tally(1, 2, 1), bit(4), false, true, false);
  BOOST_TEST((e.status == claim_status::done));
  BOOST_TEST(!e.keep);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(batch_answers)

BOOST_AUTO_TEST_CASE(a_batch_answer_is_an_array_of_one_integer_per_item) {
  const wire_reply w{"*3\r\n:1\r\n:0\r\n:2\r\n"};
  BOOST_TEST(detail::batch_answer_well_formed(w.r, 3));
}

BOOST_AUTO_TEST_CASE(a_batch_answer_with_too_few_or_too_many_integers_answers_no_item) {
  const wire_reply w{"*2\r\n:1\r\n:1\r\n"};
  BOOST_TEST(!detail::batch_answer_well_formed(w.r, 3));
  BOOST_TEST(!detail::batch_answer_well_formed(w.r, 1));
}

BOOST_AUTO_TEST_CASE(a_string_or_a_nested_array_among_the_integers_answers_no_item) {
  const wire_reply text{"*2\r\n:1\r\n$1\r\n1\r\n"};
  BOOST_TEST(!detail::batch_answer_well_formed(text.r, 2));
  const wire_reply nested{"*2\r\n:1\r\n*1\r\n:1\r\n"};
  BOOST_TEST(!detail::batch_answer_well_formed(nested.r, 2));
}

BOOST_AUTO_TEST_CASE(an_error_or_a_lone_integer_is_no_batch_answer) {
  const wire_reply err{"-NOSCRIPT No matching script\r\n"};
  BOOST_TEST(!detail::batch_answer_well_formed(err.r, 1));
  const wire_reply one{":1\r\n"};
  BOOST_TEST(!detail::batch_answer_well_formed(one.r, 1));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(settles)

BOOST_AUTO_TEST_CASE(a_settle_answer_of_one_is_done_zero_not_ours_and_anything_else_failed) {
  detail::settle_tally t;
  detail::count_settle_answer(t, 1);
  detail::count_settle_answer(t, 0);
  detail::count_settle_answer(t, -1);
  detail::count_settle_answer(t, 5);
  BOOST_TEST(t.yes == 1);
  BOOST_TEST(t.no == 1);
  BOOST_TEST(t.failed == 2);
}

BOOST_AUTO_TEST_CASE(a_done_marker_settles_only_on_a_majority) {
  BOOST_TEST(!detail::settle_outcome(3, false, true, {.yes = 2, .no = 0, .failed = 1}));
  BOOST_TEST((detail::settle_outcome(3, false, true, {.yes = 1, .no = 0, .failed = 2}) ==
              error::no_quorum));
  BOOST_TEST((detail::settle_outcome(3, false, true, {.yes = 0, .no = 3, .failed = 0}) ==
              error::not_held));
}

BOOST_AUTO_TEST_CASE(a_release_settles_as_an_unlock_once_our_token_was_found) {
  BOOST_TEST(!detail::settle_outcome(3, false, false, {.yes = 1, .no = 1, .failed = 1}));
  BOOST_TEST((detail::settle_outcome(3, false, false, {.yes = 0, .no = 2, .failed = 1}) ==
              error::not_held));
}

BOOST_AUTO_TEST_CASE(a_closed_client_settles_nothing_whatever_the_nodes_said) {
  BOOST_TEST((detail::settle_outcome(3, true, true, {.yes = 3, .no = 0, .failed = 0}) ==
              error::shut_down));
}

BOOST_AUTO_TEST_CASE(a_settled_marker_spreads_to_every_node_the_claim_did_not_ask) {
  const node_mask asked = bit(0) | bit(2) | bit(3);
  BOOST_TEST(detail::marker_spread(5, asked, "0a1b", {}) == node_mask(bit(1) | bit(4)));
}

BOOST_AUTO_TEST_CASE(an_own_marker_stays_where_the_claim_is) {
  const std::string token = std::string{"C"} + "0a1b";  // the state byte leads the token
  BOOST_TEST(detail::own_marker(token));
  BOOST_TEST(detail::marker_spread(5, bit(0), token, {}) == 0);
}

BOOST_AUTO_TEST_CASE(a_marker_that_did_not_settle_does_not_spread) {
  BOOST_TEST(detail::marker_spread(5, bit(0), "0a1b", error::no_quorum) == 0);
}

BOOST_AUTO_TEST_CASE(a_settle_call_counts_what_settled_and_reports_its_first_failure) {
  detail::settle_summary sum{0};
  sum.add({});
  sum.add(error::no_quorum);
  sum.add({});
  sum.add(error::not_held);
  BOOST_TEST((sum.outcome() == error::no_quorum));
  BOOST_TEST(sum.settled() == 2u);
}

BOOST_AUTO_TEST_CASE(claims_not_ours_make_the_call_not_held_even_when_the_rest_settled) {
  detail::settle_summary sum{1};
  sum.add({});
  sum.add(error::no_quorum);
  BOOST_TEST((sum.outcome() == error::not_held));
  BOOST_TEST(sum.settled() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(coalescing)

struct pending {
  int ttl;
  int id;
};

BOOST_AUTO_TEST_CASE(a_batch_takes_the_oldest_calls_group_and_leaves_the_rest_in_order) {
  std::vector<pending> queue{{10, 1}, {20, 2}, {10, 3}, {30, 4}, {20, 5}};
  const auto batch = detail::take_batch(queue, [](const pending& p) { return p.ttl; });
  std::vector<int> ids, left;
  for (auto& p : batch) ids.push_back(p.id);
  for (auto& p : queue) left.push_back(p.id);
  BOOST_TEST((ids == std::vector<int>{1, 3}));
  BOOST_TEST((left == std::vector<int>{2, 4, 5}));
}

BOOST_AUTO_TEST_CASE(a_batch_stops_at_max_claim_batch_and_the_rest_waits) {
  std::vector<pending> queue(max_claim_batch + 3, pending{10, 0});
  const auto batch = detail::take_batch(queue, [](const pending& p) { return p.ttl; });
  BOOST_TEST(batch.size() == max_claim_batch);
  BOOST_TEST(queue.size() == 3u);
}

BOOST_AUTO_TEST_CASE(names_keep_times_and_modes_are_checked_before_a_call_is_queued) {
  BOOST_TEST(detail::bad_name(""));
  BOOST_TEST(detail::bad_name(std::string(max_resource_bytes + 1, 'x')));
  BOOST_TEST(!detail::bad_name(std::string(max_resource_bytes, 'x')));
  BOOST_TEST(detail::bad_keep(-1ms));
  BOOST_TEST(detail::bad_keep(std::chrono::hours{24 * 30} + 1ms));
  BOOST_TEST(!detail::bad_keep(std::chrono::hours{24 * 30}));
  BOOST_TEST(!detail::bad_keep(0ms));
  BOOST_TEST(detail::bad_mode(static_cast<claim_mode>(9)));
  BOOST_TEST(!detail::bad_mode(claim_mode::own_marker));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(extension_checks)

namespace {
detail::extension_facts held_lock() {
  return {.closed = false,
          .has_token = true,
          .owns = true,
          .extending = false,
          .lost = false,
          .deadline = t0 + 5s};
}
const config default_config{};
}  // namespace

BOOST_AUTO_TEST_CASE(a_held_lock_within_its_validity_may_be_extended) {
  const auto c = detail::check_extension(held_lock(), 10s, default_config, t0);
  BOOST_TEST(!c.refusal);
  BOOST_TEST(!c.mark_lost);
  BOOST_TEST(c.detail.empty());
}

BOOST_AUTO_TEST_CASE(a_shut_down_client_refuses_before_any_other_check) {
  auto f = held_lock();
  f.closed = true;
  f.has_token = false;
  BOOST_TEST((detail::check_extension(f, 10s, default_config, t0).refusal == error::shut_down));
}

BOOST_AUTO_TEST_CASE(an_empty_lock_is_no_lock_and_one_of_a_gone_client_not_held) {
  auto f = held_lock();
  f.has_token = false;
  f.owns = false;
  BOOST_TEST((detail::check_extension(f, 10s, default_config, t0).refusal == error::no_lock));
  f.has_token = true;
  BOOST_TEST((detail::check_extension(f, 10s, default_config, t0).refusal == error::not_held));
}

BOOST_AUTO_TEST_CASE(a_second_extension_while_one_is_in_flight_is_refused) {
  auto f = held_lock();
  f.extending = true;
  BOOST_TEST(
      (detail::check_extension(f, 0ms, default_config, t0).refusal == error::extension_in_flight));
}

BOOST_AUTO_TEST_CASE(an_invalid_ttl_is_refused_with_the_ttl_checks_words) {
  const auto c = detail::check_extension(held_lock(), 0ms, default_config, t0);
  BOOST_TEST((c.refusal == error::invalid_ttl));
  BOOST_TEST(c.detail == ": " + detail::check_ttl(0ms, default_config));
  BOOST_TEST(!c.mark_lost);
}

BOOST_AUTO_TEST_CASE(a_lock_at_its_deadline_is_lost_for_good_and_not_extended) {
  const auto c = detail::check_extension(held_lock(), 10s, default_config, t0 + 5s);
  BOOST_TEST((c.refusal == error::lock_lost));
  BOOST_TEST(c.mark_lost);
  BOOST_TEST(c.detail.find("validity deadline") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_lock_known_lost_stays_lost_before_its_deadline) {
  auto f = held_lock();
  f.lost = true;
  BOOST_TEST((detail::check_extension(f, 10s, default_config, t0).refusal == error::lock_lost));
}

BOOST_AUTO_TEST_CASE(an_extension_answer_of_one_is_yes_another_integer_no_and_else_failed) {
  const wire_reply one{":1\r\n"}, zero{":0\r\n"}, text{"+OK\r\n"}, nil{"$-1\r\n"};
  BOOST_TEST((detail::extension_answer(one.r) == detail::vote::yes));
  BOOST_TEST((detail::extension_answer(zero.r) == detail::vote::no));
  BOOST_TEST((detail::extension_answer(text.r) == detail::vote::failed));
  BOOST_TEST((detail::extension_answer(nil.r) == detail::vote::failed));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(renewals)

namespace {
using detail::renewal_step;
using detail::renewal_tick;
using detail::renewal_times;

// A keeper renewing every 3 s a 10 s lock whose deadline is t0 + 10 s.
renewal_times kept() {
  return {.interval = 3s,
          .margin = 100ms,
          .next_due = t0 + 3s,
          .loss_at = t0 + 10s - 100ms,
          .hold_until = boot_clock::time_point::max()};
}
const auto old_deadline = t0 + 10s;
}  // namespace

BOOST_AUTO_TEST_CASE(renewals_fall_due_a_fraction_of_the_ttl_after_the_acquisition) {
  const auto deadline = detail::validity_deadline(t0, 10s, factor);
  const auto t = detail::plan_renewals(deadline, 10s, 10s, 0.5, 100ms, 0ms, factor);
  BOOST_TEST((t.interval == 5s));
  BOOST_TEST((t.next_due == t0 + 5s));  // counted from the acquisition, not the deadline
  BOOST_TEST((t.loss_at == deadline - 100ms));
  BOOST_TEST((t.hold_until == boot_clock::time_point::max()));
}

BOOST_AUTO_TEST_CASE(a_renewal_ttl_of_its_own_sets_the_interval_and_max_hold_the_end) {
  const auto deadline = detail::validity_deadline(t0, 10s, factor);
  const auto t = detail::plan_renewals(deadline, 10s, 4s, 0.25, 50ms, 60s, factor);
  BOOST_TEST((t.interval == 1s));
  BOOST_TEST((t.next_due == t0 + 1s));
  BOOST_TEST((t.hold_until == t0 + 60s));
}

BOOST_AUTO_TEST_CASE(a_tick_past_the_loss_time_expires_the_lock_even_with_a_renewal_in_flight) {
  BOOST_TEST((detail::on_renewal_tick(kept(), true, t0 + 10s - 100ms) == renewal_tick::expired));
  BOOST_TEST((detail::on_renewal_tick(kept(), false, t0 + 11s) == renewal_tick::expired));
}

BOOST_AUTO_TEST_CASE(a_renewal_due_within_an_eighth_of_its_interval_goes_with_those_due_now) {
  // Due at t0 + 3 s; an eighth of 3 s is 375 ms.
  BOOST_TEST((detail::on_renewal_tick(kept(), false, t0 + 3s - 375ms) == renewal_tick::renew));
  BOOST_TEST((detail::on_renewal_tick(kept(), false, t0 + 3s - 376ms) == renewal_tick::wait));
  BOOST_TEST((detail::on_renewal_tick(kept(), false, t0 + 4s) == renewal_tick::renew));
}

BOOST_AUTO_TEST_CASE(a_renewal_in_flight_or_past_the_hold_time_is_not_sent_again) {
  BOOST_TEST((detail::on_renewal_tick(kept(), true, t0 + 4s) == renewal_tick::wait));
  auto t = kept();
  t.hold_until = t0 + 2s;
  BOOST_TEST((detail::on_renewal_tick(t, false, t0 + 4s) == renewal_tick::wait));
}

BOOST_AUTO_TEST_CASE(the_scheduler_wakes_for_the_next_renewal_or_the_loss_whichever_is_first) {
  BOOST_TEST((detail::renewal_wake(kept(), false) == t0 + 3s));
  auto t = kept();
  t.next_due = t0 + 20s;  // later than the loss
  BOOST_TEST((detail::renewal_wake(t, false) == t.loss_at));
}

BOOST_AUTO_TEST_CASE(a_renewal_in_flight_or_past_the_hold_time_wakes_only_for_the_loss) {
  BOOST_TEST((detail::renewal_wake(kept(), true) == kept().loss_at));
  auto t = kept();
  t.hold_until = t0 + 1s;
  BOOST_TEST((detail::renewal_wake(t, false) == t.loss_at));
}

BOOST_AUTO_TEST_CASE(a_confirmed_renewal_moves_the_deadline_and_the_next_due_from_its_start) {
  const auto start = t0 + 3s;
  const auto s = detail::decide_renewal({.n = 3, .yes = 2, .no = 0, .failed = 1}, kept(),
                                        old_deadline, start, 10s, start + 5ms, factor);
  BOOST_TEST((s.what == renewal_step::kind::renewed));
  BOOST_TEST(!s.outcome);
  BOOST_TEST((s.deadline == detail::validity_deadline(start, 10s, factor)));
  BOOST_TEST((s.loss_at == s.deadline - 100ms));
  BOOST_TEST((s.next_due == start + 3s));
}

BOOST_AUTO_TEST_CASE(a_majority_refusal_loses_the_lock_as_not_held) {
  const auto start = t0 + 3s;
  const auto s = detail::decide_renewal({.n = 3, .yes = 0, .no = 2, .failed = 1}, kept(),
                                        old_deadline, start, 10s, start + 5ms, factor);
  BOOST_TEST((s.what == renewal_step::kind::lost_not_held));
  BOOST_TEST((s.outcome == error::not_held));
}

BOOST_AUTO_TEST_CASE(a_renewal_without_a_majority_retries_soon_and_may_shorten_the_deadline) {
  const auto start = t0 + 3s;
  const auto now = start + 5ms;
  // A renewal TTL of 5 s: the keys may now end before the old deadline.
  const auto s = detail::decide_renewal({.n = 3, .yes = 1, .no = 0, .failed = 2}, kept(),
                                        old_deadline, start, 5s, now, factor);
  BOOST_TEST((s.what == renewal_step::kind::retry_soon));
  BOOST_TEST((s.outcome == error::no_quorum));
  BOOST_TEST((s.deadline == detail::validity_deadline(start, 5s, factor)));
  // min(interval / 4, time left before the loss / 3).
  BOOST_TEST((s.next_due == now + 750ms));
}

BOOST_AUTO_TEST_CASE(a_retry_comes_sooner_when_little_validity_is_left) {
  const auto start = t0 + 9s;
  const auto now = start + 300ms;  // 9.3 s: 600 ms before the loss
  const auto s = detail::decide_renewal({.n = 3, .yes = 1, .no = 0, .failed = 2}, kept(),
                                        old_deadline, start, 10s, now, factor);
  BOOST_TEST((s.what == renewal_step::kind::retry_soon));
  BOOST_TEST((s.next_due == now + (s.loss_at - now) / 3));
}

BOOST_AUTO_TEST_CASE(a_renewal_confirmed_inside_the_margin_is_a_loss) {
  const auto start = t0 + 3s;
  // Confirmed 50 ms before the new deadline: less than the 100 ms margin.
  const auto now = detail::validity_deadline(start, 1s, factor) - 50ms;
  const auto s = detail::decide_renewal({.n = 3, .yes = 3, .no = 0, .failed = 0}, kept(),
                                        old_deadline, start, 1s, now, factor);
  BOOST_TEST((s.what == renewal_step::kind::lost));
  BOOST_TEST((s.outcome == error::validity_exhausted));
}

BOOST_AUTO_TEST_CASE(a_stopped_keeper_hands_back_no_more_than_its_renewal_in_flight_leaves) {
  const auto renewing = t0 + 3s;
  const auto shorter = detail::validity_deadline(renewing, 1s, factor);
  BOOST_TEST((detail::deadline_after_stop(old_deadline, true, renewing, 1s, factor) == shorter));
  BOOST_TEST(
      (detail::deadline_after_stop(old_deadline, false, renewing, 1s, factor) == old_deadline));
  BOOST_TEST(
      (detail::deadline_after_stop(old_deadline, true, renewing, 20s, factor) == old_deadline));
}

BOOST_AUTO_TEST_CASE(a_keeper_stopped_past_its_deadline_reports_a_loss_it_never_declared) {
  using detail::stop_verdict;
  const auto deadline = t0 + 1s;
  BOOST_TEST((detail::on_keeper_stop(false, deadline, t0) == stop_verdict::handed_back));
  BOOST_TEST(
      (detail::on_keeper_stop(false, deadline, deadline - 1ns) == stop_verdict::handed_back));
  BOOST_TEST((detail::on_keeper_stop(false, deadline, deadline) == stop_verdict::lost));
  BOOST_TEST((detail::on_keeper_stop(false, deadline, deadline + 2s) == stop_verdict::lost));
  BOOST_TEST((detail::on_keeper_stop(true, deadline, t0) == stop_verdict::lost));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fence_repairs)

namespace {
using detail::fence_read;

fence_read answer(bool marked, std::map<std::string, std::int64_t> counters = {},
                  std::string incarnation = "run:repl") {
  return {.answered = true,
          .marked = marked,
          .incarnation = std::move(incarnation),
          .counters = std::move(counters)};
}
const std::array<bool, 5> all_independent{true, true, true, true, true};
}  // namespace

BOOST_AUTO_TEST_CASE(a_fence_read_is_a_marker_or_nil_then_an_array_of_counters) {
  const wire_reply marked{"*2\r\n$8\r\nrun:repl\r\n*2\r\n$1\r\na\r\n$1\r\n7\r\n"};
  const wire_reply unmarked{"*2\r\n$-1\r\n*0\r\n"};
  BOOST_TEST(detail::fence_read_well_formed(marked.r));
  BOOST_TEST(detail::fence_read_well_formed(unmarked.r));
}

BOOST_AUTO_TEST_CASE(a_fence_read_of_another_shape_is_no_answer) {
  const wire_reply integer_marker{"*2\r\n:1\r\n*0\r\n"};
  const wire_reply flat{"*2\r\n$-1\r\n$1\r\na\r\n"};
  const wire_reply err{"-NOPERM this user has no permissions\r\n"};
  BOOST_TEST(!detail::fence_read_well_formed(integer_marker.r));
  BOOST_TEST(!detail::fence_read_well_formed(flat.r));
  BOOST_TEST(!detail::fence_read_well_formed(err.r));
}

BOOST_AUTO_TEST_CASE(counters_are_read_as_field_and_value_pairs) {
  const wire_reply w{"*2\r\n$-1\r\n*4\r\n$1\r\na\r\n$1\r\n7\r\n$8\r\nstripe:3\r\n$2\r\n12\r\n"};
  std::map<std::string, std::int64_t> counters;
  detail::read_fence_counters(w.r, counters);
  BOOST_TEST(counters.size() == 2u);
  BOOST_TEST(counters["a"] == 7);
  BOOST_TEST(counters["stripe:3"] == 12);
}

BOOST_AUTO_TEST_CASE(the_maxima_are_written_once_a_majority_of_answers_are_marked) {
  const std::vector<fence_read> reads{answer(true), answer(true), answer(true), answer(false),
                                      fence_read{}};
  const auto c = detail::count_reads(reads, all_independent);
  BOOST_TEST(c.independent == 5u);
  BOOST_TEST(c.answered == 4u);
  BOOST_TEST(c.marked == 3u);
  BOOST_TEST(detail::repair_may_write(5, c));
}

BOOST_AUTO_TEST_CASE(without_a_marked_majority_every_independent_node_must_have_answered) {
  std::vector<fence_read> reads{answer(true), answer(false), answer(false), answer(false),
                                fence_read{}};
  BOOST_TEST(!detail::repair_may_write(5, detail::count_reads(reads, all_independent)));
  reads[4] = answer(false);  // a new fleet, read whole
  BOOST_TEST(detail::repair_may_write(5, detail::count_reads(reads, all_independent)));
}

BOOST_AUTO_TEST_CASE(a_node_that_is_not_independent_neither_counts_nor_gives_a_counter) {
  const std::vector<fence_read> reads{answer(false, {{"a", 3}}), answer(false, {{"a", 9}}),
                                      fence_read{}};
  const std::array<bool, 3> independent{true, false, false};  // a replica, a duplicate
  const auto c = detail::count_reads(reads, independent);
  BOOST_TEST(c.independent == 1u);
  BOOST_TEST(detail::repair_may_write(3, c));  // every independent node answered
  const auto maxima = detail::counter_maxima(reads, independent);
  BOOST_TEST(maxima.at("a") == 3);
}

BOOST_AUTO_TEST_CASE(the_maxima_take_each_counter_from_every_answer) {
  const std::vector<fence_read> reads{answer(true, {{"a", 3}, {"b", 10}}),
                                      answer(false, {{"a", 8}}), answer(true, {{"c", 1}})};
  const auto maxima = detail::counter_maxima(reads, all_independent);
  BOOST_TEST(maxima.size() == 3u);
  BOOST_TEST(maxima.at("a") == 8);
  BOOST_TEST(maxima.at("b") == 10);
  BOOST_TEST(maxima.at("c") == 1);
}

BOOST_AUTO_TEST_CASE(
    only_an_unmarked_answer_from_a_known_server_connected_and_past_its_guard_is_repaired) {
  BOOST_TEST(detail::repair_target(answer(false), true, true));
  BOOST_TEST(!detail::repair_target(answer(true), true, true));
  BOOST_TEST(!detail::repair_target(fence_read{}, true, true));
  BOOST_TEST(!detail::repair_target(answer(false, {}, ""), true, true));
  BOOST_TEST(!detail::repair_target(answer(false), false, true));  // reconnecting
  BOOST_TEST(!detail::repair_target(answer(false), true, false));  // held back at the start
}

BOOST_AUTO_TEST_CASE(a_repair_write_marks_the_node_only_when_the_server_read_took_it) {
  const wire_reply done{":1\r\n"};
  const std::string read_from = "run-a:repl-a", other = "run-b:repl-b";
  BOOST_TEST((detail::repair_write_answer({}, &done.r, &read_from, read_from) ==
              detail::repair_write::marked));
  BOOST_TEST((detail::repair_write_answer({}, &done.r, &other, read_from) ==
              detail::repair_write::restarted));
  BOOST_TEST((detail::repair_write_answer({}, &done.r, nullptr, read_from) ==
              detail::repair_write::restarted));
}

BOOST_AUTO_TEST_CASE(a_repair_write_lost_refused_or_answered_otherwise_marks_nothing) {
  const wire_reply refused{"-NOPERM no permissions to run the 'evalsha' command\r\n"};
  const wire_reply zero{":0\r\n"};
  const std::string by = "run:repl";
  BOOST_TEST((detail::repair_write_answer(error::node_timeout, nullptr, nullptr, by) ==
              detail::repair_write::lost));
  BOOST_TEST(
      (detail::repair_write_answer({}, &refused.r, &by, by) == detail::repair_write::refused));
  BOOST_TEST((detail::repair_write_answer({}, &zero.r, &by, by) == detail::repair_write::ignored));
}

BOOST_AUTO_TEST_CASE(a_repair_failure_names_the_node_and_quotes_the_server) {
  const auto quoted = detail::repair_failure(2, error::server_error, "ERR boom");
  BOOST_TEST(quoted.starts_with("node 2: \"ERR boom\""), quoted);
  const auto lost = detail::repair_failure(1, error::node_timeout, {});
  BOOST_TEST(lost == "node 1: " + detail::error_code{error::node_timeout}.message());
}

BOOST_AUTO_TEST_CASE(a_repair_with_nothing_to_write_keeps_the_last_problem) {
  std::string problem = "node 0: timed out";
  detail::keep_repair_problem(problem, {}, false);
  BOOST_TEST(problem == "node 0: timed out");
  detail::keep_repair_problem(problem, {}, true);
  BOOST_TEST(problem.empty());
  detail::keep_repair_problem(problem, "node 1: refused", true);
  BOOST_TEST(problem == "node 1: refused");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(observed_rounds)

namespace {
detail::round three_answers() {
  detail::round r;
  r.reset(4);
  r.count(0, detail::vote::yes);
  r.count(1, detail::vote::no);
  r.fail(2, error::node_held_back, "restarted 2 s ago");
  return r;  // node 3 pending
}

struct recording_observer : observer {
  std::vector<extend_event> extends;
  std::vector<loss_event> losses;
  void on_extend(const extend_event& e) override { extends.push_back(e); }
  void on_loss(const loss_event& e) override { losses.push_back(e); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(each_vote_is_reported_as_its_answer_and_a_held_back_failure_as_held_back) {
  const auto r = three_answers();
  BOOST_TEST((detail::observed_reply(r, 0, "a:1", t0, {}).answer == node_answer::yes));
  BOOST_TEST((detail::observed_reply(r, 1, "a:1", t0, {}).answer == node_answer::refused));
  BOOST_TEST((detail::observed_reply(r, 2, "a:1", t0, {}).answer == node_answer::held_back));
  BOOST_TEST((detail::observed_reply(r, 3, "a:1", t0, {}).answer == node_answer::no_answer));
  auto timed_out = r;
  timed_out.fail(3, error::node_timeout);
  const auto f = detail::observed_reply(timed_out, 3, "a:1", t0, {});
  BOOST_TEST((f.answer == node_answer::failed));
  BOOST_TEST((f.error == error::node_timeout));
}

BOOST_AUTO_TEST_CASE(reply_times_are_kept_only_for_a_round_someone_reports) {
  detail::reply_times times;
  times.begin(false);
  times.stamp(1);
  BOOST_TEST((times.at(1) == boot_clock::time_point{}));
  times.begin(true);
  times.stamp(1);
  BOOST_TEST((times.at(1) != boot_clock::time_point{}));
  BOOST_TEST((times.at(0) == boot_clock::time_point{}));
  times.begin(true);  // a new round forgets the last one's times
  BOOST_TEST((times.at(1) == boot_clock::time_point{}));
}

BOOST_AUTO_TEST_CASE(a_nodes_latency_runs_from_the_rounds_start_and_is_negative_without_a_reply) {
  const auto r = three_answers();
  const std::array<std::string, 4> addresses{"a:1", "b:2", "c:3", "d:4"};
  detail::reply_times times;
  times.begin(true);
  std::array<node_reply, max_nodes> out;
  const auto replies = detail::observed_replies(r, times, addresses, out, t0);
  BOOST_TEST(replies.size() == 4u);
  BOOST_TEST(replies[2].address == "c:3");
  BOOST_TEST(replies[3].latency.count() == -1);
  BOOST_TEST((detail::observed_reply(r, 0, "a:1", t0, t0 + 1500us).latency == 1500us));
}

BOOST_AUTO_TEST_CASE(diagnostics_give_the_connections_problem_only_to_a_failure_without_text) {
  auto r = three_answers();
  r.fail(3, error::node_unavailable);
  const auto held_back = detail::diagnosed_node(r, 2, "c:3", "connection refused");
  BOOST_TEST(held_back.detail == "restarted 2 s ago");
  const auto down = detail::diagnosed_node(r, 3, "d:4", "connection refused");
  BOOST_TEST(down.detail == "connection refused");
  BOOST_TEST(down.address == "d:4");
  const auto refused = detail::diagnosed_node(r, 1, "b:2", "connection refused");
  BOOST_TEST(refused.detail.empty());
}

BOOST_AUTO_TEST_CASE(an_extension_that_found_the_lock_gone_reports_the_loss_with_its_reason) {
  recording_observer obs;
  detail::report_extension_to(obs, "job", error::not_held, 3ms, {}, true);
  detail::report_extension_to(obs, "job", error::validity_exhausted, 3ms, {}, true);
  detail::report_extension_to(obs, "job", {}, 3ms, {}, false);
  BOOST_TEST(obs.extends.size() == 3u);
  BOOST_TEST(obs.extends[0].elapsed.count() == 3000);
  BOOST_TEST(!obs.extends[0].by_keeper);
  BOOST_TEST_REQUIRE(obs.losses.size() == 2u);
  BOOST_TEST((obs.losses[0].reason == error::not_held));
  BOOST_TEST((obs.losses[1].reason == error::lock_lost));
}

BOOST_AUTO_TEST_SUITE_END()

// Each builder's call read back as the server reads it. A script sees only KEYS and ARGV by
// position, so an argument in the wrong place is no compile error and often no runtime
// error either: a TTL read as a token simply never matches. The expected layouts below are
// taken from each script's text in scripts.cpp, not from the builders.
BOOST_AUTO_TEST_SUITE(script_calls)

namespace {
using detail::send_as;
using strings = std::vector<std::string>;

// A written call's arguments, as a server reads them: one flat array of bulk strings, and
// nothing after it.
strings call_args(const std::string& wire) {
  resp::reply r;
  const auto res = resp::parse(wire, r);
  BOOST_REQUIRE(res.status == resp::parse_status::complete);
  BOOST_REQUIRE_EQUAL(res.consumed, wire.size());
  BOOST_REQUIRE(r[0].kind == resp::type::array);
  BOOST_REQUIRE_EQUAL(r.size(), r[0].size + 1);
  strings args;
  for (std::size_t k = 1; k < r.size(); ++k) {
    BOOST_REQUIRE(r[k].kind == resp::type::bulk_string);
    args.emplace_back(r[k].text);
  }
  return args;
}

// The call runs `s` (by SHA or by text, as `how` says), declares exactly `keys` in that order,
// and passes exactly `argv` as ARGV[1], ARGV[2], ...
void check_call(const std::string& wire, const detail::script& s, send_as how, const strings& keys,
                const strings& argv) {
  const strings args = call_args(wire);
  BOOST_REQUIRE_EQUAL(args.size(), 3 + keys.size() + argv.size());
  const bool by_sha = how == send_as::sha;
  BOOST_TEST(args[0] == (by_sha ? "EVALSHA" : "EVAL"));
  BOOST_TEST(args[1] == (by_sha ? s.sha : s.body));
  BOOST_TEST(args[2] == std::to_string(keys.size()));
  const auto argv_begin = args.begin() + 3 + static_cast<std::ptrdiff_t>(keys.size());
  BOOST_TEST(strings(args.begin() + 3, argv_begin) == keys, boost::test_tools::per_element());
  BOOST_TEST(strings(argv_begin, args.end()) == argv, boost::test_tools::per_element());
}

detail::fence_key_pair pair_of(std::string_view hash, std::string_view marker) {
  detail::fence_key_pair p;
  p.hash = hash;
  p.marker = marker;
  return p;
}

// A batch as claims and settles keep it: items addressed by index, sent in the order chosen.
struct batch_item {
  std::string key, token;
};
const std::vector<batch_item> batch{{"job:a", "tok-a"}, {"job:b", "tok-b"}, {"job:c", "tok-c"}};
const std::vector<std::uint32_t> chosen{2, 0};  // not the batch's own order
std::string_view key_of(std::uint32_t j) {
  return batch[j].key;
}
std::string_view token_of(std::uint32_t j) {
  return batch[j].token;
}

detail::acquire_call fair_call() {
  return {.key = "lock:r",
          .token = "tok",
          .ttl = 30000ms,
          .line_key = "line:r",
          .expiry_key = "line-exp:r",
          .line_id = "id-9",
          .ticket = 7,
          .place_ttl = 2000ms,
          .fair = true,
          .join = true};
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_acquisition_is_set_nx_px_get_and_runs_no_script) {
  std::string out;
  const auto* lua = detail::write_acquire(out, {.key = "lock:r", .token = "tok", .ttl = 30000ms});
  BOOST_TEST(!lua);
  const strings want{"SET", "lock:r", "tok", "NX", "PX", "30000", "GET"};
  BOOST_TEST(call_args(out) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_fenced_acquisition_declares_the_lock_and_its_pair_then_token_ttl_field) {
  const auto pair = pair_of("fence:h", "fence:m");
  std::string out;
  const auto* lua = detail::write_acquire(
      out, {.key = "lock:r", .token = "tok", .ttl = 30000ms, .fence = &pair, .field = "r"});
  BOOST_TEST(lua == &detail::fence_acquire_script);
  check_call(out, detail::fence_acquire_script, send_as::sha, {"lock:r", "fence:h", "fence:m"},
             {"tok", "30000", "r"});
}

BOOST_AUTO_TEST_CASE(a_fair_acquisition_declares_its_line_and_passes_its_place_after_the_ttl) {
  std::string out;
  const auto* lua = detail::write_acquire(out, fair_call());
  BOOST_TEST(lua == &detail::fair_acquire_script);
  check_call(out, detail::fair_acquire_script, send_as::sha, {"lock:r", "line:r", "line-exp:r"},
             {"tok", "30000", "id-9", "7", "2000", "1"});
}

BOOST_AUTO_TEST_CASE(a_fair_fenced_acquisition_declares_five_keys_and_passes_the_field_third) {
  const auto pair = pair_of("fence:h", "fence:m");
  auto c = fair_call();
  c.fence = &pair;
  c.field = "r";
  c.join = false;
  std::string out;
  const auto* lua = detail::write_acquire(out, c);
  BOOST_TEST(lua == &detail::fair_fence_acquire_script);
  check_call(out, detail::fair_fence_acquire_script, send_as::sha,
             {"lock:r", "fence:h", "fence:m", "line:r", "line-exp:r"},
             {"tok", "30000", "r", "id-9", "7", "2000", "0"});
}

BOOST_AUTO_TEST_CASE(a_fence_raise_passes_the_token_the_field_then_the_counter_to_reach) {
  std::string out;
  detail::write_fence_raise(out, "lock:r", pair_of("fence:h", "fence:m"), "tok", "r", 41);
  check_call(out, detail::fence_raise_script, send_as::sha, {"lock:r", "fence:h", "fence:m"},
             {"tok", "r", "41"});
}

BOOST_AUTO_TEST_CASE(a_release_by_sha_announces_itself) {
  std::string out;
  detail::write_release(out, "lock:r", "tok", send_as::sha);
  check_call(out, detail::release_script, send_as::sha, {"lock:r"}, {"tok"});
}

BOOST_AUTO_TEST_CASE(a_quiet_release_by_text_runs_the_script_that_announces_nothing) {
  std::string out;
  detail::write_release(out, "lock:r", "tok", send_as::text, false);
  check_call(out, detail::quiet_release_script, send_as::text, {"lock:r"}, {"tok"});
}

BOOST_AUTO_TEST_CASE(an_extension_passes_the_token_then_the_ttl) {
  std::string out;
  detail::write_extend(out, "lock:r", "tok", 30000ms);
  check_call(out, detail::extend_script, send_as::sha, {"lock:r"}, {"tok", "30000"});
}

BOOST_AUTO_TEST_CASE(leaving_a_line_goes_as_text_and_declares_both_line_keys) {
  std::string out;
  detail::write_line_leave(out, "line:r", "line-exp:r", "id-9");
  check_call(out, detail::line_leave_script, send_as::text, {"line:r", "line-exp:r"}, {"id-9"});
}

BOOST_AUTO_TEST_CASE(an_inspection_declares_the_lock_and_its_counter_hash_and_passes_the_field) {
  std::string out;
  detail::write_inspect(out, "lock:r", "fence:h", "r");
  check_call(out, detail::inspect_script, send_as::sha, {"lock:r", "fence:h"}, {"r"});
}

BOOST_AUTO_TEST_CASE(an_inspection_of_the_server_alone_declares_no_key) {
  std::string out;
  detail::write_inspect(out, {}, {}, {});
  check_call(out, detail::inspect_script, send_as::sha, {}, {});
}

BOOST_AUTO_TEST_CASE(an_unfenced_set_acquisition_declares_its_keys_and_passes_token_then_ttl) {
  const strings keys{"lock:a", "lock:b"};
  std::string out;
  detail::write_set_acquire(out, keys, {}, {}, "tok", 30000ms);
  check_call(out, detail::multi_acquire_script, send_as::sha, keys, {"tok", "30000"});
}

BOOST_AUTO_TEST_CASE(a_fenced_set_acquisition_declares_a_triple_per_key_and_fields_after_the_ttl) {
  const strings keys{"lock:a", "lock:b"};
  const std::vector<detail::fence_key_pair> pairs{pair_of("fh:a", "fm:a"), pair_of("fh:b", "fm:b")};
  const strings fields{"a", "b"};
  std::string out;
  detail::write_set_acquire(out, keys, pairs, fields, "tok", 30000ms);
  check_call(out, detail::multi_acquire_script, send_as::sha,
             {"lock:a", "fh:a", "fm:a", "lock:b", "fh:b", "fm:b"}, {"tok", "30000", "a", "b"});
}

BOOST_AUTO_TEST_CASE(a_set_raise_passes_the_token_then_each_keys_field_and_counter) {
  const strings keys{"lock:a", "lock:b"};
  const std::vector<detail::fence_key_pair> pairs{pair_of("fh:a", "fm:a"), pair_of("fh:b", "fm:b")};
  const strings fields{"a", "b"};
  const std::vector<std::uint64_t> fences{11, 12};
  std::string out;
  detail::write_set_raise(out, keys, pairs, fields, fences, "tok");
  check_call(out, detail::multi_raise_script, send_as::sha,
             {"lock:a", "fh:a", "fm:a", "lock:b", "fh:b", "fm:b"}, {"tok", "a", "11", "b", "12"});
}

BOOST_AUTO_TEST_CASE(a_set_extension_passes_the_token_then_the_ttl) {
  const strings keys{"lock:a", "lock:b"};
  std::string out;
  detail::write_set_extend(out, keys, "tok", 30000ms);
  check_call(out, detail::multi_extend_script, send_as::sha, keys, {"tok", "30000"});
}

BOOST_AUTO_TEST_CASE(a_set_release_by_sha_announces_itself) {
  const strings keys{"lock:a", "lock:b"};
  std::string out;
  detail::write_set_release(out, keys, "tok", send_as::sha);
  check_call(out, detail::multi_release_script, send_as::sha, keys, {"tok"});
}

BOOST_AUTO_TEST_CASE(a_quiet_set_release_by_text_runs_the_script_that_announces_nothing) {
  const strings keys{"lock:a", "lock:b"};
  std::string out;
  detail::write_set_release(out, keys, "tok", send_as::text, false);
  check_call(out, detail::quiet_multi_release_script, send_as::text, keys, {"tok"});
}

BOOST_AUTO_TEST_CASE(a_claim_declares_the_chosen_names_in_order_then_passes_the_ttl_and_tokens) {
  std::string out;
  detail::write_claim(out, chosen, key_of, token_of, 30000ms);
  check_call(out, detail::claim_script, send_as::sha, {"job:c", "job:a"},
             {"30000", "tok-c", "tok-a"});
}

BOOST_AUTO_TEST_CASE(a_settle_passes_the_keep_time_then_one_token_per_name) {
  std::string out;
  detail::write_settle(out, chosen, key_of, token_of, 60000ms, send_as::sha);
  check_call(out, detail::settle_script, send_as::sha, {"job:c", "job:a"},
             {"60000", "tok-c", "tok-a"});
}

BOOST_AUTO_TEST_CASE(a_claims_undo_is_a_settle_by_text_that_keeps_nothing) {
  std::string out;
  detail::write_settle(out, chosen, key_of, token_of, 0ms, send_as::text);
  check_call(out, detail::settle_script, send_as::text, {"job:c", "job:a"},
             {"0", "tok-c", "tok-a"});
}

BOOST_AUTO_TEST_CASE(a_marker_spread_is_a_settle_by_text_with_an_empty_token_per_name) {
  std::string out;
  detail::write_marker_spread(out, chosen, key_of, 60000ms);
  check_call(out, detail::settle_script, send_as::text, {"job:c", "job:a"}, {"60000", "", ""});
}

BOOST_AUTO_TEST_CASE(a_batch_extension_passes_every_token_before_the_ttl) {
  std::string out;
  detail::write_batch_extend(
      out, batch, [](const batch_item& b) -> std::string_view { return b.key; },
      [](const batch_item& b) -> std::string_view { return b.token; }, 30000ms);
  check_call(out, detail::batch_extend_script, send_as::sha, {"job:a", "job:b", "job:c"},
             {"tok-a", "tok-b", "tok-c", "30000"});
}

BOOST_AUTO_TEST_CASE(a_fence_read_declares_the_hash_then_the_marker_and_passes_nothing) {
  std::string out;
  detail::write_fence_read(out, "fence:h", "fence:m");
  check_call(out, detail::fence_read_script, send_as::sha, {"fence:h", "fence:m"}, {});
}

BOOST_AUTO_TEST_CASE(a_fence_repair_passes_the_incarnation_then_field_and_value_pairs) {
  const std::map<std::string, std::int64_t> maxima{{"a", 7}, {"b", 9}};
  std::string out;
  detail::write_fence_repair(out, "fence:h", "fence:m", "run:repl", maxima);
  check_call(out, detail::fence_repair_script, send_as::sha, {"fence:h", "fence:m"},
             {"run:repl", "a", "7", "b", "9"});
}

BOOST_AUTO_TEST_SUITE_END()
