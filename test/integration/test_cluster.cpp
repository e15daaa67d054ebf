// SPDX-License-Identifier: BSL-1.0
// A Redlock node that is a Redis Cluster: real clusters made by redis-cli --cluster create
// on loopback, beside plain servers in one fleet.

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "async_helpers.hpp"
#include "connection/slots.hpp"
#include "fast_config.hpp"
#include "process_wait.hpp"
#include "redis_cluster.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;

namespace {

// One cluster of 3 primaries as node 0, and two plain servers: a fleet of three nodes.
struct mixed_fleet {
  redlock::test::redis_cluster cluster{3};
  redlock::test::redis_fleet plain{2};
  asio::io_context io;

  redlock::config config() const {
    auto uris = plain.uris();
    uris.insert(uris.begin(), cluster.uri());
    auto cfg = redlock::test::fast_config(std::move(uris));
    cfg.node_timeout = 500ms;
    return cfg;
  }
  redlock::client make_client() { return redlock::client{io.get_executor(), config()}; }

  // Whether the cluster holds `key` (asked of its owner) with `token`.
  bool cluster_holds(const std::string& key, std::string_view token) const {
    const auto owner = cluster.owner_of(redlock::detail::key_slot(key));
    return cluster[owner].command({"GET", key}).text == token;
  }
  // The sum over the cluster's servers of the number after `field` in INFO `section`.
  std::int64_t info_total(const char* section, const std::string& field) const {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      const std::string info = cluster[i].command({"INFO", section}).text;
      if (auto at = info.find(field); at != std::string::npos)
        n += std::stoll(info.substr(at + field.size()));
    }
    return n;
  }
  // How often the cluster's servers ran `command` ("cluster|slots").
  std::int64_t calls(std::string_view command) const {
    return info_total("commandstats", "cmdstat_" + std::string{command} + ":calls=");
  }
  // How often the cluster's servers answered `kind` (MOVED, ASK, CROSSSLOT).
  std::int64_t redirections(std::string_view kind) const {
    return info_total("errorstats", "errorstat_" + std::string{kind} + ":count=");
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cluster_node, mixed_fleet)

BOOST_AUTO_TEST_CASE(our_key_slots_are_the_clusters) {
  std::mt19937 rng{42};
  for (int i = 0; i < 300; ++i) {
    std::string key = "k" + std::to_string(rng());
    if (i % 3 == 0) key = "pre{" + std::to_string(rng() % 97) + "}:" + key;
    if (i % 7 == 0) key = "{}" + key;  // an empty tag: the whole key counts
    const auto r = cluster[0].command({"CLUSTER", "KEYSLOT", key});
    BOOST_TEST(r.integer == redlock::detail::key_slot(key), key);
  }
}

BOOST_AUTO_TEST_CASE(locks_spread_over_the_shards_and_each_is_held_by_its_owner) {
  auto c = make_client();
  std::vector<redlock::lock> held;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 60; ++i) {
      auto lk = co_await c.async_lock("order:" + std::to_string(i), {.ttl = 10s, .wait = 2s},
                                      asio::use_awaitable);
      BOOST_TEST(lk.valid());
      held.push_back(std::move(lk));
    }
  }());
  // Every primary got some of the keys, each on the shard that owns its slot, with a TTL.
  for (std::size_t p : cluster.primaries())
    BOOST_TEST(cluster[p].command({"DBSIZE"}).integer > 0, "primary " << p);
  for (const auto& lk : held) {
    const std::string key{lk.resource()};
    const std::size_t owner = cluster.owner_of(redlock::detail::key_slot(key));
    BOOST_TEST(cluster[owner].command({"GET", key}).text == lk.token());
    const auto pttl = cluster[owner].command({"PTTL", key}).integer;
    BOOST_TEST((pttl > 0 && pttl <= 10000));
  }
  BOOST_TEST(cluster.total_keys() == 60);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (auto& lk : held) co_await c.async_unlock(std::move(lk), asio::use_awaitable);
  }());
  // Releases are answered by a majority; the cluster's may lag behind: wait for them.
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return cluster.total_keys() == 0; }, 5s));
}

