// SPDX-License-Identifier: BSL-1.0
// The background renewal's round, the claim batch and the settle batch as state machines, fed
// events without a socket or a server: when a round is over, what each lock or name ends as, when
// the nodes kept back are asked, what is undone, and what cancellation, shutdown and late answers
// do.

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "machines/claim_fsm.hpp"
#include "machines/renewal_fsm.hpp"
#include "machines/settle_fsm.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::bit;
using detail::node_mask;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;
constexpr double factor = 0.01;
using codes = std::vector<std::int64_t>;  // one node's answers, one per lock or name

}  // namespace

BOOST_AUTO_TEST_SUITE(renewal_rounds)

namespace {
using detail::renewal_fsm;
using detail::renewal_step;
using rkind = detail::renewal_action::kind;
// Every node is in and each live lock's outcome is to be taken.
bool decides(const detail::renewal_action& a) {
  return a.what == rkind::complete && !a.ec;
}

const auto old_deadline = t0 + 10s;
// A keeper's schedule for a 10 s lock ending at t0 + 10 s, as the keeper plans it: renewed
// every 3 s, lost 100 ms before its deadline.
detail::renewal_times kept() {
  return detail::plan_renewals(old_deadline, 10s, 10s, 0.3, 100ms, 0ms, factor);
}
const auto sent_at = t0 + 3s;

// A round renewing `locks` locks with `ttl` on 3 nodes, sent at t0 + 3 s.
renewal_fsm sent(std::size_t locks = 1, std::chrono::milliseconds ttl = 10s) {
  renewal_fsm f{3, locks, ttl, factor};
  f.sent(sent_at);
  return f;
}

renewal_step outcome(const renewal_fsm& f, boot_clock::time_point now, std::size_t j = 0) {
  return f.outcome(j, kept(), old_deadline, now);
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_renewal_confirmed_by_a_majority_in_time_extends_the_lock) {
  auto f = sent();
  f.answered(0, codes{1});
  f.answered(1, codes{1});
  f.failed(2);
  BOOST_TEST(decides(f.tally()));
  const auto s = outcome(f, sent_at + 5ms);
  BOOST_TEST((s.what == renewal_step::kind::renewed));
  BOOST_TEST(!s.outcome);
  BOOST_TEST((s.deadline == detail::validity_deadline(sent_at, 10s, factor)));
  BOOST_TEST((s.next_due == sent_at + 3s));
}

BOOST_AUTO_TEST_CASE(a_renewal_confirmed_after_its_margin_is_lost_as_validity_exhausted) {
  auto f = sent(1, 1s);
  for (std::size_t i = 0; i < 3; ++i) f.answered(i, codes{1});
  BOOST_TEST(decides(f.tally()));
  // 50 ms before the new deadline: inside the 100 ms margin.
  const auto s = outcome(f, detail::validity_deadline(sent_at, 1s, factor) - 50ms);
  BOOST_TEST((s.what == renewal_step::kind::lost));
  BOOST_TEST((s.outcome == error::validity_exhausted));
}

// A renewal with `ttl` that only node 0 confirmed, the others failing, decided 5 ms on.
renewal_step confirmed_by_one(std::chrono::milliseconds ttl) {
  auto f = sent(1, ttl);
  f.answered(0, codes{1});
  f.failed(1);
  f.failed(2);
  BOOST_TEST(decides(f.tally()));
  return outcome(f, sent_at + 5ms);
}

BOOST_AUTO_TEST_CASE(a_minority_of_confirmations_keeps_the_old_deadline_and_retries_soon) {
  const auto s = confirmed_by_one(10s);
  BOOST_TEST((s.what == renewal_step::kind::retry_soon));
  BOOST_TEST((s.outcome == error::no_quorum));
  BOOST_TEST((s.deadline == old_deadline));  // the renewal would end later: no promise more
  BOOST_TEST((s.next_due < old_deadline));
}

BOOST_AUTO_TEST_CASE(a_minority_with_a_shorter_ttl_may_shorten_the_deadline) {
  const auto s = confirmed_by_one(5s);
  BOOST_TEST((s.what == renewal_step::kind::retry_soon));
  BOOST_TEST((s.deadline == detail::validity_deadline(sent_at, 5s, factor)));
}

BOOST_AUTO_TEST_CASE(a_round_where_every_node_failed_is_decided_as_no_quorum) {
  auto f = sent();
  for (std::size_t i = 0; i < 3; ++i) f.failed(i);
  BOOST_TEST(decides(f.tally()));
  BOOST_TEST(f.votes(0).failed == 3u);
  const auto s = outcome(f, sent_at + 5ms);
  BOOST_TEST((s.outcome == error::no_quorum));
  BOOST_TEST((s.what == renewal_step::kind::retry_soon));
}

BOOST_AUTO_TEST_CASE(a_majority_refusal_loses_the_lock_as_not_held) {
  auto f = sent();
  f.answered(0, codes{0});
  f.answered(1, codes{0});
  f.answered(2, codes{1});
  BOOST_TEST(decides(f.tally()));
  const auto s = outcome(f, sent_at + 5ms);
  BOOST_TEST((s.what == renewal_step::kind::lost_not_held));
  BOOST_TEST((s.outcome == error::not_held));
}

BOOST_AUTO_TEST_CASE(each_lock_of_a_batch_is_decided_on_its_own_answers) {
  auto f = sent(2);
  f.answered(0, codes{1, 0});
  f.answered(1, codes{1, 0});
  f.answered(2, codes{0, 0});
  BOOST_TEST(decides(f.tally()));
  BOOST_TEST((outcome(f, sent_at + 5ms, 0).what == renewal_step::kind::renewed));
  BOOST_TEST((outcome(f, sent_at + 5ms, 1).what == renewal_step::kind::lost_not_held));
}

BOOST_AUTO_TEST_CASE(the_round_waits_for_every_node_even_after_a_majority_confirmed) {
  auto f = sent();
  f.answered(0, codes{1});
  BOOST_TEST((f.tally().what == rkind::none));
  f.answered(1, codes{1});
  BOOST_TEST((f.tally().what == rkind::none));  // a per-lock decision needs every vote
  f.failed(2);                                  // its timeout
  BOOST_TEST(decides(f.tally()));
}

BOOST_AUTO_TEST_CASE(a_second_word_from_one_node_is_not_counted_twice) {
  auto f = sent();
  f.answered(0, codes{1});
  f.answered(0, codes{1});
  f.failed(0);
  BOOST_TEST(f.votes(0).yes == 1u);
  BOOST_TEST(f.votes(0).failed == 0u);
  BOOST_TEST((f.tally().what == rkind::none));
}

BOOST_AUTO_TEST_CASE(an_answer_of_the_wrong_length_counts_as_the_nodes_failure) {
  auto f = sent(2);
  f.answered(0, codes{1});
  BOOST_TEST(f.votes(0).yes == 0u);
  BOOST_TEST(f.votes(1).failed == 1u);
}

BOOST_AUTO_TEST_CASE(answers_after_the_decision_change_nothing) {
  auto f = sent();
  for (std::size_t i = 0; i < 3; ++i) f.failed(i);
  BOOST_TEST(decides(f.tally()));
  f.answered(0, codes{1});
  BOOST_TEST(f.votes(0).yes == 0u);
  BOOST_TEST((f.tally().what == rkind::none));
  BOOST_TEST((f.state() == renewal_fsm::phase::done));
}

BOOST_AUTO_TEST_CASE(events_before_the_round_was_sent_are_not_counted) {
  renewal_fsm f{3, 1, 10s, factor};
  f.answered(0, codes{1});
  BOOST_TEST((f.tally().what == rkind::none));
  BOOST_TEST(f.votes(0).yes == 0u);
}

BOOST_AUTO_TEST_CASE(a_shut_down_round_completes_without_deciding_once_every_node_is_in) {
  auto f = sent();
  f.answered(0, codes{1});
  f.shut_down();
  BOOST_TEST((f.tally().what == rkind::none));  // its requests may still run
  f.failed(1);
  f.failed(2);
  const auto a = f.tally();
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::shut_down));  // nothing to decide
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(claim_batches)

