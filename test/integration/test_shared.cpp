// SPDX-License-Identifier: BSL-1.0
// Shared locks (lock_options::shared): readers hold a resource together, a writer alone;
// a waiting writer keeps new readers out; a client asking for the other mode of what it
// holds is refused; leases extend, renew and expire one by one. Independent clients on
// real redis-server processes, also with a frozen node and a node restarted empty.

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::error;
using redlock::test::eventually;
using redlock::test::run_bounded;

namespace {

const redlock::lock_options reader{.ttl = 10s, .wait = 0ms, .shared = true};
const redlock::lock_options writer{.ttl = 10s, .wait = 0ms};

template <std::size_t N>
struct shared_fleet : redlock::test::fleet_fixture<N> {
  // The value of `key` on node i ("" when absent).
  std::string value(std::size_t i, const std::string& key) const {
    return this->fleet[i].command({"GET", key}).text;
  }
  // Whether node i holds a readers' record of `key` with a writer's mark in the future.
  bool marked(std::size_t i, const std::string& key) const {
    const std::string v = value(i, key);
    return v.starts_with("R|") && !v.starts_with("R|0 ");
  }
  // How many nodes hold a writer's mark on `key` (marked()).
  int marks(const std::string& key) const {
    int n = 0;
    for (std::size_t i = 0; i < this->fleet.size(); ++i) n += marked(i, key);
    return n;
  }
};
using fleet3 = shared_fleet<3>;

// One attempt (async_try_lock), or async_lock with opts.wait when `wait`.
asio::awaitable<std::pair<error_code, redlock::lock>> try_take(redlock::client& c,
                                                               std::string_view resource,
                                                               redlock::lock_options opts,
                                                               bool wait = false) {
  // co_await as statements, never inside ?: (GCC 12).
  if (wait) {
    auto [ec, lk] = co_await c.async_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
    co_return std::pair{ec, std::move(lk)};
  }
  auto [ec, lk] = co_await c.async_try_lock(resource, opts, asio::as_tuple(asio::use_awaitable));
  co_return std::pair{ec, std::move(lk)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shared_locks)

BOOST_FIXTURE_TEST_CASE(readers_hold_together_and_a_writer_waits_for_the_last, fleet3) {
  auto a = make_client(), b = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("doc", reader, asio::use_awaitable);
    auto rb = co_await b.async_lock("doc", reader, asio::use_awaitable);
    BOOST_TEST(ra.valid());
    BOOST_TEST(rb.valid());
    BOOST_TEST(ra.shared());
    BOOST_TEST(!ra.fence());
    auto [busy, none] = co_await try_take(w, "doc", writer);
    BOOST_TEST(busy == error::contended);
    co_await a.async_unlock(std::move(ra), asio::use_awaitable);
    auto [still, none2] = co_await try_take(w, "doc", writer);
    BOOST_TEST(still == error::contended);
    co_await b.async_unlock(std::move(rb), asio::use_awaitable);
    // The last reader's release deleted the record: the writer's plain SET NX wins.
    for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(!fleet.has_key(i, "doc"));
    auto wl = co_await w.async_lock("doc", writer, asio::use_awaitable);
    BOOST_TEST(wl.valid());
    BOOST_TEST(!wl.shared());
    auto [refused, none3] = co_await try_take(a, "doc", reader);
    BOOST_TEST(refused == error::contended);
  }());
}

BOOST_FIXTURE_TEST_CASE(a_reader_waits_for_the_writer_and_is_woken_by_its_release, fleet3) {
  auto r = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto wl = co_await w.async_lock("page", writer, asio::use_awaitable);
    redlock::lock got;
    bool done = false;
    // A long retry delay: only the release's announcement wakes the reader in time.
    redlock::config slow = config();
    slow.retry_delay = 20s;
    redlock::client patient{io.get_executor(), slow};
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await patient.async_lock("page", {.ttl = 10s, .wait = 30s, .shared = true},
                                            asio::use_awaitable);
          done = true;
        },
        asio::detached);
    // Refused once (the reader's first attempt), then parked.
    BOOST_TEST(co_await eventually([&] { return fleet[0].calls("evalsha") >= 1; }));
    asio::steady_timer t{io, 100ms};
    co_await t.async_wait(asio::use_awaitable);
    BOOST_TEST(!done);
    co_await w.async_unlock(std::move(wl), asio::use_awaitable);
    BOOST_TEST(co_await eventually([&] { return done; }, 5s));
    BOOST_TEST(got.valid());
    BOOST_TEST(got.shared());
  }());
}

