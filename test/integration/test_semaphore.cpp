// SPDX-License-Identifier: BSL-1.0
// Semaphores (async_lock_permit): at most N holders at once, proved with independent
// clients (each its own connections) on real redis-server nodes, also while a minority
// node is frozen or restarted empty; per-permit fencing tokens; a release handing its permit
// to the first call in the nodes' line alone, passing over calls that gave up;
// the count the nodes record, refused when another is asked; permit keys no plain lock can
// name; argument errors before any I/O.

#include <array>
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "async_helpers.hpp"
#include "client/testing.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::eventually;
using redlock::test::run_bounded;

namespace {

// The retry delay of waiters that must be woken: drawn from [15 s, 45 s], beyond the 10 s
// a woken waiter is given, so a permit taken in time was taken on a release.
constexpr auto never = 30s;

// What the contenders saw: at each acquisition, the other holders whose permit was still
// valid (before its deadline) at that moment. More than N - 1 of them, or one with the
// same permit index, is a violation of the bound. Counting only valid permits makes the
// check exact: a permit past its deadline may legitimately be taken by another.
struct holders {
  explicit holders(std::size_t workers, std::size_t permits)
      : permits(permits), held(workers), last_fence(permits, 0) {}

  void acquired(std::size_t worker, const redlock::permit& p) {
    const auto now = redlock::boot_clock::now();
    std::size_t others = 0;
    for (std::size_t w = 0; w < held.size(); ++w) {
      if (w == worker || !held[w] || held[w]->second <= now) continue;
      ++others;
      if (held[w]->first == p.index) ++same_index;
    }
    if (others + 1 > permits) ++over_bound;
    most = std::max(most, others + 1);
    if (p.fence() != 0) {
      if (p.fence() <= last_fence.at(p.index)) ++fence_not_increasing;
      last_fence[p.index] = p.fence();
    }
    held[worker] = {p.index, p.lock.deadline()};
    ++acquisitions;
    // Handed over by a release (permit_grant_decisions.hpp), not taken by a try of its own.
    if (p.lock.token().starts_with("g|")) ++granted;
    if (on_acquired) on_acquired(acquisitions);
  }
  void released(std::size_t worker) { held[worker].reset(); }

  std::size_t permits;
  std::vector<std::optional<std::pair<std::size_t, redlock::boot_clock::time_point>>> held;
  std::vector<std::uint64_t> last_fence;
  std::size_t acquisitions = 0, most = 0, granted = 0;
  int over_bound = 0, same_index = 0, fence_not_increasing = 0;
  std::vector<std::string> errors;
  std::function<void(std::size_t)> on_acquired;
};

struct three_nodes : redlock::test::fleet_fixture<3> {
  // `rounds` acquire-hold-release cycles of one worker on its own client.
  static asio::awaitable<void> worker(redlock::client& c, std::size_t w, holders& h,
                                      std::size_t rounds, redlock::lock_options opts) {
    asio::steady_timer pause{co_await asio::this_coro::executor};
    for (std::size_t r = 0; r < rounds; ++r) {
      redlock::diagnostics diag;
      auto [ec, p] = co_await redlock::async_lock_permit(c, "pool", h.permits, opts, diag,
                                                         asio::as_tuple(asio::use_awaitable));
      if (ec) {
        h.errors.push_back(ec.message() + ": " + diag.message);
        continue;
      }
      h.acquired(w, p);
      // Held for a moment, so that holders overlap.
      pause.expires_after(2ms);
      co_await pause.async_wait(asio::use_awaitable);
      h.released(w);
      co_await c.async_unlock(std::move(p.lock), asio::as_tuple(asio::use_awaitable));
    }
  }

