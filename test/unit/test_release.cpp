// SPDX-License-Identifier: BSL-1.0
// The release and extension state machines, fed events without a socket or a server:
// when a release completes and with what, when an extension completes, with which
// deadline, and when it loses the lock; what cancellation and late answers do to each.

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "machines/extend_fsm.hpp"
#include "machines/release_fsm.hpp"
#include "resp/resp.hpp"
#include "wire_reply.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::extend_action;
using detail::extend_fsm;
using detail::release_action;
using detail::release_fsm;
using detail::vote;
using test::wire_reply;
using rkind = release_action::kind;
using xkind = extend_action::kind;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;

// The checks turned the call down: it completes without a round.
bool refused(const extend_action& a) {
  return a.what == xkind::complete && a.detail.refused;
}
constexpr double factor = 0.01;

// A release whose round went out to n nodes, every one of which took it.
release_fsm released_to(std::size_t n) {
  release_fsm f;
  BOOST_REQUIRE((f.sent(n, n).what == rkind::none));
  return f;
}

// Feeds `votes` in order and returns the last action.
release_action feed(release_fsm& f, const std::vector<vote>& votes) {
  release_action a;
  for (const vote v : votes) a = f.voted(v);
  return a;
}

config test_config() {
  config c;
  c.drift_factor = factor;
  return c;
}

// A held lock whose validity ends at t0 + 10 s.
detail::extension_facts held_lock() {
  return {.has_token = true, .owns = true, .deadline = t0 + 10s};
}

// An extension by `ttl` checked at `start` and sent to n nodes that all took it.
extend_fsm extending(std::size_t n, std::chrono::milliseconds ttl = 10s,
                     boot_clock::time_point start = t0 + 1s) {
  extend_fsm f;
  BOOST_REQUIRE((f.check(held_lock(), ttl, test_config(), start).what == xkind::send_round));
  BOOST_REQUIRE((f.sent(n, n, start).what == xkind::none));
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(release_machine)

BOOST_AUTO_TEST_CASE(a_release_deleted_on_a_majority_completes_with_success) {
  auto f = released_to(3);
  BOOST_TEST((f.voted(vote::yes).what == rkind::none));
  const auto a = f.voted(vote::yes);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST((f.state() == release_fsm::phase::done));
}

BOOST_AUTO_TEST_CASE(one_deletion_among_a_majority_of_answers_is_enough) {
  // The other node's key had expired: the key is ours nowhere on a majority.
  auto f = released_to(3);
  const auto a = feed(f, {vote::no, vote::yes});
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST(!a.ec);
}

BOOST_AUTO_TEST_CASE(a_release_that_deleted_nothing_waits_for_every_answer_then_is_not_held) {
  auto f = released_to(3);
  BOOST_TEST((feed(f, {vote::no, vote::no}).what == rkind::none));
  const auto a = f.voted(vote::no);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::not_held));
}

BOOST_AUTO_TEST_CASE(a_last_answer_that_deletes_turns_not_held_into_success) {
  // Why a release without a deletion waits: the last node may still hold our key.
  auto f = released_to(3);
  BOOST_TEST((feed(f, {vote::no, vote::no}).what == rkind::none));
  const auto a = f.voted(vote::yes);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST(!a.ec);
}

BOOST_AUTO_TEST_CASE(a_release_answered_by_a_minority_is_no_quorum) {
  auto f = released_to(3);
  const auto a = feed(f, {vote::yes, vote::failed, vote::failed});
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_release_waits_for_the_last_node_while_a_majority_may_still_answer) {
  auto f = released_to(3);
  BOOST_TEST((feed(f, {vote::failed, vote::yes}).what == rkind::none));
  BOOST_TEST((f.state() == release_fsm::phase::waiting));
}

BOOST_AUTO_TEST_CASE(a_release_where_every_node_failed_is_no_quorum) {
  auto f = released_to(5);
  const auto a = feed(f, std::vector<vote>(5, vote::failed));
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_release_every_connection_refused_completes_when_sent) {
  release_fsm f;
  const auto a = f.sent(3, 0);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(nodes_that_refused_the_request_count_as_failed) {
  // Two of three refused at once: one deletion cannot make a majority of answers.
  release_fsm f;
  BOOST_TEST((f.sent(3, 1).what == rkind::none));
  const auto a = f.voted(vote::yes);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(at_even_n_half_the_answers_are_not_a_majority) {
  auto f = released_to(4);
  BOOST_TEST((feed(f, {vote::yes, vote::no}).what == rkind::none));
  const auto a = f.voted(vote::no);
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST(!a.ec);
}

BOOST_AUTO_TEST_CASE(a_tie_of_answers_and_failures_at_even_n_is_no_quorum) {
  auto f = released_to(4);
  const auto a = feed(f, {vote::yes, vote::failed, vote::no, vote::failed});
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_held_answer_means_the_key_is_not_ours_there) {
  auto f = released_to(3);
  const auto a = feed(f, {vote::held, vote::held, vote::held});
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::not_held));
}