namespace {
using detail::claim_fsm;
using detail::claim_moment;
using ckind = detail::claim_action::kind;
using items = std::vector<std::uint32_t>;

const auto valid_until = t0 + 10s;
const claim_moment in_time{.now = t0 + 5ms};
const claim_moment too_late{.now = valid_until};
const claim_moment closed{.now = t0 + 5ms, .closed = true};

// A batch of `names` names on 3 nodes: nodes 0 and 1 asked for all of them, node 2 kept.
claim_fsm first_round(std::size_t names = 1, std::size_t n = 3) {
  claim_fsm f{n, names};
  items all;
  for (std::uint32_t j = 0; j < names; ++j) all.push_back(j);
  f.asking(0, all);
  f.asking(1, all);
  f.planned(valid_until, bit(2));
  BOOST_REQUIRE((f.tally(in_time).what == ckind::none));
  return f;
}

// A one-name batch whose first round heard `first` from node 0 and `second` from node 1.
claim_fsm heard(std::int64_t first, std::int64_t second) {
  auto f = first_round();
  f.answered(0, items{0}, codes{first});
  f.answered(1, items{0}, codes{second});
  return f;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_name_won_by_the_first_round_is_kept_without_asking_the_rest) {
  auto f = heard(1, 1);
  const auto a = f.tally(in_time);
  BOOST_TEST((a.what == ckind::complete));
  BOOST_TEST(!a.ec);
  const auto e = f.ending(0);
  BOOST_TEST((e.status == claim_status::won));
  BOOST_TEST(e.keep);
  BOOST_TEST(e.undo == 0u);
  BOOST_TEST(f.asked(0) == node_mask(bit(0) | bit(1)));
}

BOOST_AUTO_TEST_CASE(a_split_first_round_asks_the_nodes_kept_back_for_the_open_name) {
  auto f = heard(1, 0);
  const auto a = f.tally(in_time);
  BOOST_TEST((a.what == ckind::second_round));
  BOOST_TEST(a.nodes == node_mask(bit(2)));
  BOOST_TEST((a.detail == items{0}));
}

BOOST_AUTO_TEST_CASE(a_name_held_elsewhere_ends_held_and_undoes_its_partial_take) {
  auto f = heard(1, 0);
  BOOST_REQUIRE((f.tally(in_time).what == ckind::second_round));
  f.asking(2, items{0});
  BOOST_TEST((f.tally(in_time).what == ckind::none));
  f.answered(2, items{0}, codes{0});
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  const auto e = f.ending(0);
  BOOST_TEST((e.status == claim_status::held));
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == node_mask(bit(0)));
}

