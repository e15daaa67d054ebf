// SPDX-License-Identifier: BSL-1.0
// Asio's conventions in the public API, against real servers: calls without a token
// (default_token_t: with_diagnostics(asio::deferred)), exceptions that carry their
// diagnostics, diagnostics as data, and a release that owns the lock it releases.

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "async_helpers.hpp"
#include "fleet_fixture.hpp"
#include "redlock/redlock.hpp"

// GCC 12 at -O2 reports a false -Wmismatched-new-delete for the coroutine frames run by
// run_bounded below (as in test_bad_input.cpp): it pairs the frame's class-specific
// operator delete with the allocation Asio's operator new inlines; both are Asio's.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;

namespace {

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

struct api_fleet : redlock::test::fleet_fixture<3> {
  // Runs `io` until `done` holds, for at most 5 s.
  template <typename Done>
  bool run_until(Done done) {
    for (int i = 0; i < 1000 && !done(); ++i) io.run_for(5ms);
    return done();
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(api_conventions, api_fleet)

BOOST_AUTO_TEST_CASE(an_invalid_ttl_awaited_without_a_token_throws_the_reason) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    try {
      const redlock::lock_options bad{.ttl = 0ms};
      auto lk = co_await c.async_lock("r", bad);
      BOOST_ERROR("a TTL of 0 ms was accepted");
    } catch (const redlock::error_with_diagnostics& e) {
      BOOST_TEST(e.code() == redlock::error::invalid_ttl);
      BOOST_TEST(contains(e.what(), "the TTL must be from 1 ms to 24 h"), e.what());
      BOOST_TEST(contains(e.what(), "could not lock \"r\""), e.what());
      BOOST_TEST(e.get_diagnostics().message ==
                 "could not lock \"r\": invalid TTL: the TTL must be from 1 ms to 24 h");
      BOOST_TEST(e.get_diagnostics().nodes.empty());  // refused before any request
    }
    co_await c.async_shutdown();
  }());
}

BOOST_AUTO_TEST_CASE(with_use_awaitable_the_code_alone_says_which_argument_was_wrong) {
  // Plain asio::use_awaitable carries no diagnostics: the exception's code and its what()
  // are all the caller sees, so each kind of bad argument has a code of its own.
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    struct bad {
      std::string resource;
      redlock::lock_options opts;
      redlock::error code;
      const char* words;
    };
    const std::vector<bad> cases{
        {"r", {.ttl = 0ms}, redlock::error::invalid_ttl, "invalid TTL"},
        {"r", {.ttl = 3ms}, redlock::error::invalid_ttl, "invalid TTL"},
        {"", {.ttl = 1s}, redlock::error::invalid_resource, "invalid resource name"},
        {"r", {.ttl = 1s, .wait = -1ms}, redlock::error::invalid_wait, "invalid wait"},
    };
    for (const auto& b : cases) {
      try {
        co_await c.async_lock(b.resource, b.opts, asio::use_awaitable);
        BOOST_ERROR("accepted: " << redlock::make_error_code(b.code).message());
      } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == b.code, e.what());
        BOOST_TEST(contains(e.what(), b.words), e.what());
        BOOST_TEST(e.code() == boost::system::errc::invalid_argument);
        BOOST_TEST(redlock::is_argument_error(e.code()));
      }
    }
    std::vector<std::string> many(redlock::max_multi_lock + 1);
    for (std::size_t i = 0; i < many.size(); ++i) many[i] = "m" + std::to_string(i);
    try {
      co_await c.async_try_lock_all(std::move(many), {.ttl = 1s}, asio::use_awaitable);
      BOOST_ERROR("a set over max_multi_lock was accepted");
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == redlock::error::too_many_resources, e.what());
    }
    BOOST_TEST(!redlock::is_argument_error(redlock::error::contended));
    co_await c.async_shutdown();
  }());
}

BOOST_AUTO_TEST_CASE(with_diagnostics_carries_the_reason_to_any_token) {
  auto c = make_client();
  // A callback sees an exception_ptr; the caller's own diagnostics are filled and kept.
  std::optional<std::string> what;
  redlock::diagnostics mine;
  c.async_try_lock("", {}, mine,
                   redlock::with_diagnostics([&](std::exception_ptr ex, redlock::lock lk) {
                     BOOST_TEST(!lk.owns());
                     try {
                       if (ex) std::rethrow_exception(ex);
                       what = "";
                     } catch (const redlock::error_with_diagnostics& e) {
                       BOOST_TEST(e.code() == redlock::error::invalid_resource);
                       what = e.what();
                     }
                   }));
  BOOST_TEST_REQUIRE(run_until([&] { return what.has_value(); }));
  BOOST_TEST(contains(*what, "the resource name is empty"), *what);
  BOOST_TEST(contains(mine.message, "the resource name is empty"), mine.message);
  // use_awaitable, adapted: the same exception.
  run_bounded(io, [&]() -> asio::awaitable<void> {
    try {
      const redlock::lock_options too_long{.ttl = 24h + 1ms};
      std::vector<std::string> names{"a", "b"};  // not braced inside co_await (GCC 12)
      co_await c.async_lock_all(std::move(names), too_long,
                                redlock::with_diagnostics(asio::use_awaitable));
      BOOST_ERROR("a TTL over 24 h was accepted");
    } catch (const redlock::error_with_diagnostics& e) {
      BOOST_TEST(e.code() == redlock::error::invalid_ttl);
      BOOST_TEST(contains(e.what(), "the TTL must be from 1 ms to 24 h"), e.what());
    }
    // Success: no exception, the value passes through.
    auto lk =
        co_await c.async_lock("ok", {.ttl = 5s}, redlock::with_diagnostics(asio::use_awaitable));
    BOOST_TEST(lk.valid());
    co_await c.async_unlock(std::move(lk), redlock::with_diagnostics(asio::use_awaitable));
    co_await c.async_shutdown();
  }());
}