BOOST_AUTO_TEST_CASE(a_pending_vote_is_no_answer) {
  auto f = released_to(1);
  BOOST_TEST((f.voted(vote::pending).what == rkind::none));
  BOOST_TEST((f.voted(vote::yes).what == rkind::complete));
}

BOOST_AUTO_TEST_CASE(answers_while_the_round_is_being_sent_are_left_to_sent) {
  // A connection that refuses the request reports the failure during the send: sent()
  // counts it from the requests that went out, so it must not count here too.
  release_fsm f;
  BOOST_TEST((f.voted(vote::failed).what == rkind::none));
  BOOST_TEST((f.state() == release_fsm::phase::sending));
  BOOST_TEST((f.sent(3, 2).what == rkind::none));
  BOOST_TEST((f.voted(vote::yes).what == rkind::none));
  BOOST_TEST((f.voted(vote::yes).what == rkind::complete));
}

BOOST_AUTO_TEST_CASE(more_answers_than_requests_out_are_ignored) {
  release_fsm f;
  BOOST_TEST((f.sent(3, 2).what == rkind::none));
  BOOST_TEST((f.voted(vote::failed).what == rkind::none));
  const auto a = f.voted(vote::no);
  BOOST_TEST((a.ec == error::no_quorum));
  BOOST_TEST((f.voted(vote::yes).what == rkind::none));
}

BOOST_AUTO_TEST_CASE(cancellation_before_the_decision_completes_as_cancelled) {
  auto f = released_to(3);
  BOOST_TEST((f.voted(vote::yes).what == rkind::none));
  const auto a = f.cancel();
  BOOST_TEST((a.what == rkind::complete));
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST((f.voted(vote::yes).what == rkind::none));
}

BOOST_AUTO_TEST_CASE(cancellation_after_the_decision_changes_nothing) {
  auto f = released_to(3);
  BOOST_TEST((feed(f, {vote::yes, vote::yes}).what == rkind::complete));
  BOOST_TEST((f.cancel().what == rkind::none));
}

BOOST_AUTO_TEST_CASE(late_answers_after_completion_are_ignored) {
  auto f = released_to(5);
  BOOST_TEST((feed(f, {vote::yes, vote::yes, vote::yes}).what == rkind::complete));
  BOOST_TEST((f.voted(vote::no).what == rkind::none));
  BOOST_TEST((f.voted(vote::failed).what == rkind::none));
  BOOST_TEST((f.state() == release_fsm::phase::done));
}

BOOST_AUTO_TEST_CASE(the_machine_decides_as_the_release_rule_for_every_count_up_to_seven) {
  // Every mix of deletions, refusals and failures, fed in that order: the machine's
  // outcome, once every answer is in, is decide_release's.
  for (std::size_t n = 1; n <= 7; ++n)
    for (std::size_t d = 0; d <= n; ++d)
      for (std::size_t a = 0; d + a <= n; ++a) {
        auto f = released_to(n);
        std::vector<vote> votes(d, vote::yes);
        votes.insert(votes.end(), a, vote::no);
        votes.insert(votes.end(), n - d - a, vote::failed);
        release_action last;
        for (const vote v : votes)
          if (const auto x = f.voted(v); x.what == rkind::complete) last = x;
        const auto rule = detail::decide_release(n, d, a, 0);
        BOOST_TEST((last.what == rkind::complete), "n=" << n << " d=" << d << " a=" << a);
        BOOST_TEST((last.ec == rule.outcome), "n=" << n << " d=" << d << " a=" << a);
      }
}

BOOST_AUTO_TEST_CASE(a_release_is_refused_by_a_closed_client_then_without_a_lock_then_not_ours) {
  BOOST_TEST((detail::release_refusal(true, false, false) == error::shut_down));
  BOOST_TEST((detail::release_refusal(false, false, false) == error::no_lock));
  BOOST_TEST((detail::release_refusal(false, true, false) == error::not_held));
  BOOST_TEST(!detail::release_refusal(false, true, true));
}

BOOST_AUTO_TEST_CASE(a_single_release_is_yes_only_for_one_deleted_key) {
  BOOST_TEST((detail::release_answer(wire_reply{":1\r\n"}.r) == vote::yes));
  BOOST_TEST((detail::release_answer(wire_reply{":0\r\n"}.r) == vote::no));
  BOOST_TEST((detail::release_answer(wire_reply{":2\r\n"}.r) == vote::no));
  BOOST_TEST((detail::release_answer(wire_reply{"$1\r\n1\r\n"}.r) == vote::failed));
}