  // `workers` independent clients (configured by `cfg`) contend for `h.permits` permits.
  void contend(holders& h, const redlock::config& cfg, std::size_t rounds,
               redlock::lock_options opts) {
    std::vector<redlock::client> clients;
    for (std::size_t w = 0; w < h.held.size(); ++w) clients.push_back(make_client(cfg));
    run_bounded(
        io,
        [&]() -> asio::awaitable<void> {
          std::size_t running = clients.size();
          for (std::size_t w = 0; w < clients.size(); ++w)
            asio::co_spawn(io, worker(clients[w], w, h, rounds, opts),
                           [&running](std::exception_ptr) { --running; });
          const bool finished = co_await eventually([&] { return running == 0; }, 110s);
          BOOST_TEST_REQUIRE(finished);
          for (auto& c : clients) co_await c.async_shutdown(asio::use_awaitable);
        }(),
        120s);
    for (const auto& e : h.errors) BOOST_TEST_MESSAGE("a worker's acquisition failed: " << e);
    BOOST_TEST(h.errors.empty());
    BOOST_TEST(h.acquisitions == h.held.size() * rounds);
    BOOST_TEST(h.over_bound == 0, h.over_bound << " acquisitions beyond the bound");
    BOOST_TEST(h.same_index == 0, h.same_index << " acquisitions of a permit held by another");
    BOOST_TEST(h.fence_not_increasing == 0);
    // The bound is reached, not only respected: the semaphore lets N in at once.
    BOOST_TEST(h.most > 1);
    BOOST_TEST_MESSAGE("most holders at once: " << h.most << " of " << h.permits);
    BOOST_TEST(fleet.keys_without_ttl("fence").empty(), fleet.keys_without_ttl("fence"));
  }

  // The places in semaphore `name`'s line of waiters on node i, first first (`prefix`: the
  // clients' config::key_prefix).
  std::vector<std::string> line(std::size_t i, const std::string& name,
                                const std::string& prefix = "") {
    const auto r =
        fleet[i].command({"ZRANGE", prefix + "redlock:permit:{" + name + "}:line", "0", "-1"});
    std::vector<std::string> out;
    for (const auto& e : r.elements) out.push_back(e.text);
    return out;
  }
  // Whether every node's line of `name` has `n` places.
  bool in_line_everywhere(const std::string& name, std::size_t n) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (line(i, name).size() != n) return false;
    return true;
  }
  // Whether a majority of the nodes' lines of `name` have `n` places: all a waiter needs (a
  // node that ran its try before an earlier grant reached it gave it the permit instead,
  // taken back when the try lost, and keeps no place for it).
  bool in_line(const std::string& name, std::size_t n, const std::string& prefix = "") {
    std::size_t nodes = 0;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (line(i, name, prefix).size() == n) ++nodes;
    return nodes >= redlock::majority(fleet.size());
  }
  // Node 2 frozen after the 20th acquisition, thawed after the 60th: winning majorities change.
  void with_a_frozen_minority(holders& h, bool fenced) {
    h.on_acquired = [this](std::size_t n) {
      if (n == 20) fleet[2].freeze();
      if (n == 60) fleet[2].thaw();
    };
    contend(h, config(), 15, {.ttl = 2s, .wait = 60s, .fenced = fenced});
    BOOST_TEST(!fleet[2].frozen());
  }

  // No persistence: a restarted node forgets the permits it held. The restart guard (short
  // here) keeps it from voting until every permit it may have forgotten expired. A node is
  // killed and started again, in turn, every 15 acquisitions.
  void with_nodes_restarting_empty(holders& h, bool fenced) {
    auto cfg = config();
    cfg.restart_guard = true;
    cfg.max_ttl = 400ms;
    std::size_t next = 0;
    h.on_acquired = [this, &next](std::size_t n) {
      if (n % 15 != 0) return;
      fleet[next % 3].kill();
      fleet[next % 3].restart();
      ++next;
    };
    contend(h, cfg, 15, {.ttl = 400ms, .wait = 60s, .fenced = fenced});
    BOOST_TEST(next >= 5u);
  }