BOOST_AUTO_TEST_CASE(a_done_marker_among_the_holders_ends_the_claim_as_done) {
  auto f = heard(2, 2);
  BOOST_TEST((f.tally(in_time).what == ckind::complete));  // no majority left to win
  BOOST_TEST((f.ending(0).status == claim_status::done));
  BOOST_TEST(f.ending(0).undo == 0u);
}

BOOST_AUTO_TEST_CASE(keys_of_another_type_fail_the_claim_as_wrong_type) {
  auto f = heard(3, 3);
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  const auto e = f.ending(0);
  BOOST_TEST((e.status == claim_status::failed));
  BOOST_TEST((e.error == error::wrong_type));
}

BOOST_AUTO_TEST_CASE(only_the_names_still_open_go_to_the_second_round) {
  auto f = first_round(3);
  // Name 0 won, name 1 split, name 2 held on both: only name 1 can still be won.
  f.answered(0, items{0, 1, 2}, codes{1, 1, 0});
  f.answered(1, items{0, 1, 2}, codes{1, 0, 0});
  const auto a = f.tally(in_time);
  BOOST_TEST((a.what == ckind::second_round));
  BOOST_TEST((a.detail == items{1}));
}

BOOST_AUTO_TEST_CASE(no_second_round_once_validity_is_over_and_a_late_majority_is_no_win) {
  auto f = first_round(2);
  f.answered(0, items{0, 1}, codes{1, 1});
  f.answered(1, items{0, 1}, codes{1, 0});
  BOOST_TEST((f.tally(too_late).what == ckind::complete));
  BOOST_TEST((f.ending(0).error == error::validity_exhausted));
  BOOST_TEST(f.ending(0).undo == node_mask(bit(0) | bit(1)));
  BOOST_TEST((f.ending(1).status == claim_status::failed));
}

