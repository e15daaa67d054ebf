// SPDX-License-Identifier: BSL-1.0
// A semaphore's sweep over its permits (permit_sweep), fed try outcomes without a server:
// the order of the tries, and what a sweep with no winner fails with. Also the semaphore's
// rules beside it: its key names, and how a node's answer to a permit's try is read.

#include <boost/test/unit_test.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "async_helpers.hpp"  // prints redlock::error in failed checks
#include "client/call_checks.hpp"
#include "connection/slots.hpp"
#include "machines/lock_answer.hpp"
#include "machines/permit_grant_decisions.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "redlock/config.hpp"
#include "redlock/semaphore.hpp"
#include "util/keyspace.hpp"

using namespace redlock;
using boost::system::error_code;
using detail::permit_sweep;
using detail::sweep_step;
using kind = sweep_step::kind;

namespace {

// The tries (index, span, last) of a sweep of `permits` from `first` when every try is held.
std::vector<std::tuple<std::size_t, std::size_t, bool>> order(std::size_t permits,
                                                              std::size_t first) {
  permit_sweep s{permits};
  std::vector<std::tuple<std::size_t, std::size_t, bool>> tried;
  for (sweep_step step = s.start(first); step.what == kind::send_round;
       step = s.tried(error::contended))
    tried.emplace_back(step.detail.index, step.detail.span, step.detail.last);
  return tried;
}

// The outcome of a sweep of `permits` whose windows' tries end as given.
sweep_step sweep(std::size_t permits, const std::vector<error_code>& outcomes) {
  permit_sweep s{permits};
  sweep_step step = s.start(0);
  for (const error_code& ec : outcomes) {
    BOOST_TEST_REQUIRE((step.what == kind::send_round));
    step = s.tried(ec);
  }
  return step;
}

using try_at = std::tuple<std::size_t, std::size_t, bool>;

}  // namespace

BOOST_AUTO_TEST_SUITE(permit_sweeps)

BOOST_AUTO_TEST_CASE(one_try_reads_a_window_of_up_to_sixteen_permits) {
  // Up to 16 permits: one try, which reads them all from the first, and is the last.
  BOOST_TEST((order(4, 2) == std::vector<try_at>{{2, 4, true}}));
  BOOST_TEST((order(1, 0) == std::vector<try_at>{{0, 1, true}}));
  BOOST_TEST((order(16, 7) == std::vector<try_at>{{7, 16, true}}));
  // More: windows from the first, wrapping; only the one that reads the rest is the last.
  BOOST_TEST(
      (order(40, 30) == std::vector<try_at>{{30, 16, false}, {6, 16, false}, {22, 8, true}}));
  BOOST_TEST((order(20, 5) == std::vector<try_at>{{5, 16, false}, {1, 4, true}}));
}

BOOST_AUTO_TEST_CASE(a_won_try_hands_out_that_permit_and_ends_the_sweep) {
  permit_sweep s{40};
  BOOST_TEST(s.start(3).detail.index == 3u);
  const sweep_step next = s.tried(error::contended);
  BOOST_TEST(next.detail.index == 19u);
  const sweep_step won = s.tried({});
  BOOST_TEST((won.what == kind::won));
  BOOST_TEST(won.detail.index == 19u);
}

BOOST_AUTO_TEST_CASE(a_free_permit_a_try_points_at_is_asked_for_next) {
  permit_sweep s{4};
  s.start(1);
  const sweep_step turn = s.tried(error::contended, 2);
  BOOST_TEST((turn.what == kind::send_round));
  BOOST_TEST(turn.detail.index == 3u);
  BOOST_TEST(turn.detail.span == 4u);
  BOOST_TEST(turn.detail.last);
  const sweep_step won = s.tried({});
  BOOST_TEST((won.what == kind::won));
  BOOST_TEST(won.detail.index == 3u);
}

BOOST_AUTO_TEST_CASE(pointers_outside_the_window_are_ignored_and_turns_are_bounded) {
  permit_sweep s{4};
  s.start(0);
  // Past the window (4 permits read): not a permit the try read.
  BOOST_TEST((s.tried(error::contended, 4).what == kind::lost));
  // A free permit taken by another each time: a sweep follows at most `permits` pointers.
  s.start(0);
  std::size_t turns = 0;
  sweep_step step = s.tried(error::contended, 1);
  while (step.what == kind::send_round) {
    ++turns;
    step = s.tried(error::contended, 1);
  }
  BOOST_TEST(turns == 4u);
  BOOST_TEST((step.what == kind::lost));
  BOOST_TEST(step.ec == error::contended);
}

