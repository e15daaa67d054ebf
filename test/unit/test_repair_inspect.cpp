// SPDX-License-Identifier: BSL-1.0
// The fence repair's and the inspection's state machines, fed events without a socket or a
// server: when a repair may write and where, what a write's answer vouches for, when a
// repair or an inspection ends, and that nothing changes once it has. Replies are parsed
// from RESP bytes, as a connection would hand them over.

#include <array>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "machines/inspect_fsm.hpp"
#include "machines/repair_fsm.hpp"
#include "wire_reply.hpp"

using namespace redlock;
using namespace std::chrono_literals;
using detail::error_code;
using detail::fence_read;
using detail::inspect_action;
using detail::inspect_fsm;
using detail::node_mask;
using detail::repair_action;
using detail::repair_fsm;
using detail::repair_standing;
using redlock::test::wire_reply;

namespace {

const boot_clock::time_point t0 = boot_clock::time_point{} + 1000h;
const std::string run_a = "run-a:repl-a";

fence_read marked(std::map<std::string, std::int64_t> counters = {}) {
  return {.answered = true, .marked = true, .incarnation = run_a, .counters = std::move(counters)};
}
fence_read unmarked(std::map<std::string, std::int64_t> counters = {},
                    std::string incarnation = run_a) {
  return {.answered = true,
          .marked = false,
          .incarnation = std::move(incarnation),
          .counters = std::move(counters)};
}

// Every node independent, connected and past its guard since the start.
std::vector<repair_standing> all_standing(std::size_t n) {
  return std::vector<repair_standing>(
      n, repair_standing{.independent = true, .ready = true, .voted_at_start = true});
}

node_mask nodes(std::initializer_list<std::size_t> list) {
  node_mask m = 0;
  for (const std::size_t i : list) m |= detail::bit(i);
  return m;
}

// A repair of 5 nodes whose reads are out: 0..2 answer marked, 3 and 4 unmarked.
repair_fsm reads_in_with_two_unmarked() {
  repair_fsm f{5};
  f.reads_sent();
  f.read_answered(0, marked({{"a", 5}}));
  f.read_answered(1, marked({{"a", 7}}));
  f.read_answered(2, marked({{"b", 2}}));
  f.read_answered(3, unmarked());
  f.read_answered(4, unmarked({{"a", 1}}));
  return f;
}

// The same repair with its writes out to nodes 3 and 4.
repair_fsm writing_to_3_and_4() {
  auto f = reads_in_with_two_unmarked();
  const auto w = f.reads_done(all_standing(5));
  BOOST_REQUIRE(w.what == repair_action::kind::second_round);
  BOOST_REQUIRE(w.nodes == nodes({3, 4}));
  BOOST_REQUIRE(f.writes_sent(w.nodes).what == repair_action::kind::none);
  return f;
}

const wire_reply done_reply{":1\r\n"};

}  // namespace

BOOST_AUTO_TEST_SUITE(repair_machine)

BOOST_AUTO_TEST_CASE(a_read_whose_marker_names_its_server_marks_the_node_at_once) {
  repair_fsm f{3};
  f.reads_sent();
  const auto a = f.read_answered(1, marked());
  BOOST_TEST((a.what == repair_action::kind::none));
  BOOST_REQUIRE(a.detail.mark.has_value());
  BOOST_TEST(*a.detail.mark == 1u);
  BOOST_TEST(!f.read_answered(2, unmarked()).detail.mark.has_value());
}

BOOST_AUTO_TEST_CASE(the_reads_are_not_judged_while_one_is_still_out) {
  repair_fsm f{3};
  f.reads_sent();
  f.read_answered(0, marked());
  f.read_answered(1, marked());
  BOOST_TEST(!f.reads_in());
  BOOST_TEST((f.reads_done(all_standing(3)).what == repair_action::kind::none));
  f.read_failed(2, error::node_timeout, {});
  BOOST_TEST(f.reads_in());
  BOOST_TEST((f.reads_done(all_standing(3)).what == repair_action::kind::complete));
}