BOOST_AUTO_TEST_CASE(a_second_client_is_refused_what_the_first_holds_and_gets_it_after) {
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // With one plain server frozen a lock needs the cluster: once it is won, the cluster
    // holds the key.
    plain[1].freeze();
    auto lk = co_await a.async_lock("res", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    plain[1].thaw();
    BOOST_TEST(cluster_holds("res", lk.token()));
    // Inspection reads the key on the primary that owns it.
    auto report = co_await b.async_inspect("res", asio::use_awaitable);
    BOOST_TEST(report.at(0).error.message() == error_code{}.message());
    BOOST_TEST((report.at(0).key == redlock::node_report::key_state::held));
    BOOST_TEST(report.at(0).holder == lk.token());
    BOOST_TEST(report.at(0).role == "master");
    auto [ec, other] =
        co_await b.async_try_lock("res", {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended);
    co_await a.async_extend(lk, 8s, asio::use_awaitable);
    BOOST_TEST(lk.valid());
    co_await a.async_unlock(std::move(lk), asio::use_awaitable);
    plain[1].freeze();
    auto mine = co_await b.async_lock("res", {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    plain[1].thaw();
    BOOST_TEST(cluster_holds("res", mine.token()));
    co_await b.async_unlock(std::move(mine), asio::use_awaitable);
  }());
}

// Fenced sets on a fleet with a cluster node: each key's counter lives in its own slot's pair,
// the set's call is split per shard, tokens rise per resource across sets and single locks of
// either client, a contender gets nothing, and a pair that vanished on one shard is repaired
// from the answer that names it.
BOOST_AUTO_TEST_CASE(fenced_sets_span_the_shards_with_tokens_that_rise_per_resource) {
  auto cfg = config();
  cfg.node_timeout = 2s;  // a slot's first repair reads every node
  redlock::client a{io.get_executor(), cfg};
  redlock::client b{io.get_executor(), cfg};
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) names.push_back("fset:" + std::to_string(i));
  std::map<std::string, std::uint64_t> last;
  int violations = 0;
  auto note = [&](const std::string& r, std::uint64_t fence) {
    if (fence <= last[r]) ++violations;
    last[r] = fence;
  };
  const redlock::lock_options fenced{.ttl = 5s, .wait = 5s, .fenced = true};
  // Whether the cluster's pair of every row is marked (repaired).
  auto cluster_marked = [&] {
    for (const auto& r : names) {
      const auto slot = redlock::detail::key_slot(r);
      const std::string marker =
          "redlock:fence:marker:{" + std::string{redlock::detail::slot_tag(slot)} + "}";
      if (!cluster[cluster.owner_of(slot)].marker_names_me(marker)) return false;
    }
    return true;
  };
  // Whether client `c` is connected to every node again (after a thaw).
  auto connected_everywhere = [&](redlock::client& c) -> asio::awaitable<bool> {
    for (int i = 0; i < 500; ++i) {
      auto reports = co_await c.async_inspect("probe", asio::use_awaitable);
      if (std::all_of(reports.begin(), reports.end(), [](const auto& n) { return !n.error; }))
        co_return true;
      asio::steady_timer apart{co_await asio::this_coro::executor, 10ms};
      co_await apart.async_wait(asio::use_awaitable);
    }
    co_return false;
  };
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        // Rounds with every node up (the first ones repair each slot's pair), then, once
        // the cluster's pairs are repaired, with a plain node frozen, so that the cluster's
        // answer is needed.
        for (int round = 0; round < 6; ++round) {
          if (round == 3) {
            BOOST_TEST_REQUIRE(co_await redlock::test::eventually(cluster_marked));
            plain[1].freeze();
          }
          redlock::client& c = round % 2 ? a : b;
          auto set = co_await c.async_lock_all(names, fenced, asio::use_awaitable);
          BOOST_TEST_REQUIRE(set.fences().size() == names.size());
          for (std::size_t k = 0; k < names.size(); ++k) note(set.resources()[k], set.fences()[k]);
          if (round >= 3)  // won with the cluster's vote (before, it may lag the majority)
            for (const auto& r : names) BOOST_TEST(cluster_holds(r, set.token()), r);
          // The other client wants one of the set's rows: it gets none of its names.
          std::vector<std::string> theirs{names[2], "free:1", "free:2"};
          redlock::client& other = round % 2 ? b : a;
          auto [ec, none] = co_await other.async_try_lock_all(theirs, fenced,
                                                              asio::as_tuple(asio::use_awaitable));
          BOOST_TEST(ec == redlock::error::contended, ec.message());
          co_await c.async_unlock(std::move(set), asio::use_awaitable);
          // A single fenced lock on a row of the set shares its counter.
          auto one =
              co_await other.async_lock(names[round % names.size()], fenced, asio::use_awaitable);
          note(names[round % names.size()], one.fence());
          co_await other.async_unlock(std::move(one), asio::use_awaitable);
        }
        plain[1].thaw();
        BOOST_TEST_REQUIRE(co_await connected_everywhere(a));
      }(),
      60s);
  BOOST_TEST(violations == 0);
  // Each row's counter sits in its slot's pair on the primary that owns it.
  for (const auto& r : names) {
    const auto slot = redlock::detail::key_slot(r);
    const std::string tag{redlock::detail::slot_tag(slot)};
    const auto owner = cluster.owner_of(slot);
    BOOST_TEST(cluster[owner].marker_names_me("redlock:fence:marker:{" + tag + "}"), r);
    BOOST_TEST(!cluster[owner].command({"HGETALL", "redlock:fence:{" + tag + "}"}).elements.empty(),
               r);
  }

  // One row's pair vanishes on the cluster: the next set is won on the plain nodes, and the
  // cluster's answer naming that row starts its repair.
  const std::string& gone = names[4];
  const std::string tag{redlock::detail::slot_tag(redlock::detail::key_slot(gone))};
  const auto owner = cluster.owner_of(redlock::detail::key_slot(gone));
  const std::string marker = "redlock:fence:marker:{" + tag + "}";
  cluster[owner].command({"DEL", "redlock:fence:{" + tag + "}", marker});
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto set = co_await a.async_lock_all(names, fenced, asio::use_awaitable);
    for (std::size_t k = 0; k < names.size(); ++k) note(set.resources()[k], set.fences()[k]);
    co_await a.async_unlock(std::move(set), asio::use_awaitable);
  }());
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return cluster[owner].marker_names_me(marker); }, 5s));
  // Repaired: with a plain node frozen, the cluster's vote counts again for that row.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    plain[1].freeze();
    auto set = co_await b.async_lock_all(names, fenced, asio::use_awaitable);
    for (std::size_t k = 0; k < names.size(); ++k) note(set.resources()[k], set.fences()[k]);
    co_await b.async_unlock(std::move(set), asio::use_awaitable);
    plain[1].thaw();
  }());
  BOOST_TEST(violations == 0);
  BOOST_TEST(redirections("CROSSSLOT") == 0);
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return cluster.keys_without_ttl().find("fset") == std::string::npos; }, 5s));
}

