// SPDX-License-Identifier: BSL-1.0
// Leader election's decisions without a server: how a node's answer and a record read,
// when a majority agrees on a leader (and when a deposed leader's record does not count),
// what an observer reports next, and the calls of the election's two scripts. Replies are
// parsed from RESP bytes, as a connection would hand them over.

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "machines/election_decisions.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"
#include "wire_reply.hpp"

using namespace redlock;
using detail::election_node_view;
using detail::leader_view;
using redlock::test::wire_reply;

namespace {

election_node_view node(std::string lock, std::uint64_t term, std::string record_token,
                        std::string value = "v") {
  election_node_view v;
  v.answered = true;
  v.lock_token = std::move(lock);
  v.has_record = term > 0;
  v.record = {term, std::move(record_token), std::move(value)};
  return v;
}
election_node_view silent() {
  return {};
}

// The bulk strings of a command as written on the wire.
std::vector<std::string> args_of(const std::string& wire) {
  wire_reply w{wire};
  std::vector<std::string> out;
  for (std::size_t i = 1; i < w.r.size(); ++i) out.emplace_back(w.r[i].text);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election_rules)

BOOST_AUTO_TEST_CASE(a_record_reads_back_as_written_even_with_spaces_in_the_value) {
  detail::election_record r;
  BOOST_TEST_REQUIRE(
      detail::parse_election_record(detail::format_election_record(42, "ab12", "host a:1"), r));
  BOOST_TEST(r.term == 42u);
  BOOST_TEST(r.token == "ab12");
  BOOST_TEST(r.value == "host a:1");
  BOOST_TEST(detail::parse_election_record("7 tok ", r));  // an empty value
  BOOST_TEST(r.value == "");
}

BOOST_AUTO_TEST_CASE(text_that_is_not_a_record_vouches_for_no_one) {
  detail::election_record r;
  for (const char* bad : {"", "12", "12 tok", "x tok v", "0 tok v", " tok v", "12  v", "-3 t v"})
    BOOST_TEST(!detail::parse_election_record(bad, r), bad);
}

BOOST_AUTO_TEST_CASE(a_node_answer_reads_the_lock_and_the_record) {
  election_node_view v;
  wire_reply both{"*2\r\n$3\r\ntok\r\n$9\r\n5 tok abc\r\n"};
  BOOST_TEST_REQUIRE(detail::read_election_answer(both.r, v));
  BOOST_TEST(v.lock_token == "tok");
  BOOST_TEST(v.has_record);
  BOOST_TEST(v.record.term == 5u);
  BOOST_TEST(v.record.value == "abc");
  wire_reply none{"*2\r\n$-1\r\n$-1\r\n"};
  BOOST_TEST_REQUIRE(detail::read_election_answer(none.r, v));
  BOOST_TEST(v.answered);
  BOOST_TEST(v.lock_token.empty());
  BOOST_TEST(!v.has_record);
  wire_reply wrong{":1\r\n"};
  BOOST_TEST(!detail::read_election_answer(wrong.r, v));
  wire_reply nested{"*2\r\n*1\r\n:1\r\n$-1\r\n"};
  BOOST_TEST(!detail::read_election_answer(nested.r, v));
}

BOOST_AUTO_TEST_CASE(a_leader_needs_a_majority_of_locks_and_records_naming_it) {
  const std::vector<election_node_view> agreed{node("t", 3, "t"), node("t", 3, "t"), silent()};
  const leader_view l = detail::decide_leader(agreed, 3);
  BOOST_TEST(l.leading);
  BOOST_TEST(l.term == 3u);
  BOOST_TEST(l.token == "t");
  // The lock on a majority, its record on one node only: not yet.
  const std::vector<election_node_view> short_record{node("t", 3, "t"), node("t", 0, ""), silent()};
  BOOST_TEST(!detail::decide_leader(short_record, 3).leading);
  // Five nodes: three needed.
  const std::vector<election_node_view> two_of_five{node("t", 3, "t"), node("t", 3, "t"), silent(),
                                                    silent(), silent()};
  BOOST_TEST(!detail::decide_leader(two_of_five, 5).leading);
}

BOOST_AUTO_TEST_CASE(a_deposed_leaders_record_beside_its_successors_lock_does_not_count) {
  // The new leader u holds the lock everywhere; its record has reached one node, the
  // others still carry t's record: no one is reported until u's record is on a majority.
  const std::vector<election_node_view> nodes{node("u", 4, "u"), node("u", 3, "t"),
                                              node("u", 3, "t")};
  BOOST_TEST(!detail::decide_leader(nodes, 3).leading);
  // The old leader's lock expired on a majority: its records there mean nothing.
  const std::vector<election_node_view> expired{node("t", 3, "t"), node("", 3, "t"),
                                                node("", 3, "t")};
  BOOST_TEST(!detail::decide_leader(expired, 3).leading);
}

BOOST_AUTO_TEST_CASE(records_that_disagree_on_term_or_value_are_not_one_leader) {
  const std::vector<election_node_view> nodes{node("t", 3, "t", "a"), node("t", 3, "t", "b"),
                                              node("t", 4, "t", "a")};
  BOOST_TEST(!detail::decide_leader(nodes, 3).leading);
}

// The observer's rule fed what a read found: the nodes' answers and who leads by them.
bool news(const detail::observer_memory& m, const std::vector<election_node_view>& nodes) {
  return detail::leader_news(m, detail::decide_leader(nodes, nodes.size()), nodes, nodes.size());
}

BOOST_AUTO_TEST_CASE(an_observer_reports_changes_and_never_a_lower_term) {
  const detail::observer_memory first{};
  const detail::observer_memory saw_five{true, {true, 5, "t5", "a"}, 5};
  const detail::observer_memory saw_six{true, {true, 6, "t6", "b"}, 6};
  const detail::observer_memory gap_after_six{true, {}, 6};
  const std::vector<election_node_view> five{node("t5", 5, "t5", "a"), node("t5", 5, "t5", "a"),
                                             silent()};
  const std::vector<election_node_view> six{node("t6", 6, "t6", "b"), node("t6", 6, "t6", "b"),
                                            node("t6", 6, "t6", "b")};
  const std::vector<election_node_view> nobody{node("", 0, ""), node("", 0, ""), silent()};
  // The first read is news whatever it finds, if a majority answered.
  BOOST_TEST(news(first, nobody));
  BOOST_TEST(news(first, five));
  BOOST_TEST(!news(first, {node("", 0, ""), silent(), silent()}));
  // The same leader again: no news; a new one: news.
  BOOST_TEST(!news(saw_five, five));
  BOOST_TEST(news(saw_five, six));
  // A stale read naming an older leader is never reported.
  BOOST_TEST(!news(saw_six, five));
  BOOST_TEST(!news(gap_after_six, five));
  // Leader gone from a majority: news once.
  BOOST_TEST(news(saw_six, nobody));
  BOOST_TEST(!news(gap_after_six, nobody));
}

BOOST_AUTO_TEST_CASE(an_observer_reports_each_term_once_around_a_gap) {
  const detail::observer_memory saw_six{true, {true, 6, "t6", "b"}, 6};
  // Six still holds its lock on nodes 0 and 1, but node 0 has lost its record for a moment
  // and node 2 did not answer: no majority agrees on a leader, yet six may well lead.
  const std::vector<election_node_view> gap{node("t6", 0, ""), node("t6", 6, "t6", "b"), silent()};
  BOOST_TEST(!detail::decide_leader(gap, 3).leading);
  BOOST_TEST(!news(saw_six, gap));
  // Only one node is known to be without six's lock: still no news.
  const std::vector<election_node_view> half{node("", 0, ""), node("t6", 6, "t6", "b"), silent()};
  BOOST_TEST(!news(saw_six, half));
  // A majority answers without six's token (a successor's lock, not yet its record): six
  // can lead no more, and that is news.
  const std::vector<election_node_view> after{node("t7", 0, ""), node("t7", 0, ""), silent()};
  BOOST_TEST(news(saw_six, after));
  BOOST_TEST(detail::answered_without(after, "t6") == 2u);
  // Six back after "no leader" was reported (a node restored from an old snapshot): a term
  // is reported as leading once.
  const detail::observer_memory gap_after_six{true, {}, 6};
  const std::vector<election_node_view> six{node("t6", 6, "t6", "b"), node("t6", 6, "t6", "b"),
                                            silent()};
  BOOST_TEST(!news(gap_after_six, six));
  // The next term is news as ever.
  const std::vector<election_node_view> seven{node("t7", 7, "t7", "c"), node("t7", 7, "t7", "c"),
                                              silent()};
  BOOST_TEST(news(gap_after_six, seven));
}

BOOST_AUTO_TEST_CASE(the_record_call_declares_the_lock_and_the_record_key) {
  std::string out;
  detail::write_election_record(out, "lock:e", "redlock:election:e", "tok", 9, "v v",
                                std::chrono::milliseconds{20000});
  const std::vector<std::string> want{"EVALSHA",
                                      std::string{detail::election_record_script.sha},
                                      "2",
                                      "lock:e",
                                      "redlock:election:e",
                                      "tok",
                                      "9",
                                      "v v",
                                      "20000"};
  BOOST_TEST(args_of(out) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_read_call_declares_the_lock_and_the_record_key) {
  std::string out;
  detail::write_election_read(out, "lock:e", "redlock:election:e");
  const std::vector<std::string> want{"EVALSHA", std::string{detail::election_read_script.sha}, "2",
                                      "lock:e", "redlock:election:e"};
  BOOST_TEST(args_of(out) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_resign_call_declares_the_lock_and_the_record_key) {
  std::string out;
  detail::write_election_resign(out, "lock:e", "redlock:election:e", "tok", detail::send_as::sha);
  const std::vector<std::string> want{"EVALSHA",
                                      std::string{detail::election_resign_script.sha},
                                      "2",
                                      "lock:e",
                                      "redlock:election:e",
                                      "tok"};
  BOOST_TEST(args_of(out) == want, boost::test_tools::per_element());
  std::string text;
  detail::write_election_resign(text, "lock:e", "redlock:election:e", "tok", detail::send_as::text);
  BOOST_TEST(args_of(text)[0] == "EVAL");
  BOOST_TEST(args_of(text)[1] == detail::election_resign_script.body);
}

// ---- the leader's record and the observer's steps ----

BOOST_AUTO_TEST_CASE(the_record_lives_twice_the_longer_of_the_ttls) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::election_record_ttl(10s, 0ms) == 20s));
  BOOST_TEST((detail::election_record_ttl(10s, 30s) == 60s));
  BOOST_TEST((detail::election_record_ttl(40s, 30s) == 80s));
}

