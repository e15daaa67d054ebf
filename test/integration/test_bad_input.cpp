// SPDX-License-Identifier: BSL-1.0
// Bad input to the API and the CLI: every case gets a clear error before any network
// traffic. "No traffic" is checked on a real redis-server: the connections it accepted
// (INFO stats) and the lock commands it ran (INFO commandstats) do not move.
// docs/reliability.md has the table of cases and results; keep the two in step.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "async_helpers.hpp"
#include "process_wait.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::run_bounded;

namespace {

// The number after "name:" or "name=" in INFO text, or -1. `name` starts a line or
// follows ':' or ',' (as "calls" does in "cmdstat_set:calls=3,usec=...").
std::int64_t info_number(std::string_view info, std::string_view name) {
  for (std::size_t at = info.find(name); at != std::string_view::npos;
       at = info.find(name, at + 1)) {
    const bool starts_line =
        at == 0 || info[at - 1] == '\n' || info[at - 1] == ',' || info[at - 1] == ':';
    const std::size_t v = at + name.size();
    if (!starts_line || v >= info.size() || (info[v] != ':' && info[v] != '=')) continue;
    std::int64_t n = -1;
    std::from_chars(info.data() + v + 1, info.data() + info.size(), n);
    return n;
  }
  return -1;
}

struct watched_server {
  redlock::test::redis_server server;

  // Connections the server has accepted; each call adds one (its own).
  std::int64_t connections() const {
    return info_number(server.command({"INFO", "stats"}).text, "total_connections_received");
  }
  // Calls of every command a lock, unlock or extend can send.
  std::int64_t lock_commands() const {
    const auto stats = server.command({"INFO", "commandstats"}).text;
    std::int64_t sum = 0;
    for (const char* c : {"cmdstat_set", "cmdstat_eval", "cmdstat_evalsha"}) {
      const auto at = stats.find(std::string{c} + ":");
      if (at != std::string::npos) sum += info_number(stats.substr(at), "calls");
    }
    return sum;
  }
  redlock::config good(std::vector<std::string> extra_nodes = {}) const {
    std::vector<std::string> nodes{server.uri()};
    nodes.insert(nodes.end(), extra_nodes.begin(), extra_nodes.end());
    return redlock::config{
        .nodes = nodes, .node_timeout = 200ms, .retry_delay = 10ms, .restart_guard = false};
  }
};

// The constructor throws invalid_config with a message that contains every needle.
void expect_invalid_config(asio::io_context& io, redlock::config cfg,
                           std::initializer_list<std::string_view> needles) {
  try {
    redlock::client c{io.get_executor(), std::move(cfg)};
    BOOST_ERROR("accepted an invalid configuration");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(e.code() == redlock::error::invalid_config);
    for (auto needle : needles)
      BOOST_TEST(std::string{e.what()}.find(needle) != std::string::npos, e.what());
  }
}

// async_lock (wait) or async_try_lock, with the error as a value.
asio::awaitable<std::tuple<error_code, redlock::lock>> lock_once(redlock::client& c,
                                                                 const std::string& resource,
                                                                 redlock::lock_options o, bool wait,
                                                                 redlock::diagnostics& diag) {
  if (wait) co_return co_await c.async_lock(resource, o, diag, asio::as_tuple(asio::use_awaitable));
  co_return co_await c.async_try_lock(resource, o, diag, asio::as_tuple(asio::use_awaitable));
}

// Takes and releases one lock, so that the client is connected and its scripts are
// loaded: after it, nothing has a reason to talk to the server.
asio::awaitable<void> warm_up(redlock::client& c) {
  auto warm = co_await c.async_lock("warm", {.ttl = 10s, .wait = 5s}, asio::use_awaitable);
  co_await c.async_unlock(std::move(warm), asio::use_awaitable);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(bad_input_api, watched_server)

BOOST_AUTO_TEST_CASE(invalid_configurations_are_refused_before_any_connection) {
  asio::io_context io;
  std::vector<std::string> sixteen;
  for (int i = 0; i < 16; ++i) sixteen.push_back("redis://h" + std::to_string(i) + ":1");
  const auto me = server.uri();
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  const auto inf = std::numeric_limits<double>::infinity();
  struct bad_case {
    const char* what;
    redlock::config cfg;
    const char* needle;
  };
  const std::vector<bad_case> cases{
      {"no nodes", {}, "nodes is empty"},
      {"16 nodes", {.nodes = sixteen}, "at most 15"},
      {"the same node twice", {.nodes = {me, me}}, "same node"},
      {"the same node with another db", {.nodes = {me, me + "/3"}}, "same node"},
      {"drift factor below 0", {.nodes = {me}, .drift_factor = -0.01}, "drift_factor"},
      {"drift factor 0.5", {.nodes = {me}, .drift_factor = 0.5}, "drift_factor"},
      {"drift factor NaN", {.nodes = {me}, .drift_factor = nan}, "drift_factor"},
      {"drift factor infinite", {.nodes = {me}, .drift_factor = inf}, "drift_factor"},
      {"node timeout 0", {.nodes = {me}, .node_timeout = 0ms}, "node_timeout"},
      {"connect timeout negative", {.nodes = {me}, .connect_timeout = -1ms}, "connect_timeout"},
      {"retry delay 0", {.nodes = {me}, .retry_delay = 0ms}, "retry_delay"},
      {"reconnect max below min",
       {.nodes = {me}, .reconnect_min = 100ms, .reconnect_max = 10ms},
       "reconnect_max"},
      {"no queue", {.nodes = {me}, .max_queued_per_node = 0}, "max_queued_per_node"},
      {"owner with a space", {.nodes = {me}, .owner = "web 2"}, "config.owner"},
      {"owner with a control character", {.nodes = {me}, .owner = "web\n2"}, "config.owner"},
      {"owner of 65 bytes", {.nodes = {me}, .owner = std::string(65, 'w')}, "config.owner"},
  };
  const auto before = connections();
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      expect_invalid_config(io, c.cfg, {c.needle});
    }
  }
  BOOST_TEST(connections() == before + 1);  // only our own INFO
}