BOOST_FIXTURE_TEST_CASE(a_waiting_writer_keeps_new_readers_out_until_its_turn, fleet3) {
  auto a = make_client(), b = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("report", reader, asio::use_awaitable);
    redlock::lock wl;
    bool won = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          wl = co_await w.async_lock("report", {.ttl = 10s, .wait = 30s}, asio::use_awaitable);
          won = true;
        },
        asio::detached);
    // The writer's failed attempt marks the record on the nodes that hold it.
    BOOST_TEST(co_await eventually([&] { return marks("report") >= 2; }));
    auto [kept_out, none] = co_await try_take(b, "report", reader);
    BOOST_TEST(kept_out == error::contended);
    BOOST_TEST(!won);
    co_await a.async_unlock(std::move(ra), asio::use_awaitable);
    BOOST_TEST(co_await eventually([&] { return won; }));
    BOOST_TEST(wl.valid());
    co_await w.async_unlock(std::move(wl), asio::use_awaitable);
    auto rb = co_await b.async_lock("report", reader, asio::use_awaitable);
    BOOST_TEST(rb.valid());
  }());
}

// A set of locks is a writer of each of its resources: waiting behind readers, it marks the
// resource they hold, so that a stream of new readers queues behind it instead of
// starving it.
BOOST_FIXTURE_TEST_CASE(a_set_waiting_behind_readers_keeps_new_readers_out, fleet3) {
  auto a = make_client(), b = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("shelf:2", reader, asio::use_awaitable);
    redlock::multi_lock set;
    bool won = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          set = co_await w.async_lock_all({"shelf:1", "shelf:2"}, {.ttl = 10s, .wait = 30s},
                                          asio::use_awaitable);
          won = true;
        },
        asio::detached);
    BOOST_TEST(co_await eventually([&] { return marks("shelf:2") >= 2; }));
    // New readers, one after another: each is refused while the set waits.
    for (int i = 0; i < 5; ++i) {
      auto [kept_out, none] = co_await try_take(b, "shelf:2", reader);
      BOOST_TEST(kept_out == error::contended);
    }
    BOOST_TEST(!won);
    co_await a.async_unlock(std::move(ra), asio::use_awaitable);
    BOOST_TEST(co_await eventually([&] { return won; }));
    BOOST_TEST(set.valid());
    co_await w.async_unlock(std::move(set), asio::use_awaitable);
  }());
}

BOOST_FIXTURE_TEST_CASE(a_writer_that_only_tries_leaves_no_mark, fleet3) {
  auto a = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("quiet", reader, asio::use_awaitable);
    auto [busy, none] = co_await try_take(w, "quiet", writer);
    BOOST_TEST(busy == error::contended);
    co_await answered_everywhere(w);
    for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(!marked(i, "quiet"));
    auto rb = co_await w.async_lock("quiet", reader, asio::use_awaitable);
    BOOST_TEST(rb.valid());
  }());
}

BOOST_FIXTURE_TEST_CASE(asking_for_the_other_mode_of_what_a_client_holds_is_refused, fleet3) {
  auto c = make_client(), other = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.async_lock("cfg", reader, asio::use_awaitable);
    // Waiting would never end while the lease is renewed: refused at once, not after the wait.
    redlock::diagnostics diag;
    auto [up, none] = co_await [&]() -> asio::awaitable<std::pair<error_code, redlock::lock>> {
      auto [ec, lk] = co_await c.async_lock("cfg", {.ttl = 10s, .wait = 30s}, diag,
                                            asio::as_tuple(asio::use_awaitable));
      co_return std::pair{ec, std::move(lk)};
    }();
    BOOST_TEST(up == error::upgrade_refused);
    BOOST_TEST(diag.message.find("reader's lease") != std::string::npos, diag.message);
    BOOST_TEST(r.valid());
    co_await c.async_unlock(std::move(r), asio::use_awaitable);
    auto wl = co_await c.async_lock("cfg", writer, asio::use_awaitable);
    auto [down, none2] =
        co_await try_take(c, "cfg", {.ttl = 10s, .wait = 30s, .shared = true}, true);
    BOOST_TEST(down == error::upgrade_refused);
    // Another client's reader just waits (here: one attempt, contended).
    auto [busy, none3] = co_await try_take(other, "cfg", reader);
    BOOST_TEST(busy == error::contended);
    BOOST_TEST(wl.valid());
  }());
}