BOOST_AUTO_TEST_CASE(every_permit_held_is_contended) {
  const sweep_step s = sweep(40, {error::contended, error::contended, error::contended});
  BOOST_TEST((s.what == kind::lost));
  BOOST_TEST(s.ec == error::contended);
}

BOOST_AUTO_TEST_CASE(a_window_that_could_not_be_asked_wins_over_held_ones) {
  // The unasked permits may be free: "all held" would be a guess (and exit 75 for 69).
  const sweep_step s = sweep(40, {error::contended, error::no_quorum, error::validity_exhausted});
  BOOST_TEST((s.what == kind::lost));
  BOOST_TEST(s.ec == error::no_quorum);
}

BOOST_AUTO_TEST_CASE(wrong_type_fails_the_sweep_only_at_every_permit) {
  // The script says wrong type only when its whole window is; the sweep only when every
  // window said so.
  const sweep_step some = sweep(20, {error::wrong_type, error::contended});
  BOOST_TEST(some.ec == error::contended);
  const sweep_step all = sweep(20, {error::wrong_type, error::wrong_type});
  BOOST_TEST(all.ec == error::wrong_type);
}

BOOST_AUTO_TEST_CASE(shutdown_cancellation_and_argument_errors_end_the_call_at_once) {
  for (const error e : {error::shut_down, error::cancelled, error::invalid_ttl}) {
    permit_sweep s{3};
    s.start(0);
    const sweep_step step = s.tried(e);
    BOOST_TEST((step.what == kind::complete));
    BOOST_TEST(step.ec == e);
  }
}

BOOST_AUTO_TEST_CASE(another_count_on_the_nodes_ends_the_call_at_once) {
  // No sweep mends it: the nodes' record lives while a permit of that count is held.
  permit_sweep s{3};
  s.start(1);
  const sweep_step step = s.tried(error::permit_count_mismatch);
  BOOST_TEST((step.what == kind::complete));
  BOOST_TEST(step.ec == error::permit_count_mismatch);
}