// Fair locks on a fleet with a cluster node: the line and its expiry set are named with the
// lock key's slot tag, so that the acquire script touches one slot (else CROSSSLOT); a
// waiter in line gets the lock when it is released, fenced or not.
BOOST_AUTO_TEST_CASE(fair_lines_live_in_the_lock_keys_slot_and_serve_the_waiter) {
  auto a = make_client();
  auto b = make_client();
  auto c = make_client();
  for (const bool fenced : {false, true}) {
    const std::string name = fenced ? "fair:fenced" : "fair:plain";
    bool b_got = false;
    std::string b_token;
    run_bounded(io, [&]() -> asio::awaitable<void> {
      // Unfenced, every lock needs the cluster; fenced, the slot's first repair reads every
      // node, so all run (the cluster's answers show in CROSSSLOT below).
      if (!fenced) plain[1].freeze();
      redlock::lock_options fair{.ttl = 5s, .wait = 5s, .fair = true};
      fair.fenced = fenced;
      auto held = co_await a.async_lock(name, fair, asio::use_awaitable);
      // b waits in line; its place is on the cluster, in the lock key's slot.
      auto ex = co_await asio::this_coro::executor;
      asio::steady_timer b_done{ex, std::chrono::steady_clock::time_point::max()};
      asio::co_spawn(
          ex,
          [&]() -> asio::awaitable<void> {
            // Errors are kept, not thrown: b_done must end the wait whatever b got.
            auto [ec, lk] = co_await b.async_lock(name, fair, asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(!ec, name << ": b's wait ended with " << ec.message());
            b_got = lk.valid();
            b_token = lk.token();
            if (!ec) co_await b.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
            b_done.cancel();
          },
          asio::detached);
      co_await a.async_unlock(std::move(held), asio::use_awaitable);
      redlock::lock_options try_fair = fair;
      try_fair.wait = 0ms;
      co_await b_done.async_wait(asio::as_tuple(asio::use_awaitable));
      auto after = co_await c.async_lock(name, try_fair, asio::use_awaitable);
      BOOST_TEST(after.valid());
      co_await c.async_unlock(std::move(after), asio::use_awaitable);
      if (!fenced) plain[1].thaw();
    }());
    BOOST_TEST(b_got, name);
    BOOST_TEST(b_token.size() > 0u);
  }
  BOOST_TEST(cluster.keys_without_ttl().find("line") == std::string::npos);
  BOOST_TEST(redirections("CROSSSLOT") == 0);
}

// Claims in batches whose names span the shards: each batch is one call per shard (the
// per-shard script form), and the cluster's answers count as one node's. With a plain
// server frozen every claim needs the cluster.
BOOST_AUTO_TEST_CASE(claim_batches_span_the_shards_and_another_client_sees_each_held_then_done) {
  auto a = make_client();
  auto b = make_client();
  std::vector<std::string> names;
  for (int i = 0; i < 150; ++i) names.push_back("save:" + std::to_string(i));
  std::vector<redlock::claim_result> won;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    plain[1].freeze();
    won = co_await a.async_try_claim(names, 10s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(won.size() == names.size());
    for (std::size_t j = 0; j < won.size(); ++j)
      BOOST_TEST((won[j].status == redlock::claim_status::won), names[j]);
    // Single claims of one coroutine each are coalesced into batches as well.
    std::vector<redlock::lock> singles(40);
    std::size_t single_won = 0;
    co_await [&]() -> asio::awaitable<void> {
      auto ex = co_await asio::this_coro::executor;
      auto left = std::make_shared<std::size_t>(singles.size());
      boost::asio::steady_timer all_in{ex, std::chrono::steady_clock::time_point::max()};
      for (std::size_t k = 0; k < singles.size(); ++k) {
        asio::co_spawn(
            ex,
            [&, k, left]() -> asio::awaitable<void> {
              auto r = co_await a.async_claim("one:" + std::to_string(k), 10s, asio::use_awaitable);
              if (r.status == redlock::claim_status::won) ++single_won;
              singles[k] = std::move(r.lock);
              if (--*left == 0) all_in.cancel();
            },
            asio::detached);
      }
      co_await all_in.async_wait(asio::as_tuple(asio::use_awaitable));
    }();
    BOOST_TEST(single_won == singles.size());
    auto seen = co_await b.async_try_claim(names, 10s, asio::use_awaitable);
    for (std::size_t j = 0; j < seen.size(); ++j)
      BOOST_TEST((seen[j].status == redlock::claim_status::held), names[j]);
    std::vector<redlock::lock> locks;
    for (auto& r : won) locks.push_back(std::move(r.lock));
    auto [ec, settled] = co_await a.async_settle(std::span<redlock::lock>{locks}, 30s,
                                                 asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec.message() == error_code{}.message());
    BOOST_TEST(settled == names.size());
    auto again = co_await b.async_try_claim(names, 10s, asio::use_awaitable);
    for (std::size_t j = 0; j < again.size(); ++j)
      BOOST_TEST((again[j].status == redlock::claim_status::done), names[j]);
    auto [ec2, released] = co_await a.async_settle(std::span<redlock::lock>{singles}, 0ms,
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(released == singles.size());
    plain[1].thaw();
  }());
  // The markers are on the shards that own their slots, each with a TTL; every primary has
  // some, and no call was refused for spanning slots.
  for (const auto& name : names) {
    const std::size_t owner = cluster.owner_of(redlock::detail::key_slot(name));
    BOOST_TEST(cluster[owner].command({"GET", name}).text == "done", name);
  }
  for (std::size_t p : cluster.primaries())
    BOOST_TEST(cluster[p].command({"DBSIZE"}).integer > 0, "primary " << p);
  BOOST_TEST(cluster.keys_without_ttl() == "");
  BOOST_TEST(redirections("CROSSSLOT") == 0);
}

// A claim batch sent on a stale map (a slot moved since the map was read): each slot's part
// is its own call, so the moved name's part goes to the old owner, is answered MOVED and
// follows it: the whole batch is taken, and the node reads the map again.
BOOST_AUTO_TEST_CASE(a_batch_on_a_stale_map_follows_the_move_and_the_map_is_read_again) {
  // The periodic asks (while a primary is still connecting) wait reconnect_max: far off, so
  // that only what the batch's answer causes can bring the new map.
  auto cfg = config();
  cfg.reconnect_max = 60s;
  redlock::client a{io.get_executor(), cfg};
  const std::string moved = "gate:moved";
  const std::uint16_t slot = redlock::detail::key_slot(moved);
  const std::size_t from = cluster.owner_of(slot);
  std::size_t to = from;
  for (std::size_t p : cluster.primaries())
    if (p != from) to = p;
  // Names that stay on the old owner, in other slots.
  std::vector<std::string> stay;
  for (int i = 0; stay.size() < 40; ++i) {
    std::string n = "gate:stay:" + std::to_string(i);
    const auto sl = redlock::detail::key_slot(n);
    if (sl != slot && cluster.owner_of(sl) == from) stay.push_back(std::move(n));
  }
  run_bounded(io, [&]() -> asio::awaitable<void> {
    plain[1].freeze();
    // The map is read (a claim went through the cluster), then the slot moves behind it.
    std::vector<std::string> first{stay[0]};
    auto warm = co_await a.async_try_claim(first, 10s, asio::use_awaitable);
    BOOST_TEST(warm.at(0).won());
  }());
  cluster.move_slot(slot, to);
  const auto maps_before = calls("cluster|slots");
  int attempts = 0;
  bool moved_won = false;
  std::size_t next = 1;
  auto attempt = [&]() -> asio::awaitable<void> {
    ++attempts;
    std::vector<std::string> names{stay[next], moved, stay[next + 1], stay[next + 2]};
    next += 3;
    auto r = co_await a.async_try_claim(names, 10s, asio::use_awaitable);
    BOOST_TEST(r.at(0).won());
    BOOST_TEST(r.at(2).won());
    BOOST_TEST(r.at(3).won());
    moved_won = r.at(1).won();
  };
  run_bounded(io, attempt());
  BOOST_TEST(moved_won);  // by the MOVED reply, at once
  BOOST_TEST(redirections("MOVED") >= 1);
  // The node asks for the map again (after reconnect_min).
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return calls("cluster|slots") > maps_before; }, 5s));
  plain[1].thaw();
  BOOST_TEST(cluster.keys_without_ttl() == "");
  BOOST_TEST(redirections("CROSSSLOT") == 0);
}

// The shards' script caches flushed (SCRIPT FLUSH, a restart's loss of them): the parts'
// EVALSHA of the per-shard forms are answered NOSCRIPT and sent again with the script's
// text, so batches and sets spanning shards still go through.
BOOST_AUTO_TEST_CASE(split_calls_survive_a_flushed_script_cache_on_the_shards) {
  auto c = make_client();
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) names.push_back("flushed:" + std::to_string(i));
  const std::vector<std::string> set{"flushed:set:a", "flushed:set:b", "flushed:set:c"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    std::vector<std::string> first{"flushed:warm"};
    auto warm = co_await c.async_try_claim(first, 2s, asio::use_awaitable);
    BOOST_TEST(warm.at(0).won());
    for (std::size_t p : cluster.primaries()) cluster[p].command({"SCRIPT", "FLUSH"});
    plain[1].freeze();  // the cluster must answer
    auto got = co_await c.async_try_claim(names, 5s, asio::use_awaitable);
    for (std::size_t j = 0; j < got.size(); ++j) BOOST_TEST(got[j].won(), names[j]);
    auto lk = co_await c.async_lock_all(set, {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    for (const auto& r : set) BOOST_TEST(cluster_holds(r, lk.token()), r);
    co_await c.async_unlock(std::move(lk), asio::use_awaitable);
    plain[1].thaw();
  }());
  BOOST_TEST(redirections("NOSCRIPT") > 0);
  BOOST_TEST(redirections("CROSSSLOT") == 0);
}

// Lock sets whose names span the shards: each shard takes its part whole or not at all, the
// cluster counts as one node, and what a refused attempt took is given back.
BOOST_AUTO_TEST_CASE(sets_span_the_shards_and_a_refused_attempt_leaves_nothing_taken) {
  auto a = make_client();
  auto b = make_client();
  std::vector<std::string> mine;
  for (int i = 0; i < 12; ++i) mine.push_back("row:" + std::to_string(i));
  run_bounded(io, [&]() -> asio::awaitable<void> {
    plain[1].freeze();
    auto set = co_await a.async_lock_all(mine, {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    BOOST_TEST(set.valid());
    for (const auto& r : mine) BOOST_TEST(cluster_holds(r, set.token()), r);
    // b wants rows on every shard and one of a's: it gets none of them.
    std::vector<std::string> theirs{"row:3", "other:1", "other:2", "other:3", "other:4"};
    auto [ec, none] =
        co_await b.async_try_lock_all(theirs, {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::contended);
    // The shards that took their part gave it back: an inspection by b goes down the same
    // shard connection as the giving back, after it.
    for (const auto& r : theirs) {
      if (r == "row:3") continue;
      auto report = co_await b.async_inspect(r, asio::use_awaitable);
      BOOST_TEST((report.at(0).key == redlock::node_report::key_state::free), r);
    }
    co_await a.async_extend(set, 8s, asio::use_awaitable);
    BOOST_TEST(set.valid());
    for (const auto& r : mine) {
      const auto owner = cluster.owner_of(redlock::detail::key_slot(r));
      BOOST_TEST(cluster[owner].command({"PTTL", r}).integer > 5000, r);
    }
    co_await a.async_unlock(std::move(set), asio::use_awaitable);
    auto got = co_await b.async_lock_all(theirs, {.ttl = 5s, .wait = 2s}, asio::use_awaitable);
    BOOST_TEST(got.valid());
    for (const auto& r : theirs) BOOST_TEST(cluster_holds(r, got.token()), r);
    co_await b.async_unlock(std::move(got), asio::use_awaitable);
    plain[1].thaw();
  }());
  // Releases answered by a majority; the cluster's may lag: wait for them.
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return cluster.total_keys() == 0; }, 5s));
  BOOST_TEST(redirections("CROSSSLOT") == 0);
}

