// SPDX-License-Identifier: BSL-1.0
// Least privilege: a Redis ACL user with exactly the commands and keys docs/deployment.md
// lists can lock, extend, fence, claim and release; a user missing any one of them gets
// an error that names it; and passwords, from the URI, a file or the environment, never
// show in a message.

#include <boost/asio.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>

#include "async_helpers.hpp"
#include "fast_config.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::fast_config;
using redlock::test::run_bounded;

namespace {

// The lists of docs/deployment.md, for key_prefix "app:".
const std::vector<std::string> lock_commands{"+info",        "+role",    "+time",   "+ping",
                                             "+script|load", "+evalsha", "+eval",   "+set",
                                             "+get",         "+del",     "+pexpire"};
const std::vector<std::string> fence_commands{"+hincrby", "+hget", "+hset", "+hgetall"};
// Waking waiters of other clients (with channels "&app:*"); without them waiters poll.
const std::vector<std::string> wake_commands{"+publish", "+subscribe", "+unsubscribe"};
// Fair mode's line of waiters.
const std::vector<std::string> fair_commands{"+zadd", "+zrem", "+zrange", "+zrangebyscore"};

const std::string password = "Pa55-for-locker";

// (Re)defines user "locker" on every node with the given rules beyond its password.
void define_user(redlock::test::redis_fleet& fleet, const std::vector<std::string>& rules) {
  std::vector<std::string> cmd{"ACL",          "SETUSER", "locker", "reset", "on",
                               ">" + password, "~app:*",  "&app:*", "-@all"};
  cmd.insert(cmd.end(), rules.begin(), rules.end());
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const auto r = fleet[i].command(cmd);
    BOOST_TEST_REQUIRE(!r.is_error(), r.text);
  }
}

redlock::config locker_config(const redlock::test::redis_fleet& fleet) {
  auto cfg = fast_config(fleet.uris());
  cfg.key_prefix = "app:";
  cfg.user = "locker";
  cfg.password = password;
  return cfg;
}