BOOST_FIXTURE_TEST_CASE(shared_mode_refuses_fair_mode_and_sets, fleet3) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto [f1, l1] = co_await try_take(c, "x", {.fair = true, .shared = true});
    BOOST_TEST(f1 == error::invalid_argument);
    auto [f2, l2] = co_await c.async_lock_all(redlock::resource_list{"x", "y"}, {.shared = true},
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(f2 == error::invalid_argument);
    BOOST_TEST(fleet.total_keys() == 0);
  }());
}

BOOST_FIXTURE_TEST_CASE(a_readers_fence_is_the_latest_writers_and_below_the_next, fleet3) {
  auto a = make_client(), b = make_client(), w = make_client();
  const redlock::lock_options fenced_reader{
      .ttl = 10s, .wait = 10s, .fenced = true, .shared = true};
  const redlock::lock_options fenced_writer{.ttl = 10s, .wait = 10s, .fenced = true};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await a.async_lock("ledger", fenced_reader, asio::use_awaitable);
    BOOST_TEST(first.fence() == 0u);  // no writer yet
    co_await a.async_unlock(std::move(first), asio::use_awaitable);
    auto w1 = co_await w.async_lock("ledger", fenced_writer, asio::use_awaitable);
    const auto f1 = w1.fence();
    BOOST_TEST(f1 > 0u);
    co_await w.async_unlock(std::move(w1), asio::use_awaitable);
    auto ra = co_await a.async_lock("ledger", fenced_reader, asio::use_awaitable);
    auto rb = co_await b.async_lock("ledger", fenced_reader, asio::use_awaitable);
    BOOST_TEST(ra.fence() == f1);
    BOOST_TEST(rb.fence() == f1);
    co_await a.async_unlock(std::move(ra), asio::use_awaitable);
    co_await b.async_unlock(std::move(rb), asio::use_awaitable);
    // Counters that disagree (a writer's write-back that reached only some nodes): the
    // reader takes the highest its majority shows and writes it back to a majority.
    const std::string field = redlock::fence_field("ledger", 0);
    for (std::size_t i = 0; i < fleet.size(); ++i)
      fleet[i].command({"HSET", "redlock:fence", field, std::to_string(f1 + 10 * (i + 1))});
    auto rc = co_await a.async_lock("ledger", fenced_reader, asio::use_awaitable);
    const auto fc = rc.fence();
    BOOST_TEST(fc >= f1 + 20);
    int at_least = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      at_least += std::stoull(fleet[i].command({"HGET", "redlock:fence", field}).text) >= fc;
    BOOST_TEST(at_least >= 2);
    co_await a.async_unlock(std::move(rc), asio::use_awaitable);
    auto w2 = co_await w.async_lock("ledger", fenced_writer, asio::use_awaitable);
    BOOST_TEST(w2.fence() > fc);
  }());
}

