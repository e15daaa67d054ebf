// SPDX-License-Identifier: BSL-1.0
// The quorum engine's decision rules (src/quorum/rules.hpp) and its round record
// (src/quorum/round.hpp), without a server: the one TTL check, why an acquisition failed,
// when a grant is in time, when a fenced win may skip its write-back, what a release's
// answers mean, the extension rule with explicit time points, the vote filter, and how a
// round counts and describes answers.
#include <algorithm>
#include <array>
#include <boost/test/unit_test.hpp>
#include <set>
#include <sstream>

#include "client/client_state.hpp"  // acl_hint
#include "drivers/split_merge.hpp"
#include "quorum/round.hpp"
#include "quorum/rules.hpp"
#include "redlock/error.hpp"
#include "scripts/scripts.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::check_ttl;
using detail::decide_extension;
using detail::decide_release;
using detail::quorum;

namespace {

const boot_clock::time_point t0{std::chrono::seconds{1000}};
constexpr double factor = 0.01;

config cfg_with(std::chrono::milliseconds max_ttl = 0ms, bool guard = true,
                double drift_factor = factor) {
  config c;
  c.max_ttl = max_ttl;
  c.restart_guard = guard;
  c.drift_factor = drift_factor;
  return c;
}

// A lock taken at t0 with a 10 s TTL: its deadline.
const auto lock_deadline = detail::validity_deadline(t0, 10s, factor);

detail::extension_verdict extend(std::size_t n, std::size_t yes, std::size_t refused,
                                 std::size_t failed, boot_clock::time_point now,
                                 boot_clock::time_point start, std::chrono::milliseconds ttl) {
  return decide_extension(n, yes, refused, failed, now, start, ttl, lock_deadline, factor);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ttl_check)

BOOST_AUTO_TEST_CASE(a_zero_ttl_is_refused) {
  BOOST_TEST(!check_ttl(0ms, cfg_with()).empty());
}

BOOST_AUTO_TEST_CASE(a_negative_ttl_is_refused) {
  BOOST_TEST(check_ttl(-5ms, cfg_with()) == "the TTL must be from 1 ms to 24 h");
}

BOOST_AUTO_TEST_CASE(a_ttl_above_24_hours_is_refused) {
  BOOST_TEST(!check_ttl(24h + 1ms, cfg_with()).empty());
  BOOST_TEST(check_ttl(24h, cfg_with()).empty());
}

BOOST_AUTO_TEST_CASE(a_ttl_within_the_drift_allowance_is_refused) {
  // 2 ms: the allowance alone is 2 ms + 0.02 ms, so no validity could ever be left.
  const auto why = check_ttl(2ms, cfg_with());
  BOOST_TEST(why.find("drift") != std::string::npos, why);
  BOOST_TEST(!check_ttl(1ms, cfg_with()).empty());
}

BOOST_AUTO_TEST_CASE(a_ttl_that_leaves_under_a_millisecond_is_refused) {
  // 3 ms leaves 3 - 0.03 - 2 = 0.97 ms: granted, it would be 0 ms valid by the time it is read.
  const auto why = check_ttl(3ms, cfg_with());
  BOOST_TEST(why.find("under 1 ms of validity") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(the_shortest_ttl_with_a_millisecond_left_is_accepted) {
  BOOST_TEST(check_ttl(4ms, cfg_with()).empty());  // 4 - 0.04 - 2 = 1.96 ms
}

BOOST_AUTO_TEST_CASE(the_drift_check_scales_with_the_drift_factor) {
  // Factor 0.4: 5 ms leaves 5 - 2 - 2 = 1 ms; 4 ms leaves 0.4 ms.
  BOOST_TEST(!check_ttl(4ms, cfg_with(0ms, true, 0.4)).empty());
  BOOST_TEST(check_ttl(5ms, cfg_with(0ms, true, 0.4)).empty());
}

BOOST_AUTO_TEST_CASE(a_renewal_longer_than_the_lock_needs_max_ttl_to_cover_it) {
  using detail::check_renewal_ttl;
  // max_ttl unset: the restart guard lasts the lock's own TTL (1 s here), shorter than a
  // 5 s renewal would keep the key; so the renewal is refused.
  BOOST_TEST(detail::guard_period(0ms, 1s) == std::chrono::nanoseconds{1s});
  const auto why = check_renewal_ttl(5s, 1s, cfg_with());
  BOOST_TEST(why.find("max_ttl") != std::string::npos, why);
  // Without the restart guard too: failover and clock-jump hold-backs last as long.
  BOOST_TEST(!check_renewal_ttl(5s, 1s, cfg_with(0ms, false)).empty());
  // Up to the lock's TTL it is fine, and so is a longer one that max_ttl covers.
  BOOST_TEST(check_renewal_ttl(1s, 1s, cfg_with()).empty());
  BOOST_TEST(check_renewal_ttl(500ms, 1s, cfg_with()).empty());
  BOOST_TEST(check_renewal_ttl(5s, 1s, cfg_with(5s)).empty());
  // max_ttl still caps it, and check_ttl's other rules hold.
  BOOST_TEST(!check_renewal_ttl(6s, 1s, cfg_with(5s)).empty());
  BOOST_TEST(!check_renewal_ttl(2ms, 1s, cfg_with()).empty());
}

BOOST_AUTO_TEST_CASE(a_ttl_above_max_ttl_is_refused) {
  const auto why = check_ttl(30s, cfg_with(1s));
  BOOST_TEST(why.find("30000 ms") != std::string::npos, why);
  BOOST_TEST(why.find("1000 ms") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_ttl_equal_to_max_ttl_is_accepted) {
  BOOST_TEST(check_ttl(1s, cfg_with(1s)).empty());
}

BOOST_AUTO_TEST_CASE(max_ttl_bounds_every_ttl_with_the_guard_off_too) {
  // config::max_ttl is the fleet's contract: a client without the guard must not set
  // keys that outlive what its peers' guards allow for.
  BOOST_TEST(!check_ttl(30s, cfg_with(1s, false)).empty());
}

BOOST_AUTO_TEST_CASE(max_ttl_zero_means_each_lock_bounds_itself) {
  BOOST_TEST(check_ttl(23h, cfg_with(0ms)).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(acquisition)

BOOST_AUTO_TEST_CASE(keys_of_another_type_on_a_majority_are_a_wrong_type_failure) {
  BOOST_TEST((detail::acquire_failure(3, 0, 2) == error::wrong_type));
  BOOST_TEST((detail::acquire_failure(5, 0, 3) == error::wrong_type));
}

BOOST_AUTO_TEST_CASE(keys_of_another_type_on_a_minority_are_one_more_no) {
  BOOST_TEST((detail::acquire_failure(3, 0, 1) == error::no_quorum));
  BOOST_TEST((detail::acquire_failure(5, 0, 2) == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(another_permit_count_on_a_majority_is_its_own_failure) {
  BOOST_TEST((detail::acquire_failure(3, 0, 0, 2) == error::permit_count_mismatch));
  BOOST_TEST((detail::acquire_failure(5, 1, 0, 3) == error::permit_count_mismatch));
  // Named before keys of another type: the caller's count is what to fix.
  BOOST_TEST((detail::acquire_failure(5, 0, 3, 3) == error::permit_count_mismatch));
}

BOOST_AUTO_TEST_CASE(another_permit_count_on_a_minority_is_in_the_way_as_a_holder_is) {
  BOOST_TEST((detail::acquire_failure(3, 0, 0, 1) == error::no_quorum));
  BOOST_TEST((detail::acquire_failure(3, 1, 0, 1) == error::contended));
  BOOST_TEST((detail::acquire_failure(5, 1, 0, 2) == error::contended));
}

BOOST_AUTO_TEST_CASE(holders_on_a_majority_mean_contended) {
  BOOST_TEST((detail::acquire_failure(3, 2, 0) == error::contended));
  BOOST_TEST((detail::acquire_failure(5, 3, 0) == error::contended));
}

BOOST_AUTO_TEST_CASE(holders_and_foreign_keys_together_deny_a_majority) {
  BOOST_TEST((detail::acquire_failure(5, 2, 1) == error::contended));
  BOOST_TEST((detail::acquire_failure(3, 1, 1) == error::contended));
}

BOOST_AUTO_TEST_CASE(a_holder_on_a_minority_with_silent_nodes_is_no_quorum) {
  BOOST_TEST((detail::acquire_failure(3, 1, 0) == error::no_quorum));
  BOOST_TEST((detail::acquire_failure(5, 2, 0) == error::no_quorum));
  BOOST_TEST((detail::acquire_failure(1, 0, 0) == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(acquire_failure_is_contended_exactly_when_others_block_a_majority) {
  for (std::size_t n = 1; n <= 7; ++n) {
    for (std::size_t held = 0; held <= n; ++held) {
      for (std::size_t wrong = 0; held + wrong <= n; ++wrong) {
        const auto ec = detail::acquire_failure(n, held, wrong);
        const bool blocked = n - held - wrong < quorum(n);
        BOOST_TEST((ec != error::no_quorum) == blocked,
                   "n=" << n << " held=" << held << " wrong=" << wrong);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_grant_in_time_gets_start_plus_ttl_minus_drift) {
  const auto g = detail::acquire_grant(t0 + 5ms, t0, 10s, factor);
  BOOST_TEST(g.in_time);
  BOOST_TEST((g.deadline == t0 + 9898ms));
}

BOOST_AUTO_TEST_CASE(a_grant_at_its_deadline_is_too_late) {
  BOOST_TEST(!detail::acquire_grant(t0 + 9898ms, t0, 10s, factor).in_time);
  BOOST_TEST(detail::acquire_grant(t0 + 9897ms, t0, 10s, factor).in_time);
}

BOOST_AUTO_TEST_CASE(a_grant_is_in_time_only_before_the_deadline_known_at_sending) {
  BOOST_TEST(detail::granted_in_time(t0 + 9897ms, t0 + 9898ms));
  BOOST_TEST(!detail::granted_in_time(t0 + 9898ms, t0 + 9898ms));
}

BOOST_AUTO_TEST_CASE(a_request_waits_the_node_timeout_when_validity_is_longer) {
  BOOST_TEST((detail::request_deadline(t0, 250ms, t0 + 10s) == t0 + 250ms));
}

BOOST_AUTO_TEST_CASE(a_request_never_outlives_the_validity_it_serves) {
  BOOST_TEST((detail::request_deadline(t0, 250ms, t0 + 40ms) == t0 + 40ms));
}

BOOST_AUTO_TEST_CASE(a_request_without_a_bound_waits_the_node_timeout) {
  BOOST_TEST((detail::request_deadline(t0, 1s) == t0 + 1s));
}

BOOST_AUTO_TEST_CASE(the_public_majority_is_the_engines_quorum) {
  for (std::size_t n = 1; n <= 15; ++n) {
    BOOST_TEST(redlock::majority(n) == quorum(n));
    BOOST_TEST(2 * redlock::majority(n) > n);         // any two majorities meet
    BOOST_TEST(2 * (redlock::majority(n) - 1) <= n);  // and it is the smallest such
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(keeper_rules)

BOOST_AUTO_TEST_CASE(a_configured_loss_margin_is_kept) {
  BOOST_TEST(detail::loss_margin(10s, 7ms).count() == std::chrono::nanoseconds{7ms}.count());
}

BOOST_AUTO_TEST_CASE(the_default_loss_margin_is_a_fiftieth_of_the_ttl) {
  BOOST_TEST(detail::loss_margin(1s, 0ms).count() == std::chrono::nanoseconds{20ms}.count());
}

BOOST_AUTO_TEST_CASE(the_default_loss_margin_stays_within_1_and_100_ms) {
  BOOST_TEST(detail::loss_margin(20ms, 0ms).count() == std::chrono::nanoseconds{1ms}.count());
  BOOST_TEST(detail::loss_margin(1h, 0ms).count() == std::chrono::nanoseconds{100ms}.count());
}

BOOST_AUTO_TEST_CASE(a_renewal_confirmed_inside_the_margin_is_a_loss) {
  const detail::extension_verdict ok{true, {}, t0 + 100ms, false};
  const auto v = detail::keeper_verdict(ok, t0 + 95ms, 5ms);
  BOOST_TEST(v.lost);
  BOOST_TEST((v.outcome == error::validity_exhausted));
}

BOOST_AUTO_TEST_CASE(a_renewal_confirmed_before_the_margin_is_kept) {
  const detail::extension_verdict ok{true, {}, t0 + 100ms, false};
  const auto v = detail::keeper_verdict(ok, t0 + 94ms, 5ms);
  BOOST_TEST(!v.lost);
  BOOST_TEST(!v.outcome);
  BOOST_TEST((v.deadline == t0 + 100ms));
}

BOOST_AUTO_TEST_CASE(a_failed_renewal_keeps_its_own_outcome) {
  const detail::extension_verdict refused{true, error::not_held, t0 + 100ms, true};
  const auto v = detail::keeper_verdict(refused, t0 + 99ms, 5ms);
  BOOST_TEST((v.outcome == error::not_held));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fence_rule)

using detail::decide_fence;
using detail::fence_report;

namespace {

constexpr fence_report yes(std::uint64_t counter) {
  return {true, counter};
}
// A node that set the key but is unmarked (its counter is not trusted), or did not vote yes.
constexpr fence_report uncounted(std::uint64_t counter = 0) {
  return {false, counter};
}

// Checks the rule on one report per node (as many nodes as reports): the token, and
// whether the write-back runs.
void expect_fence(std::initializer_list<fence_report> reports, std::uint64_t token,
                  bool write_back) {
  const auto d = decide_fence(reports.size(), {reports.begin(), reports.size()});
  BOOST_TEST(d.token == token);
  BOOST_TEST(d.write_back == write_back);
}

constexpr bool skips = false;
constexpr bool writes_back = true;

}  // namespace

BOOST_AUTO_TEST_CASE(a_majority_at_the_same_counter_skips_the_write_back) {
  expect_fence({yes(7), yes(7), uncounted()}, 7, skips);
  expect_fence({yes(4), yes(4), yes(4), yes(4), yes(4)}, 4, skips);
}

BOOST_AUTO_TEST_CASE(counters_that_differ_within_the_majority_write_back) {
  expect_fence({yes(7), yes(6), uncounted()}, 7, writes_back);
}

BOOST_AUTO_TEST_CASE(a_majority_below_the_largest_counter_writes_back) {
  // Two nodes agree on 5, but T is 6: only one node holds T.
  expect_fence({yes(5), yes(5), yes(6)}, 6, writes_back);
}

BOOST_AUTO_TEST_CASE(a_majority_at_the_largest_counter_skips_beside_a_lower_one) {
  expect_fence({yes(9), yes(8), yes(9), uncounted(), yes(9)}, 9, skips);
}

BOOST_AUTO_TEST_CASE(an_unmarked_node_does_not_count_towards_the_majority_at_t) {
  // The unmarked node's value (whatever it returned) is not trusted: 7 on one marked node
  // only, out of a majority of two.
  expect_fence({yes(7), uncounted(7), yes(3)}, 7, writes_back);
}

BOOST_AUTO_TEST_CASE(two_of_five_at_t_are_too_few_and_write_back) {
  expect_fence({yes(3), yes(3), uncounted(), uncounted(), uncounted()}, 3, writes_back);
}

BOOST_AUTO_TEST_CASE(a_zero_counter_is_never_handed_out_without_the_write_back) {
  expect_fence({yes(0), yes(0), yes(0)}, 0, writes_back);
}

BOOST_AUTO_TEST_CASE(the_skip_is_exactly_a_majority_of_counted_reports_at_the_maximum) {
  // Every combination of 1 to 7 nodes, each unmarked or at a counter of 1, 2 or 3,
  // against the rule written out by counting.
  for (std::size_t n = 1; n <= 7; ++n) {
    std::size_t combos = 1;
    for (std::size_t i = 0; i < n; ++i) combos *= 4;
    for (std::size_t code = 0; code < combos; ++code) {
      std::array<fence_report, 7> reports{};
      std::uint64_t top = 0;
      for (std::size_t i = 0, c = code; i < n; ++i, c /= 4) {
        reports[i] = c % 4 == 0 ? uncounted(c % 4) : yes(c % 4);
        if (reports[i].counted) top = std::max<std::uint64_t>(top, c % 4);
      }
      std::size_t at_top = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (reports[i].counted && reports[i].counter == top) ++at_top;
      const auto d = decide_fence(n, {reports.data(), n});
      BOOST_TEST(d.token == top, "n=" << n << " code=" << code);
      BOOST_TEST(d.write_back == (top == 0 || at_top < quorum(n)), "n=" << n << " code=" << code);
    }
  }
}

// failure_reason: acquire_failure read from a round's errors.

using boost::system::error_code;

BOOST_AUTO_TEST_CASE(a_round_whose_majority_holds_another_type_failed_as_wrong_type) {
  const std::array<error_code, 3> errors{error::wrong_type, error::wrong_type, error_code{}};
  BOOST_TEST((detail::failure_reason(errors, 0) == error::wrong_type));
  // One such node is one more "no": with a holder beside it, the lock is contended.
  const std::array<error_code, 3> one{error::wrong_type, error_code{}, error_code{}};
  BOOST_TEST((detail::failure_reason(one, 1) == error::contended));
}

BOOST_AUTO_TEST_CASE(a_round_whose_majority_records_another_count_failed_on_the_count) {
  const std::array<error_code, 3> errors{error::permit_count_mismatch, error::permit_count_mismatch,
                                         error::wrong_type};
  BOOST_TEST((detail::failure_reason(errors, 0) == error::permit_count_mismatch));
}

BOOST_AUTO_TEST_CASE(a_round_short_of_answers_failed_for_want_of_a_quorum) {
  const std::array<error_code, 5> errors{error::node_timeout, error::node_timeout,
                                         error::connection_lost, error_code{}, error_code{}};
  BOOST_TEST((detail::failure_reason(errors, 1) == error::no_quorum));
  BOOST_TEST((detail::failure_reason(errors, 3) == error::contended));
}

// tally_fenced: a fenced first round, with yes votes that cannot count.

BOOST_AUTO_TEST_CASE(trusted_yes_votes_of_a_majority_win_beside_an_unmarked_one) {
  const auto t = detail::tally_fenced(3, 2, 1, 0);
  BOOST_TEST((t.state == detail::vote_state::won));
  BOOST_TEST(!t.lost_to_repair);
}

BOOST_AUTO_TEST_CASE(an_unmarked_yes_counts_against_the_majority) {
  // One trusted yes and one unmarked: undecided while the third node is out...
  BOOST_TEST((detail::tally_fenced(3, 1, 1, 0).state == detail::vote_state::undecided));
  // ...and lost once it refuses, where an unfenced count would have won.
  const auto t = detail::tally_fenced(3, 1, 1, 1);
  BOOST_TEST((t.state == detail::vote_state::lost));
  BOOST_TEST((detail::decide(3, 2, 1) == detail::vote_state::won));
}

BOOST_AUTO_TEST_CASE(a_round_lost_only_to_unmarked_votes_is_lost_to_the_repair) {
  BOOST_TEST(detail::tally_fenced(3, 1, 1, 1).lost_to_repair);
  BOOST_TEST(detail::tally_fenced(3, 0, 2, 0).lost_to_repair);
  BOOST_TEST(detail::tally_fenced(5, 1, 2, 2).lost_to_repair);
}

BOOST_AUTO_TEST_CASE(a_round_refused_by_a_majority_is_not_lost_to_the_repair) {
  // Even counted, the unmarked yes would not make a majority.
  const auto t = detail::tally_fenced(5, 1, 1, 3);
  BOOST_TEST((t.state == detail::vote_state::lost));
  BOOST_TEST(!t.lost_to_repair);
}

BOOST_AUTO_TEST_CASE(an_unfenced_round_is_the_plain_vote) {
  for (std::size_t n = 1; n <= 5; ++n)
    for (std::size_t yes = 0; yes <= n; ++yes)
      for (std::size_t no = 0; yes + no <= n; ++no) {
        const auto t = detail::tally_fenced(n, yes, 0, no);
        BOOST_TEST((t.state == detail::decide(n, yes, no)), n << " " << yes << " " << no);
        BOOST_TEST(!t.lost_to_repair);
      }
}

// decide_fences: the rule per key of a set, over one flat table of counters (node-major).

BOOST_AUTO_TEST_CASE(a_set_takes_each_keys_largest_counted_counter) {
  const std::array<bool, 3> counted{true, true, false};
  // Node 2 did not count: its larger counters are not read.
  const std::array<std::uint64_t, 6> counters{5, 2, 4, 3, 9, 9};
  std::array<std::uint64_t, 2> tokens{};
  BOOST_TEST(detail::decide_fences(3, counted, 2, counters, tokens));
  BOOST_TEST(tokens[0] == 5u);
  BOOST_TEST(tokens[1] == 3u);
}

BOOST_AUTO_TEST_CASE(a_set_skips_the_write_back_only_when_every_key_may) {
  const std::array<bool, 3> counted{true, true, true};
  std::array<std::uint64_t, 2> tokens{};
  // Both keys at their T on two of three nodes: no write-back.
  const std::array<std::uint64_t, 6> agree{5, 3, 5, 3, 1, 1};
  BOOST_TEST(!detail::decide_fences(3, counted, 2, agree, tokens));
  BOOST_TEST(tokens[0] == 5u);
  BOOST_TEST(tokens[1] == 3u);
  // The second key's T on one node only: the whole set writes back.
  const std::array<std::uint64_t, 6> one_short{5, 3, 5, 2, 0, 0};
  BOOST_TEST(detail::decide_fences(3, counted, 2, one_short, tokens));
  BOOST_TEST(tokens[1] == 3u);
}

BOOST_AUTO_TEST_CASE(one_key_decides_as_the_single_rule_does) {
  // Every combination of 3 nodes, each unmarked or at a counter of 1, 2 or 3.
  for (std::size_t code = 0; code < 64; ++code) {
    std::array<fence_report, 3> reports{};
    std::array<bool, 3> counted{};
    std::array<std::uint64_t, 3> counters{};
    for (std::size_t i = 0, c = code; i < 3; ++i, c /= 4) {
      counted[i] = c % 4 != 0;
      counters[i] = c % 4;
      reports[i] = {counted[i], counters[i]};
    }
    std::uint64_t token = 0;
    const bool write_back = detail::decide_fences(3, counted, 1, counters, {&token, 1});
    const auto d = decide_fence(3, {reports.data(), 3});
    BOOST_TEST(token == d.token, "code=" << code);
    BOOST_TEST(write_back == d.write_back, "code=" << code);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(release)

BOOST_AUTO_TEST_CASE(one_delete_among_a_majority_of_answers_is_success) {
  const auto v = decide_release(3, 1, 1, 1);
  BOOST_TEST(v.decided);
  BOOST_TEST(!v.outcome);
}

BOOST_AUTO_TEST_CASE(a_release_waits_while_too_few_answered) {
  BOOST_TEST(!decide_release(3, 1, 0, 2).decided);
  BOOST_TEST(!decide_release(5, 2, 0, 3).decided);
}

BOOST_AUTO_TEST_CASE(a_release_that_deleted_nothing_waits_for_every_answer) {
  // A node still to answer may hold the key: not_held only once all have spoken.
  BOOST_TEST(!decide_release(3, 0, 2, 1).decided);
  const auto v = decide_release(3, 0, 3, 0);
  BOOST_TEST(v.decided);
  BOOST_TEST((v.outcome == error::not_held));
}

BOOST_AUTO_TEST_CASE(a_release_answered_by_a_minority_is_no_quorum) {
  const auto v = decide_release(3, 1, 0, 0);  // two nodes failed
  BOOST_TEST(v.decided);
  BOOST_TEST((v.outcome == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(release_success_needs_a_delete_and_a_majority_of_answers) {
  for (std::size_t n = 1; n <= 7; ++n)
    for (std::size_t d = 0; d <= n; ++d)
      for (std::size_t a = 0; d + a <= n; ++a)
        for (std::size_t p = 0; d + a + p <= n; ++p) {
          const auto v = decide_release(n, d, a, p);
          if (v.decided && !v.outcome) BOOST_TEST((d >= 1 && d + a >= quorum(n)));
          if (p == 0) BOOST_TEST(v.decided, "n=" << n << " d=" << d << " a=" << a);
        }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(extension)

BOOST_AUTO_TEST_CASE(a_majority_in_time_moves_the_deadline_to_the_new_ttl) {
  const auto v = extend(3, 2, 0, 0, t0 + 5s + 1ms, t0 + 5s, 10s);
  BOOST_TEST(v.decided);
  BOOST_TEST(!v.outcome);
  BOOST_TEST((v.deadline == t0 + 5s + 9898ms));
  BOOST_TEST(!v.lost);
}

BOOST_AUTO_TEST_CASE(a_successful_shorter_extension_shortens_the_deadline) {
  const auto v = extend(3, 3, 0, 0, t0 + 1s + 1ms, t0 + 1s, 1s);
  BOOST_TEST(!v.outcome);
  BOOST_TEST((v.deadline == t0 + 1s + 988ms));
}

BOOST_AUTO_TEST_CASE(a_majority_after_the_old_deadline_loses_the_lock) {
  const auto v = extend(3, 2, 0, 0, lock_deadline + 1ms, t0 + 9s, 10s);
  BOOST_TEST((v.outcome == error::validity_exhausted));
  BOOST_TEST(v.lost);
}

BOOST_AUTO_TEST_CASE(a_majority_after_the_new_deadline_loses_the_lock) {
  // The too-short extension: 3 ms sent at t0 + 1 s, confirmed 5 ms later.
  const auto v = extend(3, 3, 0, 0, t0 + 1s + 5ms, t0 + 1s, 3ms);
  BOOST_TEST((v.outcome == error::validity_exhausted));
  BOOST_TEST(v.lost);
  BOOST_TEST((v.deadline <= t0 + 1s + 3ms));
}

BOOST_AUTO_TEST_CASE(a_majority_of_refusals_loses_the_lock_for_good) {
  const auto v = extend(3, 1, 2, 0, t0 + 1s, t0 + 1s, 10s);
  BOOST_TEST((v.outcome == error::not_held));
  BOOST_TEST(v.lost);
}

BOOST_AUTO_TEST_CASE(no_quorum_with_a_shorter_ttl_shortens_the_deadline) {
  // The frozen-majority case: the queued PEXPIRE 1000 may still run when they thaw.
  const auto start = t0 + 1s;
  const auto v = extend(3, 1, 0, 2, start + 100ms, start, 1000ms);
  BOOST_TEST((v.outcome == error::no_quorum));
  BOOST_TEST((v.deadline == detail::validity_deadline(start, 1000ms, factor)));
  BOOST_TEST(!v.lost);
}

BOOST_AUTO_TEST_CASE(no_quorum_with_a_longer_ttl_keeps_the_old_deadline) {
  const auto v = extend(3, 0, 0, 3, t0 + 1s, t0 + 1s, 30s);
  BOOST_TEST((v.outcome == error::no_quorum));
  BOOST_TEST((v.deadline == lock_deadline));
  BOOST_TEST(!v.lost);
}

BOOST_AUTO_TEST_CASE(no_quorum_whose_shortened_deadline_has_passed_loses_the_lock) {
  const auto start = t0 + 1s;
  const auto v = extend(3, 0, 1, 2, start + 200ms, start, 100ms);
  BOOST_TEST((v.outcome == error::no_quorum));
  BOOST_TEST(v.lost);
}

BOOST_AUTO_TEST_CASE(a_refusal_on_a_minority_is_no_quorum_not_a_loss) {
  const auto v = extend(5, 2, 2, 1, t0 + 1s, t0 + 1s, 10s);
  BOOST_TEST((v.outcome == error::no_quorum));
  BOOST_TEST(!v.lost);
}

BOOST_AUTO_TEST_CASE(an_undecided_extension_changes_nothing_yet) {
  const auto v = extend(5, 2, 1, 0, t0 + 1s, t0 + 1s, 1s);
  BOOST_TEST(!v.decided);
  BOOST_TEST((v.deadline == lock_deadline));
}

BOOST_AUTO_TEST_CASE(a_cancelled_extension_shortens_the_deadline_to_its_ttl) {
  const auto start = t0 + 2s;
  const auto v = detail::abandoned_extension(error::cancelled, start + 1ms, start, 500ms,
                                             lock_deadline, factor);
  BOOST_TEST((v.outcome == error::cancelled));
  BOOST_TEST((v.deadline == detail::validity_deadline(start, 500ms, factor)));
  BOOST_TEST(!v.lost);
}

BOOST_AUTO_TEST_CASE(a_cancelled_longer_extension_keeps_the_old_deadline) {
  const auto v =
      detail::abandoned_extension(error::cancelled, t0 + 2s, t0 + 2s, 60s, lock_deadline, factor);
  BOOST_TEST((v.deadline == lock_deadline));
}

BOOST_AUTO_TEST_CASE(an_abandoned_extension_whose_ttl_has_run_out_loses_the_lock) {
  const auto v =
      detail::abandoned_extension(error::shut_down, t0 + 3s, t0 + 2s, 500ms, lock_deadline, factor);
  BOOST_TEST(v.lost);
}

BOOST_AUTO_TEST_CASE(no_outcome_but_success_ever_moves_the_deadline_later) {
  // Exhaustive over votes for 1 to 7 nodes, TTLs shorter and longer than what is left,
  // and decisions early and late.
  const std::chrono::milliseconds ttls[] = {3ms, 500ms, 9s, 20s};
  const std::chrono::milliseconds delays[] = {1ms, 700ms, 9s};
  for (std::size_t n = 1; n <= 7; ++n)
    for (std::size_t y = 0; y <= n; ++y)
      for (std::size_t r = 0; y + r <= n; ++r)
        for (std::size_t f = 0; y + r + f <= n; ++f)
          for (auto ttl : ttls)
            for (auto delay : delays) {
              const auto start = t0 + 1s;
              const auto v = extend(n, y, r, f, start + delay, start, ttl);
              const auto shortest =
                  std::min(lock_deadline, detail::validity_deadline(start, ttl, factor));
              if (!v.decided) {
                BOOST_TEST((v.deadline == lock_deadline));
                continue;
              }
              if (!v.outcome) {
                BOOST_TEST(y >= quorum(n));
                BOOST_TEST((v.deadline > start + delay));
              } else {
                BOOST_TEST((v.deadline <= shortest || v.outcome == error::not_held),
                           "n=" << n << " y=" << y << " r=" << r << " f=" << f);
                if (v.deadline <= start + delay) BOOST_TEST(v.lost);
              }
            }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(vote_filter)

using detail::may_vote;
using detail::voter_facts;

BOOST_AUTO_TEST_CASE(a_plain_master_votes) {
  BOOST_TEST(may_vote(voter_facts{}, true, 10s, t0));
}

BOOST_AUTO_TEST_CASE(a_replica_never_votes_and_says_why) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.replica = true}, false, 0s, t0, &why));
  BOOST_TEST(why.find("replica") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_second_name_of_one_server_never_votes) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.duplicate = true, .duplicate_of = 2}, false, 0s, t0, &why));
  BOOST_TEST(why.find("node 2") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_node_restarted_within_the_guard_is_held_back) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.started_at = t0 - 400ms}, true, 1s, t0, &why));
  BOOST_TEST(why.find("held back 600 ms more") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_node_restarted_longer_ago_than_the_guard_votes) {
  BOOST_TEST(may_vote(voter_facts{.started_at = t0 - 1001ms}, true, 1s, t0));
}

BOOST_AUTO_TEST_CASE(the_guard_off_lets_a_fresh_node_vote) {
  BOOST_TEST(may_vote(voter_facts{.started_at = t0}, false, 1s, t0));
}

BOOST_AUTO_TEST_CASE(a_recent_clock_jump_holds_a_node_back) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.clock_jump_at = t0 - 100ms}, true, 1s, t0, &why));
  BOOST_TEST(why.find("clock jumped") != std::string::npos, why);
  BOOST_TEST(may_vote(voter_facts{.clock_jump_at = t0 - 2s}, true, 1s, t0));
}

BOOST_AUTO_TEST_CASE(a_recent_promotion_holds_a_node_back_and_says_failover) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.promoted_at = t0 - 300ms}, true, 1s, t0, &why));
  BOOST_TEST(why.find("failover") != std::string::npos, why);
  BOOST_TEST(why.find("held back 700 ms more") != std::string::npos, why);
  BOOST_TEST(may_vote(voter_facts{.promoted_at = t0 - 2s}, true, 1s, t0));
}

// votes_now is hold_of without its answer, on every node of every round: the two agree on
// every mix of facts, at the guard's edges too.
BOOST_AUTO_TEST_CASE(the_quick_vote_check_agrees_with_hold_of_everywhere) {
  using detail::hold_of;
  using detail::votes_now;
  using rule = redlock::node_report::hold_back::rule;
  const boot_clock::time_point never = boot_clock::time_point::min();
  const boot_clock::time_point times[] = {never, t0 - 2s, t0 - 1001ms, t0 - 1s, t0 - 999ms, t0};
  int cases = 0;
  for (bool replica : {false, true})
    for (bool duplicate : {false, true})
      for (auto started : times)
        for (auto jumped : times)
          for (auto promoted : times)
            for (bool guard_on : {false, true}) {
              const voter_facts f{.replica = replica,
                                  .duplicate = duplicate,
                                  .started_at = started,
                                  .clock_jump_at = jumped,
                                  .promoted_at = promoted};
              const bool quick = votes_now(f, guard_on, 1s, t0);
              BOOST_TEST(quick == (hold_of(f, guard_on, 1s, t0).by == rule::none));
              BOOST_TEST(quick == may_vote(f, guard_on, 1s, t0));
              ++cases;
            }
  BOOST_TEST(cases == 2 * 2 * 6 * 6 * 6 * 2);
}

// restart_guard = false is for servers that lose nothing on restart (appendfsync always);
// a promoted replica still lacks what its primary never sent it, and a jumped clock still
// expires keys early: those hold-backs stay.
BOOST_AUTO_TEST_CASE(the_guard_off_keeps_the_failover_and_clock_jump_hold_backs) {
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.promoted_at = t0 - 300ms}, false, 1s, t0, &why));
  BOOST_TEST(why.find("failover") != std::string::npos, why);
  BOOST_TEST(!may_vote(voter_facts{.clock_jump_at = t0 - 300ms}, false, 1s, t0, &why));
  BOOST_TEST(why.find("clock jumped") != std::string::npos, why);
  BOOST_TEST(may_vote(voter_facts{.started_at = t0 - 300ms}, false, 1s, t0));
}

// The same verdicts as facts, for a program that sums nodes up (the CLI's one line for
// every node the restart guard holds back): which rule, since when, for how much longer.
BOOST_AUTO_TEST_CASE(a_hold_names_its_rule_and_its_times_and_reads_as_may_vote_says) {
  using rule = node_report::hold_back::rule;
  const auto restarted = detail::hold_of(voter_facts{.started_at = t0 - 400ms}, true, 1s, t0);
  BOOST_TEST((restarted.by == rule::restart));
  BOOST_TEST(restarted.since.count() == 400);
  BOOST_TEST(restarted.left.count() == 600);
  std::string why;
  BOOST_TEST(!may_vote(voter_facts{.started_at = t0 - 400ms}, true, 1s, t0, &why));
  BOOST_TEST(detail::describe_hold(restarted, 1s) == why);
  BOOST_TEST(why ==
             "restarted about 400 ms ago; held back 600 ms more by the restart guard "
             "(max_ttl 1000 ms)");

  const auto failover = detail::hold_of(voter_facts{.promoted_at = t0 - 300ms}, true, 1s, t0);
  BOOST_TEST((failover.by == rule::failover));
  BOOST_TEST(failover.left.count() == 700);
  const auto jump = detail::hold_of(voter_facts{.clock_jump_at = t0 - 100ms}, false, 1s, t0);
  BOOST_TEST((jump.by == rule::clock_jump));
  BOOST_TEST(jump.since.count() == 100);
  const auto replica = detail::hold_of(voter_facts{.replica = true}, true, 1s, t0);
  BOOST_TEST((replica.by == rule::replica));
  BOOST_TEST(replica.left.count() == 0);
  const auto duplicate =
      detail::hold_of(voter_facts{.duplicate = true, .duplicate_of = 2}, true, 1s, t0);
  BOOST_TEST((duplicate.by == rule::duplicate));
  BOOST_TEST(duplicate.duplicate_of == 2u);
  // A restart and a failover at once: the restart guard is named (it is checked first).
  const auto both = detail::hold_of(
      voter_facts{.started_at = t0 - 200ms, .promoted_at = t0 - 100ms}, true, 1s, t0);
  BOOST_TEST((both.by == rule::restart));
  const auto votes = detail::hold_of(voter_facts{.started_at = t0 - 2s}, true, 1s, t0);
  BOOST_TEST((votes.by == rule::none));
  BOOST_TEST(detail::describe_hold(votes, 1s).empty());
}

BOOST_AUTO_TEST_CASE(independence_ignores_time_and_refuses_replicas_and_duplicates) {
  BOOST_TEST(detail::independent_master(voter_facts{.started_at = t0, .clock_jump_at = t0}));
  BOOST_TEST(!detail::independent_master(voter_facts{.replica = true}));
  BOOST_TEST(!detail::independent_master(voter_facts{.duplicate = true}));
}

BOOST_AUTO_TEST_CASE(the_guard_period_is_max_ttl_when_set_else_the_lock_ttl) {
  BOOST_TEST((detail::guard_period(0ms, 7s) == std::chrono::nanoseconds{7s}));
  BOOST_TEST((detail::guard_period(2s, 7s) == std::chrono::nanoseconds{2s}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(round_record)

namespace {
// Counts live instances, to see what a fleet_array builds and destroys.
struct counted {
  static inline int live = 0;
  int value = 7;
  counted() { ++live; }
  counted(const counted& o) : value(o.value) { ++live; }
  counted& operator=(const counted&) = default;
  ~counted() { --live; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_fleet_array_builds_only_the_values_a_fleet_uses) {
  {
    detail::fleet_array<counted> a;
    BOOST_TEST(counted::live == 0);
    a.fit(3);
    BOOST_TEST(counted::live == 3);
    a[1].value = 42;
    a.fit(2);  // never shrinks: values are kept
    a.fit(4);
    BOOST_TEST(counted::live == 4);
    BOOST_TEST(a[1].value == 42);
    BOOST_TEST(a[3].value == 7);
    BOOST_TEST(a.first(4).size() == 4u);
    const detail::fleet_array<counted> b = a;  // copies the built values only
    BOOST_TEST(counted::live == 8);
    BOOST_TEST(b[1].value == 42);
    detail::fleet_array<counted> c;
    c.fit(1);
    c = a;
    BOOST_TEST(c.size() == 4u);
    BOOST_TEST(c[1].value == 42);
  }
  BOOST_TEST(counted::live == 0);  // every built value destroyed, none more
}

using detail::node_label;
using detail::round_wording;
using detail::vote;

const std::array<node_label, 3> three{node_label{"127.0.0.1:7001", ""},
                                      node_label{"127.0.0.1:7002", ""},
                                      node_label{"127.0.0.1:7003", "connect: Connection refused"}};

std::string describe(const detail::round& r, boost::system::error_code ec, round_wording w = {}) {
  if (w.verb.empty()) w.verb = "lock";
  if (w.subject.empty()) w.subject = "job";
  return detail::describe(r, three, ec, w);
}

BOOST_AUTO_TEST_CASE(a_reset_round_has_every_node_pending_and_nothing_counted) {
  detail::round r;
  r.reset(3);
  r.count(0, vote::yes);
  r.fail(1, error::node_timeout);
  r.sent_to[2] = true;
  r.reset(3);
  BOOST_TEST((r.yes + r.no + r.held + r.failed) == 0u);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST((r.votes[i] == vote::pending));
    BOOST_TEST(!r.errors[i]);
    BOOST_TEST(!r.sent_to[i]);
  }
}

BOOST_AUTO_TEST_CASE(a_round_is_sized_to_its_fleet_and_grows_with_it) {
  detail::round r;
  BOOST_TEST(r.texts.size() == 0u);  // nothing built before the first round
  r.reset(3);
  BOOST_TEST(r.votes.size() == 3u);
  BOOST_TEST(r.texts.size() == 3u);
  r.fail(2, error::node_timeout, "slow");
  r.reset(5);  // a larger fleet: the new nodes start pending, the old ones are reset
  BOOST_TEST(r.errors.size() == 5u);
  BOOST_TEST((r.votes[4] == vote::pending));
  BOOST_TEST(r.texts[2].empty());
  BOOST_TEST(!r.errors[2]);
}

BOOST_AUTO_TEST_CASE(answers_are_counted_by_kind) {
  detail::round r;
  r.reset(5);
  r.count(0, vote::yes);
  r.count(1, vote::yes);
  r.count(2, vote::no);
  r.count(3, vote::held);
  r.fail(4, error::connection_lost);
  BOOST_TEST(r.yes == 2u);
  BOOST_TEST(r.no == 1u);
  BOOST_TEST(r.held == 1u);
  BOOST_TEST(r.failed == 1u);
  BOOST_TEST(r.against() == 3u);
  BOOST_TEST((detail::decide(5, r.yes, r.against()) == detail::vote_state::lost));
}

BOOST_AUTO_TEST_CASE(an_unreadable_answer_is_a_failure_named_unexpected_reply) {
  detail::round r;
  r.reset(3);
  r.count(1, vote::failed);
  BOOST_TEST((r.votes[1] == vote::failed));
  BOOST_TEST((r.errors[1] == error::unexpected_reply));
  BOOST_TEST(r.failed == 1u);
}

BOOST_AUTO_TEST_CASE(a_failure_recorded_while_classifying_is_kept) {
  detail::round r;
  r.reset(3);
  r.fail(2, error::node_held_back, "restarted 1 s ago");
  r.count(2, vote::failed);
  BOOST_TEST((r.errors[2] == error::node_held_back));
  BOOST_TEST(r.failed == 1u);
}

BOOST_AUTO_TEST_CASE(an_error_reply_is_a_server_error_or_another_type) {
  detail::round r;
  r.reset(3);
  r.error_reply(0, "WRONGTYPE Operation against a key holding the wrong kind of value");
  r.error_reply(1, "OOM command not allowed");
  BOOST_TEST((r.errors[0] == error::wrong_type));
  BOOST_TEST((r.errors[1] == error::server_error));
  BOOST_TEST(r.texts[1] == "OOM command not allowed");
  BOOST_TEST(r.failed == 2u);
}

BOOST_AUTO_TEST_CASE(a_description_names_every_node_and_what_it_said) {
  detail::round r;
  r.reset(3);
  r.count(0, vote::yes);
  r.count(1, vote::held);
  r.fail(2, error::node_unavailable);
  const auto text = describe(r, error::no_quorum, {.counted_yes = 1});
  BOOST_TEST(text.find("could not lock \"job\": ") == 0u, text);
  BOOST_TEST(text.find("(1 of 3 nodes agreed, 2 needed)") != std::string::npos, text);
  BOOST_TEST(text.find("node 0 (127.0.0.1:7001): ok") != std::string::npos, text);
  BOOST_TEST(text.find("node 1 (127.0.0.1:7002): held by another owner") != std::string::npos,
             text);
  // The connection's own problem says why node 2 was unavailable.
  BOOST_TEST(text.find("[connect: Connection refused]") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_holder_is_named_by_the_owner_label_after_its_digits) {
  using detail::held_by_text;
  BOOST_TEST(held_by_text("3fa2c1d09b1e4455667788990011223344556677/web2:4242") ==
             "held by web2:4242 (token 3fa2c1d0...)");
  BOOST_TEST(held_by_text("3fa2c1d09b1e4455667788990011223344556677") ==
             "held by another owner (token 3fa2c1d0...)");
  // An own-marker claim's state byte leads; the owner still follows the digits.
  BOOST_TEST(held_by_text("C3fa2c1d09b1e4455667788990011223344556677/Dhost:1") ==
             "held by Dhost:1 (token C3fa2c1d...)");
  // A value from the node is quoted short and printable, whatever it holds.
  const auto odd = held_by_text(std::string("ab\ncd/x\x01y", 10) + std::string(200, 'z'));
  BOOST_TEST(odd.find('\n') == std::string::npos, odd);
  BOOST_TEST(odd.find('\x01') == std::string::npos, odd);
  BOOST_TEST(odd.size() < 110u, odd);
}

BOOST_AUTO_TEST_CASE(a_server_error_is_quoted_with_its_hint) {
  detail::round r;
  r.reset(3);
  r.error_reply(0, "NOPERM no");
  const auto text = describe(r, error::no_quorum,
                             {.hint = [](std::string_view) { return std::string{" [hint]"}; }});
  BOOST_TEST(text.find("\"NOPERM no\" [hint]") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(qualified_answers_carry_their_own_words) {
  detail::round r;
  r.reset(3);
  r.count(0, vote::yes);
  r.texts[0] = "set the key, but its counters await repair";
  r.count(1, vote::held);
  r.texts[1] = "\"b\" held by another owner";
  r.count(2, vote::no);
  const auto text = describe(r, error::no_quorum, {.no_text = "not held by us"});
  BOOST_TEST(text.find("node 0 (127.0.0.1:7001): set the key, but") != std::string::npos, text);
  BOOST_TEST(text.find("node 1 (127.0.0.1:7002): \"b\" held") != std::string::npos, text);
  BOOST_TEST(text.find("node 2 (127.0.0.1:7003): not held by us") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_healthy_node_not_waited_for_is_not_called_silent) {
  // Decided by the other two (both refused): node 0 is healthy, its answer not awaited.
  detail::round r;
  r.reset(3);
  r.count(1, vote::no);
  r.count(2, vote::no);
  const auto text = describe(r, error::no_quorum);
  BOOST_TEST(text.find("node 0 (127.0.0.1:7001): not waited for") != std::string::npos, text);
  BOOST_TEST(text.find("no answer yet") == std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_node_with_a_connection_problem_is_no_answer_yet_with_why) {
  detail::round r;
  r.reset(3);
  const std::array<detail::node_label, 3> labels{{{"127.0.0.1:7001", "connect: Connection refused"},
                                                  {"127.0.0.1:7002", ""},
                                                  {"127.0.0.1:7003", ""}}};
  const auto text =
      detail::describe(r, labels, error::no_quorum, {.verb = "lock", .subject = "job"});
  BOOST_TEST(text.find("node 0 (127.0.0.1:7001): no answer yet [connect: Connection refused]") !=
                 std::string::npos,
             text);
}

BOOST_AUTO_TEST_CASE(a_call_refused_before_sending_is_described_without_nodes) {
  detail::round r;
  r.reset(3);
  const auto text = describe(r, error::invalid_argument, {.per_node = false});
  BOOST_TEST(text.find("node 0") == std::string::npos, text);
  BOOST_TEST(text.find("could not lock \"job\"") == 0u, text);
}

BOOST_AUTO_TEST_CASE(a_reply_latency_is_minus_one_without_a_reply) {
  BOOST_TEST(detail::reply_latency(boot_clock::time_point{}, t0).count() == -1);
  BOOST_TEST(detail::reply_latency(t0 + 250us, t0).count() == 250);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(claim_rules)

using detail::claim_tally;
using detail::decide_claim;
using detail::decide_settle;

BOOST_AUTO_TEST_CASE(a_claim_is_won_with_a_majority_of_yes_in_time) {
  const claim_tally t{.yes = 2, .held = 1};
  BOOST_TEST((decide_claim(3, t, true).status == claim_status::won));
  BOOST_TEST(!decide_claim(3, t, true).error);
}

BOOST_AUTO_TEST_CASE(a_majority_of_yes_too_late_is_validity_exhausted) {
  const auto v = decide_claim(3, {.yes = 3}, false);
  BOOST_TEST((v.status == claim_status::failed));
  BOOST_TEST((v.error == error::validity_exhausted));
}

BOOST_AUTO_TEST_CASE(a_name_held_on_more_nodes_than_can_be_spared_is_held) {
  BOOST_TEST((decide_claim(5, {.yes = 2, .held = 3}, true).status == claim_status::held));
  // Two of five held: the other three could still have said yes; not decided as held.
  const auto v = decide_claim(5, {.yes = 2, .held = 2, .failed = 1}, true);
  BOOST_TEST((v.status == claim_status::failed));
  BOOST_TEST((v.error == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(one_done_marker_among_the_holders_makes_it_done) {
  BOOST_TEST(
      (decide_claim(3, {.held = 1, .done = 1, .failed = 1}, true).status == claim_status::done));
  BOOST_TEST((decide_claim(3, {.yes = 1, .done = 2}, true).status == claim_status::done));
}

BOOST_AUTO_TEST_CASE(keys_of_another_type_on_too_many_nodes_are_wrong_type) {
  const auto v = decide_claim(3, {.yes = 1, .wrong = 2}, true);
  BOOST_TEST((v.status == claim_status::failed));
  BOOST_TEST((v.error == error::wrong_type));
}

BOOST_AUTO_TEST_CASE(a_claim_stays_open_while_a_majority_can_still_say_yes) {
  BOOST_TEST(detail::claim_open(5, {.yes = 2, .held = 2}));
  BOOST_TEST(!detail::claim_open(5, {.yes = 2, .held = 1, .failed = 2}));
  BOOST_TEST(!detail::claim_open(5, {.yes = 3}));  // won already: nothing to ask
  BOOST_TEST(detail::claim_open(3, {}));
}

BOOST_AUTO_TEST_CASE(a_done_marker_must_reach_a_majority) {
  BOOST_TEST(!decide_settle(5, true, 3, 0, 2));
  BOOST_TEST((decide_settle(5, true, 2, 3, 0) == error::no_quorum));
  BOOST_TEST((decide_settle(3, true, 0, 3, 0) == error::not_held));
  BOOST_TEST((decide_settle(3, true, 0, 2, 1) == error::no_quorum));
}

BOOST_AUTO_TEST_CASE(a_settle_without_keep_time_is_a_release) {
  // One node deleted it and a majority answered: released, as async_unlock.
  BOOST_TEST(!decide_settle(3, false, 1, 1, 1));
  BOOST_TEST((decide_settle(3, false, 1, 0, 2) == error::no_quorum));
  BOOST_TEST((decide_settle(3, false, 0, 3, 0) == error::not_held));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(scripts)

BOOST_AUTO_TEST_CASE(each_script_is_listed_once_with_a_hash) {
  std::vector<const detail::script*> all(detail::all_scripts().begin(),
                                         detail::all_scripts().end());
  for (std::size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST(all[i]->sha.size() == 40u);
    for (std::size_t j = 0; j < i; ++j) BOOST_TEST(all[i]->sha != all[j]->sha);
  }
}

// Redis's scripting contract, which Redis Cluster's migration rules (TRYAGAIN for a call
// whose declared keys are split between two servers), proxies and other Redis-protocol
// servers rely on: every key a script reads or writes is declared in KEYS. Read from the
// texts: the first argument of every key command is KEYS[...] or a local taken from KEYS.
BOOST_AUTO_TEST_CASE(every_key_a_script_touches_is_declared_in_keys) {
  static const std::set<std::string> key_commands{
      "GET",  "SET",     "DEL",  "EXISTS", "PEXPIRE", "HINCRBY",       "HGET",  "HSET",
      "TYPE", "HGETALL", "PTTL", "ZADD",   "ZREM",    "ZRANGEBYSCORE", "ZRANGE"};
  auto trim = [](std::string t) {
    t.erase(0, t.find_first_not_of(' '));
    t.erase(t.find_last_not_of(' ') + 1);
    return t;
  };
  auto split = [&](const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in{list};
    for (std::string x; std::getline(in, x, ',');) out.push_back(trim(x));
    return out;
  };
  std::size_t checked = 0;
  for (const auto* sc : detail::all_scripts()) {
    const std::string body{sc->body};
    // Names bound to KEYS entries: "local L, E, id = KEYS[4], KEYS[5], ARGV[3]".
    std::set<std::string> from_keys;
    std::stringstream lines{body};
    for (std::string line; std::getline(lines, line);) {
      const auto eq = line.find(" = ");
      if (line.rfind("local ", 0) != 0 || eq == std::string::npos) continue;
      const auto names = split(line.substr(6, eq - 6));
      const auto values = split(line.substr(eq + 3));
      for (std::size_t k = 0; k < names.size() && k < values.size(); ++k)
        if (values[k].starts_with("KEYS[")) from_keys.insert(names[k]);
    }
    // Every redis.call("CMD", first, ...) and redis.pcall(...).
    for (auto at = body.find("call(\""); at != std::string::npos;
         at = body.find("call(\"", at + 1)) {
      const auto name_end = body.find('"', at + 6);
      std::string command = body.substr(at + 6, name_end - at - 6);
      for (auto& ch : command) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (!key_commands.count(command)) continue;
      auto from = body.find_first_not_of(' ', name_end + 1);
      if (from == std::string::npos || body[from] != ',') continue;
      const auto end = body.find_first_of(",)", from + 1);
      const std::string first = trim(body.substr(from + 1, end - from - 1));
      ++checked;
      BOOST_TEST((first.starts_with("KEYS[") || from_keys.count(first) == 1),
                 command << " on " << first << " in\n"
                         << body);
    }
  }
  BOOST_TEST(checked > 40u);
}

BOOST_AUTO_TEST_CASE(an_acl_refusal_names_the_commands_read_from_the_script) {
  // Redis names only the script's SHA1; the commands come from its text, and a pcall
  // (the release's PUBLISH, which the script tolerates) is not required.
  const std::string refusal =
      "ERR The user executing the script can't run this command or subcommand script: " +
      std::string{detail::release_script.sha};
  BOOST_TEST(detail::acl_hint(refusal) ==
             " [the script runs TIME DEL SET GET; the ACL user needs every one of them]");
  const std::string other =
      "ERR ... can't run this command ... script: " + std::string{detail::fence_acquire_script.sha};
  BOOST_TEST(detail::acl_hint(other).find("SET HINCRBY GET") != std::string::npos,
             detail::acl_hint(other));
  BOOST_TEST(detail::acl_hint("OOM command not allowed").empty());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- merges of calls split per slot (a node that is a Redis Cluster) -------------------

namespace {

using boost::system::error_code;
using detail::split_merge;

resp::node int_node(std::int64_t v, std::uint32_t depth = 1) {
  return {.kind = resp::type::integer, .depth = depth, .integer = v};
}
resp::node str_node(std::string_view s) {
  return {.kind = resp::type::bulk_string, .depth = 1, .text = s};
}
// A flat array reply of `elements`.
resp::reply array_reply(std::vector<resp::node> elements) {
  resp::reply r{{.kind = resp::type::array, .size = elements.size()}};
  r.insert(r.end(), elements.begin(), elements.end());
  return r;
}
resp::reply error_reply(std::string_view text) {
  return {{.kind = resp::type::simple_error, .text = text}};
}
std::vector<std::int64_t> integers(const resp::reply& r) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 1; i < r.size(); ++i) out.push_back(r[i].integer);
  return out;
}
const detail::request no_part{};
using items = std::vector<std::uint32_t>;

}  // namespace

BOOST_AUTO_TEST_SUITE(split_merges)

BOOST_AUTO_TEST_CASE(per_key_answers_land_in_the_calls_order_and_a_refused_part_did_not_run) {
  auto m = detail::merge_per_key(3);
  const items a{0, 2}, b{1};
  BOOST_TEST(m->reply(no_part, a, array_reply({int_node(1), int_node(0)})));
  m->reply(no_part, b, error_reply("TRYAGAIN Multiple keys request during rehashing of slot"));
  error_code failure;
  const auto r = m->merged(failure);
  BOOST_TEST(!failure);
  BOOST_TEST((integers(r) == std::vector<std::int64_t>{1, -2, 0}));
  BOOST_TEST(!m->give_back());
}

BOOST_AUTO_TEST_CASE(per_key_a_failed_part_may_have_run_and_all_failed_is_the_failure) {
  auto m = detail::merge_per_key(2);
  const items a{0}, b{1};
  m->reply(no_part, a, array_reply({int_node(1)}));
  m->failed(b, error::node_timeout);
  error_code failure;
  BOOST_TEST((integers(m->merged(failure)) == std::vector<std::int64_t>{1, -1}));
  auto none = detail::merge_per_key(2);
  none->failed(a, error::connection_lost);
  none->not_sent(error::node_unavailable);
  BOOST_TEST(none->merged(failure).empty());
  BOOST_TEST((failure == error::connection_lost));
}

BOOST_AUTO_TEST_CASE(per_key_a_malformed_part_counts_as_may_have_run) {
  auto m = detail::merge_per_key(2);
  const items a{0, 1};
  m->reply(no_part, a, array_reply({int_node(1)}));  // one answer for two items
  error_code failure;
  BOOST_TEST((integers(m->merged(failure)) == std::vector<std::int64_t>{-1, -1}));
}

BOOST_AUTO_TEST_CASE(a_set_refused_in_one_part_names_the_calls_item_and_gives_the_rest_back) {
  auto m = detail::merge_set_acquire(3);
  const items a{0, 2}, b{1};
  // Part a refused at its second item: item 2 of the call, 1-based 3.
  BOOST_TEST(!m->reply(no_part, a, array_reply({int_node(0), int_node(2), str_node("them")})));
  BOOST_TEST(m->reply(no_part, b, array_reply({int_node(1)})));
  error_code failure;
  const auto r = m->merged(failure);
  BOOST_TEST_REQUIRE(r.size() == 4u);
  BOOST_TEST(r[1].integer == 0);
  BOOST_TEST(r[2].integer == 3);
  BOOST_TEST(r[3].text == "them");
  BOOST_TEST(m->give_back());
}

BOOST_AUTO_TEST_CASE(a_refusal_outweighs_a_failure_elsewhere_in_a_set) {
  auto m = detail::merge_set_acquire(2);
  const items a{0}, b{1};
  m->failed(a, error::node_timeout);
  m->reply(no_part, b, array_reply({int_node(0), int_node(1), str_node("x")}));
  error_code failure;
  const auto r = m->merged(failure);
  BOOST_TEST(!failure);
  BOOST_TEST_REQUIRE(r.size() == 4u);
  BOOST_TEST(r[2].integer == 2);
  BOOST_TEST(m->give_back());
}

BOOST_AUTO_TEST_CASE(
    a_won_fenced_set_carries_each_counter_and_only_markers_that_name_their_server) {
  auto m = detail::merge_set_acquire(2);
  const std::string here = "run-a:repl-a";
  detail::request part_a{}, part_b{};
  part_a.answered_by = &here;
  part_b.answered_by = &here;
  const items a{1}, b{0};
  m->reply(part_a, a, array_reply({int_node(1), int_node(7), str_node("run-a:repl-a")}));
  m->reply(part_b, b, array_reply({int_node(1), int_node(4), str_node("run-old:repl-old")}));
  error_code failure;
  const auto r = m->merged(failure);
  BOOST_TEST_REQUIRE(r.size() == 6u);  // {1, c0, m0, c1, m1}
  BOOST_TEST(r[1].integer == 1);
  BOOST_TEST(r[2].integer == 4);
  BOOST_TEST((r[3].kind == resp::type::null));  // names another incarnation: not trusted
  BOOST_TEST(r[4].integer == 7);
  BOOST_TEST(r[5].text == detail::vetted_marker);
  BOOST_TEST(!m->give_back());
}

BOOST_AUTO_TEST_CASE(a_set_whose_parts_disagree_or_one_did_not_run_is_an_error_given_back) {
  auto m = detail::merge_set_acquire(2);
  const items a{0}, b{1};
  m->reply(no_part, a, array_reply({int_node(1)}));
  m->reply(no_part, b, array_reply({int_node(1), int_node(3), str_node("m")}));
  error_code failure;
  auto r = m->merged(failure);
  BOOST_TEST_REQUIRE(r.size() == 1u);
  BOOST_TEST(r[0].is_error());
  BOOST_TEST(std::string{r[0].text}.find("disagree") != std::string::npos);
  BOOST_TEST(m->give_back());
  auto t = detail::merge_set_acquire(2);
  t->reply(no_part, a, error_reply("TRYAGAIN Multiple keys request during rehashing of slot"));
  t->reply(no_part, b, array_reply({int_node(1)}));
  r = t->merged(failure);
  BOOST_TEST_REQUIRE(r.size() == 1u);
  BOOST_TEST(std::string{r[0].text}.starts_with("TRYAGAIN"));
  BOOST_TEST(t->give_back());  // the part that ran gives its keys back
}

BOOST_AUTO_TEST_CASE(a_sets_extension_is_all_ones_and_its_release_a_sum) {
  const items a{0}, b{1};
  error_code failure;
  auto ext = detail::merge_all_ones(2);
  ext->reply(no_part, a, {int_node(1, 0)});
  ext->reply(no_part, b, {int_node(1, 0)});
  BOOST_TEST(ext->merged(failure)[0].integer == 1);
  auto lost = detail::merge_all_ones(2);
  lost->failed(a, error::node_timeout);
  lost->reply(no_part, b, {int_node(0, 0)});  // a token not found outweighs the failure
  BOOST_TEST(lost->merged(failure)[0].integer == 0);
  auto sum = detail::merge_sum(2);
  sum->reply(no_part, a, {int_node(2, 0)});
  sum->reply(no_part, b, {int_node(1, 0)});
  BOOST_TEST(sum->merged(failure)[0].integer == 3);
  auto part = detail::merge_sum(2);
  part->reply(no_part, a, {int_node(2, 0)});
  part->failed(b, error::connection_lost);
  BOOST_TEST(part->merged(failure).empty());
  BOOST_TEST((failure == error::connection_lost));
}

BOOST_AUTO_TEST_CASE(a_fenced_sets_write_back_refused_anywhere_is_refused) {
  const items a{0}, b{1};
  auto m = detail::merge_set_raise(2);
  m->reply(no_part, a, {int_node(0, 0)});
  m->reply(no_part, b, array_reply({int_node(1), str_node("m")}));
  error_code failure;
  const auto r = m->merged(failure);
  BOOST_TEST_REQUIRE(r.size() == 1u);
  BOOST_TEST(r[0].integer == 0);
  BOOST_TEST(!m->give_back());  // only an acquisition gives keys back
}

BOOST_AUTO_TEST_SUITE_END()