  // The offers channels clients listen on at node i (one per client with a waiting call).
  std::size_t offer_channels(std::size_t i) {
    return fleet[i].command({"PUBSUB", "CHANNELS", "*redlock:permit:offers:*"}).elements.size();
  }
  // Whether `n` clients listen for offers at every node (a node skips a waiter it cannot tell).
  bool listening_everywhere(std::size_t n) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (offer_channels(i) != n) return false;
    return true;
  }

  // Starts a waiting call for a permit of `name` (of `permits`) on `c`, cancelled by `stop`
  // when given; `got` is set when it completes, `p` to what it got.
  void start_wait(redlock::client& c, const std::string& name, std::size_t permits,
                  std::optional<error_code>& got, redlock::permit& p,
                  asio::cancellation_signal* stop = nullptr) {
    auto done = [&got, &p](error_code ec, redlock::permit r) {
      got = ec;
      p = std::move(r);
    };
    const redlock::lock_options opts{.ttl = 20s, .wait = 60s};
    if (stop)
      redlock::async_lock_permit(c, name, permits, opts,
                                 asio::bind_cancellation_slot(stop->slot(), std::move(done)));
    else
      redlock::async_lock_permit(c, name, permits, opts, std::move(done));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(semaphore, three_nodes)

BOOST_AUTO_TEST_CASE(independent_clients_never_hold_more_than_n_permits_and_fences_increase) {
  holders h{8, 3};
  contend(h, config(), 15, {.ttl = 2s, .wait = 60s, .fenced = true});
}

BOOST_AUTO_TEST_CASE(the_bound_holds_while_a_minority_node_is_frozen) {
  holders h{6, 2};
  with_a_frozen_minority(h, true);
}

BOOST_AUTO_TEST_CASE(the_bound_and_fences_hold_while_nodes_restart_empty) {
  holders h{6, 2};
  with_nodes_restarting_empty(h, true);
}

// Wider than one try's window (16 permits), a call sweeps window after window within one
// attempt: the same bound among independent clients, also while a node is frozen (a window's
// next try waits for the last one's answers, up to the node timeout).
BOOST_AUTO_TEST_CASE(a_semaphore_wider_than_a_window_keeps_the_bound) {
  holders h{20, 18};
  contend(h, config(), 5, {.ttl = 2s, .wait = 60s, .fenced = true});
}

BOOST_AUTO_TEST_CASE(a_semaphore_wider_than_a_window_keeps_the_bound_while_a_node_is_frozen) {
  holders h{20, 18};
  h.on_acquired = [this](std::size_t n) {
    if (n == 20) fleet[2].freeze();
    if (n == 60) fleet[2].thaw();
  };
  contend(h, config(), 5, {.ttl = 2s, .wait = 60s});
}

// One try of a 40-permit semaphore reads three windows: it finds the one permit left wherever
// it is, and a try of the full semaphore takes nothing and says why.
BOOST_AUTO_TEST_CASE(a_try_sweeps_every_window_for_the_last_free_permit) {
  constexpr std::size_t n = 40;
  auto a = make_client();
  auto b = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options opts{.ttl = 20s, .fenced = true};
    std::map<std::size_t, std::string> tokens;  // by permit
    std::vector<redlock::permit> held;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      auto [ec, p] = co_await redlock::async_try_lock_permit(a, "wide", n, opts,
                                                             asio::as_tuple(asio::use_awaitable));
      BOOST_TEST_REQUIRE(!ec, ec.message());
      BOOST_TEST(p.fence() > 0u);
      BOOST_TEST_REQUIRE(tokens.emplace(p.index, p.lock.token()).second);
      held.push_back(std::move(p));
    }
    std::size_t left = 0;
    while (tokens.contains(left)) ++left;
    auto [ec, last] = co_await redlock::async_try_lock_permit(b, "wide", n, opts,
                                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(last.index == left);
    tokens.emplace(last.index, last.lock.token());
    redlock::diagnostics diag;
    auto [full, none] = co_await redlock::async_try_lock_permit(
        b, "wide", n, opts, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(full == redlock::error::contended, full.message());
    BOOST_TEST(!none.valid());
    BOOST_TEST(diag.message.starts_with("lock a permit of wide (40 permits): "), diag.message);
    BOOST_TEST(diag.message.find("the last permit tried") != std::string::npos, diag.message);
    // Every permit still holds its holder's token on every node: the full try took nothing.
    for (std::size_t i = 0; i < fleet.size(); ++i)
      for (const auto& [k, token] : tokens)
        BOOST_TEST(fleet[i].command({"GET", "redlock:permit:{wide}:" + std::to_string(k)}).text ==
                   token);
    BOOST_TEST(fleet.keys_without_ttl("fence").empty(), fleet.keys_without_ttl("fence"));
    for (auto& p : held) co_await a.async_unlock(std::move(p.lock), asio::use_awaitable);
    co_await b.async_unlock(std::move(last.lock), asio::use_awaitable);
    for (auto* c : {&a, &b}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

// Unfenced, a waiting call is granted its permit by a release, with no try of its own: the same
// bounds, under the same faults, with most permits handed over that way.
BOOST_AUTO_TEST_CASE(granted_permits_keep_the_bound_among_independent_clients) {
  holders h{8, 3};
  contend(h, config(), 15, {.ttl = 2s, .wait = 60s});
  BOOST_TEST(h.granted > 0u);
  BOOST_TEST_MESSAGE(h.granted << " of " << h.acquisitions << " permits granted by a release");
}

BOOST_AUTO_TEST_CASE(granted_permits_keep_the_bound_while_a_minority_node_is_frozen) {
  holders h{6, 2};
  with_a_frozen_minority(h, false);
  BOOST_TEST(h.granted > 0u);
}

BOOST_AUTO_TEST_CASE(granted_permits_keep_the_bound_while_nodes_restart_empty) {
  holders h{6, 2};
  with_nodes_restarting_empty(h, false);
  BOOST_TEST(h.granted > 0u);
}

BOOST_AUTO_TEST_CASE(a_release_grants_the_head_of_the_line_its_permit_with_no_try) {
  // The waiter retries only after 30 s: after the release, it sends nothing, and holds the permit
  // on every node where it waited in line with its grant's token, valid from before its own try was
  // sent.
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto waiter = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // The waiter's client first hears its offers channel on every node (a waiting call on a
    // free semaphore subscribes it), so that its waiting call's first try counts every grant.
    auto warm = co_await redlock::async_lock_permit(waiter, "warm", 1, {.ttl = 20s, .wait = 5s},
                                                    asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually(
        [&] { return redlock::detail::offers_subscriptions(waiter) == fleet.size(); }));
    co_await waiter.async_unlock(std::move(warm.lock), asio::use_awaitable);
    auto held = co_await redlock::async_try_lock_permit(holder, "granted", 1, {.ttl = 20s},
                                                        asio::use_awaitable);
    std::optional<error_code> got;
    redlock::permit p;
    const auto called = redlock::boot_clock::now();
    start_wait(waiter, "granted", 1, got, p);
    // A majority of the lines: a node that the holder's try did not reach in time (a loaded
    // machine) had the permit free, and the waiter's try took it there and gave it back.
    BOOST_TEST_REQUIRE(co_await eventually([&] { return in_line("granted", 1); }));
    std::vector<std::size_t> lined;
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (line(i, "granted").size() == 1) lined.push_back(i);
    const auto released = redlock::boot_clock::now();
    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got.has_value(); }, 10s));
    BOOST_TEST(!*got, got->message());
    BOOST_TEST(p.valid());
    BOOST_TEST(p.lock.token().starts_with("g|"));
    // 20 s less the drift (1% + 2 ms), from the call's first try with its place: after the
    // call began, before the release that granted it.
    BOOST_TEST((p.lock.deadline() >= called + 20s - 202ms));
    BOOST_TEST((p.lock.deadline() <= released + 20s - 202ms));
    BOOST_TEST(co_await eventually([&] {
      for (const std::size_t i : lined)
        if (fleet[i].command({"GET", "redlock:permit:{granted}:0"}).text != p.lock.token())
          return false;
      return true;
    }));
    BOOST_TEST(co_await eventually([&] { return in_line_everywhere("granted", 0); }));
    co_await waiter.async_unlock(std::move(p.lock), asio::use_awaitable);
    for (std::size_t i = 0; i < fleet.size(); ++i)
      BOOST_TEST(fleet[i].command({"EXISTS", "redlock:permit:{granted}:0"}).integer == 0);
    BOOST_TEST(fleet.keys_without_ttl("").empty(), fleet.keys_without_ttl(""));
    for (auto* c : {&holder, &waiter}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_fenced_waiter_is_offered_its_permit_and_takes_it_with_a_try) {
  // A fence is counted by the try's script: a fenced call's place asks for offers, not grants.
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto waiter = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await redlock::async_try_lock_permit(
        holder, "offered", 1, {.ttl = 20s, .fenced = true}, asio::use_awaitable);
    std::optional<error_code> got;
    redlock::permit p;
    redlock::async_lock_permit(waiter, "offered", 1, {.ttl = 20s, .wait = 60s, .fenced = true},
                               [&](error_code ec, redlock::permit r) {
                                 got = ec;
                                 p = std::move(r);
                               });
    BOOST_TEST_REQUIRE(co_await eventually(
        [&] { return in_line_everywhere("offered", 1) && listening_everywhere(1); }));
    for (const auto& place : line(0, "offered")) BOOST_TEST(place.find('+') == std::string::npos);
    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got.has_value(); }, 10s));
    BOOST_TEST(!*got, got->message());
    BOOST_TEST(!p.lock.token().starts_with("g|"));
    BOOST_TEST(p.fence() > held.fence());
    co_await waiter.async_unlock(std::move(p.lock), asio::use_awaitable);
    for (auto* c : {&holder, &waiter}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_waiter_is_woken_by_the_release_of_any_permit) {
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto waiter = make_client(cfg);
  std::optional<error_code> got;
  redlock::permit second;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Waiting calls: a fresh fleet's fencing counters are repaired by the first attempts.
    const redlock::lock_options opts{.ttl = 20s, .wait = 10s, .fenced = true};
    auto a = co_await redlock::async_lock_permit(holder, "woken", 2, opts, asio::use_awaitable);
    auto b = co_await redlock::async_lock_permit(holder, "woken", 2, opts, asio::use_awaitable);
    BOOST_TEST_REQUIRE(a.index != b.index);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto [ec, p] = co_await redlock::async_lock_permit(
              waiter, "woken", 2, {.ttl = 20s, .wait = 60s, .fenced = true},
              asio::as_tuple(asio::use_awaitable));
          second = std::move(p);
          got = ec;
        },
        asio::detached);
    // The waiter swept once, found both held, and took its place in line on every node. Each
    // client that made a waiting call listens on its own offers channel (the holder too).
    const bool listening =
        co_await eventually([&] { return in_line("woken", 1) && listening_everywhere(2); });
    BOOST_TEST_REQUIRE(listening);
    BOOST_TEST(!got.has_value());
    const std::size_t freed = b.index;
    co_await holder.async_unlock(std::move(b.lock), asio::use_awaitable);
    // Only the release can let it in before its retry delay (at least 15 s).
    const bool done = co_await eventually([&] { return got.has_value(); }, 10s);
    BOOST_TEST_REQUIRE(done);
    BOOST_TEST(!*got, got->message());
    BOOST_TEST(second.index == freed);
    BOOST_TEST(second.valid());
    BOOST_TEST(second.fence() > 0u);
    co_await waiter.async_unlock(std::move(second.lock), asio::use_awaitable);
    co_await holder.async_unlock(std::move(a.lock), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
    // The winner left the line; the clients' offers channels closed with them.
    BOOST_TEST(co_await eventually([&] { return in_line_everywhere("woken", 0); }));
    BOOST_TEST(co_await eventually([&] { return offer_channels(0) == 0; }));
  }());
}