// The promise of docs/safety.md ("Shared locks", Fencing): a reader's fence is at least
// the token of every writer granted before it and below that of every writer granted
// after it, whatever attempts were refused or cancelled between. Those attempts raise the
// counter where their SET succeeded, so the reader may see more than the last granted
// writer's; the next writer, taking node 0 out of its majority, must still go above.
BOOST_FIXTURE_TEST_CASE(
    a_readers_fence_stays_between_granted_writers_past_refused_and_cancelled_attempts, fleet3) {
  auto r = make_client(), w = make_client(), x = make_client();
  const redlock::lock_options fenced_reader{
      .ttl = 10s, .wait = 10s, .fenced = true, .shared = true};
  const redlock::lock_options fenced_writer{.ttl = 10s, .wait = 10s, .fenced = true};
  const std::string field = redlock::fence_field("gap", 0);
  auto counter = [&](std::size_t i) {
    const auto t = fleet[i].command({"HGET", "redlock:fence", field}).text;
    return t.empty() ? std::uint64_t{0} : std::stoull(t);
  };
  // Nodes 1 and 2 held by a foreign owner: a writer's attempt wins node 0 alone.
  auto hold_minority_free = [&](bool on) {
    for (std::size_t i : {1u, 2u}) {
      if (on) fleet[i].command({"SET", "gap", "someone-else", "PX", "20000"});
      if (!on) fleet[i].command({"DEL", "gap"});
    }
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto w1 = co_await w.async_lock("gap", fenced_writer, asio::use_awaitable);
    const auto f1 = w1.fence();
    co_await w.async_unlock(std::move(w1), asio::use_awaitable);

    // A refused attempt, then a cancelled one, each raising node 0's counter.
    hold_minority_free(true);
    const auto before = counter(0);
    auto [refused_ec, refused] =
        co_await x.async_try_lock("gap", fenced_writer, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(refused_ec == error::contended, refused_ec.message());
    BOOST_TEST(counter(0) > before);
    const auto raised = counter(0);
    asio::cancellation_signal sig;
    std::optional<error_code> cancelled_ec;
    x.async_lock("gap", fenced_writer,
                 asio::bind_cancellation_slot(
                     sig.slot(), [&](error_code ec, redlock::lock) { cancelled_ec = ec; }));
    BOOST_TEST(co_await eventually([&] { return counter(0) > raised; }));
    sig.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await eventually([&] { return cancelled_ec.has_value(); }));
    BOOST_TEST(*cancelled_ec == error::cancelled, cancelled_ec->message());
    hold_minority_free(false);
    BOOST_TEST(counter(0) > f1 + 1);  // the attempts raised it, none was granted

    auto ra = co_await r.async_lock("gap", fenced_reader, asio::use_awaitable);
    auto rb = co_await x.async_lock("gap", fenced_reader, asio::use_awaitable);
    const auto high = std::max(ra.fence(), rb.fence());
    BOOST_TEST(ra.fence() >= f1);
    BOOST_TEST(rb.fence() >= f1);
    co_await r.async_unlock(std::move(ra), asio::use_awaitable);
    co_await x.async_unlock(std::move(rb), asio::use_awaitable);

    // The next writer's majority leaves out node 0, the one the attempts raised.
    fleet[0].freeze();
    auto w2 = co_await w.async_lock("gap", fenced_writer, asio::use_awaitable);
    BOOST_TEST(w2.fence() > high, w2.fence() << " after readers' " << high);
    co_await w.async_unlock(std::move(w2), asio::use_awaitable);
    fleet[0].thaw();
  }());
}

BOOST_FIXTURE_TEST_CASE(each_lease_extends_and_expires_on_its_own, fleet3) {
  auto a = make_client(), b = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("lease", {.ttl = 400ms, .wait = 0ms, .shared = true},
                                    asio::use_awaitable);
    auto rb = co_await b.async_lock("lease", {.ttl = 400ms, .wait = 0ms, .shared = true},
                                    asio::use_awaitable);
    co_await b.async_extend(rb, 10s, asio::use_awaitable);
    BOOST_TEST(rb.validity() > 5s);
    co_await answered_everywhere(b);
    // The key lives as long as its latest lease: never without a TTL.
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const auto pttl = fleet[i].command({"PTTL", "lease"}).integer;
      BOOST_TEST(pttl > 5000);
    }
    // a's lease runs out; b's does not, so a writer is still refused.
    asio::basic_waitable_timer<redlock::boot_clock> t{io, ra.deadline() + 100ms};
    co_await t.async_wait(asio::use_awaitable);
    BOOST_TEST(!ra.valid());
    auto [ext] = co_await a.async_extend(ra, 10s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ext == error::lock_lost);
    auto [busy, none] = co_await try_take(w, "lease", writer);
    BOOST_TEST(busy == error::contended);
    co_await b.async_unlock(std::move(rb), asio::use_awaitable);
    auto wl = co_await w.async_lock("lease", writer, asio::use_awaitable);
    BOOST_TEST(wl.valid());
  }());
}