BOOST_AUTO_TEST_CASE(a_new_sweep_forgets_the_last_ones_failures) {
  permit_sweep s{20};
  s.start(0);
  s.tried(error::no_quorum);
  BOOST_TEST(s.tried(error::contended).ec == error::no_quorum);
  s.start(1);
  s.tried(error::contended);
  BOOST_TEST(s.tried(error::contended).ec == error::contended);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(semaphore_keys)

BOOST_AUTO_TEST_CASE(permits_and_the_record_share_the_semaphores_hash_tag) {
  for (const std::string prefix : {"", "app:", "app{x:"}) {
    for (const std::string name : {"pool", "a:b", "odd{name}", "x}y"}) {
      const auto slot = detail::key_slot(prefix + detail::permit_record_name(name));
      for (std::size_t i : {0u, 1u, 63u})
        BOOST_TEST(detail::key_slot(prefix + detail::permit_key_name(name, i)) == slot,
                   prefix << name << " " << i);
    }
  }
  BOOST_TEST(detail::permit_key_name("pool", 3) == "redlock:permit:{pool}:3");
  BOOST_TEST(detail::permit_record_name("pool") == "redlock:permit:{pool}:count");
  BOOST_TEST(permit_resource("pool", 3) == "redlock:permit:{pool}:3");
}

BOOST_AUTO_TEST_CASE(no_plain_call_can_name_a_semaphores_keys) {
  const config cfg{};
  const lock_options opts{.ttl = std::chrono::milliseconds{1000}};
  for (const std::string& name :
       {detail::permit_key_name("pool", 0), detail::permit_record_name("pool"),
        std::string{"redlock:permit"}}) {
    BOOST_TEST((detail::check_lock_call(name, opts, false, cfg).code == error::invalid_resource),
               name);
    BOOST_TEST(!detail::check_lock_call(name, opts, false, cfg, true), name);
    std::vector<std::string> set{"other", name};
    BOOST_TEST((detail::check_set_call(set, opts, false, cfg).code == error::invalid_resource));
  }
  // Before the change, a permit's key was the resource plus a suffix: such names are plain
  // names again, and reach no permit.
  BOOST_TEST(!detail::check_lock_call("pool:permit:0", opts, false, cfg));
}

BOOST_AUTO_TEST_CASE(a_name_that_cannot_be_a_hash_tag_is_refused_for_semaphores) {
  BOOST_TEST(!detail::semaphore_name_problem("}pool").empty());
  BOOST_TEST(!detail::semaphore_name_problem("").empty());
  BOOST_TEST(detail::semaphore_name_problem("pool}").empty());
}

BOOST_AUTO_TEST_CASE(the_record_outlives_a_permit_by_a_renewals_margin) {
  using std::chrono::milliseconds;
  for (const milliseconds ttl : {milliseconds{1}, milliseconds{1000}, milliseconds{86400000}})
    BOOST_TEST(detail::permit_record_keep(ttl).count() >= 2 * ttl.count());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(permit_answers)

namespace {

using resp::type;
using answer = detail::lock_answer::kind;

resp::reply array(std::vector<resp::node> elements) {
  resp::reply r{{.kind = type::array, .size = elements.size()}};
  r.insert(r.end(), elements.begin(), elements.end());
  return r;
}
resp::node integer(std::int64_t v) {
  return {.kind = type::integer, .depth = 1, .integer = v};
}
resp::node text(std::string_view t) {
  return {.kind = type::bulk_string, .depth = 1, .text = t};
}
resp::node nil() {
  return {.kind = type::null, .depth = 1};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_node_recording_another_count_names_it) {
  for (const bool fenced : {false, true}) {
    const auto a = detail::read_permit_answer(array({integer(4), text("3")}), fenced);
    BOOST_TEST((a.what == answer::other_count));
    BOOST_TEST(a.count == 3u);
  }
}

BOOST_AUTO_TEST_CASE(a_count_that_is_not_a_number_is_malformed) {
  for (const std::string_view bad : {"", "3x", "-1"})
    BOOST_TEST((detail::read_permit_answer(array({integer(4), text(bad)}), false).what ==
                answer::malformed));
}

BOOST_AUTO_TEST_CASE(a_permit_try_is_otherwise_read_as_a_lock_try) {
  BOOST_TEST(
      (detail::read_permit_answer(array({integer(1), integer(0)}), false).what == answer::taken));
  const auto held = detail::read_permit_answer(array({integer(0), text("tok")}), false);
  BOOST_TEST((held.what == answer::held));
  BOOST_TEST(held.holder == "tok");
  const auto fenced =
      detail::read_permit_answer(array({integer(1), integer(9), text("marker")}), true);
  BOOST_TEST((fenced.what == answer::taken));
  BOOST_TEST(fenced.counter == 9u);
  // No fair line for permits: a fair answer is not one of theirs.
  BOOST_TEST((detail::read_permit_answer(array({integer(3), text("id")}), false).what ==
              answer::malformed));
}

BOOST_AUTO_TEST_CASE(a_held_permit_with_a_free_one_further_on_points_at_it) {
  for (const bool fenced : {false, true}) {
    const auto a = detail::read_permit_answer(array({integer(5), integer(2)}), fenced);
    BOOST_TEST((a.what == answer::held));
    BOOST_TEST(a.free_at == 2u);
    BOOST_TEST(!a.named);
    // Not a permit after the one asked for: not an answer the script gives.
    for (const std::int64_t bad : {0, -1})
      BOOST_TEST((detail::read_permit_answer(array({integer(5), integer(bad)}), fenced).what ==
                  answer::malformed));
    BOOST_TEST((detail::read_permit_answer(array({integer(5), text("2")}), fenced).what ==
                answer::malformed));
  }
  // A permit of another type in the way: held, nobody named.
  const auto odd = detail::read_permit_answer(array({integer(0), nil()}), false);
  BOOST_TEST((odd.what == answer::held));
  BOOST_TEST(!odd.named);
}

BOOST_AUTO_TEST_CASE(a_semaphores_line_lives_beside_its_permits) {
  for (const std::string prefix : {"", "app{x:"}) {
    const std::string record = prefix + detail::permit_record_name("pool");
    const auto keys = detail::permit_line_of(record);
    BOOST_TEST(keys.line == prefix + "redlock:permit:{pool}:line");
    BOOST_TEST(keys.lapse == prefix + "redlock:permit:{pool}:lapse");
    // Named alike from a permit's key, and in the permits' slot.
    const auto from_permit = detail::permit_line_of(prefix + detail::permit_key_name("pool", 7));
    BOOST_TEST(from_permit.line == keys.line);
    BOOST_TEST(detail::key_slot(keys.line) == detail::key_slot(record));
    BOOST_TEST(detail::key_slot(keys.lapse) == detail::key_slot(record));
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---- what a sweep's tries are told besides their votes --------------------------------------

BOOST_AUTO_TEST_SUITE(permit_try_answers_)

using detail::permit_try_answers;

BOOST_AUTO_TEST_CASE(a_majority_of_pointers_names_the_next_permit_and_a_minority_none) {
  permit_try_answers a;
  a.sent(1, true);
  BOOST_TEST(!a.held(1, 0, 2));
  BOOST_TEST(a.pointed(3) == 0u);  // one node's free permit: a leftover, not asked for
  BOOST_TEST(!a.held(1, 1, 3));
  BOOST_TEST(a.pointed(3) == 0u);  // two nodes, two different permits
  BOOST_TEST(!a.held(1, 2, 2));
  BOOST_TEST(a.pointed(3) == 2u);
  a.sent(2, true);  // a new try starts over
  BOOST_TEST(a.pointed(3) == 0u);
}

BOOST_AUTO_TEST_CASE(late_answers_of_an_earlier_try_count_for_nothing) {
  permit_try_answers a;
  a.sent(1, true);
  a.sent(2, true);
  BOOST_TEST(!a.held(1, 0, 1));
  BOOST_TEST(!a.held(1, 1, 1));
  BOOST_TEST(a.pointed(3) == 0u);
  BOOST_TEST(!a.held(1, 2, 0));  // a place kept by the earlier try: not this try's
  const auto kept = a.won();
  BOOST_TEST(!kept[2]);
}

BOOST_AUTO_TEST_CASE(a_won_call_leaves_the_places_its_try_kept_and_those_kept_after) {
  permit_try_answers a;
  a.sent(7, true);
  BOOST_TEST(!a.held(7, 1, 0));  // held, place kept: left only once the call won
  const auto kept = a.won();
  BOOST_TEST(kept[1]);
  BOOST_TEST(!kept[0]);
  BOOST_TEST(!kept[2]);
  BOOST_TEST(a.held(7, 2, 0));   // a late answer that kept the place: left at once
  BOOST_TEST(!a.held(7, 0, 3));  // a pointer keeps no place
  BOOST_TEST(!a.held(8, 0, 0));  // nor does an answer to another try
}

BOOST_AUTO_TEST_CASE(a_try_without_a_place_keeps_none_to_leave) {
  permit_try_answers a;
  a.sent(1, false);
  BOOST_TEST(!a.held(1, 0, 0));
  BOOST_TEST(!a.held(1, 1, 0));
  const auto kept = a.won();
  BOOST_TEST(!kept[0]);
  BOOST_TEST(!kept[1]);
  BOOST_TEST(!a.held(1, 2, 0));
}

BOOST_AUTO_TEST_CASE(pointers_past_the_window_and_unknown_nodes_are_ignored) {
  permit_try_answers a;
  a.sent(1, true);
  BOOST_TEST(!a.held(1, 0, detail::permit_sweep::window));
  BOOST_TEST(!a.held(1, 1, detail::permit_sweep::window + 5));
  BOOST_TEST(a.pointed(2) == 0u);
  BOOST_TEST(!a.held(1, max_nodes, 0));
  const auto kept = a.won();
  for (bool k : kept) BOOST_TEST(!k);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the keyspace: every name of a key, from the config's prefix --------------------------

BOOST_AUTO_TEST_SUITE(keyspace_names)

BOOST_AUTO_TEST_CASE(every_name_starts_with_the_prefix_and_keeps_its_layout) {
  redlock::config cfg;
  cfg.key_prefix = "app:";
  const detail::keyspace k{cfg};
  BOOST_TEST(k.prefix_size() == 4u);
  BOOST_TEST(k.key("orders") == "app:orders");
  BOOST_TEST(k.fence_hash() == "app:redlock:fence");
  BOOST_TEST(k.fence_marker() == "app:redlock:fence:marker");
  BOOST_TEST(k.fence_hash("t") == "app:redlock:fence:{t}");
  BOOST_TEST(k.fence_marker("t") == "app:redlock:fence:marker:{t}");
  BOOST_TEST(k.fair_line("{t}:", "orders") == "app:redlock:line:{t}:orders");
  BOOST_TEST(k.fair_expiry("", "orders") == "app:redlock:line-expiry:orders");
  BOOST_TEST(k.election_record("", "boss") == "app:redlock:election:boss");
  BOOST_TEST(k.permit_offers("r1") == "app:redlock:permit:offers:r1");
  BOOST_TEST(k.key(detail::permit_key_name("pool", 2)) == "app:redlock:permit:{pool}:2");
}

BOOST_AUTO_TEST_CASE(key_into_writes_what_key_returns_over_what_was_there) {
  redlock::config cfg;
  cfg.key_prefix = "p/";
  const detail::keyspace k{cfg};
  std::string out = "something longer than the key";
  k.key_into(out, "r");
  BOOST_TEST(out == k.key("r"));
  BOOST_TEST(out == "p/r");
}

BOOST_AUTO_TEST_CASE(an_empty_prefix_names_the_bare_keys) {
  const detail::keyspace k{redlock::config{}};
  BOOST_TEST(k.prefix_size() == 0u);
  BOOST_TEST(k.key("r") == "r");
  BOOST_TEST(k.fence_marker() == "redlock:fence:marker");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- grants: permits the nodes' releases handed straight to a waiting call's place ---------

namespace {

using detail::permit_grants;
using namespace std::chrono_literals;

constexpr auto grant_ttl = std::chrono::milliseconds{10'000};
const redlock::boot_clock::time_point t0{std::chrono::hours{1}};

// A place sent at t0 under subscriptions 1, 2, 3 of nodes 0, 1, 2.
permit_grants sent_place() {
  permit_grants g{grant_ttl, 0.01};
  g.place_sent(t0, {1, 2, 3});
  return g;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(permit_grant_rules)

BOOST_AUTO_TEST_CASE(a_majority_of_one_permit_wins_it_valid_from_the_place_first_try) {
  auto g = sent_place();
  BOOST_TEST(!g.granted(0, 2, 1, true, t0 + 1ms, 3).has_value());
  const auto won = g.granted(2, 2, 3, true, t0 + 2ms, 3);
  BOOST_TEST_REQUIRE(won.has_value());
  BOOST_TEST(*won == 2u);
  // TTL less drift (1% + 2 ms), counted from the first try, not from the grants.
  BOOST_TEST((g.deadline() == t0 + grant_ttl - 100ms - 2ms));
  // A later try with the same place keeps the first one's time.
  g.place_sent(t0 + 5s, {1, 2, 3});
  BOOST_TEST((g.deadline() == t0 + grant_ttl - 102ms));
}

BOOST_AUTO_TEST_CASE(a_grant_counts_only_on_the_subscription_its_try_went_out_under) {
  auto g = sent_place();
  // Node 1 heard on a later subscription (its connection dropped and came back: the server may
  // have restarted since the try), node 2 with none when the try went out.
  permit_grants none{grant_ttl, 0.01};
  none.place_sent(t0, {1, 2, 0});
  BOOST_TEST(!none.granted(2, 0, 3, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!none.granted(0, 0, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.granted(1, 0, 7, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.granted(0, 0, 1, true, t0 + 2ms, 3).has_value());
  // The third node's grant makes the majority with node 0's: node 1's never counted.
  BOOST_TEST(g.granted(2, 0, 3, true, t0 + 3ms, 3).has_value());
}

BOOST_AUTO_TEST_CASE(a_node_that_may_not_vote_is_not_counted) {
  auto g = sent_place();
  BOOST_TEST(!g.granted(0, 1, 1, false, t0 + 1ms, 3).has_value());  // restart guard, replica...
  BOOST_TEST(!g.granted(1, 1, 2, true, t0 + 2ms, 3).has_value());
  BOOST_TEST(g.granted(2, 1, 3, true, t0 + 3ms, 3).has_value());
}

BOOST_AUTO_TEST_CASE(a_node_counts_once_however_often_it_grants) {
  auto g = sent_place();
  BOOST_TEST(!g.granted(0, 3, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.granted(0, 3, 1, true, t0 + 2ms, 3).has_value());
  BOOST_TEST(!g.granted(0, 3, 1, true, t0 + 3ms, 3).has_value());
  BOOST_TEST(g.granted(1, 3, 2, true, t0 + 4ms, 3).has_value());
}

BOOST_AUTO_TEST_CASE(grants_past_half_the_ttl_do_not_count) {
  auto g = sent_place();
  BOOST_TEST(!g.granted(0, 0, 1, true, t0 + 5s, 3).has_value());
  BOOST_TEST(!g.granted(1, 0, 2, true, t0 + 6s, 3).has_value());
  BOOST_TEST(!g.granted(2, 0, 3, true, t0 + 7s, 3).has_value());
  BOOST_TEST(g.hopeless(3));
  // Just before half: counted.
  auto h = sent_place();
  BOOST_TEST(!h.granted(0, 0, 1, true, t0 + 4999ms, 3).has_value());
  BOOST_TEST(h.granted(1, 0, 2, true, t0 + 4999ms, 3).has_value());
}

BOOST_AUTO_TEST_CASE(no_grant_counts_before_a_try_carried_the_place) {
  permit_grants g{grant_ttl, 0.01};
  BOOST_TEST(!g.granted(0, 0, 1, true, t0, 3).has_value());
  BOOST_TEST(!g.granted(1, 0, 2, true, t0, 3).has_value());
  BOOST_TEST(!g.granted(2, 0, 3, true, t0, 3).has_value());
}

BOOST_AUTO_TEST_CASE(different_permits_from_the_nodes_are_a_split) {
  auto g = sent_place();
  BOOST_TEST(!g.split());
  BOOST_TEST(!g.granted(0, 1, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.split());
  BOOST_TEST(!g.hopeless(3));  // two nodes still silent could make permit 1's majority
  BOOST_TEST(!g.granted(2, 0, 3, true, t0 + 2ms, 3).has_value());
  BOOST_TEST(g.split());
  BOOST_TEST(!g.hopeless(3));  // node 1 could still grant 0 or 1
  BOOST_TEST(!g.granted(1, 2, 2, true, t0 + 3ms, 3).has_value());
  BOOST_TEST(g.hopeless(3));  // every node popped the place, no permit has two
  // All three are let go when the call keeps none, the others when it keeps one.
  BOOST_TEST(g.stray(std::nullopt).size() == 3u);
  const auto others = g.stray(1u);
  BOOST_TEST_REQUIRE(others.size() == 2u);
  BOOST_TEST(others[0].index == 0u);
  BOOST_TEST(others[1].index == 2u);
  BOOST_TEST(g.from(1));
}

BOOST_AUTO_TEST_CASE(a_won_permit_is_kept_when_a_later_grant_splits_the_place) {
  // Permit 2 won on nodes 0 and 1 while the call's try is out: the try's completion takes it.
  // Node 2's later grant of permit 0 (another release that reached it first) is a stray, not a
  // reason to give the won permit back.
  auto g = sent_place();
  BOOST_TEST(!g.granted(0, 2, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.won(3).has_value());
  BOOST_TEST(g.granted(1, 2, 2, true, t0 + 2ms, 3).has_value());
  BOOST_TEST(!g.granted(2, 0, 3, true, t0 + 3ms, 3).has_value());
  BOOST_TEST(g.split());
  BOOST_TEST_REQUIRE(g.won(3).has_value());
  BOOST_TEST(*g.won(3) == 2u);
  BOOST_TEST(!g.give_back(3));
  const auto strays = g.stray(2u);
  BOOST_TEST_REQUIRE(strays.size() == 1u);
  BOOST_TEST(strays[0].node == 2u);
  // Unwon, the same split is given back.
  auto h = sent_place();
  BOOST_TEST(!h.granted(0, 2, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!h.granted(2, 0, 3, true, t0 + 3ms, 3).has_value());
  BOOST_TEST(h.give_back(3));
  // Uncounted grants (another subscription) win nothing, however many.
  auto u = sent_place();
  BOOST_TEST(!u.granted(0, 1, 9, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!u.granted(1, 1, 9, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!u.won(3).has_value());
  BOOST_TEST(u.give_back(3));
}

BOOST_AUTO_TEST_CASE(a_place_goes_stale_past_a_quarter_of_the_ttl_and_renewing_forgets) {
  auto g = sent_place();
  BOOST_TEST(!g.stale(t0 + 2500ms));
  BOOST_TEST(g.stale(t0 + 2501ms));
  BOOST_TEST(!g.granted(0, 0, 1, true, t0 + 1ms, 3).has_value());
  BOOST_TEST(!g.empty());
  g.renewed();
  BOOST_TEST(g.empty());
  BOOST_TEST(!g.stale(t0 + 1h));
  BOOST_TEST(!g.from(0));
  // Forgotten: the node's earlier grant no longer makes a majority with a new one.
  g.place_sent(t0 + 10ms, {1, 2, 3});
  BOOST_TEST(!g.granted(1, 0, 2, true, t0 + 11ms, 3).has_value());
  BOOST_TEST((g.deadline() == t0 + 10ms + grant_ttl - 102ms));
}

BOOST_AUTO_TEST_SUITE_END()