BOOST_AUTO_TEST_CASE(the_record_lives_at_most_a_day) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::election_record_ttl(20h, 0ms) == 24h));
}

BOOST_AUTO_TEST_CASE(a_record_on_a_majority_is_rewritten_every_quarter_of_its_ttl) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::election_refresh_delay(true, 20s, 50ms) == 5s));
}

BOOST_AUTO_TEST_CASE(a_record_short_of_a_majority_is_rewritten_at_the_retry_delay) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::election_refresh_delay(false, 20s, 50ms) == 50ms));
}

BOOST_AUTO_TEST_CASE(a_first_record_that_failed_ends_the_campaign_with_its_error) {
  const auto a = detail::after_first_record(redlock::error::node_timeout, true, 0, 3);
  BOOST_TEST((a.what == detail::action_kind::complete));
  BOOST_TEST((a.ec == redlock::error::node_timeout));
}

BOOST_AUTO_TEST_CASE(a_first_record_written_after_the_lock_ran_out_hands_out_no_leadership) {
  const auto a = detail::after_first_record({}, false, 3, 3);
  BOOST_TEST((a.what == detail::action_kind::complete));
  BOOST_TEST((a.ec == redlock::error::leadership_lost));
}

BOOST_AUTO_TEST_CASE(a_leadership_says_whether_a_majority_holds_its_first_record) {
  for (std::size_t written = 0; written <= 5; ++written) {
    const auto a = detail::after_first_record({}, true, written, 5);
    BOOST_TEST((a.what == detail::action_kind::complete));
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.detail.on_majority == (written >= 3), "written " << written);
  }
}