BOOST_AUTO_TEST_CASE(with_a_marked_majority_the_maxima_go_to_the_unmarked_nodes_that_answered) {
  auto f = reads_in_with_two_unmarked();
  const auto a = f.reads_done(all_standing(5));
  BOOST_TEST((a.what == repair_action::kind::second_round));
  BOOST_TEST(a.nodes == nodes({3, 4}));
  BOOST_TEST(a.detail.maxima.size() == 2u);
  BOOST_TEST(a.detail.maxima.at("a") == 7);
  BOOST_TEST(a.detail.maxima.at("b") == 2);
  BOOST_TEST(f.read(3).incarnation == run_a);  // what its write names
}

BOOST_AUTO_TEST_CASE(without_a_marked_majority_and_with_a_node_unread_nothing_is_written) {
  repair_fsm f{5};
  f.reads_sent();
  f.read_answered(0, marked({{"a", 9}}));
  f.read_answered(1, unmarked());
  f.read_answered(2, unmarked());
  f.read_answered(3, unmarked());
  f.read_failed(4, error::node_timeout, {});
  const auto a = f.reads_done(all_standing(5));
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST(!a.detail.wrote);  // a repair that wrote nothing proves nothing
  BOOST_TEST(a.detail.problem == "node 4: " + error_code{error::node_timeout}.message());
}

BOOST_AUTO_TEST_CASE(a_new_fleet_read_whole_is_written_though_no_node_is_marked) {
  repair_fsm f{3};
  f.reads_sent();
  for (std::size_t i = 0; i < 3; ++i) f.read_answered(i, unmarked({{"a", std::int64_t(i)}}));
  const auto a = f.reads_done(all_standing(3));
  BOOST_TEST((a.what == repair_action::kind::second_round));
  BOOST_TEST(a.nodes == nodes({0, 1, 2}));
  BOOST_TEST(a.detail.maxima.at("a") == 2);
}

BOOST_AUTO_TEST_CASE(a_node_not_connected_or_held_back_at_the_start_gets_no_write) {
  auto f = reads_in_with_two_unmarked();
  auto standing = all_standing(5);
  standing[3].ready = false;           // reconnecting: the write could reach a new server
  standing[4].voted_at_start = false;  // restarted after the repair began
  const auto a = f.reads_done(standing);
  // The rule let the maxima be written: the repair ran, with nobody to raise.
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(a.detail.wrote);
}

BOOST_AUTO_TEST_CASE(an_unmarked_answer_of_an_unknown_server_gets_no_write) {
  repair_fsm f{3};
  f.reads_sent();
  f.read_answered(0, marked());
  f.read_answered(1, marked());
  f.read_answered(2, unmarked({}, ""));
  const auto a = f.reads_done(all_standing(3));
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(a.nodes == 0);
}

BOOST_AUTO_TEST_CASE(a_node_that_is_not_independent_neither_counts_nor_gives_a_counter) {
  repair_fsm f{3};
  f.reads_sent();
  f.read_answered(0, unmarked({{"a", 3}}));
  f.read_answered(1, unmarked({{"a", 50}}));  // a replica: its counters are not the fleet's
  f.read_failed(2, error::node_unavailable, {});
  auto standing = all_standing(3);
  standing[1].independent = false;
  standing[2].independent = false;  // a duplicate: its silence does not block the rule
  const auto a = f.reads_done(standing);
  BOOST_TEST((a.what == repair_action::kind::second_round));
  BOOST_TEST(a.detail.maxima.at("a") == 3);
  // Still a target: raising its counters is always safe.
  BOOST_TEST(a.nodes == nodes({0, 1}));
}

BOOST_AUTO_TEST_CASE(a_write_the_server_read_acknowledges_marks_the_node) {
  auto f = writing_to_3_and_4();
  const auto a = f.write_answered(3, {}, &done_reply.r, &run_a);
  BOOST_REQUIRE(a.detail.mark.has_value());
  BOOST_TEST(*a.detail.mark == 3u);
  BOOST_TEST((a.what == repair_action::kind::none));  // node 4's write is still out
}