// Fenced locks on a fleet with a cluster node: the counters of each lock key's slot live in
// that slot ("redlock:fence:{T}"), each slot's are repaired on first use, and tokens rise
// strictly per resource across independent holders.
BOOST_AUTO_TEST_CASE(fenced_tokens_rise_per_resource_with_counters_kept_in_the_keys_slot) {
  // A slot's first repair reads every node: a generous timeout, so that a loaded machine
  // does not leave a slot unrepaired through all the rounds (the final check wants its
  // counters on the cluster).
  auto cfg = config();
  cfg.node_timeout = 2s;
  redlock::client a{io.get_executor(), cfg};
  redlock::client b{io.get_executor(), cfg};
  std::map<std::string, std::uint64_t> last;
  int violations = 0, taken = 0;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        for (int round = 0; round < 6; ++round) {
          for (int r = 0; r < 10; ++r) {
            const std::string name = "fenced:" + std::to_string(r);
            redlock::client& c = (round + r) % 2 ? a : b;
            auto lk = co_await c.async_lock(name, {.ttl = 2s, .wait = 3s, .fenced = true},
                                            asio::use_awaitable);
            if (lk.fence() <= last[name]) ++violations;
            last[name] = lk.fence();
            ++taken;
            co_await c.async_unlock(std::move(lk), asio::use_awaitable);
          }
        }
      }(),
      60s);
  BOOST_TEST(taken == 60);
  BOOST_TEST(violations == 0);
  // The counters sit in the slot of their lock key, on the primary that owns it, beside
  // the slot's marker.
  for (const auto& [name, token] : last) {
    const std::uint16_t slot = redlock::detail::key_slot(name);
    const std::string tag{redlock::detail::slot_tag(slot)};
    BOOST_TEST(redlock::detail::key_slot("redlock:fence:{" + tag + "}") == slot);
    const auto owner = cluster.owner_of(slot);
    const auto fields = cluster[owner].command({"HGETALL", "redlock:fence:{" + tag + "}"});
    BOOST_TEST(!fields.elements.empty(), name);
    BOOST_TEST(cluster[owner].marker_names_me("redlock:fence:marker:{" + tag + "}"));
  }
  // Only counters and markers are left without a TTL.
  BOOST_TEST(cluster.keys_without_ttl().find("fence") != std::string::npos);
}

// A semaphore on a fleet with a cluster node: each permit try is one script over the
// permit, the count's record and the fencing pair, all in the slot of the semaphore's
// hash tag (no CROSSSLOT), and the record there refuses another count.
BOOST_AUTO_TEST_CASE(semaphore_tries_keep_permit_record_and_counters_in_one_slot) {
  auto cfg = config();
  cfg.node_timeout = 2s;  // a slot's first repair reads every node
  redlock::client a{io.get_executor(), cfg};
  redlock::client b{io.get_executor(), cfg};
  std::size_t taken = 0;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        const redlock::lock_options opts{.ttl = 5s, .wait = 5s, .fenced = true};
        for (int round = 0; round < 4; ++round) {
          auto p = co_await redlock::async_lock_permit(a, "sem", 2, opts, asio::use_awaitable);
          auto q = co_await redlock::async_lock_permit(b, "sem", 2, opts, asio::use_awaitable);
          BOOST_TEST(p.index != q.index);
          BOOST_TEST(p.fence() > 0u);
          auto [ec, r] = co_await redlock::async_try_lock_permit(
              b, "sem", 3, {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
          BOOST_TEST(ec == redlock::error::permit_count_mismatch, ec.message());
          taken += 2;
          co_await a.async_unlock(std::move(p.lock), asio::use_awaitable);
          co_await b.async_unlock(std::move(q.lock), asio::use_awaitable);
        }
        co_await a.async_shutdown(asio::use_awaitable);
        co_await b.async_shutdown(asio::use_awaitable);
      }(),
      60s);
  BOOST_TEST(taken == 8u);
  BOOST_TEST(redirections("CROSSSLOT") == 0);
  const std::string record = redlock::permit_count_resource("sem");
  const auto slot = redlock::detail::key_slot(record);
  BOOST_TEST(redlock::detail::key_slot(redlock::permit_resource("sem", 1)) == slot);
  BOOST_TEST(cluster[cluster.owner_of(slot)].command({"GET", record}).text == "2");
}

// A cluster node that lost a slot's fence counters and answers only after the plain
// nodes decided (its primary frozen, then thawed) is repaired from that late answer, with
// no further lock: a node that always lags behind the majority would otherwise stay
// unmarked for that slot, and its votes would never count for tokens.
BOOST_AUTO_TEST_CASE(a_late_unmarked_answer_repairs_the_slot_without_another_lock) {
  auto c = make_client();
  const std::string name = "late-fence";
  const std::uint16_t slot = redlock::detail::key_slot(name);
  const std::string tag{redlock::detail::slot_tag(slot)};
  const std::string hash = "redlock:fence:{" + tag + "}";
  const std::string marker = "redlock:fence:marker:{" + tag + "}";
  const auto owner = cluster.owner_of(slot);
  const redlock::lock_options fenced{.ttl = 5s, .wait = 3s, .fenced = true};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await c.async_lock(name, fenced, asio::use_awaitable);
    co_await c.async_unlock(std::move(first), asio::use_awaitable);
  }());
  BOOST_TEST_REQUIRE(cluster[owner].marker_names_me(marker));
  // The slot's counters vanish on the cluster (as on a primary restarted empty), and its
  // owner answers late.
  cluster[owner].command({"DEL", hash, marker});
  cluster[owner].freeze();
  redlock::lock second;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    second = co_await c.async_lock(name, fenced, asio::use_awaitable);
  }());
  cluster[owner].thaw();
  BOOST_TEST(second.valid());
  BOOST_TEST(second.fence() > 0u);
  const bool repaired = redlock::test::run_until(
      io, [&] { return cluster[owner].marker_names_me(marker); }, 5s);
  BOOST_TEST(repaired, "the slot's marker is back on the cluster");
  // Raised to cover the token handed out while it lagged.
  std::uint64_t highest = 0;
  const auto fields = cluster[owner].command({"HGETALL", hash});
  for (std::size_t k = 1; k < fields.elements.size(); k += 2)
    highest = std::max<std::uint64_t>(highest, std::stoull(fields.elements[k].text));
  BOOST_TEST(highest >= second.fence());
  run_bounded(io, c.async_unlock(std::move(second), asio::use_awaitable));
}