BOOST_AUTO_TEST_CASE(news_is_reported_whatever_was_announced_meanwhile) {
  using namespace std::chrono_literals;
  for (const bool woken : {false, true}) {
    const auto a = detail::after_election_read({}, true, woken, 250ms);
    BOOST_TEST((a.what == detail::action_kind::complete));
    BOOST_TEST(!a.ec);
  }
}

BOOST_AUTO_TEST_CASE(a_failed_read_ends_the_call_with_its_error) {
  using namespace std::chrono_literals;
  const auto a = detail::after_election_read(redlock::error::no_quorum, false, true, 250ms);
  BOOST_TEST((a.what == detail::action_kind::complete));
  BOOST_TEST((a.ec == redlock::error::no_quorum));
}

BOOST_AUTO_TEST_CASE(an_announcement_during_a_read_without_news_reads_again) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::after_election_read({}, false, true, 250ms).what ==
              detail::action_kind::send_round));
}

BOOST_AUTO_TEST_CASE(a_read_without_news_or_announcement_waits_for_the_poll_interval) {
  using namespace std::chrono_literals;
  const auto a = detail::after_election_read({}, false, false, 250ms);
  BOOST_TEST((a.what == detail::action_kind::wait));
  BOOST_TEST((a.delay == 250ms));
}