BOOST_AUTO_TEST_CASE(malformed_uris_and_unknown_schemes_are_refused_before_any_connection) {
  asio::io_context io;
  // Each bad URI goes second, after this server's good one: the message names its index.
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "must start with redis://"},
      {"127.0.0.1:6379", "must start with redis://"},
      {"http://h:1", "must start with redis://"},
      {"unix:///tmp/redis.sock", "must start with redis://"},
      {"REDIS://h:1", "must start with redis://"},
      {" redis://h:1", "must start with redis://"},
      {"redis+sentinel://h:1", "must start with redis://"},
      {"rediss://", "no host"},
      {"rediss:/h:1", "or rediss:// (TLS)"},
      {"redis://", "no host"},
      {"redis://:6379", "no host"},
      {"redis://h:", "empty port"},
      {"redis://h:0", "port must be"},
      {"redis://h:65536", "port must be"},
      {"redis://h:-1", "port must be"},
      {"redis://h:12x", "port must be"},
      {"redis://h:1/db", "database number"},
      {"redis://h:1/-1", "database number"},
      {"redis://[::1", "unterminated"},
      {"redis://[::1]x", "expected ':port'"},
      {"redis://[]:1", "no host"},
      {"redis://user:@h:1", "without a password"},
      {"redis://h h:1", "not allowed"},
      {"redis://h?db=1", "not allowed"},
      {std::string{"redis://h\n:1"}, "not allowed"},
      {std::string{"redis://h\0x:1", 14}, "not allowed"},
      {"redis://::1", "brackets"},
      {"redis://fe80::1:6379", "brackets"},
      // The CLI's comma-joined list handed over as one element.
      {"redis://h:1,redis://h:2", "several URIs separated by commas: give one URI per element"},
      {"redis://h:1/2,rediss://h:2", "several URIs separated by commas"},
      {"redis://u:pw@h:1,redis://u:pw@h:2", "several URIs separated by commas"},
      {"redis://h:1,h:2", "several URIs separated by commas"},
  };
  const auto before = connections();
  for (const auto& [uri, needle] : cases) {
    BOOST_TEST_CONTEXT("uri \"" << uri << "\"") {
      expect_invalid_config(io, {.nodes = {server.uri(), uri}}, {"config.nodes[1]: ", needle});
    }
  }
  // The whole list as the only element, as a user coming from the CLI writes it.
  const std::string joined =
      server.uri() + "," + server.uri().substr(0, server.uri().rfind(':')) + ":1";
  expect_invalid_config(io, {.nodes = {joined}},
                        {"config.nodes[0]: ", "several URIs separated by commas"});
  // The offending text is quoted (a trailing space shows), with what was expected.
  expect_invalid_config(io, {.nodes = {server.uri() + " "}},
                        {"config.nodes[0]: \"" + server.uri() + " \": ", "white space",
                         "expected redis://[user:password@]host:port[/db]"});
  expect_invalid_config(io, {.nodes = {"redis://u:hunter2@h:1 redis://h:2"}},
                        {"\"redis://***@h:1 redis://h:2\""});
  // The reason never repeats a password.
  try {
    redlock::client c{io.get_executor(), {.nodes = {"redis://user:hunter2@:1"}}};
    BOOST_ERROR("accepted a URI without a host");
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(std::string{e.what()}.find("hunter2") == std::string::npos, e.what());
  }
  BOOST_TEST(connections() == before + 1);
}