BOOST_AUTO_TEST_CASE(all_permits_held_is_contended_for_a_try_and_wait_timeout_for_a_wait) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options opts{.ttl = 20s, .wait = 100ms};
    auto only = co_await redlock::async_try_lock_permit(c, "full", 1, opts, asio::use_awaitable);
    BOOST_TEST(only.index == 0u);
    const std::string key = redlock::permit_resource("full", 0);
    BOOST_TEST(key == "redlock:permit:{full}:0");
    BOOST_TEST(only.lock.resource() == key);
    BOOST_TEST(fleet.has_key(0, key) + fleet.has_key(1, key) + fleet.has_key(2, key) >= 2);
    auto [e1, p1] = co_await redlock::async_try_lock_permit(c, "full", 1, opts,
                                                            asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e1 == redlock::error::contended);
    BOOST_TEST(!p1.lock.owns());
    redlock::diagnostics diag;
    auto [e2, p2] = co_await redlock::async_lock_permit(c, "full", 1, opts, diag,
                                                        asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e2 == redlock::error::wait_timeout);
    BOOST_TEST(diag.message.find("permit") != std::string::npos, diag.message);
    // The permit's lock is an ordinary lock: it extends and releases as any.
    co_await c.async_extend(only.lock, 30s, asio::use_awaitable);
    BOOST_TEST(only.lock.ttl() == 30s);
    co_await c.async_unlock(std::move(only.lock), asio::use_awaitable);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
}