BOOST_AUTO_TEST_CASE(no_second_round_without_nodes_kept_back) {
  claim_fsm f{3, 1};
  f.asking(0, items{0});
  f.asking(1, items{0});
  f.planned(valid_until, 0);  // node 2 may not vote
  f.answered(0, items{0}, codes{1});
  f.answered(1, items{0}, codes{0});
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  BOOST_TEST((f.ending(0).error == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_closed_client_completes_the_batch_as_shut_down_and_asks_no_more) {
  auto f = heard(1, 0);
  const auto a = f.tally(closed);
  BOOST_TEST((a.what == ckind::complete));
  BOOST_TEST((a.ec == error::shut_down));
}

BOOST_AUTO_TEST_CASE(the_undo_goes_where_our_set_may_have_landed_and_nowhere_else) {
  claim_fsm f{5, 1};
  for (std::size_t i = 0; i < 3; ++i) f.asking(i, items{0});
  f.planned(valid_until, 0);
  f.answered(0, items{0}, codes{1});  // took it
  f.failed(1, items{0}, true);        // sent: it may have run
  f.failed(2, items{0}, false);       // never left
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  const auto e = f.ending(0);
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == node_mask(bit(0) | bit(1)));
}

BOOST_AUTO_TEST_CASE(the_batch_waits_for_every_node_it_asked) {
  auto f = first_round();
  f.answered(0, items{0}, codes{1});
  BOOST_TEST((f.tally(in_time).what == ckind::none));
  f.failed(1, items{0}, true);
  BOOST_TEST((f.tally(in_time).what != ckind::none));
}

BOOST_AUTO_TEST_CASE(a_round_is_not_over_while_its_asks_are_being_made) {
  claim_fsm f{3, 1};
  f.asking(0, items{0});
  f.failed(0, items{0}, false);  // refused at once, before the plan is complete
  BOOST_TEST((f.tally(in_time).what == ckind::none));
}

BOOST_AUTO_TEST_CASE(cancelling_mid_round_tells_the_caller_and_undoes_a_later_win) {
  auto f = first_round();
  f.answered(0, items{0}, codes{1});
  const auto told = f.cancel();
  BOOST_TEST((told.what == ckind::answer));
  BOOST_TEST((told.ec == error::cancelled));
  BOOST_TEST((f.cancel().what == ckind::none));  // told once
  f.answered(1, items{0}, codes{1});
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  const auto e = f.ending(0);
  BOOST_TEST((e.status == claim_status::won));
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == node_mask(bit(0) | bit(1)));
}

BOOST_AUTO_TEST_CASE(a_cancelled_call_asks_no_more_nodes_and_undoes_its_first_round) {
  auto f = heard(1, 0);  // open: node 2, kept back, could still decide it
  BOOST_REQUIRE((f.cancel().what == ckind::answer));
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  const auto e = f.ending(0);
  BOOST_TEST(!e.keep);
  BOOST_TEST(e.undo == node_mask(bit(0)));
  BOOST_TEST(f.asked(0) == node_mask(bit(0) | bit(1)));  // node 2 never asked
}

BOOST_AUTO_TEST_CASE(a_cancelled_name_is_not_asked_again_while_the_others_are) {
  auto f = first_round(2);
  f.answered(0, items{0, 1}, codes{1, 1});
  f.answered(1, items{0, 1}, codes{0, 0});
  BOOST_TEST(f.cancel_name(1));
  const auto a = f.tally(in_time);
  BOOST_TEST((a.what == ckind::second_round));
  BOOST_TEST((a.detail == items{0}));
}

BOOST_AUTO_TEST_CASE(a_cancelled_name_is_undone_while_the_others_are_kept) {
  auto f = first_round(2);
  BOOST_TEST(f.cancel_name(1));
  f.answered(0, items{0, 1}, codes{1, 1});
  f.answered(1, items{0, 1}, codes{1, 1});
  BOOST_TEST((f.tally(in_time).what == ckind::complete));
  BOOST_TEST(f.ending(0).keep);
  BOOST_TEST(!f.ending(1).keep);
  BOOST_TEST(f.ending(1).undo == node_mask(bit(0) | bit(1)));
}

BOOST_AUTO_TEST_CASE(after_completion_cancellation_and_late_answers_change_nothing) {
  auto f = heard(1, 1);
  BOOST_REQUIRE((f.tally(in_time).what == ckind::complete));
  BOOST_TEST((f.cancel().what == ckind::none));
  BOOST_TEST(!f.cancel_name(0));
  f.answered(2, items{0}, codes{0});
  f.answered(0, items{0}, codes{0});
  BOOST_TEST(f.votes(0).yes == 2u);
  BOOST_TEST(f.votes(0).held == 0u);
  BOOST_TEST((f.tally(in_time).what == ckind::none));
  BOOST_TEST(f.ending(0).keep);
}