// Two independent clients take and release eight resources of one slot as fast as they
// can while that slot is moved to another primary (with a pause while it is migrating,
// when missing keys are answered ASK) and back: nobody may hold a resource another holds,
// and nothing may be left without a TTL.
BOOST_AUTO_TEST_CASE(a_slot_moved_twice_under_load_leaves_no_overlap_and_no_key_without_ttl) {
  // Single locks, sets spanning shards and claim batches, by three clients, while a slot
  // migrates away and back.
  auto a = make_client();
  auto b = make_client();
  const std::uint16_t slot = redlock::detail::key_slot("{hot}");
  std::atomic<bool> moving{true};
  std::map<std::string, std::string> holder;  // resource -> token, on the io thread
  int overlaps = 0;
  // Cycles completed, told to the mover thread, which waits for some while migrating.
  std::mutex m;
  std::condition_variable progressed;
  int cycles = 0;
  auto worker = [&](redlock::client& c, int seed) -> asio::awaitable<void> {
    std::mt19937 rng(static_cast<unsigned>(seed));
    while (moving.load()) {
      const std::string r = "{hot}:" + std::to_string(rng() % 8);
      auto [ec, lk] =
          co_await c.async_lock(r, {.ttl = 2s, .wait = 200ms}, asio::as_tuple(asio::use_awaitable));
      if (ec) continue;  // contended, or a node busy moving: try another
      if (holder.count(r)) ++overlaps;
      holder[r] = std::string{lk.token()};
      asio::steady_timer t{io, 1ms};
      co_await t.async_wait(asio::use_awaitable);
      if (lk.valid() && holder[r] == lk.token()) holder.erase(r);
      co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
      {
        std::lock_guard g{m};
        ++cycles;
      }
      progressed.notify_all();
    }
  };
  // Sets of a hot name and a name of another slot (so each set is split per shard), on the
  // same resources as the single locks; and claim batches of fresh names, half of them hot.
  int set_cycles = 0, claims_won = 0;
  auto set_worker = [&](redlock::client& c, int seed) -> asio::awaitable<void> {
    std::mt19937 rng(static_cast<unsigned>(seed));
    int batch = 0;
    while (moving.load()) {
      std::vector<std::string> set{"{hot}:" + std::to_string(rng() % 8),
                                   "cold:" + std::to_string(rng() % 8)};
      auto [ec, lk] = co_await c.async_lock_all(set, {.ttl = 2s, .wait = 200ms},
                                                asio::as_tuple(asio::use_awaitable));
      if (!ec) {
        for (const auto& r : set) {
          if (holder.count(r)) ++overlaps;
          holder[r] = lk.token();
        }
        asio::steady_timer t{io, 1ms};
        co_await t.async_wait(asio::use_awaitable);
        for (const auto& r : set)
          if (lk.valid() && holder[r] == lk.token()) holder.erase(r);
        co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
        ++set_cycles;
      }
      std::vector<std::string> names;
      for (int k = 0; k < 8; ++k)
        names.push_back((k % 2 ? "{hot}:claim:" : "claim:") + std::to_string(batch * 8 + k));
      ++batch;
      auto [ec2, won] = co_await c.async_try_claim(names, 2s, asio::as_tuple(asio::use_awaitable));
      std::vector<redlock::lock> locks;
      for (auto& r : won)
        if (r.won()) locks.push_back(std::move(r.lock));
      claims_won += static_cast<int>(locks.size());
      co_await c.async_settle(std::span<redlock::lock>{locks}, 0ms,
                              asio::as_tuple(asio::use_awaitable));
    }
  };
  auto sets = make_client();
  const std::size_t home = cluster.owner_of(slot);
  std::size_t away = 0;
  for (std::size_t p : cluster.primaries())
    if (p != home) away = p;
  std::string mover_error;
  bool cycled_while_migrating = false;
  std::thread mover([&] {
    try {
      // While the slot is migrating (missing keys answered ASK), 20 more cycles complete.
      cluster.move_slot(slot, away, [&] {
        std::unique_lock g{m};
        const int from = cycles;
        cycled_while_migrating = progressed.wait_for(g, 20s, [&] { return cycles >= from + 20; });
      });
      cluster.move_slot(slot, home);
    } catch (const std::exception& e) {
      mover_error = e.what();
    }
    moving = false;
  });
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        // All three run at once (a co_spawn with use_awaitable would start only when
        // awaited); the last to end wakes this one.
        auto ex = co_await asio::this_coro::executor;
        asio::steady_timer all_done{ex, std::chrono::steady_clock::time_point::max()};
        int running = 3;
        std::exception_ptr failed;
        auto finish = [&](std::exception_ptr e) {
          if (e && !failed) failed = e;
          if (--running == 0) all_done.cancel();
        };
        asio::co_spawn(ex, worker(a, 1), finish);
        asio::co_spawn(ex, worker(b, 2), finish);
        asio::co_spawn(ex, set_worker(sets, 3), finish);
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
        if (failed) std::rethrow_exception(failed);
      }(),
      60s);
  mover.join();
  BOOST_TEST(mover_error.empty(), mover_error);
  BOOST_TEST(cycled_while_migrating);
  BOOST_TEST(overlaps == 0);
  BOOST_TEST(cycles > 20);
  BOOST_TEST(set_cycles > 0);
  BOOST_TEST(claims_won > 0);
  BOOST_TEST(cluster.owner_of(slot) == home);
  // The clients were sent elsewhere and followed: without that, no cycle could run once
  // the slot had moved.
  BOOST_TEST(redirections("MOVED") > 0);
  BOOST_TEST(cluster.keys_without_ttl().empty());
  BOOST_TEST(plain.keys_without_ttl().empty());
}