// The story of issue 39: two clients ask for 2 permits of one name, a third for 3. The
// nodes record the count the first permit was taken under, so the third is refused, with
// its own error naming the nodes' count, at once (a waiting call too), and takes nothing:
// never three holders.
BOOST_AUTO_TEST_CASE(another_permit_count_is_refused_with_its_own_error_and_takes_nothing) {
  auto first = make_client();
  auto second = make_client();
  auto third = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options opts{.ttl = 20s, .wait = 10s, .fenced = true};
    auto a = co_await redlock::async_lock_permit(first, "mixed", 2, opts, asio::use_awaitable);
    auto b = co_await redlock::async_lock_permit(second, "mixed", 2, opts, asio::use_awaitable);
    BOOST_TEST(a.index != b.index);
    const auto keys_before = fleet.total_keys();
    for (const bool wait : {false, true}) {
      redlock::diagnostics diag;
      // A statement per co_await (GCC 12 and co_await inside ?:).
      std::tuple<error_code, redlock::permit> got;
      if (wait) {
        got = co_await redlock::async_lock_permit(third, "mixed", 3, {.ttl = 20s, .wait = 60s},
                                                  diag, asio::as_tuple(asio::use_awaitable));
      } else {
        got = co_await redlock::async_try_lock_permit(third, "mixed", 3, {.ttl = 20s}, diag,
                                                      asio::as_tuple(asio::use_awaitable));
      }
      auto& [ec, p] = got;
      BOOST_TEST(ec == redlock::error::permit_count_mismatch, ec.message());
      BOOST_TEST(!p.lock.owns());
      BOOST_TEST(diag.message.find("with 2 permits") != std::string::npos, diag.message);
      BOOST_TEST(diag.message.find('\n') == std::string::npos, diag.message);
    }
    // Nothing was written: the third permit's key was never taken anywhere.
    BOOST_TEST(fleet.total_keys() == keys_before);
    for (std::size_t i = 0; i < fleet.size(); ++i)
      BOOST_TEST(!fleet.has_key(i, redlock::permit_resource("mixed", 2)));
    // A smaller count is refused as well.
    auto [e1, p1] = co_await redlock::async_try_lock_permit(third, "mixed", 1, {.ttl = 20s},
                                                            asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(e1 == redlock::error::permit_count_mismatch);
    co_await first.async_unlock(std::move(a.lock), asio::use_awaitable);
    co_await second.async_unlock(std::move(b.lock), asio::use_awaitable);
    for (auto* c : {&first, &second, &third}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

// The record of the count has a TTL: set by a grant to outlive the permit, and kept at
// least as long as a permit's extensions; it stays after the last release and dies with
// its TTL (no key without one).
BOOST_AUTO_TEST_CASE(the_count_record_outlives_its_permits_and_has_a_ttl) {
  auto c = make_client();
  const std::string record = redlock::permit_count_resource("kept");
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto p = co_await redlock::async_lock_permit(c, "kept", 2, {.ttl = 2s, .wait = 10s},
                                                 asio::use_awaitable);
    auto ttl_on = [&](std::size_t i) { return fleet[i].command({"PTTL", record}).integer; };
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      if (!fleet.has_key(i, redlock::permit_resource("kept", p.index))) continue;
      BOOST_TEST(fleet[i].command({"GET", record}).text == "2");
      BOOST_TEST(ttl_on(i) > fleet[i].command({"PTTL", std::string{p.lock.key()}}).integer);
    }
    co_await c.async_extend(p.lock, 30s, asio::use_awaitable);
    // Sent beside the extension: seen once the nodes ran it.
    const bool kept = co_await eventually([&] {
      std::size_t longer = 0;
      for (std::size_t i = 0; i < fleet.size(); ++i) longer += ttl_on(i) > 30000;
      return longer >= 2;
    });
    BOOST_TEST(kept);
    co_await c.async_unlock(std::move(p.lock), asio::use_awaitable);
    BOOST_TEST(fleet.keys_without_ttl("fence").empty(), fleet.keys_without_ttl("fence"));
    co_await c.async_shutdown(asio::use_awaitable);
  }());
}