BOOST_AUTO_TEST_CASE(a_second_word_from_one_node_is_not_counted_twice) {
  auto f = first_round();
  f.answered(0, items{0}, codes{1});
  f.answered(0, items{0}, codes{1});
  f.failed(0, items{0}, true);
  BOOST_TEST(f.votes(0).yes == 1u);
  BOOST_TEST(f.votes(0).failed == 0u);
}

BOOST_AUTO_TEST_CASE(a_duplicate_name_is_never_asked_and_ends_as_duplicate) {
  claim_fsm f{3, 2};
  f.duplicate(1);
  f.asking(0, items{0});
  f.asking(1, items{0});
  f.planned(valid_until, bit(2));
  f.answered(0, items{0}, codes{1});
  f.answered(1, items{0}, codes{0});
  const auto a = f.tally(in_time);
  BOOST_TEST((a.detail == items{0}));  // the duplicate stays out of the second round too
  BOOST_TEST((f.ending(1).status == claim_status::duplicate));
  BOOST_TEST(f.ending(1).undo == 0u);
}

BOOST_AUTO_TEST_CASE(an_answer_of_the_wrong_length_is_the_nodes_failure_and_may_have_landed) {
  auto f = first_round();
  f.answered(0, items{0}, codes{1, 1});
  BOOST_TEST(f.votes(0).failed == 1u);
  f.answered(1, items{0}, codes{1});
  BOOST_TEST((f.tally(in_time).what == ckind::second_round));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(settle_batches)

namespace {
using detail::settle_fsm;
using skind = detail::settle_action::kind;
using items = std::vector<std::uint32_t>;
constexpr node_mask all3 = node_mask(bit(0) | bit(1) | bit(2));
const std::string token = "3fa2c1d0e9b8a7f6";  // an ordinary token: its marker may spread

// One claim asked of all 3 nodes, each answering `code`, completed (`closed`: after shutdown).
settle_fsm all_answered(std::int64_t code, bool closed = false) {
  settle_fsm f{3, {all3}, true};
  f.start();
  for (std::size_t i = 0; i < 3; ++i) f.answered(i, items{0}, codes{code});
  BOOST_REQUIRE((f.tally(0, closed).what == skind::complete));
  return f;
}
}  // namespace

BOOST_AUTO_TEST_CASE(the_round_asks_each_node_for_the_claims_that_went_to_it) {
  settle_fsm f{3, {node_mask(bit(0) | bit(1)), node_mask(bit(1) | bit(2))}, true};
  const auto a = f.start();
  BOOST_TEST((a.what == skind::send_round));
  BOOST_TEST(a.nodes == all3);
  BOOST_TEST(f.take_asks(0) == items{0});
  BOOST_TEST(f.take_asks(1) == (items{0, 1}));
  BOOST_TEST(f.take_asks(2) == items{1});
}

BOOST_AUTO_TEST_CASE(it_completes_only_once_every_node_asked_is_heard_from) {
  settle_fsm f{3, {all3}, true};
  f.start();
  BOOST_TEST((f.tally(3, false).what == skind::none));
  f.answered(0, items{0}, codes{1});
  f.answered(1, items{0}, codes{1});
  // A majority settled, but node 2 is still out: the batch waits for it, by its own count
  // of the nodes asked as well as by the requests its driver holds.
  BOOST_TEST((f.tally(1, false).what == skind::none));
  BOOST_TEST((f.tally(0, false).what == skind::none));
  BOOST_TEST(!f.done());
  f.failed(2, items{0});
  BOOST_TEST((f.tally(1, false).what == skind::none));
  const auto a = f.tally(0, false);
  BOOST_TEST((a.what == skind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST(f.done());
  BOOST_TEST(!f.outcome(0));
}

// With a keep time (done markers), a claim settled on a majority also writes its marker to
// the nodes its claim missed; without one, nothing spreads.
BOOST_AUTO_TEST_CASE(a_claim_settled_on_a_majority_spreads_its_marker_only_with_a_keep_time) {
  for (const bool marks_done : {true, false}) {
    settle_fsm f{3, {node_mask(bit(0) | bit(1))}, marks_done};
    f.start();
    f.answered(0, items{0}, codes{1});
    f.answered(1, items{0}, codes{1});
    BOOST_REQUIRE((f.tally(0, false).what == skind::complete));
    BOOST_TEST(!f.outcome(0));
    BOOST_TEST(f.spread(0, token) == node_mask(marks_done ? bit(2) : 0));
  }
}

BOOST_AUTO_TEST_CASE(failed_nodes_leave_a_claim_without_a_majority) {
  settle_fsm f{3, {all3}, true};
  f.start();
  f.answered(0, items{0}, codes{1});
  f.failed(1, items{0});
  f.answered(2, items{0}, codes{7});  // no code the script answers: failed there
  BOOST_REQUIRE((f.tally(0, false).what == skind::complete));
  BOOST_TEST((f.outcome(0) == error::no_quorum));
  BOOST_TEST(f.spread(0, token) == node_mask(0));
}

BOOST_AUTO_TEST_CASE(a_claim_no_node_knew_as_ours_is_not_held) {
  BOOST_TEST((all_answered(0).outcome(0) == error::not_held));
  BOOST_TEST(!all_answered(1).outcome(0));
}

BOOST_AUTO_TEST_CASE(an_answer_of_the_wrong_length_counts_as_a_failure_of_that_node) {
  settle_fsm f{3, {all3, all3}, true};
  f.start();
  f.answered(0, items{0, 1}, codes{1});  // one code for two claims
  f.answered(1, items{0, 1}, codes{1, 1});
  f.answered(2, items{0, 1}, codes{1, 0});
  BOOST_REQUIRE((f.tally(0, false).what == skind::complete));
  BOOST_TEST(!f.outcome(0));                       // nodes 1 and 2
  BOOST_TEST((f.outcome(1) == error::no_quorum));  // node 1 only
}

BOOST_AUTO_TEST_CASE(answers_from_nodes_not_asked_or_heard_twice_change_nothing) {
  settle_fsm f{3, {node_mask(bit(0) | bit(1))}, true};
  f.start();
  f.answered(2, items{0}, codes{1});  // never asked
  f.answered(0, items{0}, codes{1});
  f.answered(0, items{0}, codes{1});  // again
  f.failed(1, items{0});
  BOOST_REQUIRE((f.tally(0, false).what == skind::complete));
  BOOST_TEST((f.outcome(0) == error::no_quorum));
  // After the completion, events change nothing.
  f.answered(1, items{0}, codes{1});
  BOOST_TEST((f.tally(0, false).what == skind::none));
  BOOST_TEST((f.outcome(0) == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_shut_down_client_fails_every_claim_and_spreads_nothing) {
  const settle_fsm f = all_answered(1, true);
  BOOST_TEST((f.outcome(0) == error::shut_down));
  BOOST_TEST(f.spread(0, token) == node_mask(0));
}

BOOST_AUTO_TEST_CASE(a_batch_whose_claims_went_nowhere_completes_at_once) {
  settle_fsm f{3, {node_mask(0)}, true};
  const auto a = f.start();
  BOOST_TEST((a.what == skind::send_round));
  BOOST_TEST(a.nodes == node_mask(0));
  BOOST_TEST((f.tally(0, false).what == skind::complete));
}

BOOST_AUTO_TEST_CASE(the_summary_counts_the_settled_and_names_the_first_failure) {
  settle_fsm f{3, {all3, all3, all3}, true, 1};
  f.start();
  for (std::size_t i = 0; i < 3; ++i) f.answered(i, items{0, 1, 2}, codes{1, 0, 1});
  BOOST_REQUIRE((f.tally(0, false).what == skind::complete));
  const auto sum = f.summary();
  BOOST_TEST(sum.settled() == 2u);
  // A claim of the call was not ours before anything was sent: that comes first.
  BOOST_TEST((sum.outcome() == error::not_held));
  settle_fsm g{3, {all3, all3}, true};
  g.start();
  for (std::size_t i = 0; i < 3; ++i) g.answered(i, items{0, 1}, codes{1, 0});
  BOOST_REQUIRE((g.tally(0, false).what == skind::complete));
  BOOST_TEST(g.summary().settled() == 1u);
  BOOST_TEST((g.summary().outcome() == error::not_held));
}

BOOST_AUTO_TEST_SUITE_END()