BOOST_AUTO_TEST_CASE(a_sets_release_is_yes_for_any_deleted_key) {
  BOOST_TEST((detail::set_release_answer(wire_reply{":3\r\n"}.r) == vote::yes));
  BOOST_TEST((detail::set_release_answer(wire_reply{":1\r\n"}.r) == vote::yes));
  BOOST_TEST((detail::set_release_answer(wire_reply{":0\r\n"}.r) == vote::no));
  BOOST_TEST((detail::set_release_answer(wire_reply{"*0\r\n"}.r) == vote::failed));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(extension_machine)

BOOST_AUTO_TEST_CASE(a_checked_extension_is_sent_and_remembers_its_start_ttl_and_old_deadline) {
  extend_fsm f;
  const auto a = f.check(held_lock(), 5s, test_config(), t0 + 2s);
  BOOST_TEST((a.what == xkind::send_round));
  BOOST_TEST((f.start() == t0 + 2s));
  BOOST_TEST((f.ttl() == 5s));
  BOOST_TEST((f.old_deadline() == t0 + 10s));
  BOOST_TEST((f.state() == extend_fsm::phase::sending));
}

BOOST_AUTO_TEST_CASE(a_shut_down_client_refuses_without_marking_the_lock_lost) {
  extend_fsm f;
  auto facts = held_lock();
  facts.closed = true;
  const auto a = f.check(facts, 5s, test_config(), t0);
  BOOST_TEST(refused(a));
  BOOST_TEST((a.ec == error::shut_down));
  BOOST_TEST(!a.detail.lost);
  // A refused call sends nothing, so nothing can complete it a second time.
  BOOST_TEST((f.sent(3, 3, t0).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0).what == xkind::none));
}

BOOST_AUTO_TEST_CASE(a_lock_past_its_deadline_is_refused_and_lost_for_good) {
  extend_fsm f;
  const auto a = f.check(held_lock(), 5s, test_config(), t0 + 10s);
  BOOST_TEST(refused(a));
  BOOST_TEST((a.ec == error::lock_lost));
  BOOST_TEST(a.detail.lost);
  BOOST_TEST(!a.detail.text.empty());
}

BOOST_AUTO_TEST_CASE(a_ttl_out_of_range_is_refused_with_the_reason) {
  extend_fsm f;
  const auto a = f.check(held_lock(), 0ms, test_config(), t0);
  BOOST_TEST(refused(a));
  BOOST_TEST((a.ec == error::invalid_ttl));
  BOOST_TEST(a.detail.text.find("1 ms to 24 h") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_majority_of_yes_in_time_moves_the_deadline_to_start_plus_ttl_less_drift) {
  auto f = extending(3);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s + 1ms).what == xkind::none));
  const auto a = f.voted(vote::yes, t0 + 1s + 2ms);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST((a.detail.deadline == detail::validity_deadline(t0 + 1s, 10s, factor)));
  BOOST_TEST(!a.detail.lost);
}

BOOST_AUTO_TEST_CASE(an_extension_granted_after_the_old_deadline_is_not_extended_and_is_lost) {
  auto f = extending(3);
  BOOST_TEST((f.voted(vote::yes, t0 + 5s).what == xkind::none));
  // The second yes arrives after the lock's old deadline: another owner may exist.
  const auto a = f.voted(vote::yes, t0 + 10s);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::validity_exhausted));
  BOOST_TEST(a.detail.lost);
  BOOST_TEST((a.detail.deadline <= t0 + 10s));
}

BOOST_AUTO_TEST_CASE(an_extension_granted_after_its_own_new_deadline_is_not_extended) {
  // 5 ms leaves under 3 ms of validity: confirmed 4 ms after sending, the keys may be
  // gone already, though the old deadline is far.
  auto f = extending(3, 5ms, t0 + 1s);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s + 4ms).what == xkind::none));
  const auto a = f.voted(vote::yes, t0 + 1s + 4ms);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::validity_exhausted));
  BOOST_TEST(a.detail.lost);
  BOOST_TEST((a.detail.deadline == detail::validity_deadline(t0 + 1s, 5ms, factor)));
}

BOOST_AUTO_TEST_CASE(a_majority_of_refusals_loses_the_lock_as_not_held) {
  auto f = extending(3);
  BOOST_TEST((f.voted(vote::no, t0 + 1s).what == xkind::none));
  const auto a = f.voted(vote::no, t0 + 1s);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::not_held));
  BOOST_TEST(a.detail.lost);
  BOOST_TEST((a.detail.deadline == t0 + 10s));
}

BOOST_AUTO_TEST_CASE(a_held_answer_is_a_refusal) {
  auto f = extending(3);
  BOOST_TEST((f.voted(vote::held, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::held, t0 + 1s).ec == error::not_held));
}