// A plain lock cannot name a permit's key (nor the record), and the names permits used
// before (resource + ":permit:" + index) are plain names that reach no permit.
BOOST_AUTO_TEST_CASE(a_plain_lock_cannot_take_a_permits_key) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (const std::string& name :
         {redlock::permit_resource("plain", 0), redlock::permit_count_resource("plain")}) {
      auto [ec, lk] =
          co_await c.async_try_lock(name, {.ttl = 2s}, asio::as_tuple(asio::use_awaitable));
      BOOST_TEST(ec == redlock::error::invalid_resource, name);
    }
    BOOST_TEST(fleet.total_keys() == 0);
    auto old_name = co_await c.async_try_lock("plain:permit:0", {.ttl = 20s}, asio::use_awaitable);
    auto p =
        co_await redlock::async_try_lock_permit(c, "plain", 1, {.ttl = 20s}, asio::use_awaitable);
    BOOST_TEST(p.index == 0u);
    co_await c.async_unlock(std::move(p.lock), asio::use_awaitable);
    co_await c.async_unlock(std::move(old_name), asio::use_awaitable);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(argument_errors_are_refused_before_any_io) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const redlock::lock_options ok{.ttl = 2s};
    auto call = [&](std::string_view r, std::size_t n,
                    redlock::lock_options o) -> asio::awaitable<error_code> {
      redlock::diagnostics diag;
      auto [ec, p] = co_await redlock::async_lock_permit(c, r, n, o, diag,
                                                         asio::as_tuple(asio::use_awaitable));
      if (ec) BOOST_TEST(!p.lock.owns());
      if (ec) BOOST_TEST(!diag.message.empty());
      co_return ec;
    };
    const error_code zero = co_await call("args", 0, ok);
    BOOST_TEST(zero == redlock::error::invalid_argument);
    const error_code too_many = co_await call("args", redlock::max_permits + 1, ok);
    BOOST_TEST(too_many == redlock::error::invalid_argument);
    const error_code empty = co_await call("", 2, ok);
    BOOST_TEST(empty == redlock::error::invalid_resource);
    // "{}" is no hash tag: its keys would not share a slot.
    const error_code no_tag = co_await call("}args", 2, ok);
    BOOST_TEST(no_tag == redlock::error::invalid_resource);
    const error_code ttl = co_await call("args", 2, {.ttl = 0ms});
    BOOST_TEST(ttl == redlock::error::invalid_ttl);
    const error_code wait = co_await call("args", 2, {.ttl = 2s, .wait = -1ms});
    BOOST_TEST(wait == redlock::error::invalid_wait);
    const error_code fair = co_await call("args", 2, {.ttl = 2s, .fair = true});
    BOOST_TEST(fair == redlock::error::invalid_argument);
    const error_code shared = co_await call("args", 2, {.ttl = 2s, .shared = true});
    BOOST_TEST(shared == redlock::error::invalid_argument);
    BOOST_TEST(fleet.total_keys() == 0);
    // The cap itself is allowed.
    const error_code cap = co_await call("args", redlock::max_permits, ok);
    BOOST_TEST(!cap);
    co_await c.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_completes_with_cancelled_and_holds_nothing) {
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto waiter = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await redlock::async_try_lock_permit(holder, "cancel", 1, {.ttl = 20s},
                                                        asio::use_awaitable);
    asio::cancellation_signal stop;
    std::optional<error_code> got;
    redlock::permit p;
    redlock::async_lock_permit(
        waiter, "cancel", 1, {.ttl = 20s, .wait = 60s},
        asio::bind_cancellation_slot(stop.slot(), [&](error_code ec, redlock::permit r) {
          got = ec;
          p = std::move(r);
        }));
    const bool listening = co_await eventually([&] { return in_line("cancel", 1); });
    BOOST_TEST_REQUIRE(listening);
    stop.emit(asio::cancellation_type::terminal);
    const bool done = co_await eventually([&] { return got.has_value(); }, 5s);
    BOOST_TEST_REQUIRE(done);
    BOOST_TEST(*got == redlock::error::cancelled);
    BOOST_TEST(!p.lock.owns());
    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_release_hands_its_permit_to_the_first_in_line_alone) {
  // Two waiters of other clients, neither of which retries before 15 s: a release lets in the
  // one that waited longer, and the other stays in line until the next release.
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto first = make_client(cfg);
  auto second = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await redlock::async_try_lock_permit(holder, "fifo", 1, {.ttl = 20s},
                                                        asio::use_awaitable);
    std::optional<error_code> got1, got2;
    redlock::permit p1, p2;
    start_wait(first, "fifo", 1, got1, p1);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return in_line("fifo", 1); }));
    start_wait(second, "fifo", 1, got2, p2);
    BOOST_TEST_REQUIRE(
        co_await eventually([&] { return in_line("fifo", 2) && listening_everywhere(2); }));
    // Every node that has both places has them in one order: the calls' own.
    std::vector<std::string> order;
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const auto here = line(i, "fifo");
      if (here.size() != 2) continue;
      if (order.empty()) order = here;
      BOOST_TEST(here == order);
    }

    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got1.has_value(); }, 10s));
    BOOST_TEST(!*got1, got1->message());
    BOOST_TEST(p1.valid());
    // The second waiter was told nothing: still waiting, still in line (first now).
    BOOST_TEST(!got2.has_value());
    BOOST_TEST(co_await eventually([&] { return in_line("fifo", 1); }));
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      const auto here = line(i, "fifo");
      if (!here.empty()) BOOST_TEST(here.front() == order.back());
    }

    co_await first.async_unlock(std::move(p1.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got2.has_value(); }, 10s));
    BOOST_TEST(!*got2, got2->message());
    BOOST_TEST(p2.valid());
    BOOST_TEST(co_await eventually([&] { return in_line_everywhere("fifo", 0); }));
    co_await second.async_unlock(std::move(p2.lock), asio::use_awaitable);
    // Nothing is left without a TTL, and the permit is free (no offer lingers).
    BOOST_TEST(fleet.keys_without_ttl("").empty(), fleet.keys_without_ttl(""));
    BOOST_TEST(fleet[0].command({"EXISTS", "redlock:permit:{fifo}:0"}).integer == 0);
    for (auto* c : {&holder, &first, &second}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_key_prefix_with_spaces_still_carries_offers) {
  // The offers channel starts with the key prefix, so a place ("<channel> <id>") may hold
  // more than one space: the release must still tell the waiter, which retries only after
  // 15 s, so that a permit taken in time was taken on the offer.
  auto cfg = config();
  cfg.key_prefix = "my app: ";
  auto holder = make_client(cfg);
  cfg.retry_delay = never;
  auto waiter = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await redlock::async_try_lock_permit(holder, "spaced", 1, {.ttl = 20s},
                                                        asio::use_awaitable);
    std::optional<error_code> got;
    redlock::permit p;
    start_wait(waiter, "spaced", 1, got, p);
    BOOST_TEST_REQUIRE(co_await eventually(
        [&] { return in_line("spaced", 1, "my app: ") && listening_everywhere(1); }));
    BOOST_TEST(!got.has_value());
    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got.has_value(); }, 10s));
    BOOST_TEST(!*got, got->message());
    BOOST_TEST(p.valid());
    co_await waiter.async_unlock(std::move(p.lock), asio::use_awaitable);
    BOOST_TEST(fleet.keys_without_ttl("").empty(), fleet.keys_without_ttl(""));
    for (auto* c : {&holder, &waiter}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(an_offer_to_a_call_that_gave_up_goes_on_to_the_next_in_line) {
  // The first in line is cancelled (its place stays on the nodes until it lapses) and the
  // second's client is gone (nobody hears its channel): a release passes both over, and the
  // third, which retries only after 15 s, gets the permit at once.
  auto holder = make_client();
  auto cfg = config();
  cfg.retry_delay = never;
  auto cancelled = make_client(cfg);
  auto gone = make_client(cfg);
  auto third = make_client(cfg);
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto held = co_await redlock::async_try_lock_permit(holder, "gaveup", 1, {.ttl = 20s},
                                                        asio::use_awaitable);
    asio::cancellation_signal stop;
    std::optional<error_code> got1, got2, got3;
    redlock::permit p1, p2, p3;
    start_wait(cancelled, "gaveup", 1, got1, p1, &stop);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return in_line("gaveup", 1); }));
    start_wait(gone, "gaveup", 1, got2, p2);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return in_line("gaveup", 2); }));
    start_wait(third, "gaveup", 1, got3, p3);
    BOOST_TEST_REQUIRE(
        co_await eventually([&] { return in_line("gaveup", 3) && listening_everywhere(3); }));

    stop.emit(asio::cancellation_type::terminal);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got1.has_value(); }, 5s));
    BOOST_TEST(*got1 == redlock::error::cancelled);
    co_await gone.async_shutdown(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got2.has_value(); }, 5s));
    BOOST_TEST(*got2 == redlock::error::shut_down);
    BOOST_TEST(in_line("gaveup", 3));  // places outlive their calls until they lapse

    co_await holder.async_unlock(std::move(held.lock), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await eventually([&] { return got3.has_value(); }, 10s));
    BOOST_TEST(!*got3, got3->message());
    BOOST_TEST(p3.valid());
    BOOST_TEST(!p1.lock.owns());
    co_await third.async_unlock(std::move(p3.lock), asio::use_awaitable);
    BOOST_TEST(fleet.keys_without_ttl("").empty(), fleet.keys_without_ttl(""));
    for (auto* c : {&holder, &cancelled, &third}) co_await c->async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_SUITE_END()