BOOST_FIXTURE_TEST_CASE(a_reader_released_after_its_entry_expired_is_not_held, fleet3) {
  auto a = make_client(), b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto ra = co_await a.async_lock("gone", {.ttl = 200ms, .wait = 0ms, .shared = true},
                                    asio::use_awaitable);
    auto rb = co_await b.async_lock("gone", reader, asio::use_awaitable);
    asio::basic_waitable_timer<redlock::boot_clock> t{io, ra.deadline() + 300ms};
    co_await t.async_wait(asio::use_awaitable);
    auto ec = co_await a.async_unlock(std::move(ra), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(std::get<0>(ec) == error::not_held);
    // b's entry stayed.
    co_await b.async_extend(rb, 10s, asio::use_awaitable);
    BOOST_TEST(rb.valid());
  }());
}

BOOST_FIXTURE_TEST_CASE(a_keeper_renews_a_lease_beside_a_writers_lock_in_one_batch, fleet3) {
  auto c = make_client(), w = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.async_lock("batch-r", {.ttl = 300ms, .wait = 0ms, .shared = true},
                                   asio::use_awaitable);
    auto x = co_await c.async_lock("batch-x", {.ttl = 300ms, .wait = 0ms}, asio::use_awaitable);
    redlock::keeper kr{c, std::move(r)}, kx{c, std::move(x)};
    // Well past three TTLs: both kept, and the reader's lease still keeps writers out.
    asio::steady_timer t{io, 1200ms};
    co_await t.async_wait(asio::use_awaitable);
    BOOST_TEST(kr.valid());
    BOOST_TEST(kx.valid());
    auto [busy, none] = co_await try_take(w, "batch-r", writer);
    BOOST_TEST(busy == error::contended);
    auto lease = co_await kr.async_stop(asio::use_awaitable);
    BOOST_TEST(lease.shared());
    co_await c.async_unlock(std::move(lease), asio::use_awaitable);
  }());
}

BOOST_FIXTURE_TEST_CASE(with_lock_runs_readers_together, fleet3) {
  auto a = make_client(), b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    int inside = 0, most = 0;
    auto work = [&](redlock::keeper&) -> asio::awaitable<void> {
      most = std::max(most, ++inside);
      // Each waits for the other to come in: only true sharing ends this.
      co_await eventually([&] { return most == 2; }, 5s);
      --inside;
    };
    using namespace asio::experimental::awaitable_operators;
    co_await (redlock::with_lock(a, "shared-work", {.ttl = 2s, .wait = 5s, .shared = true}, work) &&
              redlock::with_lock(b, "shared-work", {.ttl = 2s, .wait = 5s, .shared = true}, work));
    BOOST_TEST(most == 2);
    BOOST_TEST(fleet.total_keys() == 0);
  }());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- exclusion under faults -------------------------------------------------------------

namespace {

enum class fault { none, frozen_minority, restarted_empty };

// Independent clients (their own connections) take one resource as readers and writers
// over and over. At every acquisition, no holder of a conflicting mode may still be
// valid(): the promise, checked against each holder's own view, so that a holder paused
// past its validity is not counted. Readers must also overlap at least once. Fencing
// tokens: each writer's above every earlier holder's, each reader's at least the latest
// writer's.
struct exclusion_run {
  struct holder {
    const redlock::lock* lk;
    bool shared;
  };
  std::vector<holder> holders;
  int violations = 0, reader_overlaps = 0, grants = 0, fence_errors = 0;
  std::uint64_t writer_fence = 0, highest_fence = 0;
  std::vector<std::string> failures;  // lock calls that failed, with their diagnostics
  bool stop = false;

