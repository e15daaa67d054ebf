// SPDX-License-Identifier: BSL-1.0
// A program written the way the docs show, compiled (not run) by the CTest tests
// public_headers_warning_free*: with -Wall -Wextra -Wpedantic -Wshadow -Wconversion
// -Werror, once without and once with -O3, Boost included as a system header. It fills
// every public aggregate with designated initializers naming only some fields, and
// instantiates the header templates with the usual completion tokens, so a warning our
// headers would give a user fails the test.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <exception>
#include <future>
#include <iostream>
#include <memory>
#include <redlock/redlock.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> use_every_operation(redlock::client& locks) {
  const redlock::lock_options fenced{.ttl = 2s, .wait = 0ms, .fenced = true};
  redlock::diagnostics diag;
  auto attempt = co_await locks.async_lock("r", fenced, diag, asio::as_tuple(asio::use_awaitable));
  if (std::get<0>(attempt)) std::cout << diag.message << "\n";
  redlock::lock lk = std::move(std::get<1>(attempt));
  co_await locks.async_extend(lk, 2s, asio::use_awaitable);

  redlock::keeper keep{locks, std::move(lk), {.fraction = 0.5}};
  co_await keep.async_wait_lost(asio::use_awaitable);
  auto stopped = co_await keep.async_stop(asio::as_tuple(asio::use_awaitable));
  co_await locks.async_unlock(std::move(std::get<1>(stopped)), asio::use_awaitable);

  const redlock::hold_options hold{.ttl = 2s, .renew = {.max_hold = 10s}};
  std::string result = co_await redlock::with_lock(
      locks, "r", hold, [](redlock::keeper&) -> asio::awaitable<std::string> { co_return "x"; });
  co_await redlock::with_lock(locks, "r", redlock::hold_options{},
                              [](redlock::keeper&) -> asio::awaitable<void> { co_return; });
  const redlock::hold_options fenced_hold{.ttl = 2s, .fenced = true};
  redlock::diagnostics hold_diag;
  std::uint64_t token = co_await redlock::with_lock(
      locks, "r", fenced_hold, hold_diag,
      [](redlock::keeper& k) -> asio::awaitable<std::uint64_t> { co_return k.fence(); });
  redlock::async_with_lock(
      locks, "r", fenced_hold, [](redlock::keeper&) -> asio::awaitable<int> { co_return 1; },
      [](std::exception_ptr, int) {});

  std::vector<std::string> names{"a", "b"};
  redlock::multi_lock both = co_await locks.async_lock_all(names, fenced, asio::use_awaitable);
  co_await locks.async_unlock(std::move(both), asio::use_awaitable);

  redlock::claim_result claim = co_await locks.async_claim("c", 2s, asio::use_awaitable);
  if (claim.won()) co_await locks.async_settle(claim.lock, 1h, asio::use_awaitable);
  std::cout << result << " " << token << "\n";
}

// The same calls without a token (default_token_t): failures throw error_with_diagnostics.
asio::awaitable<void> use_default_tokens(redlock::client& locks) {
  try {
    redlock::lock lk = co_await locks.async_lock("r", {.ttl = 2s});
    co_await locks.async_extend(lk, 2s);
    redlock::keeper keep{locks, std::move(lk)};
    co_await keep.async_wait_lost();
    redlock::lock back = co_await keep.async_stop();
    co_await locks.async_unlock(std::move(back));
    redlock::claim_result claim = co_await locks.async_claim("c", 2s);
    if (claim.won()) co_await locks.async_settle(claim.lock, 1h);
    co_await locks.async_shutdown();
  } catch (const redlock::error_with_diagnostics& e) {
    std::cout << e.what() << e.get_diagnostics().nodes.size() << "\n";
  }
}

}  // namespace

int main() {
  asio::io_context io;
  auto metrics =
      std::make_shared<redlock::metrics_observer>(redlock::metrics_options{.prefix = "x_"});
  redlock::client locks{io.get_executor(), redlock::config{.nodes = {"redis://127.0.0.1:1"}}};
  redlock::client tuned{
      io.get_executor(),
      redlock::config{
          .nodes = {"rediss://127.0.0.1:1"},
          .tls = {.verify = false},
          .max_ttl = 2s,
          .on_event = [](const redlock::node_event& e) { std::cout << e.message << "\n"; },
          .observer = metrics}};

  asio::co_spawn(io, use_every_operation(locks), asio::detached);
  asio::co_spawn(io, use_default_tokens(locks), asio::detached);
  locks.async_try_lock("w", {},
                       redlock::with_diagnostics([](std::exception_ptr, redlock::lock) {}));
  std::future<redlock::lock> later = locks.async_lock("f", {.wait = 1s}, asio::use_future);
  locks.async_try_lock("cb", {.ttl = 1s}, [](boost::system::error_code ec, redlock::lock lk) {
    std::cout << ec.message() << lk.fence() << "\n";
  });
  auto deferred = locks.async_try_lock("d", {}, asio::deferred);
  std::move(deferred)([](boost::system::error_code, redlock::lock) {});
  locks.async_try_claim({"e"}, 1s,
                        [](boost::system::error_code, std::vector<redlock::claim_result>) {});
  locks.async_shutdown(asio::detached);
  tuned.async_shutdown(asio::detached);

  const redlock::node_event event{.what = redlock::node_event::kind::restarted, .node = 1};
  const redlock::claim_result outcome{.status = redlock::claim_status::held};
  const redlock::node_uri uri{.host = "localhost"};
  const redlock::node_reply reply{.node = 2};
  const redlock::attempt_event attempt{.resource = "r", .attempt = 1};
  const redlock::acquire_event acquired{.resource = "r", .attempts = 1};
  const redlock::extend_event extended{.resource = "r"};
  const redlock::loss_event lost{.resource = "r"};
  const redlock::diagnostics diag{.message = "m"};
  const redlock::node_diagnostic answer{.node = 1, .answer = redlock::node_answer::held};
  std::cout << event.node << to_string(outcome.status) << uri.port << reply.node << attempt.attempt
            << acquired.attempts << extended.resource << lost.resource << diag.message
            << answer.node << "\n";

  io.run();
  return 0;
}