// Faults inside one cluster node: a frozen primary fails only the keys of its slots on
// that node (the other nodes still make a majority, and nothing waits past node_timeout);
// a primary restarted empty holds the whole node back, as a restarted server would.
BOOST_AUTO_TEST_CASE(
    a_frozen_primary_fails_only_its_slots_and_a_restarted_one_holds_the_node_back) {
  auto cfg = config();
  cfg.restart_guard = true;
  cfg.max_ttl = 2s;
  cfg.node_timeout = 200ms;
  // Node 0 reports a restart of one of its primaries: wakes the test (cancels `restarted`).
  asio::steady_timer restarted{io, 20s};
  bool restart_reported = false;
  cfg.on_event = [&](const redlock::node_event& e) {
    if (e.node == 0 && e.what == redlock::node_event::kind::restarted) {
      restart_reported = true;
      restarted.cancel();
    }
  };
  redlock::client c{io.get_executor(), cfg};
  // Names on two different primaries.
  std::string on_frozen = "x", elsewhere;
  const std::size_t frozen = cluster.owner_of(redlock::detail::key_slot(on_frozen));
  for (int i = 0; elsewhere.empty(); ++i)
    if (cluster.owner_of(redlock::detail::key_slot("y" + std::to_string(i))) != frozen)
      elsewhere = "y" + std::to_string(i);
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        // Fresh servers: a waiting lock waits the restart guard out.
        auto warm = co_await c.async_lock("warm", {.ttl = 2s, .wait = 5s}, asio::use_awaitable);
        co_await c.async_unlock(std::move(warm), asio::use_awaitable);
        // A majority was past the guard; the last node started may not be yet (under load
        // it started later), and the try below needs it: wait until every node votes.
        asio::steady_timer pause{io};
        for (bool all_vote = false; !all_vote;) {
          const auto nodes = co_await c.async_inspect("warm", asio::use_awaitable);
          all_vote = std::all_of(nodes.begin(), nodes.end(), [](const auto& n) { return n.votes; });
          if (all_vote) break;
          pause.expires_after(10ms);
          co_await pause.async_wait(asio::use_awaitable);
        }
        cluster[frozen].freeze();
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_try_lock(on_frozen, {.ttl = 500ms}, diag,
                                                  asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec, ec.message() << ": " << diag.message);
        BOOST_TEST(diag.nodes.empty());  // filled only on failure
        // With a plain server frozen too, a majority needs the cluster: its other primaries
        // still answer, so a lock elsewhere is won there.
        plain[1].freeze();
        auto other = co_await c.async_lock(elsewhere, {.ttl = 2s, .wait = 2s}, asio::use_awaitable);
        BOOST_TEST(cluster_holds(elsewhere, other.token()));
        plain[1].thaw();
        cluster[frozen].thaw();
        co_await c.async_unlock(std::move(other), asio::use_awaitable);
        if (!ec) co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
      }(),
      30s);
  // Restarted empty (its cluster config kept: it rejoins owning the same slots).
  cluster[frozen].restart();
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        if (!restart_reported) co_await restarted.async_wait(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST_REQUIRE(restart_reported);
        auto reports = co_await c.async_inspect("", asio::use_awaitable);
        BOOST_TEST(!reports.at(0).votes);
        BOOST_TEST(reports.at(0).held_back.find("restart") != std::string::npos,
                   reports.at(0).held_back);
        // With a plain server frozen a lock needs node 0: waiting, it outlasts the guard and
        // then takes the key on the restarted primary.
        plain[1].freeze();
        auto lk = co_await c.async_lock(on_frozen, {.ttl = 2s, .wait = 6s}, asio::use_awaitable);
        BOOST_TEST(cluster_holds(on_frozen, lk.token()));
        plain[1].thaw();
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
      }(),
      30s);
  BOOST_TEST(cluster.keys_without_ttl().empty());
}

// A slot moved one key at a time, as redis-cli --cluster reshard does, its fence marker
// first, while a second client tries, at every step, the name the first client holds:
// claim batches, unfenced and fenced sets and single locks, each with a name that exists on
// neither server, so that a part of the slot's keys is split between the two. A holds its
// lock on nodes 0 and 1 only (as a claim sent to a majority first would), so that node 0's
// answer decides. A part whose declared keys are not all on the server it reaches is
// answered TRYAGAIN and does not run; were the keys named in ARGV, the part would follow
// ASK to the importing server and find the held name absent there. Fenced locks and sets of
// both clients on one name of the slot must get tokens that strictly rise, and no empty
// counter hash may be created on the importing server (its MIGRATE would then fail with
// BUSYKEY, which move_slot_key_by_key throws).
BOOST_AUTO_TEST_CASE(a_slot_moved_key_by_key_never_gives_a_held_name_to_a_second_client) {
  auto a = make_client();
  auto b = make_client();
  const std::string held = "{b}held", fenced_name = "{b}fenced";
  const std::uint16_t slot = redlock::detail::key_slot(held);
  const std::string tag{redlock::detail::slot_tag(slot)};
  const std::string hash = "redlock:fence:{" + tag + "}";
  const std::string marker = "redlock:fence:marker:{" + tag + "}";
  std::string other;  // a name of another slot, for sets and batches that span slots
  for (int i = 0; other.empty(); ++i)
    if (redlock::detail::key_slot("{o" + std::to_string(i) + "}") != slot)
      other = "{o" + std::to_string(i) + "}";
  const redlock::lock_options fenced{.ttl = 5s, .wait = 3s, .fenced = true};
  std::uint64_t last_token = 0;
  int violations = 0;
  auto note = [&](std::uint64_t token) {
    if (token <= last_token) ++violations;
    last_token = token;
  };
  redlock::lock a_lock;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // The slot's counter pair exists on the cluster (repaired and marked by the first use).
    auto f = co_await a.async_lock(fenced_name, fenced, asio::use_awaitable);
    note(f.fence());
    co_await a.async_unlock(std::move(f), asio::use_awaitable);
    a_lock = co_await a.async_lock(held, {.ttl = 60s, .wait = 3s}, asio::use_awaitable);
  }());
  plain[1].command({"DEL", held});
  BOOST_TEST_REQUIRE(cluster_holds(held, a_lock.token()));
  const std::size_t from = cluster.owner_of(slot);
  std::size_t to = from;
  for (std::size_t p : cluster.primaries())
    if (p != from) to = p;
  int overlaps = 0, steps = 0;
  auto contend = [&](std::size_t moved) {
    ++steps;
    run_bounded(
        io,
        [&]() -> asio::awaitable<void> {
          const std::string fresh = "{b}fresh" + std::to_string(moved);
          std::vector<std::string> batch{fresh, held, other + "c" + std::to_string(moved)};
          auto claims = co_await b.async_try_claim(batch, 5s, asio::use_awaitable);
          if (claims.at(1).won()) ++overlaps;
          for (auto& c : claims)
            if (c.won())
              co_await b.async_unlock(std::move(c.lock), asio::as_tuple(asio::use_awaitable));
          std::vector<std::string> names{fresh, held, other};
          for (const bool fence : {false, true}) {
            auto [ec, set] = co_await b.async_try_lock_all(names, {.ttl = 5s, .fenced = fence},
                                                           asio::as_tuple(asio::use_awaitable));
            if (!ec) {
              ++overlaps;
              co_await b.async_unlock(std::move(set), asio::as_tuple(asio::use_awaitable));
            }
          }
          auto [ec, single] =
              co_await b.async_try_lock(held, {.ttl = 5s}, asio::as_tuple(asio::use_awaitable));
          if (!ec) {
            ++overlaps;
            co_await b.async_unlock(std::move(single), asio::as_tuple(asio::use_awaitable));
          }
          // Fenced turns on one name of the slot, alone and in sets, from both clients.
          for (redlock::client* c : {&a, &b}) {
            auto [fec, lk] =
                co_await c->async_lock(fenced_name, fenced, asio::as_tuple(asio::use_awaitable));
            if (!fec) {
              note(lk.fence());
              co_await c->async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
            }
            std::vector<std::string> pair{fenced_name, other + "f"};
            auto [sec, set] =
                co_await c->async_lock_all(pair, fenced, asio::as_tuple(asio::use_awaitable));
            if (!sec) {
              note(set.fence(fenced_name));
              co_await c->async_unlock(std::move(set), asio::as_tuple(asio::use_awaitable));
            }
          }
        }(),
        60s);
    BOOST_TEST(a_lock.valid());
  };
  cluster.move_slot_key_by_key(slot, to, {marker, hash}, contend);
  BOOST_TEST(steps >= 4);
  BOOST_TEST(overlaps == 0, overlaps << " times B was granted the name A holds");
  BOOST_TEST(violations == 0, violations << " fencing tokens did not rise");
  BOOST_TEST(last_token > 0u);
  BOOST_TEST(cluster_holds(held, a_lock.token()));  // it moved with the slot
  BOOST_TEST(redirections("TRYAGAIN") >= 1);
  run_bounded(io, a.async_unlock(std::move(a_lock), asio::use_awaitable));
  // After the move, both clients lock the slot's names again on its new owner.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await b.async_lock(held, {.ttl = 5s, .wait = 3s}, asio::use_awaitable);
    co_await b.async_unlock(std::move(lk), asio::use_awaitable);
    auto f = co_await b.async_lock(fenced_name, fenced, asio::use_awaitable);
    note(f.fence());
    co_await b.async_unlock(std::move(f), asio::use_awaitable);
  }());
  BOOST_TEST(violations == 0);
  // Only the fencing counters and markers live without a TTL.
  BOOST_TEST(cluster.keys_without_ttl("redlock:fence") == "");
}