// Small coroutines, one path each (GCC 12 under ASan misreads one large frame).
asio::awaitable<error_code> lock_extend_unlock(redlock::client& c, redlock::diagnostics& diag,
                                               bool fenced, bool fair = false) {
  const redlock::lock_options opts{.ttl = 5s, .wait = 300ms, .fenced = fenced, .fair = fair};
  const std::string resource = fair ? "fair" : fenced ? "fenced" : "plain";
  auto [ec, lk] = co_await c.async_lock(resource, opts, diag, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return ec;
  if (fenced) BOOST_TEST(lk.fence() > 0u);
  auto [extended] = co_await c.async_extend(lk, 6s, diag, asio::as_tuple(asio::use_awaitable));
  if (extended) co_return extended;
  auto [released] =
      co_await c.async_unlock(std::move(lk), diag, asio::as_tuple(asio::use_awaitable));
  co_return released;
}

asio::awaitable<error_code> claim_and_settle(redlock::client& c, redlock::diagnostics& diag,
                                             std::vector<std::string> names) {
  auto [ec, claims] = co_await c.async_try_claim(names, 5s, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return ec;
  if (claims[0].status != redlock::claim_status::won) {
    diag.message =
        "claim: " + std::string{to_string(claims[0].status)} + ": " + claims[0].error.message();
    co_return claims[0].error ? claims[0].error : error_code{redlock::error::no_quorum};
  }
  auto [settled] =
      co_await c.async_settle(claims[0].lock, 10s, asio::as_tuple(asio::use_awaitable));
  co_return settled;
}

asio::awaitable<error_code> lock_all_extend_unlock(redlock::client& c, redlock::diagnostics& diag,
                                                   std::vector<std::string> names, bool fenced) {
  const redlock::lock_options opts{.ttl = 5s, .wait = 300ms, .fenced = fenced};
  auto [ec, set] =
      co_await c.async_lock_all(names, opts, diag, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return ec;
  if (fenced) BOOST_TEST(set.fences().size() == names.size());
  auto [extended] = co_await c.async_extend(set, 6s, asio::as_tuple(asio::use_awaitable));
  if (extended) co_return extended;
  auto [released] = co_await c.async_unlock(std::move(set), asio::as_tuple(asio::use_awaitable));
  co_return released;
}

int claims_made = 0;  // a settled claim stays "done" for a while: a new name each time

// Every path the library has: lock, extend, unlock, plain and fenced; a claim settled as
// done; a multi-resource lock extended and released, plain and fenced. Returns the first failure's
// error and diagnostics (ec empty if all worked).
std::pair<error_code, std::string> every_path(const redlock::config& cfg) {
  asio::io_context io;
  redlock::client c{io.get_executor(), cfg};
  std::pair<error_code, std::string> out;
  std::vector<std::string> names{"order:" + std::to_string(++claims_made)};
  std::vector<std::string> set{"set:b", "set:a"};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    error_code ec = co_await lock_extend_unlock(c, diag, false);
    if (!ec) ec = co_await lock_extend_unlock(c, diag, true);
    if (!ec) ec = co_await claim_and_settle(c, diag, names);
    if (!ec) ec = co_await lock_all_extend_unlock(c, diag, set, false);
    if (!ec) ec = co_await lock_all_extend_unlock(c, diag, set, true);
    if (!ec) ec = co_await lock_extend_unlock(c, diag, false, true);
    out = {ec, diag.message};
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  return out;
}

// Nodes start unmarked, with a counter on node 0 only, so that a fenced lock runs the
// counter repair (HGETALL, then HSET) and raises the other nodes' counters (HSET).
void forget_fence_state(redlock::test::redis_fleet& fleet) {
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet[i].command({"FLUSHALL"});
  fleet[0].command({"HSET", "app:redlock:fence", "fenced", "100"});
}

std::vector<std::string> all_commands() {
  auto rules = lock_commands;
  rules.insert(rules.end(), fence_commands.begin(), fence_commands.end());
  rules.insert(rules.end(), wake_commands.begin(), wake_commands.end());
  rules.insert(rules.end(), fair_commands.begin(), fair_commands.end());
  return rules;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_documented_user_can_lock_extend_fence_claim_and_release) {
  redlock::test::redis_fleet fleet{3};
  forget_fence_state(fleet);
  define_user(fleet, all_commands());
  const auto [ec, diag] = every_path(locker_config(fleet));
  BOOST_TEST(!ec, ec.message() << ": " << diag);
  // Without the fencing commands, everything but fencing works.
  forget_fence_state(fleet);
  define_user(fleet, lock_commands);
  const auto [ec2, diag2] = every_path(locker_config(fleet));
  BOOST_TEST(ec2 == redlock::error::no_quorum);
  BOOST_TEST(diag2.find("could not lock \"fenced\"") != std::string::npos, diag2);
}

BOOST_AUTO_TEST_CASE(a_user_missing_one_command_gets_an_error_that_names_it) {
  redlock::test::redis_fleet fleet{3};
  // EVAL only serves background releases of abandoned attempts (nobody waits for
  // them) and PING only the liveness probe, which any reply satisfies: neither fails a
  // call, nor do the wake commands (waiters poll instead; a test below). Every other
  // command does, naming it.
  for (const auto& missing : all_commands()) {
    if (missing == "+eval" || missing == "+ping" ||
        std::find(wake_commands.begin(), wake_commands.end(), missing) != wake_commands.end())
      continue;
    BOOST_TEST_CONTEXT("without " << missing) {
      std::vector<std::string> rules;
      for (const auto& r : all_commands())
        if (r != missing) rules.push_back(r);
      forget_fence_state(fleet);
      define_user(fleet, rules);
      const auto [ec, diag] = every_path(locker_config(fleet));
      BOOST_TEST(ec);
      // The server's text names the command in lower case ('script|load'), our handshake
      // message in upper case (SCRIPT LOAD): accept either.
      std::string name = missing.substr(1);
      std::string upper = name;
      for (auto& ch : upper) ch = ch == '|' ? ' ' : static_cast<char>(std::toupper(ch));
      // Inside a script Redis names only the script; we add the commands it runs.
      BOOST_TEST((diag.find("'" + name + "'") != std::string::npos ||
                  diag.find("run " + upper) != std::string::npos ||
                  (diag.find("the script runs") != std::string::npos &&
                   (diag.find(" " + upper + " ") != std::string::npos ||
                    diag.find(" " + upper + ";") != std::string::npos))),
                 diag);
      BOOST_TEST(diag.find(password) == std::string::npos, diag);
      // A fair attempt refused after its SET (no ZREM) is undone like any other.
      for (std::size_t i = 0; i < fleet.size(); ++i)
        BOOST_TEST(fleet[i].command({"EXISTS", "app:fair"}).integer == 0, "node " << i);
    }
  }
}

namespace {

// `holder` takes "busy", `waiter` waits for it; returns the waiter's outcome after the
// holder's release. With retry_delay 30 s, a waiter done within the bound was woken.
error_code wait_for_release(const redlock::config& holder_cfg, redlock::config waiter_cfg,
                            redlock::test::redis_fleet& fleet, bool expect_wake) {
  asio::io_context io;
  waiter_cfg.retry_delay = expect_wake ? 30s : 20ms;
  redlock::client holder{io.get_executor(), holder_cfg};
  redlock::client waiter{io.get_executor(), waiter_cfg};
  error_code out = redlock::error::wait_timeout;
  bool done = false;
  redlock::lock second;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto first = co_await holder.async_lock("busy", {.ttl = 20s}, asio::use_awaitable);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto [ec, lk] = co_await waiter.async_lock("busy", {.ttl = 20s, .wait = 20s},
                                                     asio::as_tuple(asio::use_awaitable));
          second = std::move(lk);
          out = ec;
          done = true;
        },
        asio::detached);
    // In line (a SET refused), and listening if it may.
    co_await redlock::test::eventually([&] {
      const auto r = fleet[0].command({"PUBSUB", "NUMSUB", "app:busy"});
      return !expect_wake || (r.elements.size() == 2 && r.elements[1].integer == 1);
    });
    co_await holder.async_unlock(std::move(first), asio::use_awaitable);
    co_await redlock::test::eventually([&] { return done; }, 10s);
    if (second.owns()) co_await waiter.async_unlock(std::move(second), asio::use_awaitable);
    co_await waiter.async_shutdown(asio::use_awaitable);
    co_await holder.async_shutdown(asio::use_awaitable);
  }());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_documented_user_wakes_waiters_and_one_without_pubsub_polls) {
  redlock::test::redis_fleet fleet{3};
  define_user(fleet, all_commands());
  const auto cfg = locker_config(fleet);
  BOOST_TEST(wait_for_release(cfg, cfg, fleet, true) == error_code{});
  // Without the wake commands and channels, releases and waits still work: by polling.
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const auto r = fleet[i].command(
        {"ACL", "SETUSER", "locker", "resetchannels", "-publish", "-subscribe", "-unsubscribe"});
    BOOST_TEST_REQUIRE(!r.is_error(), r.text);
  }
  BOOST_TEST(wait_for_release(cfg, cfg, fleet, false) == error_code{});
}