BOOST_AUTO_TEST_CASE(the_repair_ends_when_its_last_write_is_back_and_clears_the_problem) {
  auto f = writing_to_3_and_4();
  f.write_answered(4, {}, &done_reply.r, &run_a);
  const auto a = f.write_answered(3, {}, &done_reply.r, &run_a);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_REQUIRE(a.detail.mark.has_value());  // the last write marks as it ends the repair
  BOOST_TEST(*a.detail.mark == 3u);
  BOOST_TEST(a.detail.wrote);
  BOOST_TEST(a.detail.problem.empty());
  BOOST_TEST((f.state() == repair_fsm::phase::done));
}

BOOST_AUTO_TEST_CASE(a_write_done_by_a_restarted_incarnation_vouches_for_nothing) {
  auto f = writing_to_3_and_4();
  const std::string run_b = "run-b:repl-b";
  const auto a = f.write_answered(3, {}, &done_reply.r, &run_b);
  BOOST_TEST(!a.detail.mark.has_value());
  const auto end = f.write_answered(4, {}, &done_reply.r, nullptr);  // server unknown
  BOOST_TEST(!end.detail.mark.has_value());
  BOOST_TEST(end.detail.problem ==
             "node 4: its server restarted or was promoted during the repair");
}

BOOST_AUTO_TEST_CASE(a_write_refused_by_the_server_is_the_problem_in_the_servers_words) {
  auto f = writing_to_3_and_4();
  const wire_reply refused{"-NOPERM no permissions to run the 'evalsha' command\r\n"};
  f.write_answered(3, {}, &done_reply.r, &run_a);
  const auto a = f.write_answered(4, {}, &refused.r, &run_a);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(!a.detail.mark.has_value());
  BOOST_TEST(a.detail.problem.starts_with("node 4: \"NOPERM no permissions"), a.detail.problem);
}

BOOST_AUTO_TEST_CASE(a_write_lost_with_its_connection_is_the_problem) {
  auto f = writing_to_3_and_4();
  f.write_answered(4, error::node_timeout, nullptr, nullptr);
  const auto a = f.write_answered(3, {}, &done_reply.r, &run_a);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(a.detail.problem == "node 4: " + error_code{error::node_timeout}.message());
}

BOOST_AUTO_TEST_CASE(writes_refused_at_once_end_the_repair_as_one_that_wrote) {
  auto f = reads_in_with_two_unmarked();
  const auto w = f.reads_done(all_standing(5));
  BOOST_REQUIRE(w.what == repair_action::kind::second_round);
  const auto a = f.writes_sent(0);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST(a.detail.wrote);
  // A write its connection refused marks nothing, and no answer of it is awaited.
  BOOST_TEST(!f.write_answered(3, {}, &done_reply.r, &run_a).detail.mark.has_value());
}

BOOST_AUTO_TEST_CASE(the_last_read_failure_in_node_order_is_the_problem_kept) {
  repair_fsm f{3};
  f.reads_sent();
  f.read_failed(2, error::server_error, "ERR late");
  f.read_failed(0, error::node_timeout, {});
  f.read_answered(1, marked());
  const auto a = f.reads_done(all_standing(3));
  BOOST_TEST(a.detail.problem == "node 2: \"ERR late\"");
}

BOOST_AUTO_TEST_CASE(a_stop_mid_read_ends_the_repair_and_later_reads_change_nothing) {
  repair_fsm f{3};
  f.reads_sent();
  f.read_failed(0, error::node_timeout, {});
  const auto a = f.stop(error::cancelled);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST(!a.detail.wrote);
  BOOST_TEST(a.detail.problem == "node 0: " + error_code{error::node_timeout}.message());
  BOOST_TEST(!f.read_answered(1, marked()).detail.mark.has_value());
  BOOST_TEST(!f.reads_in());
  BOOST_TEST((f.reads_done(all_standing(3)).what == repair_action::kind::none));
  BOOST_TEST((f.stop(error::cancelled).what == repair_action::kind::none));
}