BOOST_AUTO_TEST_CASE(a_no_quorum_failure_lists_each_nodes_answer_as_data) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await answered_everywhere(c);  // connected to all three
    // Frozen: they time out, after node 0 has said yes.
    fleet[1].freeze();
    fleet[2].freeze();
    const redlock::lock_options once{.ttl = 5s};
    // With a diagnostics& and the error as a value.
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_try_lock("q", once, diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST_REQUIRE(diag.nodes.size() == 3u);
    const auto uris = fleet.uris();
    for (std::size_t i = 0; i < 3; ++i) {
      BOOST_TEST_CONTEXT("node " << i) {
        const auto& n = diag.nodes[i];
        BOOST_TEST(n.node == i);
        BOOST_TEST(contains(uris[i], n.address), n.address);
        if (i == 0) {
          BOOST_TEST((n.answer == redlock::node_answer::yes), to_string(n.answer));
          BOOST_TEST(!n.error);
        } else {
          BOOST_TEST((n.answer == redlock::node_answer::failed), to_string(n.answer));
          BOOST_TEST((n.error == redlock::error::node_timeout), n.error.message());
        }
      }
    }
    BOOST_TEST(contains(diag.message, "1 of 3 nodes agreed"), diag.message);
    // Without one, awaited with the default token: the data in the exception. (The
    // timed-out nodes now refuse requests at once, until a PING answers.)
    try {
      auto again = co_await c.async_try_lock("q2", once);
      BOOST_ERROR("locked with one node of three");
    } catch (const redlock::error_with_diagnostics& e) {
      BOOST_TEST(e.code() == redlock::error::no_quorum);
      BOOST_TEST(contains(e.what(), "too few Redis nodes answered"), e.what());
      const auto& nodes = e.get_diagnostics().nodes;
      BOOST_TEST_REQUIRE(nodes.size() == 3u);
      BOOST_TEST((nodes[0].answer != redlock::node_answer::failed), to_string(nodes[0].answer));
      for (std::size_t i = 1; i < 3; ++i) {
        BOOST_TEST((nodes[i].answer == redlock::node_answer::failed), to_string(nodes[i].answer));
        BOOST_TEST(static_cast<bool>(nodes[i].error));
        BOOST_TEST(contains(e.what(), nodes[i].address), e.what());
      }
    }
    // A success clears what a failure left.
    fleet[1].thaw();
    fleet[2].thaw();
    auto got = co_await c.async_lock("q", {.ttl = 5s, .wait = 5s}, diag, asio::use_awaitable);
    BOOST_TEST(diag.message.empty());
    BOOST_TEST(diag.nodes.empty());
    co_await c.async_unlock(std::move(got));
    co_await c.async_shutdown();
  }());
}

BOOST_AUTO_TEST_CASE(a_callback_releases_a_lock_it_got_by_value) {
  auto c = make_client();
  std::optional<error_code> released;
  std::string token;
  c.async_lock("cb", {.ttl = 10s}, [&](error_code ec, redlock::lock lk) {
    BOOST_TEST(!ec);
    token = lk.token();
    // lk dies when this callback returns, before the release has run: the release owns it.
    c.async_unlock(std::move(lk), [&](error_code uec) { released = uec; });
  });
  BOOST_TEST_REQUIRE(run_until([&] { return released.has_value(); }));
  BOOST_TEST(!*released, released->message());
  BOOST_TEST(!token.empty());
  BOOST_TEST(run_until([&] { return copies("cb") == 0; }));
}

