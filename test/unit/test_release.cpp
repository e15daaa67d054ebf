// The release state machine, fed events without a socket or a server: when a release
// completes and with what; what cancellation and late answers do to it.

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "client/release_fsm.hpp"
#include "resp/resp.hpp"
#include "wire_reply.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::release_action;
using detail::release_fsm;
using detail::vote;
using test::wire_reply;
using rkind = release_action::kind;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;
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