BOOST_AUTO_TEST_CASE(a_stop_mid_write_clears_no_problem_and_later_writes_mark_nothing) {
  auto f = writing_to_3_and_4();
  f.write_answered(3, {}, &done_reply.r, &run_a);
  const auto a = f.stop(error::shut_down);
  BOOST_TEST((a.what == repair_action::kind::complete));
  BOOST_TEST((a.ec == error::shut_down));
  BOOST_TEST(!a.detail.wrote);  // node 4 was never confirmed
  const auto late = f.write_answered(4, {}, &done_reply.r, &run_a);
  BOOST_TEST((late.what == repair_action::kind::none));
  BOOST_TEST(!late.detail.mark.has_value());
}

BOOST_AUTO_TEST_CASE(answers_after_the_end_or_twice_or_from_nodes_not_asked_are_ignored) {
  auto f = writing_to_3_and_4();
  // A write answer for a node that got none, and a second read answer.
  BOOST_TEST(!f.write_answered(0, {}, &done_reply.r, &run_a).detail.mark.has_value());
  BOOST_TEST(!f.read_answered(3, marked()).detail.mark.has_value());
  f.write_answered(3, {}, &done_reply.r, &run_a);
  BOOST_TEST(!f.write_answered(3, {}, &done_reply.r, &run_a).detail.mark.has_value());
  const auto end = f.write_answered(4, {}, &done_reply.r, &run_a);
  BOOST_REQUIRE(end.what == repair_action::kind::complete);
  BOOST_TEST((f.write_answered(4, {}, &done_reply.r, &run_a).what == repair_action::kind::none));
  BOOST_TEST((f.writes_sent(nodes({3})).what == repair_action::kind::none));
  // Beyond the fleet.
  repair_fsm g{3};
  g.reads_sent();
  BOOST_TEST(!g.read_answered(7, marked()).detail.mark.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

const std::array<std::string, 3> three{"h0:6379", "h1:6379", "h2:6379"};

const std::string info_text =
    "redis_version:7.0.11\r\nrun_id:abc\r\nrole:master\r\nuptime_in_seconds:42\r\nother:x";
// The inspect script's answer without a resource: the server's INFO only.
const wire_reply info_only{"*1\r\n$" + std::to_string(info_text.size()) + "\r\n" + info_text +
                           "\r\n"};
const wire_reply config_reply{
    "*6\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"
    "$4\r\nsave\r\n$0\r\n\r\n"};

using ikind = inspect_action::kind;

// An inspection of three nodes whose first round is out.
inspect_fsm reading_three() {
  inspect_fsm f{three};
  BOOST_REQUIRE(f.round_sent().what == ikind::none);
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(inspect_machine)

BOOST_AUTO_TEST_CASE(an_inspection_names_each_node_by_its_place_and_address) {
  const inspect_fsm f{three};
  BOOST_TEST(f.reports().size() == 3u);
  BOOST_TEST(f.reports()[2].node == 2u);
  BOOST_TEST(f.reports()[2].address == "h2:6379");
}

BOOST_AUTO_TEST_CASE(a_first_answer_fills_the_servers_facts_and_asks_for_its_settings) {
  auto f = reading_three();
  const auto a = f.first_answered(1, info_only.r, t0);
  BOOST_TEST((a.what == ikind::second_round));
  BOOST_TEST(a.nodes == detail::bit(1));
  const node_report& o = f.reports()[1];
  BOOST_TEST(o.version == "7.0.11");
  BOOST_TEST(o.run_id == "abc");
  BOOST_TEST(o.role == "master");
  BOOST_TEST(o.uptime_s == 42);
  BOOST_TEST((o.key == node_report::key_state::unknown));
}

BOOST_AUTO_TEST_CASE(a_resource_answer_gives_the_holder_its_ttl_and_the_fence) {
  const wire_reply held{
      "*5\r\n$6\r\nrole:x\r\n$6\r\nstring\r\n$5\r\ntoken\r\n:1500\r\n$2\r\n42\r\n"};
  const wire_reply other{"*5\r\n$6\r\nrole:x\r\n$4\r\nhash\r\n$-1\r\n:-1\r\n$-1\r\n"};
  auto f = reading_three();
  f.first_answered(0, held.r, t0);
  f.first_answered(1, other.r, t0);
  const node_report& o = f.reports()[0];
  BOOST_TEST((o.key == node_report::key_state::held));
  BOOST_TEST(o.holder == "token");
  BOOST_TEST(o.ttl.count() == 1500);
  BOOST_REQUIRE(o.fence.has_value());
  BOOST_TEST(*o.fence == 42u);
  BOOST_TEST((f.reports()[1].key == node_report::key_state::wrong_type));
  BOOST_TEST(!f.reports()[1].fence.has_value());
}

BOOST_AUTO_TEST_CASE(an_answer_that_is_not_a_flat_array_is_no_inspection) {
  const wire_reply nested{"*2\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n"};
  const wire_reply scalar{"$1\r\na\r\n"};
  const wire_reply empty{"*0\r\n"};
  BOOST_TEST(detail::inspect_answer_well_formed(info_only.r));
  BOOST_TEST(!detail::inspect_answer_well_formed(nested.r));
  BOOST_TEST(!detail::inspect_answer_well_formed(scalar.r));
  BOOST_TEST(!detail::inspect_answer_well_formed(empty.r));
}

BOOST_AUTO_TEST_CASE(the_second_round_goes_only_to_nodes_that_answered_the_first) {
  auto f = reading_three();
  BOOST_TEST((f.node_failed(0, error::node_timeout, {}, {}).what == ikind::none));
  // A failed node asks for nothing more, even if something of it comes late.
  BOOST_TEST((f.first_answered(0, info_only.r, t0).what == ikind::none));
  BOOST_TEST((f.second_answered(0, {}, &config_reply.r, t0).what == ikind::none));
  BOOST_TEST((f.first_answered(2, info_only.r, t0).what == ikind::second_round));
  BOOST_TEST((f.first_answered(2, info_only.r, t0).what == ikind::none));  // once
}

BOOST_AUTO_TEST_CASE(the_inspection_completes_once_every_node_is_finished) {
  auto f = reading_three();
  f.first_answered(0, info_only.r, t0);
  f.first_answered(1, info_only.r, t0);
  f.node_failed(2, error::node_unavailable, {}, "connection refused");
  BOOST_TEST((f.second_answered(0, {}, &config_reply.r, t0).what == ikind::none));
  const auto a = f.second_answered(1, {}, &config_reply.r, t0);
  BOOST_TEST((a.what == ikind::complete));
  BOOST_TEST(!a.ec);
  const auto out = f.take_reports();
  BOOST_TEST(out[0].appendonly == "yes");
  BOOST_TEST(out[0].appendfsync == "always");
  BOOST_TEST(out[0].save == "");
  BOOST_TEST(out[2].problem == "connection refused");
}

BOOST_AUTO_TEST_CASE(the_round_trip_is_timed_from_the_second_request_alone) {
  auto f = reading_three();
  f.first_answered(0, info_only.r, t0 + 5s);  // after a slow handshake
  f.second_answered(0, {}, &config_reply.r, t0 + 5s + 1200us);
  BOOST_TEST(f.reports()[0].round_trip.count() == 1200);
}

BOOST_AUTO_TEST_CASE(a_refused_config_get_reads_denied_and_a_lost_one_leaves_them_unknown) {
  const wire_reply denied{"-NOPERM this user has no permissions to run the 'config' command\r\n"};
  auto f = reading_three();
  f.first_answered(0, info_only.r, t0);
  f.first_answered(1, info_only.r, t0);
  f.second_answered(0, {}, &denied.r, t0);
  f.second_answered(1, error::node_timeout, nullptr, t0 + 1s);
  BOOST_TEST(f.reports()[0].appendonly == "denied");
  BOOST_TEST(f.reports()[0].save == "denied");
  BOOST_TEST(f.reports()[1].appendonly == "");
  BOOST_TEST(f.reports()[1].round_trip.count() == 0);
  BOOST_TEST(f.reports()[1].version == "7.0.11");  // its first answer stands
}

BOOST_AUTO_TEST_CASE(a_second_request_refused_at_once_finishes_the_node_with_its_first_answer) {
  inspect_fsm f{std::span{three.data(), 1}};
  BOOST_REQUIRE(f.round_sent().what == ikind::none);
  f.first_answered(0, info_only.r, t0);
  const auto a = f.second_refused(0);
  BOOST_TEST((a.what == ikind::complete));
  BOOST_TEST(f.reports()[0].run_id == "abc");
  BOOST_TEST((f.second_refused(0).what == ikind::none));
}

BOOST_AUTO_TEST_CASE(a_failure_is_said_in_the_servers_words_else_the_connections_else_the_codes) {
  auto f = reading_three();
  f.node_failed(0, error::server_error, "ERR boom", "a connection problem");
  f.node_failed(1, error::node_unavailable, {}, "connection refused");
  f.node_failed(2, error::node_timeout, {}, {});
  const auto& out = f.reports();
  BOOST_TEST(out[0].problem == "ERR boom");
  BOOST_TEST((out[0].error == error::server_error));
  BOOST_TEST(out[1].problem == "connection refused");
  BOOST_TEST(out[2].problem == error_code{error::node_timeout}.message());
}

BOOST_AUTO_TEST_CASE(nodes_refused_while_the_round_goes_out_complete_it_only_once_it_is_out) {
  inspect_fsm f{three};
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST((f.node_failed(i, error::shut_down, {}, {}).what == ikind::none));
  const auto a = f.round_sent();
  BOOST_TEST((a.what == ikind::complete));
  BOOST_TEST(!a.ec);
  BOOST_TEST((f.round_sent().what == ikind::none));
}

BOOST_AUTO_TEST_CASE(the_deadline_completes_with_what_is_known) {
  // Each request carries the inspection's deadline: past it, whatever is still out fails
  // as timed out, and the nodes that answered keep what they said.
  auto f = reading_three();
  f.first_answered(0, info_only.r, t0);
  f.second_answered(0, {}, &config_reply.r, t0 + 1ms);
  f.first_answered(1, info_only.r, t0);
  f.second_answered(1, error::node_timeout, nullptr, t0 + 2s);
  const auto a = f.node_failed(2, error::node_timeout, {}, {});
  BOOST_TEST((a.what == ikind::complete));
  const auto out = f.take_reports();
  BOOST_TEST(out[0].appendonly == "yes");
  BOOST_TEST(out[1].run_id == "abc");
  BOOST_TEST(!out[1].error);
  BOOST_TEST((out[2].error == error::node_timeout));
}

BOOST_AUTO_TEST_CASE(a_cancel_completes_at_once_and_later_answers_change_nothing) {
  auto f = reading_three();
  f.first_answered(0, info_only.r, t0);
  const auto a = f.cancel();
  BOOST_TEST((a.what == ikind::complete));
  BOOST_TEST((a.ec == error::cancelled));
  BOOST_TEST((f.second_answered(0, {}, &config_reply.r, t0).what == ikind::none));
  BOOST_TEST((f.first_answered(1, info_only.r, t0).what == ikind::none));
  BOOST_TEST((f.node_failed(2, error::node_timeout, {}, {}).what == ikind::none));
  BOOST_TEST((f.cancel().what == ikind::none));
  const auto out = f.take_reports();
  BOOST_TEST(out[0].run_id == "abc");
  BOOST_TEST(out[0].appendonly == "");
  BOOST_TEST(out[1].run_id == "");
}

BOOST_AUTO_TEST_SUITE_END()