// GCC 12 at -O2 reports a false -Wmismatched-new-delete for the coroutine frame below: it
// pairs the frame's class-specific operator delete with the allocation Asio's operator new
// inlines. Both are Asio's, and they match (as in bench/cycles.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
BOOST_AUTO_TEST_CASE(invalid_lock_arguments_fail_before_any_command_is_sent) {
  asio::io_context io;
  redlock::client c{io.get_executor(), good()};
  redlock::client capped{io.get_executor(), [&] {
                           auto cfg = good();
                           cfg.max_ttl = 5s;
                           return cfg;
                         }()};
  using ms = std::chrono::milliseconds;
  struct bad_case {
    const char* what;
    redlock::client* client;
    std::string resource;
    ms ttl;
    const char* needle;
    redlock::error code = redlock::error::invalid_ttl;
  };
  const std::vector<bad_case> cases{
      {"empty resource", &c, "", 10s, "the resource name is empty",
       redlock::error::invalid_resource},
      {"TTL 0", &c, "r", 0ms, "from 1 ms to 24 h"},
      {"TTL -1 ms", &c, "r", -1ms, "from 1 ms to 24 h"},
      {"TTL min()", &c, "r", ms::min(), "from 1 ms to 24 h"},
      {"TTL 24 h + 1 ms", &c, "r", 24h + 1ms, "from 1 ms to 24 h"},
      {"TTL max()", &c, "r", ms::max(), "from 1 ms to 24 h"},
      {"TTL 1 ms (below the drift allowance)", &c, "r", 1ms, "drift allowance"},
      {"TTL 2 ms (the drift allowance)", &c, "r", 2ms, "drift allowance"},
      // 0.97 ms would be left: a lock granted "valid for 0 ms".
      {"TTL 3 ms (under 1 ms of validity left)", &c, "r", 3ms, "under 1 ms of validity"},
      {"TTL above max_ttl", &capped, "r", 6s, "exceeds the fleet's max_ttl"},
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    // Connected and scripts loaded: nothing below has a reason to talk to the server.
    auto warm = co_await c.async_lock("warm", {.ttl = 10s, .wait = 5s}, asio::use_awaitable);
    co_await c.async_extend(warm, 10s, asio::use_awaitable);
    const auto before = lock_commands();
    for (const auto& bc : cases) {
      BOOST_TEST_CONTEXT(bc.what) {
        for (const bool wait : {false, true}) {
          redlock::diagnostics diag;
          const redlock::lock_options o{.ttl = bc.ttl, .wait = 1s};
          auto [ec, lk] = co_await lock_once(*bc.client, bc.resource, o, wait, diag);
          BOOST_TEST(ec == bc.code, ec.message());
          BOOST_TEST(ec == boost::system::errc::invalid_argument);
          BOOST_TEST(diag.message.find(bc.needle) != std::string::npos, diag.message);
          BOOST_TEST(!lk.owns());
        }
      }
    }
    // Extending with a bad TTL leaves the lock as it was.
    const auto deadline = warm.deadline();
    for (const ms ttl : {0ms, -1ms, ms::min(), 24h + 1ms, ms::max()}) {
      BOOST_TEST_CONTEXT("extend to " << ttl.count() << " ms") {
        auto [ec] = co_await c.async_extend(warm, ttl, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::invalid_ttl);
        BOOST_TEST(warm.valid());
        BOOST_TEST((warm.deadline() == deadline));
      }
    }
    // An empty lock can be neither released nor extended, and says so (not "not held by
    // this owner", which would send the reader looking for an expiry or another owner).
    redlock::lock empty;
    redlock::diagnostics diag;
    auto [ec1] =
        co_await c.async_unlock(std::move(empty), diag, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec1 == redlock::error::no_lock);
    BOOST_TEST(diag.message.find("holds no lock") != std::string::npos, diag.message);
    auto [ec2] = co_await c.async_extend(empty, 1s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec2 == redlock::error::no_lock);
    BOOST_TEST(lock_commands() == before);
    // Nor can one moved from, or one already released.
    auto taken = co_await c.async_lock("moved", {.ttl = 5s}, asio::use_awaitable);
    redlock::lock moved_to = std::move(taken);
    auto [ec3] = co_await c.async_unlock(std::move(taken), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec3 == redlock::error::no_lock);
    co_await c.async_unlock(std::move(moved_to), asio::use_awaitable);
    auto [ec4] = co_await c.async_unlock(std::move(moved_to), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec4 == redlock::error::no_lock);
    std::vector<std::string> names{"m1", "m2"};  // not braced inside co_await (GCC 12)
    const redlock::lock_options set_opts{.ttl = 5s};
    auto set = co_await c.async_lock_all(std::move(names), set_opts, asio::use_awaitable);
    co_await c.async_unlock(std::move(set), asio::use_awaitable);
    auto [ec5] = co_await c.async_unlock(std::move(set), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec5 == redlock::error::no_lock);
    auto [ec6] = co_await c.async_extend(set, 1s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec6 == redlock::error::no_lock);
    co_await c.async_unlock(std::move(warm), asio::use_awaitable);
  }());
}
#pragma GCC diagnostic pop