BOOST_AUTO_TEST_CASE(a_deferred_chain_releases_a_lock_whose_variable_is_gone) {
  auto c = make_client();
  std::optional<error_code> released;
  {
    // The continuation's `lk` is gone once it has returned the unlock operation, and that
    // operation runs only later: it must own the lock.
    auto chain = c.async_lock("chain", {.ttl = 10s}, asio::deferred) |
                 asio::deferred([&c](error_code ec, redlock::lock lk) {
                   BOOST_TEST(!ec);
                   return c.async_unlock(std::move(lk), asio::deferred);
                 });
    std::move(chain)([&](error_code ec) { released = ec; });
  }
  BOOST_TEST_REQUIRE(run_until([&] { return released.has_value(); }));
  BOOST_TEST(!*released, released->message());
  BOOST_TEST(run_until([&] { return copies("chain") == 0; }));

  // A deferred unlock made now and run later, after the lock's variable is gone.
  std::optional<error_code> later;
  std::optional<decltype(c.async_unlock(redlock::lock{}, asio::deferred))> pending;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("later", {.ttl = 10s});
    pending.emplace(c.async_unlock(std::move(lk), asio::deferred));
  }());
  BOOST_TEST(copies("later") == 3);
  std::move (*pending)([&](error_code ec) { later = ec; });
  BOOST_TEST_REQUIRE(run_until([&] { return later.has_value(); }));
  BOOST_TEST(!*later, later->message());
  BOOST_TEST(run_until([&] { return copies("later") == 0; }));
}

BOOST_AUTO_TEST_CASE(every_operation_works_without_a_token_in_a_coroutine) {
  auto c = make_client();
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await c.async_lock("plain", {.ttl = 5s});
    BOOST_TEST(lk.valid());
    co_await c.async_extend(lk, 10s);
    BOOST_TEST((lk.ttl() == 10s));
    redlock::keeper keep{c, std::move(lk), {.fraction = 0.5}};
    auto back = co_await keep.async_stop();
    BOOST_TEST(back.valid());
    co_await c.async_unlock(std::move(back));
    BOOST_TEST(copies("plain") == 0);

    auto tried = co_await c.async_try_lock("plain", {.ttl = 5s});
    redlock::diagnostics diag;
    co_await c.async_unlock(std::move(tried), diag);
    BOOST_TEST(diag.message.empty());

    auto set = co_await c.async_lock_all({"s1", "s2"}, {.ttl = 5s});
    co_await c.async_extend(set, 10s);
    co_await c.async_unlock(std::move(set));
    BOOST_TEST(copies("s1") == 0);

    auto claim = co_await c.async_claim("once", 5s);
    BOOST_TEST(claim.won());
    co_await c.async_settle(claim.lock, 0ms);

    // A failure of a call without a token throws, with the reason.
    auto held = co_await c.async_lock("busy", {.ttl = 5s});
    auto other = make_client();
    try {
      auto second = co_await other.async_try_lock("busy", {.ttl = 5s});
      BOOST_ERROR("a held lock was taken twice");
    } catch (const redlock::error_with_diagnostics& e) {
      BOOST_TEST(e.code() == redlock::error::contended);
      BOOST_TEST(contains(e.what(), "could not lock \"busy\""), e.what());
      BOOST_TEST(e.get_diagnostics().nodes.size() == 3u);
    }
    co_await c.async_unlock(std::move(held));
    co_await other.async_shutdown();
    co_await c.async_shutdown();
  }());
}

// Braces inside co_await, as the docs write them: options as designated initialisers and
// names as a braced list, given to every kind of call. Run in the sanitizer pass too, where
// GCC 12 mishandling a temporary of the full expression (destroyed early or twice) would
// show as a use-after-free. (What GCC 12.2 does get wrong is a compile error, not a bad
// program: a `std::vector<std::string>{"a", "b"}` temporary inside co_await is refused
// with "array used as initializer"; api.md says so.)
BOOST_AUTO_TEST_CASE(braced_arguments_inside_co_await_stay_alive_for_the_whole_call) {
  auto c = make_client();
  int rounds = 0;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    const std::string long_name(64, 'n');  // on the heap: a dangling copy would be noticed
    for (int i = 0; i < 5; ++i) {
      auto work = [](redlock::keeper& k) -> asio::awaitable<std::string> {
        co_return std::string(100, k.valid() ? 'v' : '-');
      };
      const auto r = co_await redlock::with_lock(c, long_name, {.ttl = 5s, .fenced = true}, work);
      BOOST_TEST(r == std::string(100, 'v'));
      auto set = co_await c.async_lock_all({long_name + ":a", std::string_view{"set:b"}},
                                           {.ttl = 5s, .wait = 2s});
      BOOST_TEST(set.resources().front() == long_name + ":a");
      co_await c.async_unlock(std::move(set));
      auto p = co_await redlock::async_lock_permit(c, long_name, 2, {.ttl = 5s, .wait = 2s},
                                                   asio::use_awaitable);
      co_await c.async_unlock(std::move(p.lock), asio::use_awaitable);
      const int led = co_await redlock::lead(
          c, long_name + ":leader", std::string(64, 'v'), {.ttl = 5s, .wait = 2s},
          [](redlock::leadership&) -> asio::awaitable<int> { co_return 1; });
      rounds += led;
    }
  }());
  BOOST_TEST(rounds == 5);
  BOOST_TEST(copies(std::string(64, 'n')) == 0);  // with_lock released it
}

BOOST_AUTO_TEST_SUITE_END()