BOOST_AUTO_TEST_CASE(a_user_limited_to_other_keys_is_refused_naming_the_keys) {
  redlock::test::redis_fleet fleet{3};
  define_user(fleet, all_commands());
  auto cfg = locker_config(fleet);
  cfg.key_prefix = "other:";
  const auto [ec, diag] = every_path(cfg);
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(diag.find("no permissions to access one of the keys") != std::string::npos, diag);
}

BOOST_AUTO_TEST_CASE(passwords_come_from_the_uri_a_file_or_the_environment_and_never_show) {
  redlock::test::redis_fleet fleet{3};
  define_user(fleet, all_commands());
  redlock::test::detail::temp_dir dir;
  const std::string file = dir.path() + "/password";
  std::ofstream{file} << password << "\n";
  const std::string wrong_file = dir.path() + "/wrong";
  std::ofstream{wrong_file} << "Wr0ng-file-pw\n";
  ::setenv("REDLOCK_TEST_PW", password.c_str(), 1);
  ::setenv("REDLOCK_TEST_WRONG_PW", "Wr0ng-env-pw", 1);

  auto base = locker_config(fleet);
  base.password.clear();
  {
    auto cfg = base;
    cfg.password_file = file;
    const auto [ec, diag] = every_path(cfg);
    BOOST_TEST(!ec, diag);
  }
  {
    auto cfg = base;
    cfg.password_env = "REDLOCK_TEST_PW";
    const auto [ec, diag] = every_path(cfg);
    BOOST_TEST(!ec, diag);
  }
  {
    // A URI's own credentials win over the config's.
    auto cfg = base;
    cfg.password_file = wrong_file;
    for (auto& uri : cfg.nodes) uri = "redis://locker:" + password + "@" + uri.substr(8);
    BOOST_TEST(!every_path(cfg).first);
  }
  for (const auto& [field, secret] : std::vector<std::pair<std::string, std::string>>{
           {"file", "Wr0ng-file-pw"}, {"env", "Wr0ng-env-pw"}, {"plain", "Wr0ng-plain-pw"}}) {
    BOOST_TEST_CONTEXT(field) {
      auto cfg = base;
      if (field == "file") cfg.password_file = wrong_file;
      if (field == "env") cfg.password_env = "REDLOCK_TEST_WRONG_PW";
      if (field == "plain") cfg.password = secret;
      const auto [ec, diag] = every_path(cfg);
      BOOST_TEST(ec == redlock::error::no_quorum);
      BOOST_TEST(diag.find("WRONGPASS") != std::string::npos, diag);
      BOOST_TEST(diag.find(secret) == std::string::npos, diag);
    }
  }
}

BOOST_AUTO_TEST_CASE(password_settings_that_cannot_work_are_configuration_errors) {
  asio::io_context io;
  auto error_of = [&](const redlock::config& cfg) -> std::string {
    try {
      redlock::client c{io.get_executor(), cfg};
    } catch (const boost::system::system_error& e) {
      BOOST_TEST(e.code() == redlock::error::invalid_config);
      return e.what();
    }
    return "accepted";
  };
  const auto base = fast_config({"redis://127.0.0.1:1"});
  auto cfg = base;
  cfg.password = "x";
  cfg.password_env = "HOME";
  BOOST_TEST(error_of(cfg).find("at most one of") != std::string::npos);
  cfg = base;
  cfg.password_file = "/nonexistent/pw";
  BOOST_TEST(error_of(cfg).find("cannot read \"/nonexistent/pw\"") != std::string::npos);
  cfg = base;
  cfg.password_env = "REDLOCK_TEST_UNSET_VARIABLE";
  ::unsetenv("REDLOCK_TEST_UNSET_VARIABLE");
  BOOST_TEST(error_of(cfg).find("REDLOCK_TEST_UNSET_VARIABLE is not set") != std::string::npos);
  cfg = base;
  cfg.user = "locker";
  BOOST_TEST(error_of(cfg).find("config.user needs a password") != std::string::npos);
}