BOOST_AUTO_TEST_CASE(failures_without_a_majority_are_no_quorum_and_shorten_to_the_new_ttl) {
  // The PEXPIRE of 1 s may still run on the nodes that failed to answer.
  auto f = extending(3, 1000ms, t0 + 1s);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::failed, t0 + 1s).what == xkind::none));
  const auto a = f.voted(vote::failed, t0 + 1s + 100ms);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
  BOOST_TEST((a.detail.deadline == detail::validity_deadline(t0 + 1s, 1000ms, factor)));
  BOOST_TEST(!a.detail.lost);
}

BOOST_AUTO_TEST_CASE(at_even_n_two_of_four_yes_is_not_an_extension) {
  auto f = extending(4);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  // Three of four could still say yes: undecided.
  BOOST_TEST((f.voted(vote::no, t0 + 1s).what == xkind::none));
  const auto a = f.voted(vote::failed, t0 + 1s);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
  BOOST_TEST(!a.detail.lost);  // one refusal of four is no proof that the token is gone
}

BOOST_AUTO_TEST_CASE(nodes_that_refused_the_request_count_as_failed_in_an_extension) {
  extend_fsm f;
  BOOST_REQUIRE((f.check(held_lock(), 10s, test_config(), t0 + 1s).what == xkind::send_round));
  const auto a = f.sent(3, 1, t0 + 1s);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(cancellation_after_sending_cuts_the_deadline_as_an_abandoned_extension) {
  auto f = extending(3, 500ms, t0 + 1s);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  const auto a = f.cancel(t0 + 1s + 1ms);
  BOOST_TEST((a.what == xkind::complete));
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST((a.detail.deadline == detail::validity_deadline(t0 + 1s, 500ms, factor)));
  BOOST_TEST(!a.detail.lost);
}

BOOST_AUTO_TEST_CASE(cancellation_of_a_longer_extension_keeps_the_old_deadline) {
  auto f = extending(3, 60s, t0 + 1s);
  const auto a = f.cancel(t0 + 1s);
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST((a.detail.deadline == t0 + 10s));
}

BOOST_AUTO_TEST_CASE(cancellation_after_the_decision_changes_nothing_in_an_extension) {
  auto f = extending(3);
  f.voted(vote::yes, t0 + 1s);
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::complete));
  BOOST_TEST((f.cancel(t0 + 2s).what == xkind::none));
}

BOOST_AUTO_TEST_CASE(cancellation_before_the_checks_does_nothing) {
  extend_fsm f;
  BOOST_TEST((f.cancel(t0).what == xkind::none));
  BOOST_TEST((f.state() == extend_fsm::phase::idle));
}

BOOST_AUTO_TEST_CASE(late_answers_after_an_extension_completed_are_ignored) {
  auto f = extending(3);
  f.voted(vote::no, t0 + 1s);
  BOOST_TEST((f.voted(vote::no, t0 + 1s).what == xkind::complete));
  // A yes that comes later must not flip a lost lock back.
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
}

BOOST_AUTO_TEST_CASE(answers_while_the_extension_is_being_sent_are_left_to_sent) {
  extend_fsm f;
  BOOST_REQUIRE((f.check(held_lock(), 10s, test_config(), t0 + 1s).what == xkind::send_round));
  BOOST_TEST((f.voted(vote::failed, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.sent(3, 2, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::none));
  BOOST_TEST((f.voted(vote::yes, t0 + 1s).what == xkind::complete));
}

BOOST_AUTO_TEST_CASE(the_machine_decides_as_the_extension_rule_for_every_count_up_to_seven) {
  for (std::size_t n = 1; n <= 7; ++n)
    for (std::size_t y = 0; y <= n; ++y)
      for (std::size_t r = 0; y + r <= n; ++r) {
        auto f = extending(n);
        std::vector<vote> votes(r, vote::no);
        votes.insert(votes.end(), y, vote::yes);
        votes.insert(votes.end(), n - y - r, vote::failed);
        extend_action last;
        std::size_t yes = 0, no = 0, failed = 0;
        // Fed until the machine completes; the rule is asked at that count.
        for (const vote v : votes) {
          ++(v == vote::yes ? yes : v == vote::no ? no : failed);
          last = f.voted(v, t0 + 2s);
          if (last.what != xkind::none) break;
        }
        const auto rule =
            detail::decide_extension(n, yes, no, failed, t0 + 2s, t0 + 1s, 10s, t0 + 10s, factor);
        BOOST_TEST((last.what == xkind::complete), "n=" << n << " y=" << y << " r=" << r);
        BOOST_TEST((last.ec == rule.outcome), "n=" << n << " y=" << y << " r=" << r);
        BOOST_TEST((last.detail.lost == rule.lost), "n=" << n << " y=" << y << " r=" << r);
        BOOST_TEST(!last.detail.refused, "n=" << n << " y=" << y << " r=" << r);
      }
}

BOOST_AUTO_TEST_SUITE_END()