// A claim batch while one primary is frozen: its part times out, and only the names on that
// primary fail (a part's failure is "may have landed" for its own names alone); the names
// on the other primaries are won on the cluster. Thawed, the batch's undo of the frozen
// part's names runs there, so none of them is left holding our claim.
BOOST_AUTO_TEST_CASE(a_frozen_primary_fails_only_the_claims_on_its_slots) {
  auto c = make_client();
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back("batch:" + std::to_string(i));
  std::size_t frozen = cluster.owner_of(redlock::detail::key_slot(names[0]));
  std::vector<redlock::claim_result> got;
  std::int64_t evals_before = 0;
  // EVAL calls the frozen primary ran (the undo of a batch is one).
  auto evals = [&]() -> std::int64_t {
    const std::string info = cluster[frozen].command({"INFO", "commandstats"}).text;
    const auto at = info.find("cmdstat_eval:calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + 19));
  };
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        // One name on each primary first, so that every shard's connection is up (not
        // still in its handshake) when the nodes freeze.
        std::vector<std::string> warm_names;
        std::set<std::size_t> warmed;
        for (int k = 0; warmed.size() < cluster.primaries().size(); ++k) {
          std::string name = "warm:" + std::to_string(k);
          if (warmed.insert(cluster.owner_of(redlock::detail::key_slot(name))).second)
            warm_names.push_back(std::move(name));
        }
        auto warm = co_await c.async_try_claim(warm_names, 2s, asio::use_awaitable);
        for (const auto& w : warm) BOOST_TEST(w.won());
        evals_before = evals();
        plain[1].freeze();
        cluster[frozen].freeze();
        got = co_await c.async_try_claim(names, 5s, asio::use_awaitable);
        cluster[frozen].thaw();
        plain[1].thaw();
      }(),
      30s);
  BOOST_TEST_REQUIRE(got.size() == names.size());
  std::size_t on_frozen = 0;
  for (std::size_t j = 0; j < names.size(); ++j) {
    const std::size_t owner = cluster.owner_of(redlock::detail::key_slot(names[j]));
    if (owner == frozen) {
      ++on_frozen;
      BOOST_TEST(!got[j].won(), names[j]);
    } else {
      BOOST_TEST(got[j].won(), names[j]);
      BOOST_TEST(cluster[owner].command({"GET", names[j]}).text == got[j].lock.token());
    }
  }
  BOOST_TEST(on_frozen > 0u);
  BOOST_TEST(on_frozen < names.size());
  // Thawed, the frozen primary runs its part, then (once the connection's probe answers)
  // the undo, an EVAL: wait for it, then none of its names holds a claim.
  BOOST_TEST(redlock::test::run_until(
      io, [&] { return evals() > evals_before; }, 5s));
  for (std::size_t j = 0; j < names.size(); ++j)
    if (!got[j].won()) BOOST_TEST(cluster[frozen].command({"EXISTS", names[j]}).integer == 0);
  BOOST_TEST(cluster.keys_without_ttl().empty());
}

// A node named the wrong way round fails with a reason that says which way is right.
BOOST_AUTO_TEST_CASE(a_cluster_named_as_a_server_and_a_server_named_as_a_cluster_say_so) {
  auto try_alone = [&](const std::string& node) {
    auto cfg = redlock::test::fast_config({node});
    redlock::client c{io.get_executor(), cfg};
    std::string message;
    run_bounded(io, [&]() -> asio::awaitable<void> {
      // Keys on every shard: at least one is not owned by the first seed.
      for (int i = 0; i < 8 && message.empty(); ++i) {
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_try_lock("n" + std::to_string(i), {.ttl = 1s}, diag,
                                                  asio::as_tuple(asio::use_awaitable));
        if (ec) message = diag.message;
        if (!ec) co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
      }
    }());
    return message;
  };
  const std::string plain_uri = plain[0].uri();
  const std::string as_cluster = "redis+cluster://" + plain_uri.substr(plain_uri.find("//") + 2);
  const std::string m1 = try_alone(as_cluster);
  BOOST_TEST(m1.find("cluster support disabled") != std::string::npos, m1);
  const std::string seed = cluster.uri().substr(cluster.uri().find("//") + 2);
  const std::string m2 = try_alone("redis://" + seed.substr(0, seed.find(',')));
  BOOST_TEST(m2.find("MOVED") != std::string::npos, m2);
  BOOST_TEST(m2.find("redis+cluster://") != std::string::npos, m2);
}

#ifdef REDLOCK_CLI_PATH
// Runs the CLI (30 s at most); returns its exit code, with stdout and stderr in `out`.
int run_cli(const std::vector<std::string>& args, std::string& out) {
  redlock::test::detail::temp_dir dir;
  const std::string log = dir.path() + "/out";
  std::vector<std::string> argv{REDLOCK_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  redlock::test::detail::child_process p;
  p.spawn(argv, log);
  // On the exit itself (a pidfd), without reaping: the child_process reaps at stop().
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, p.pid(), 0));
  BOOST_TEST_REQUIRE(fd >= 0);
  const bool exited =
      redlock::test::detail::readable_before(fd, std::chrono::steady_clock::now() + 30s);
  ::close(fd);
  BOOST_TEST_REQUIRE(exited, "the CLI did not exit within 30 s");
  const std::string how = p.exit_description();
  std::ifstream in{log};
  out.assign(std::istreambuf_iterator<char>{in}, {});
  const auto code = how.rfind("exited with code ", 0) == 0 ? std::stoi(how.substr(17)) : -1;
  return code;
}

BOOST_AUTO_TEST_CASE(the_cli_lists_each_shard_and_runs_a_command_with_a_fencing_token) {
  const std::string nodes = cluster.uri() + "," + plain[0].uri() + "," + plain[1].uri();
  std::string out;
  BOOST_TEST(run_cli({"nodes", "--nodes", nodes}, out) == 0, out);
  for (const char* shard : {"0.0 ", "0.1 ", "0.2 "})
    BOOST_TEST(out.find(shard) != std::string::npos, shard << " in: " << out);
  BOOST_TEST(out.find("5461 slots") != std::string::npos, out);  // 16384 over 3 primaries
  BOOST_TEST(out.find("3 of 3 nodes reachable") != std::string::npos, out);
  // run takes a fenced lock: its token comes from the counters of the resource's slot.
  BOOST_TEST(run_cli({"run", "--nodes", nodes, "--ttl", "1000", "--max-ttl", "1000", "res", "--",
                      "/bin/sh", "-c", "echo fence=$REDLOCK_FENCE"},
                     out) == 0,
             out);
  BOOST_TEST(out.find("fence=") != std::string::npos, out);
  BOOST_TEST(out.find("fence=0") == std::string::npos, out);
  BOOST_TEST(out.find("fence=\n") == std::string::npos, out);
  // Fair mode too: its line lives in the lock key's slot.
  BOOST_TEST(run_cli({"run", "--nodes", nodes, "--fair", "--ttl", "1000", "--max-ttl", "1000",
                      "res", "--", "/bin/sh", "-c", "echo fair=$REDLOCK_FENCE"},
                     out) == 0,
             out);
  BOOST_TEST(out.find("fair=") != std::string::npos, out);
  BOOST_TEST(out.find("fair=0") == std::string::npos, out);
}
#endif