  void enter(const redlock::lock& lk) {
    ++grants;
    if (lk.shared() ? lk.fence() < writer_fence : lk.fence() <= highest_fence) ++fence_errors;
    if (!lk.shared()) writer_fence = lk.fence();
    highest_fence = std::max(highest_fence, lk.fence());
    int readers = 0;
    for (const auto& h : holders) {
      if (!h.lk->valid()) continue;
      if (!h.shared || !lk.shared()) ++violations;
      if (h.shared) ++readers;
    }
    if (lk.shared() && readers > 0) ++reader_overlaps;
    holders.push_back({&lk, lk.shared()});
  }
  void leave(const redlock::lock& lk) {
    std::erase_if(holders, [&](const holder& h) { return h.lk == &lk; });
  }
};

// Takes turns until run.stop (each actor at least `rounds` times).
asio::awaitable<void> take_turns(redlock::client& c, exclusion_run& run, bool shared, int rounds) {
  asio::steady_timer hold{co_await asio::this_coro::executor};
  for (int i = 0; i < rounds || !run.stop; ++i) {
    redlock::lock_options o{.ttl = 2s, .wait = 20s, .fenced = true, .shared = shared};
    redlock::diagnostics diag;
    auto [ec, lk] =
        co_await c.async_lock("contested", o, diag, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      run.failures.push_back(diag.message);
      co_return;
    }
    run.enter(lk);
    hold.expires_after(shared ? 8ms : 2ms);
    co_await hold.async_wait(asio::use_awaitable);
    run.leave(lk);
    // A release that misses its majority (a node restarting) only lets the keys expire.
    co_await c.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
  }
}

void run_exclusion(redlock::test::fleet_fixture<3>& f, fault what) {
  redlock::config cfg = f.config();
  if (what == fault::restarted_empty) {
    // A node restarted empty forgot the leases it granted: it must not vote until every
    // lease it may have held has expired (the restart guard, max_ttl = the leases' TTL).
    cfg.restart_guard = true;
    cfg.max_ttl = 2s;
  }
  std::vector<std::unique_ptr<redlock::client>> clients;
  for (int i = 0; i < 6; ++i)
    clients.push_back(std::make_unique<redlock::client>(f.io.get_executor(), cfg));
  // The fencing counters are repaired (each node marked) while every node answers: a fresh
  // fleet with a frozen node could not know what that node's counters hold.
  run_bounded(f.io, [&]() -> asio::awaitable<void> {
    auto lk = co_await clients[0]->async_lock("contested", {.ttl = 2s, .wait = 20s, .fenced = true},
                                              asio::use_awaitable);
    co_await clients[0]->async_unlock(std::move(lk), asio::use_awaitable);
  }());
  if (what == fault::frozen_minority) f.fleet[2].freeze();
  exclusion_run run;
  run_bounded(
      f.io,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        auto readers =
            take_turns(*clients[0], run, true, 25) && take_turns(*clients[1], run, true, 25) &&
            take_turns(*clients[2], run, true, 25) && take_turns(*clients[3], run, true, 25);
        auto writers =
            take_turns(*clients[4], run, false, 15) && take_turns(*clients[5], run, false, 15);
        auto restarts = [&]() -> asio::awaitable<void> {
          if (what == fault::restarted_empty) {
            // Node 0 restarts empty mid-run, and the run goes on past the guard's hold-back
            // (max_ttl), so that the restarted node votes again while leases are taken.
            co_await eventually([&] { return run.grants >= 20; }, 20s);
            f.fleet[0].restart();
            const auto restarted = std::chrono::steady_clock::now();
            co_await eventually([&] { return std::chrono::steady_clock::now() > restarted + 3s; },
                                10s);
            const int before = run.grants;
            co_await eventually([&] { return run.grants >= before + 60; }, 30s);
          }
          run.stop = true;
        };
        co_await (std::move(readers) && std::move(writers) && restarts());
      }(),
      90s);
  if (what == fault::frozen_minority) f.fleet[2].thaw();
  for (const auto& why : run.failures) BOOST_TEST_MESSAGE(why);
  BOOST_TEST(run.failures.empty());
  BOOST_TEST(run.violations == 0);
  BOOST_TEST(run.fence_errors == 0);
  BOOST_TEST(run.writer_fence > 0u);
  BOOST_TEST(run.grants >= 4 * 25 + 2 * 15);
  BOOST_TEST(run.reader_overlaps > 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shared_exclusion)

BOOST_FIXTURE_TEST_CASE(never_a_writer_beside_anyone_on_a_healthy_fleet, fleet3) {
  run_exclusion(*this, fault::none);
}

BOOST_FIXTURE_TEST_CASE(never_a_writer_beside_anyone_with_a_frozen_minority, fleet3) {
  run_exclusion(*this, fault::frozen_minority);
}

BOOST_FIXTURE_TEST_CASE(never_a_writer_beside_anyone_when_a_node_restarts_empty, fleet3) {
  run_exclusion(*this, fault::restarted_empty);
}

BOOST_AUTO_TEST_SUITE_END()