BOOST_AUTO_TEST_CASE(binary_bytes_in_resource_names_are_kept_exactly) {
  asio::io_context io;
  redlock::client c{io.get_executor(), good()};
  const std::vector<std::string> names{
      std::string{"a\0b", 3},   "line\r\nbreak",
      "*1\r\n$4\r\nPING\r\n",  // RESP inside a name is data, never a command
      "\xff\xfe\x80 not UTF-8", std::string(65536, 'n'),  // long, and still fine
  };
  run_bounded(io, [&]() -> asio::awaitable<void> {
    for (const auto& name : names) {
      BOOST_TEST_CONTEXT("name of " << name.size() << " bytes") {
        auto lk = co_await c.async_lock(name, {.ttl = 10s, .wait = 5s}, asio::use_awaitable);
        BOOST_TEST(server.command({"GET", name}).text == lk.token());
        BOOST_TEST(lk.resource() == name);
        co_await c.async_unlock(std::move(lk), asio::use_awaitable);
        BOOST_TEST(server.command({"EXISTS", name}).integer == 0);
      }
    }
  }());
  BOOST_TEST(server.command({"DBSIZE"}).integer == 0);
}

BOOST_AUTO_TEST_CASE(a_huge_resource_name_is_refused_before_any_traffic) {
  // Neither sent to the nodes nor copied whole into the diagnostics.
  asio::io_context io;
  redlock::client c{io.get_executor(), good()};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await warm_up(c);
    const auto before = lock_commands();
    for (const std::size_t size : {std::size_t{64} << 20, std::size_t{65537}}) {
      for (const bool wait : {false, true}) {
        BOOST_TEST_CONTEXT("name of " << size << " bytes, " << (wait ? "lock" : "try_lock")) {
          redlock::diagnostics diag;
          auto [ec, lk] = co_await lock_once(c, std::string(size, 'h'), {.wait = 1s}, wait, diag);
          BOOST_TEST(ec == redlock::error::invalid_resource);
          BOOST_TEST(!lk.owns());
          BOOST_TEST(diag.message.find("at most 65536 bytes") != std::string::npos, diag.message);
          BOOST_TEST(diag.message.size() < 300u);
        }
      }
    }
    BOOST_TEST(lock_commands() == before);
  }());
}

