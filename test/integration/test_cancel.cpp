// SPDX-License-Identifier: BSL-1.0
// Per-operation cancellation against real servers (docs/api.md, "Cancel"): each
// operation stops for the cancellation types it honours and ignores the others. Every
// node is frozen while the operation is in flight, so only a cancellation can end it
// before the node timeout; the nodes thaw before the next check.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;
using type = asio::cancellation_type;

namespace {

constexpr type all_types[] = {type::terminal, type::partial, type::total};

struct cancel_fleet : redlock::test::fleet_fixture<3> {
  template <typename Done>
  bool run_until(Done done) {
    return redlock::test::run_until(io, std::move(done));
  }

  void freeze_all() {
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].freeze();
  }
  void thaw_all() {
    for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].thaw();
  }

  // Starts `initiate` with a callback bound to a cancellation slot while every node is
  // frozen, emits `t` 20 ms later on the client's executor, and returns the error the
  // operation completed with.
  template <typename Initiate>
  error_code outcome(type t, Initiate initiate) {
    asio::cancellation_signal sig;
    std::optional<error_code> got;
    freeze_all();
    initiate(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, auto&&...) { got = ec; }));
    asio::steady_timer after{io, 20ms};
    after.async_wait([&](error_code) { sig.emit(t); });
    BOOST_TEST(run_until([&] { return got.has_value(); }));
    thaw_all();
    return got.value_or(error_code{});
  }

  // A client of its own whose connections are up.
  redlock::client ready_client() {
    auto c = make_client();
    run_bounded(io, answered_everywhere(c));
    return c;
  }

  void shut(redlock::client& c) {
    bool down = false;
    c.async_shutdown([&](error_code) { down = true; });
    BOOST_TEST(run_until([&] { return down; }));
  }

  redlock::lock take(redlock::client& c, const std::string& name) {
    return run_bounded(io, c.async_try_lock(name, {.ttl = 10s}, asio::use_awaitable));
  }

  // Inside outcome()'s initiation, where every node is frozen: a lock taken meanwhile.
  redlock::lock take_while_frozen(redlock::client& c, const std::string& name) {
    thaw_all();
    auto lk = take(c, name);
    freeze_all();
    return lk;
  }

  // Checks, each on a fresh client, that `op(client, handler)` completes with cancelled
  // exactly for the types in `honoured`.
  template <typename Op>
  void honours(asio::cancellation_type_t honoured, Op op) {
    for (type t : all_types) {
      auto c = ready_client();
      const error_code ec = outcome(t, [&](auto handler) { op(c, std::move(handler)); });
      const bool expected = (t & honoured) != type::none;
      BOOST_TEST((ec == redlock::error::cancelled) == expected,
                 "type " << static_cast<unsigned>(t) << " gave " << ec.message());
      shut(c);
    }
  }
};

constexpr auto with_effects = type::terminal | type::partial;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cancellation_types, cancel_fleet)