BOOST_AUTO_TEST_SUITE_END()

// The fixture itself: a cluster server whose bus port was handed to someone else between
// the pick and the start (CI saw "Failed listening on port ... (cluster)") starts again on
// new ports instead of failing the test.
BOOST_AUTO_TEST_CASE(a_cluster_server_whose_bus_port_is_taken_starts_on_other_ports) {
  asio::io_context io;
  asio::ip::tcp::acceptor holder{io, {asio::ip::make_address("127.0.0.1"), 0}};
  const auto taken = std::to_string(holder.local_endpoint().port());
  redlock::test::redis_server s{
      {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", taken}};
  BOOST_TEST(s.command({"PING"}).text == "PONG");
  const auto bus = s.command({"CONFIG", "GET", "cluster-port"});
  BOOST_TEST_REQUIRE(bus.elements.size() == 2u);
  BOOST_TEST(bus.elements[1].text != taken);
}

namespace {

// A primary is killed and the cluster promotes its replica, which may have lost writes it
// had not yet received: the node is held back until max_ttl has passed, whether the restart
// guard is on or not (it is for servers that lose nothing on restart; a promoted replica
// still lacks what its primary never sent it); then it takes locks again on the new
// primary, and its fence counters count only once repaired.
// The replica of primary `primary`, by its INFO replication.
std::size_t replica_of(const redlock::test::redis_cluster& cluster, std::size_t primary) {
  const std::string port = "master_port:" + std::to_string(cluster[primary].port()) + "\r";
  for (std::size_t i = 0; i < cluster.size(); ++i)
    if (i != primary && cluster[i].running() &&
        cluster[i].command({"INFO", "replication"}).text.find(port) != std::string::npos)
      return i;
  throw std::runtime_error("server " + std::to_string(primary) + " has no replica");
}

// `key` as replica `r` holds it (a cluster replica answers reads after READONLY).
std::string replica_reads(const redlock::test::redis_server& r, const std::string& key) {
  const auto replies = r.commands({{"READONLY"}, {"GET", key}});
  if (replies.at(1).is_error()) throw std::runtime_error("GET on the replica: " + replies[1].text);
  return replies[1].text;
}

void promoted_replica_holds_the_node_back(bool restart_guard) {
  redlock::test::redis_cluster cluster{3, 1};
  redlock::test::redis_fleet plain{2};
  asio::io_context io;
  auto uris = plain.uris();
  uris.insert(uris.begin(), cluster.uri());
  auto cfg = redlock::test::fast_config(std::move(uris));
  cfg.restart_guard = restart_guard;
  cfg.max_ttl = 1500ms;
  // Node 0 reports the promotion: wakes the test (cancels `promotion`, armed at the kill).
  asio::steady_timer promotion{io};
  bool promotion_reported = false;
  cfg.on_event = [&](const redlock::node_event& e) {
    if (e.node == 0 && e.message.find("promoted") != std::string::npos) {
      promotion_reported = true;
      promotion.cancel();
    }
  };
  redlock::client c{io.get_executor(), cfg};
  const std::string resource = "failover";
  auto votes = [&]() -> asio::awaitable<std::pair<bool, std::string>> {
    auto report = co_await c.async_inspect("", asio::use_awaitable);
    co_return std::pair{report.at(0).votes, report.at(0).held_back};
  };
  const std::uint16_t slot = redlock::detail::key_slot(resource);
  const std::string marker =
      "redlock:fence:marker:{" + std::string{redlock::detail::slot_tag(slot)} + "}";
  std::uint64_t token_before = 0;
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        auto lk = co_await c.async_lock(resource, {.ttl = 1s, .wait = 5s, .fenced = true},
                                        asio::use_awaitable);
        token_before = lk.fence();
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
        auto [yes, why] = co_await votes();
        BOOST_TEST(yes, why);
      }(),
      30s);
  const std::size_t dead = cluster.owner_of(slot);
  // The slot's marker (set by the repair on first use) has reached the replica: read there
  // (READONLY) and not only counted by WAIT, since the check after the promotion needs it.
  BOOST_TEST_REQUIRE(cluster[dead].marker_names_me(marker));
  const std::string marker_value = cluster[dead].command({"GET", marker}).text;
  BOOST_TEST(cluster[dead].command({"WAIT", "1", "2000"}).integer == 1);
  const std::size_t replica = replica_of(cluster, dead);
  BOOST_TEST_REQUIRE(replica_reads(cluster[replica], marker) == marker_value);
  cluster[dead].kill();
  // The cluster's own failover (cluster-node-timeout 1 s; seconds, but slower with the
  // machine's cores busy), then ours: while the primary is down the node asks for the slot
  // map again, until it names the promoted replica.
  promotion.expires_after(60s);
  run_bounded(
      io,
      [&]() -> asio::awaitable<void> {
        if (!promotion_reported) co_await promotion.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!promotion_reported) {
          // Whether the cluster failed over at all, as its survivors see it.
          for (std::size_t i = 0; i < cluster.size(); ++i)
            if (cluster[i].running())
              BOOST_TEST_MESSAGE("server " << i << ": "
                                           << cluster[i].command({"CLUSTER", "NODES"}).text);
        }
        BOOST_TEST_REQUIRE(promotion_reported);
        auto [yes, why] = co_await votes();
        BOOST_TEST(!yes);
        BOOST_TEST(why.find("failover") != std::string::npos, why);
        // The promoted replica may have lost counter increments but kept the marker, which
        // names the dead primary: it vouches for nothing there.
        const std::size_t promoted = cluster.owner_of(slot);
        BOOST_TEST_REQUIRE(promoted == replica);
        BOOST_TEST(cluster[promoted].command({"GET", marker}).text == marker_value);
        BOOST_TEST(!cluster[promoted].marker_names_me(marker));
        // With a plain server frozen a lock needs node 0: waiting, it outlasts the guard and
        // is then taken on the promoted primary.
        plain[1].freeze();
        auto lk = co_await c.async_lock(resource, {.ttl = 1s, .wait = 5s}, asio::use_awaitable);
        BOOST_TEST(cluster[promoted].command({"GET", resource}).text == lk.token());
        plain[1].thaw();
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
        // The slot's counters there are repaired before they count: the next token is
        // above the last one handed out before the failover.
        auto fenced = co_await c.async_lock(resource, {.ttl = 1s, .wait = 3s, .fenced = true},
                                            asio::use_awaitable);
        BOOST_TEST(fenced.fence() > token_before);
        co_await c.async_unlock(std::move(fenced), asio::use_awaitable);
      }(),
      90s);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_replica_promoted_after_its_primary_died_holds_the_node_back_for_max_ttl) {
  promoted_replica_holds_the_node_back(true);
}

BOOST_AUTO_TEST_CASE(a_promotion_holds_the_node_back_with_the_restart_guard_off) {
  promoted_replica_holds_the_node_back(false);
}