BOOST_AUTO_TEST_CASE(a_negative_wait_is_refused_and_does_not_overflow) {
  // min() would overflow `now + wait` (UBSan: signed integer overflow in <chrono>).
  asio::io_context io;
  redlock::client c{io.get_executor(), good()};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    co_await warm_up(c);
    const auto before = lock_commands();
    for (const auto wait : {-1ms, std::chrono::milliseconds::min()}) {
      BOOST_TEST_CONTEXT("wait " << wait.count() << " ms") {
        redlock::diagnostics diag;
        auto [ec, lk] = co_await c.async_lock("w", {.ttl = 1s, .wait = wait}, diag,
                                              asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::invalid_wait);
        BOOST_TEST(diag.message.find("wait must not be negative") != std::string::npos,
                   diag.message);
        BOOST_TEST(!lk.owns());
      }
    }
    BOOST_TEST(lock_commands() == before);
  }());
}

BOOST_AUTO_TEST_CASE(a_negative_max_ttl_is_refused) {
  // It used to be taken as 0 ("each lock's own TTL") without a word.
  asio::io_context io;
  auto cfg = good();
  cfg.max_ttl = -5s;
  expect_invalid_config(io, cfg, {"config.max_ttl must not be negative"});
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the CLI -----------------------------------------------------------------------

namespace {

struct cli_result {
  int code = -1;
  std::string err;
};

// Runs `redlock args...` with `env` added, stdout to /dev/null, stderr captured; bounded.
cli_result run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const std::string err_path =
      (std::filesystem::temp_directory_path() / ("redlock-bad-input-" + std::to_string(::getpid())))
          .string();
  std::vector<std::string> all{REDLOCK_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string_view var{*e};
    if (!var.starts_with("REDLOCK_")) env_strings.emplace_back(var);  // ours only
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  BOOST_TEST_REQUIRE(rc == 0, "posix_spawn: " << rc);

  cli_result out;
  out.code = redlock::test::wait_exit(pid, 20s);
  std::ifstream in{err_path};
  std::stringstream s;
  s << in.rdbuf();
  out.err = s.str();
  std::filesystem::remove(err_path);
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(bad_input_cli, watched_server)

BOOST_AUTO_TEST_CASE(bad_command_lines_exit_64_with_one_line_before_any_connection) {
  const std::string me = server.uri();
  std::string sixteen;
  for (int i = 0; i < 16; ++i)
    sixteen += (i ? "," : "") + me.substr(0, me.rfind(':')) + ":" + std::to_string(7000 + i);
  struct bad_case {
    std::vector<std::string> args;
    const char* needle;
    std::vector<std::string> env = {};
  };
  const std::vector<bad_case> cases{
      {{"run", "--nodes", me, "", "--", "true"}, "RESOURCE is empty"},
      {{"run", "--nodes", me, "--", "true"}, "no RESOURCE given"},
      {{"run", "--nodes", me, std::string(70000, 'x'), "--", "true"}, "at most 65536 bytes"},
      {{"run", "--nodes", me, "r"}, "no COMMAND"},
      {{"run", "--nodes", me, "--ttl", "0", "r", "--", "true"}, "at least 10 ms"},
      {{"run", "--nodes", me, "--ttl", "9", "r", "--", "true"}, "at least 10 ms"},
      {{"run", "--nodes", me, "--ttl", "-5", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--ttl", "1.5", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--ttl", "", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--ttl", "99999999999999999999", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--ttl", "86400001", "r", "--", "true"}, "at most 24 h"},
      {{"run", "--nodes", me, "--ttl"}, "needs a value"},
      {{"run", "--nodes", me, "--wait", "-1", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--grace", "x", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--max-hold", "x", "r", "--", "true"}, "whole number"},
      {{"run", "--nodes", me, "--max-hold", "0", "r", "--", "true"},
       "--max-hold must be at least 1 ms"},
      {{"run", "--nodes", me, "--ttl", "1000", "--max-ttl", "999", "r", "--", "true"},
       "below --ttl"},
      {{"run", "--nodes", me, "--wait", "5", "--nonblock", "r", "--", "true"},
       "exclude each other"},
      {{"run", "--nodes", "", "r", "--", "true"}, "names no node"},
      {{"run", "--nodes", ",,", "r", "--", "true"}, "node 0 is empty"},
      {{"run", "--nodes", me + ",", "r", "--", "true"}, "node 1 is empty"},
      {{"run", "--nodes", "," + me, "r", "--", "true"}, "node 0 is empty"},
      {{"run", "--nodes", me + ",," + me, "r", "--", "true"}, "node 1 is empty"},
      {{"run", "r", "--", "true"}, "REDLOCK_NODES: node 1 is empty", {"REDLOCK_NODES=" + me + ","}},
      {{"status", "--nodes", me + ",", "r"}, "node 1 is empty"},
      {{"run", "--nodes", me, "job\n", "--", "true"}, "control character (0x0a at byte 4)"},
      {{"run", "--nodes", me, "a\tb", "--", "true"}, "control character (0x09 at byte 2)"},
      {{"run", "--nodes", me, "a\x7f", "--", "true"}, "control character (0x7f"},
      {{"status", "--nodes", me, "job\n"}, "control character"},
      {{"run", "--nodes", "http://h:1", "r", "--", "true"}, "must start with redis://"},
      {{"run", "--nodes", "rediss://:1", "r", "--", "true"}, "no host"},
      {{"run", "--nodes", "redis://h:99999", "r", "--", "true"}, "port must be"},
      {{"run", "--nodes", "redis://::1", "r", "--", "true"}, "brackets"},
      {{"run", "--nodes", me + "," + me, "r", "--", "true"}, "same node"},
      {{"run", "--nodes", me + "," + me + "/2", "r", "--", "true"}, "same node"},
      {{"run", "--nodes", sixteen, "r", "--", "true"}, "at most 15"},
      {{"run", "--nodes", "redis://user:hunter2@:1", "r", "--", "true"}, "no host"},
      {{"run", "r", "--", "true"}, "no nodes"},
      {{"run", "r", "--", "true"}, "REDLOCK_NODES: node 0:", {"REDLOCK_NODES=bogus"}},
      {{"run", "--nodes", me, "r", "--", "true"}, "REDLOCK_MAX_TTL", {"REDLOCK_MAX_TTL=abc"}},
      {{"run", "--nodes", me, "--bogus", "r", "--", "true"}, "unknown option"},
      {{"frobnicate"}, "unknown command"},
  };
  const auto before = connections();
  for (const auto& bc : cases) {
    std::string shown;
    for (const auto& a : bc.args) shown += " " + a.substr(0, 40);
    BOOST_TEST_CONTEXT("redlock" << shown) {
      const auto r = run_cli(bc.args, bc.env);
      BOOST_TEST(r.code == 64, r.err);
      BOOST_TEST(r.err.find(bc.needle) != std::string::npos, r.err);
      BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
      BOOST_TEST(r.err.find("hunter2") == std::string::npos, r.err);
    }
  }
  BOOST_TEST(connections() == before + 1);
}

BOOST_AUTO_TEST_SUITE_END()