BOOST_AUTO_TEST_CASE(a_waiting_lock_honours_terminal_and_partial_but_not_total) {
  honours(with_effects, [](redlock::client& c, auto h) {
    c.async_lock("cancel:lock", {.ttl = 5s, .wait = 600ms}, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(an_unlock_whose_commands_went_out_honours_terminal_and_partial_not_total) {
  std::optional<redlock::lock> lk;
  honours(with_effects, [&](redlock::client& c, auto h) {
    lk = take_while_frozen(c, "cancel:unlock");
    c.async_unlock(std::move(*lk), std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(an_extend_honours_terminal_and_partial_not_total) {
  std::optional<redlock::lock> lk;
  honours(with_effects, [&](redlock::client& c, auto h) {
    lk = take_while_frozen(c, "cancel:extend");
    c.async_extend(*lk, 10s, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(an_inspect_honours_every_type) {
  honours(type::terminal | type::partial | type::total,
          [](redlock::client& c, auto h) { c.async_inspect("cancel:inspect", std::move(h)); });
}

BOOST_AUTO_TEST_CASE(a_try_claim_honours_terminal_and_partial_not_total) {
  honours(with_effects, [](redlock::client& c, auto h) {
    c.async_try_claim({"cancel:claim:a", "cancel:claim:b"}, 5s, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(a_cancelled_try_claim_keeps_nothing_it_took) {
  auto c = ready_client();
  const error_code ec = outcome(
      type::partial, [&](auto h) { c.async_try_claim({"cancel:kept"}, 10s, std::move(h)); });
  BOOST_TEST(ec == redlock::error::cancelled);
  // The frozen nodes run the queued SET when they thaw; the release queued after it
  // removes it again.
  BOOST_TEST(run_until([&] { return copies("cancel:kept") == 0; }));
  shut(c);
}

BOOST_AUTO_TEST_CASE(a_settle_honours_terminal_only) {
  std::vector<redlock::lock> won;
  int round = 0;
  honours(type::terminal, [&](redlock::client& c, auto h) {
    won.clear();
    won.push_back(take_while_frozen(c, "cancel:settle:" + std::to_string(++round)));
    c.async_settle(std::span<redlock::lock>{won}, 10s, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(a_coalesced_claim_honours_terminal_and_partial_not_total) {
  int round = 0;
  honours(with_effects, [&](redlock::client& c, auto h) {
    c.async_claim("cancel:one:" + std::to_string(++round), 5s, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(a_cancelled_coalesced_claim_keeps_nothing_it_took) {
  auto c = ready_client();
  const error_code ec =
      outcome(type::partial, [&](auto h) { c.async_claim("cancel:one:kept", 10s, std::move(h)); });
  BOOST_TEST(ec == redlock::error::cancelled);
  BOOST_TEST(run_until([&] { return copies("cancel:one:kept") == 0; }));
  shut(c);
}

BOOST_AUTO_TEST_CASE(a_claim_cancelled_while_queued_behind_full_batches_keeps_nothing) {
  auto c = ready_client();
  // Four calls with different TTLs fill the four batch slots; the fifth waits in the queue.
  int finished = 0;
  for (int k = 0; k < 4; ++k)
    c.async_claim("cancel:busy:" + std::to_string(k), std::chrono::seconds{5 + k},
                  [&](error_code, redlock::claim_result) { ++finished; });
  const error_code ec =
      outcome(type::terminal, [&](auto h) { c.async_claim("cancel:queued", 10s, std::move(h)); });
  BOOST_TEST(ec == redlock::error::cancelled);
  BOOST_TEST(finished == 0);  // it did not wait for the batches ahead of it
  BOOST_TEST(run_until([&] { return finished == 4; }));
  // A claim made after the busy batches completed has been answered: anything the
  // cancelled call sent would have been answered before it.
  auto after = run_bounded(io, c.async_claim("cancel:after", 10s, asio::use_awaitable));
  BOOST_TEST(redlock::to_string(after.status) == std::string{"won"});
  BOOST_TEST(copies("cancel:queued") == 0);
  shut(c);
}

BOOST_AUTO_TEST_CASE(a_coalesced_settle_honours_terminal_only) {
  std::optional<redlock::lock> lk;
  int round = 0;
  honours(type::terminal, [&](redlock::client& c, auto h) {
    lk = take_while_frozen(c, "cancel:settle:one:" + std::to_string(++round));
    c.async_settle(*lk, 10s, std::move(h));
  });
}

BOOST_AUTO_TEST_CASE(a_keeper_wait_honours_every_type) {
  for (type t : all_types) {
    auto c = ready_client();
    redlock::keeper k{c, take(c, "cancel:keeper:" + std::to_string(static_cast<unsigned>(t)))};
    asio::cancellation_signal sig;
    std::optional<error_code> got;
    k.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec) { got = ec; }));
    asio::steady_timer after{io, 20ms};
    after.async_wait([&](error_code) { sig.emit(t); });
    BOOST_TEST(run_until([&] { return got.has_value(); }));
    BOOST_TEST(got.value_or(error_code{}) == redlock::error::cancelled);
    shut(c);
  }
}

BOOST_AUTO_TEST_CASE(a_shutdown_honours_no_type) {
  for (type t : all_types) {
    auto c = ready_client();
    asio::cancellation_signal sig;
    std::optional<error_code> got;
    c.async_shutdown(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec) { got = ec; }));
    sig.emit(t);
    BOOST_TEST(run_until([&] { return got.has_value(); }));
    BOOST_TEST(!got.value_or(redlock::error::cancelled));
  }
}

BOOST_AUTO_TEST_SUITE_END()