BOOST_AUTO_TEST_CASE(a_report_of_a_leader_names_its_term_and_value) {
  detail::observer_memory m;
  detail::remember_report(m, {.leading = true, .term = 5, .token = "t5", .value = "v"});
  const auto r = detail::report_of(m);
  BOOST_TEST(r.leading);
  BOOST_TEST(r.term == 5u);
  BOOST_TEST(r.value == "v");
  BOOST_TEST(m.reported);
  BOOST_TEST(m.highest == 5u);
}

BOOST_AUTO_TEST_CASE(a_report_of_no_leader_carries_the_highest_term_reported) {
  detail::observer_memory m;
  detail::remember_report(m, {.leading = true, .term = 5, .token = "t5", .value = "v"});
  detail::remember_report(m, {});
  const auto r = detail::report_of(m);
  BOOST_TEST(!r.leading);
  BOOST_TEST(r.term == 5u);
  BOOST_TEST(r.value.empty());
}

BOOST_AUTO_TEST_CASE(the_highest_term_never_goes_down) {
  detail::observer_memory m;
  detail::remember_report(m, {.leading = true, .term = 7, .token = "t7"});
  detail::remember_report(m, {.leading = true, .term = 3, .token = "t3"});
  BOOST_TEST(m.highest == 7u);
  BOOST_TEST(detail::report_of(m).term == 3u);  // the report is the last one, as read
}

// ---- arguments ----

BOOST_AUTO_TEST_CASE(a_campaign_value_over_64_kib_is_refused) {
  using namespace std::chrono_literals;
  const redlock::config cfg;
  const auto p = detail::campaign_problem(redlock::max_resource_bytes + 1, 10s, 0ms, cfg);
  BOOST_TEST((p.code == redlock::error::invalid_argument));
  BOOST_TEST(!detail::campaign_problem(redlock::max_resource_bytes, 10s, 0ms, cfg));
}

BOOST_AUTO_TEST_CASE(a_campaign_renewing_past_its_ttl_needs_max_ttl) {
  using namespace std::chrono_literals;
  redlock::config cfg;
  const auto p = detail::campaign_problem(1, 10s, 30s, cfg);
  BOOST_TEST((p.code == redlock::error::invalid_ttl));
  BOOST_TEST(p.why.starts_with("campaign: renewal: "));
  cfg.max_ttl = 60s;
  BOOST_TEST(!detail::campaign_problem(1, 10s, 30s, cfg));
}

BOOST_AUTO_TEST_CASE(a_campaign_without_a_renewal_ttl_renews_with_its_own) {
  using namespace std::chrono_literals;
  const redlock::config cfg;
  BOOST_TEST(!detail::campaign_problem(1, 10s, 0ms, cfg));
  BOOST_TEST(!detail::campaign_problem(1, 10s, 5s, cfg));  // shorter renewals are fine
}

BOOST_AUTO_TEST_CASE(an_observer_needs_a_name_a_lock_could_have) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::observer_problem("", 1s).code == redlock::error::invalid_resource));
  const std::string long_name(redlock::max_resource_bytes + 1, 'n');
  BOOST_TEST((detail::observer_problem(long_name, 1s).code == redlock::error::invalid_resource));
  BOOST_TEST(!detail::observer_problem("elect:job", 1s));
}

BOOST_AUTO_TEST_CASE(an_observer_polls_at_most_every_millisecond) {
  using namespace std::chrono_literals;
  BOOST_TEST((detail::observer_problem("elect:job", 0ms).code == redlock::error::invalid_argument));
  BOOST_TEST(!detail::observer_problem("elect:job", 1ms));
}

BOOST_AUTO_TEST_SUITE_END()
