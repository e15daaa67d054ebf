// SPDX-License-Identifier: BSL-1.0
// The `redlock` command-line contract, end to end: real processes, real nodes.

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "process_wait.hpp"
#include "redis_fleet.hpp"
#include "redlock/semaphore.hpp"
#include "wait_until.hpp"

namespace {

using namespace std::chrono_literals;

struct outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of a process's stderr, without their newlines.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every process a test starts, so that the fixture can kill what a failed test left.
std::vector<pid_t> started_pids;

// Runs the tool with `args`, stdout and stderr to files in `dir`; returns its pid.
pid_t start_cli(const std::vector<std::string>& args, const std::string& dir,
                const std::string& tag, const std::vector<std::string>& env = {}) {
  std::vector<std::string> all{REDLOCK_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string out = dir + "/" + tag + ".out", err = dir + "/" + tag + ".err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(99);
  }
  started_pids.push_back(pid);
  return pid;
}

// Waits for `pid` up to `limit`; fails the test (and kills it) if it does not exit.
int wait_exit(pid_t pid, std::chrono::milliseconds limit = 30s) {
  return redlock::test::wait_exit(pid, limit);
}

struct cli_fixture {
  redlock::test::redis_fleet fleet{3};
  std::string dir;
  std::string nodes;
  int counter = 0;

  cli_fixture() {
    char tmpl[] = "/tmp/redlock-cli-test.XXXXXX";
    dir = ::mkdtemp(tmpl);
    for (auto& u : fleet.uris()) nodes += (nodes.empty() ? "" : ",") + u;
  }
  ~cli_fixture() {
    // A failed test may leave a redlock waiting on a fleet that is about to go away.
    for (pid_t p : started_pids) {
      if (::kill(p, 0) == 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    }
    started_pids.clear();
    std::filesystem::remove_all(dir);
  }

  // Runs the tool with REDLOCK_NODES naming the fleet, after the variables in `env` (the
  // first of two equal names is the one a program reads).
  outcome run(std::vector<std::string> args, std::chrono::milliseconds limit = 30s,
              std::vector<std::string> env = {}) {
    const std::string tag = "run" + std::to_string(counter++);
    env.push_back("REDLOCK_NODES=" + nodes);
    const pid_t pid = start_cli(args, dir, tag, env);
    outcome o;
    o.code = wait_exit(pid, limit);
    o.out = slurp(dir + "/" + tag + ".out");
    o.err = slurp(dir + "/" + tag + ".err");
    return o;
  }
  std::string file(const std::string& name) const { return dir + "/" + name; }

  // `n` shell loops at once, each running `redlock <run_args> -- sh -c '<section>'` five
  // times in a row (stopping at the first failure); each loop must exit 0 within 120 s.
  void run_workers(int n, const std::string& run_args, const std::string& section) {
    std::vector<pid_t> workers;
    for (int w = 0; w < n; ++w) {
      const std::string loop = "for i in 1 2 3 4 5; do " + std::string{REDLOCK_CLI_PATH} + " " +
                               run_args + " -- sh -c '" + section + "' || exit 1; done";
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::setenv("REDLOCK_NODES", nodes.c_str(), 1);
        ::execl("/bin/sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
        ::_exit(99);
      }
      workers.push_back(pid);
      started_pids.push_back(pid);
    }
    for (pid_t w : workers) BOOST_TEST(wait_exit(w, 120s) == 0);
  }

  // Waits (bounded) until every node reports an uptime of at least `seconds`, so that
  // the restart guard of a fresh fleet no longer holds any of them back.
  void wait_until_nodes_are_older_than(int seconds) {
    auto old_enough = [&] {
      for (std::size_t n = 0; n < fleet.size(); ++n) {
        const auto info = fleet[n].command({"INFO", "server"}).text;
        const auto at = info.find("uptime_in_seconds:");
        if (at == std::string::npos || std::stoi(info.substr(at + 18)) < seconds) return false;
      }
      return true;
    };
    BOOST_TEST_REQUIRE(
        redlock::test::wait_until(old_enough, std::chrono::seconds{seconds + 5}, 10ms),
        "the nodes did not get older than " << seconds << " s");
  }
};

}  // namespace

// Fresh nodes are held back by the restart guard for --max-ttl: the tests use short TTLs.
BOOST_FIXTURE_TEST_SUITE(cli, cli_fixture)

BOOST_AUTO_TEST_CASE(command_status_and_environment_pass_through) {
  auto o = run({"run", "--ttl", "500", "job", "--", "sh", "-c",
                "echo \"$REDLOCK_RESOURCE $REDLOCK_FENCE $REDLOCK_VALIDITY_MS\"; exit 3"});
  BOOST_TEST(o.code == 3, o.err);
  std::istringstream fields{o.out};
  std::string resource;
  long long fence = 0, validity = 0;
  fields >> resource >> fence >> validity;
  BOOST_TEST(resource == "job");
  BOOST_TEST(fence > 0);
  BOOST_TEST((validity > 0 && validity <= 500));
  auto o2 = run({"run", "--ttl", "500", "job", "--", "sh", "-c", "echo $REDLOCK_FENCE"});
  BOOST_TEST(o2.code == 0);
  BOOST_TEST(std::stoll(o2.out) > fence);
  // Released: the key is gone from every node.
  for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(!fleet.has_key(i, "job"));
}

BOOST_AUTO_TEST_CASE(a_held_resource_exits_75_and_unavailable_nodes_exit_69) {
  // --nonblock below must not meet nodes still held back by the guard (TTL 1 s).
  wait_until_nodes_are_older_than(2);
  const std::string started = file("holder-started");
  const pid_t holder = start_cli(
      {"run", "--ttl", "1000", "held", "--", "sh", "-c", "touch " + started + "; sleep 3"}, dir,
      "holder", {"REDLOCK_NODES=" + nodes});
  // Wait until its COMMAND runs: only then does it hold the lock (a key seen on a node
  // earlier may belong to an attempt that is about to be undone).
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  // The holder's tokens name its host and process: every view of the lock says who.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = "held by " + std::string{host} + ":" + std::to_string(holder);
  auto o = run({"run", "--ttl", "1000", "--nonblock", "held", "--", "true"});
  BOOST_TEST(o.code == 75, o.err);
  BOOST_TEST(o.err.find(who + " (token ") != std::string::npos, o.err);
  auto o2 = run({"run", "--ttl", "1000", "--wait", "200", "held", "--", "true"});
  BOOST_TEST(o2.code == 75, o2.err);
  auto verbose = run({"run", "--ttl", "1000", "--wait", "1000", "--verbose", "held", "--", "true"});
  BOOST_TEST(verbose.code == 75, verbose.err);
  BOOST_TEST(verbose.err.find("still waiting") != std::string::npos, verbose.err);
  BOOST_TEST(verbose.err.find(who + " (token ") != std::string::npos, verbose.err);
  auto status = run({"status", "held"});
  BOOST_TEST(status.out.find(who) != std::string::npos, status.out);
  BOOST_TEST(wait_exit(holder) == 0);

  fleet[0].kill();
  fleet[1].kill();
  auto o3 = run({"run", "--ttl", "1000", "--wait", "300", "other", "--", "true"});
  BOOST_TEST(o3.code == 69, o3.err);
  BOOST_TEST(std::count(o3.err.begin(), o3.err.end(), '\n') == 1, o3.err);  // one line
}

// A cron job's first runs on new nodes: the first run's try finds every node unmarked
// (its fencing counters never repaired), waits for the repair it starts and is granted.
BOOST_AUTO_TEST_CASE(five_nonblock_runs_on_a_fresh_fleet_past_its_guard_all_succeed) {
  wait_until_nodes_are_older_than(2);
  BOOST_TEST_REQUIRE(!fleet[0].marker_names_me());
  for (int i = 0; i < 5; ++i) {
    auto o = run({"run", "--ttl", "1000", "--nonblock", "cron", "--", "true"});
    BOOST_TEST(o.code == 0, "run " << i << ": " << o.err);
  }
}

// A wait on nodes it cannot use is not silent: within a second or two the tool says which
// nodes are unusable and why, once, and again only when a reason changes.
BOOST_AUTO_TEST_CASE(a_wait_on_unusable_nodes_says_why_within_two_seconds) {
  wait_until_nodes_are_older_than(2);  // node 2 past its restart guard: one reason only
  fleet[0].kill();
  fleet[1].kill();
  const std::string tag = "silent";
  const pid_t pid = start_cli({"run", "--ttl", "1000", "--wait", "4000", "quiet", "--", "true"},
                              dir, tag, {"REDLOCK_NODES=" + nodes});
  const auto started = std::chrono::steady_clock::now();
  const bool said = redlock::test::wait_until(
      [&] { return slurp(file(tag + ".err")).find("still waiting") != std::string::npos; }, 3s,
      10ms);
  BOOST_TEST(said, slurp(file(tag + ".err")));
  BOOST_TEST((std::chrono::steady_clock::now() - started < 2500ms));
  BOOST_TEST(wait_exit(pid) == 69);
  const std::string err = slurp(file(tag + ".err"));
  BOOST_TEST(err.find("1 of 3 nodes usable, 2 needed") != std::string::npos, err);
  BOOST_TEST(
      err.find("node 0 (127.0.0.1:" + std::to_string(fleet[0].port()) + ")") != std::string::npos,
      err);
  // The count first, then each unusable node on its own line.
  for (std::size_t i : {0, 1})
    BOOST_TEST(err.find("\nredlock: node " + std::to_string(i) + " (127.0.0.1:" +
                        std::to_string(fleet[i].port()) + "): ") != std::string::npos,
               err);
  // Said once (the reasons stay the same), then the final error.
  const auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = err.find(what); at != std::string::npos; at = err.find(what, at + 1)) ++n;
    return n;
  };
  BOOST_TEST(count("still waiting") == 1u, err);
}

// Nodes the restart guard holds back are one fact, said once in one short line that counts
// them and says how much longer the guard holds them (not a clause per node); then the
// lock is taken and COMMAND runs.
BOOST_AUTO_TEST_CASE(a_wait_on_fresh_nodes_says_the_restart_guard_once_in_one_short_line) {
  // The fleet started just now: a guard of 3 s still holds every node back a second into
  // the wait, when the tool first looks.
  auto o = run({"run", "--ttl", "1000", "--max-ttl", "3000", "fresh", "--", "echo", "ran"});
  BOOST_TEST(o.code == 0, o.err);
  BOOST_TEST(o.out == "ran\n", o.out);
  const auto lines = lines_of(o.err);
  BOOST_TEST_REQUIRE(lines.size() == 1u, o.err);
  BOOST_TEST(lines[0].size() < 120u, lines[0]);
  static const std::regex guard{R"(redlock: still waiting: 3 of 3 nodes started ([0-9.]+) s ago; )"
                                R"(the restart guard holds them back ([0-9.]+) s more)"};
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_match(lines[0], m, guard), lines[0]);
  const double left = std::stod(m[2]);
  BOOST_TEST((left > 0 && left <= 3.0), lines[0]);
}

// A node unusable for another reason than the guard's is not folded into the guard's
// line: it has a line of its own, naming it and why. (With a node of a fresh fleet down,
// the fencing counters cannot be set up: the wait ends, bounded, with exit 69.)
BOOST_AUTO_TEST_CASE(a_node_unusable_for_another_reason_gets_its_own_line_beside_the_guards) {
  fleet[0].kill();
  auto o = run({"run", "--ttl", "1000", "--max-ttl", "3000", "--wait", "2000", "fresh", "--",
                "echo", "ran"});
  BOOST_TEST(o.code == 69, o.err);
  BOOST_TEST(o.out.empty(), o.out);
  const auto lines = lines_of(o.err);
  // The guard's line, node 0's line, and the final error.
  BOOST_TEST_REQUIRE(lines.size() == 3u, o.err);
  BOOST_TEST(lines[0].size() < 120u, lines[0]);
  BOOST_TEST(lines[0].starts_with("redlock: still waiting: 2 of 3 nodes started "), lines[0]);
  BOOST_TEST(lines[0].find("; the restart guard holds them back ") != std::string::npos, lines[0]);
  const std::string node0 = "redlock: node 0 (127.0.0.1:" + std::to_string(fleet[0].port()) + "): ";
  BOOST_TEST(lines[1].size() < 120u, lines[1]);
  BOOST_TEST(lines[1].starts_with(node0), lines[1]);
  BOOST_TEST(lines[1].size() > node0.size(), lines[1]);  // and why
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_64_with_one_line) {
  const std::vector<std::vector<std::string>> bad{
      {"run", "r"},                                                     // no command
      {"run", "--", "true"},                                            // no resource
      {"run", "--wait", "5", "--nonblock", "r", "--", "true"},          // both
      {"run", "--fair", "--shared", "r", "--", "true"},                 // both
      {"run", "--permits", "2", "--shared", "r", "--", "true"},         // both
      {"run", "--ttl", "1000", "--max-ttl", "500", "r", "--", "true"},  // max below ttl
      {"run", "--ttl", "12x", "r", "--", "true"},                       // malformed number
      {"run", "--nodes", "http://h:1", "r", "--", "true"},              // malformed URI
      {"run", "--bogus", "r", "--", "true"},                            // unknown option
      {"frobnicate"},                                                   // unknown command
      {"status", std::string((64u << 10) + 1, 'x')},                    // oversized name
      {"run", std::string((64u << 10) + 1, 'x'), "--", "true"},         // and for run
  };
  for (const auto& args : bad) {
    auto o = run(args);
    BOOST_TEST(o.code == 64, args[0] << " ... " << args.back());
    BOOST_TEST(std::count(o.err.begin(), o.err.end(), '\n') == 1, o.err);
  }
  auto help = run({"run", "--help"});
  BOOST_TEST(help.code == 0);
  BOOST_TEST(help.out.find("usage: redlock run") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(help_goes_to_stdout_lists_the_options_and_the_environment_and_exits_0) {
  auto contains = [](const std::string& text, std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (text.find(w) == std::string::npos) return false;
    return true;
  };
  for (const char* flag : {"--help", "-h", "help"}) {
    auto o = run({flag});
    BOOST_TEST(o.code == 0, flag);
    BOOST_TEST(o.err.empty(), o.err);
    BOOST_TEST(contains(o.out, {"usage: redlock <command>", "run", "status", "nodes", "--nodes",
                                "--tls-ca", "--password-file", "REDLOCK_NODES", "REDLOCK_MAX_TTL",
                                "REDLOCK_PASSWORD"}),
               o.out);
  }
  // The version, on stdout, for scripts and bug reports.
  for (const char* flag : {"--version", "-V"}) {
    auto v = run({flag});
    BOOST_TEST(v.code == 0, flag);
    BOOST_TEST(std::regex_match(v.out, std::regex{"redlock [0-9]+\\.[0-9]+\\.[0-9]+\n"}), v.out);
  }
  auto extra = run({"--version", "now"});
  BOOST_TEST(extra.code == 64);
  BOOST_TEST(extra.err == "redlock: --version takes no arguments\n");
  auto r = run({"run", "--help"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.err.empty(), r.err);
  BOOST_TEST(contains(r.out, {"usage: redlock run", "--ttl MS", "--nonblock", "--max-hold MS",
                              "--max-ttl MS", "--nodes", "--tls-ca", "REDLOCK_NODES",
                              "REDLOCK_MAX_TTL", "REDLOCK_PASSWORD"}),
             r.out);
  // Help wins over the other arguments, up to the COMMAND.
  auto r2 = run({"run", "--bogus", "-h", "r", "--", "true"});
  BOOST_TEST(r2.code == 0, r2.err);
  BOOST_TEST(r2.out == r.out);
  // Each command's help lists what it takes, and only the variables bound to its options.
  auto s = run({"status", "--help"});
  BOOST_TEST(s.code == 0);
  BOOST_TEST(contains(s.out, {"usage: redlock status", "--fence-stripes N", "--permits N",
                              "--max-ttl MS", "--tls-ca", "--password-file", "REDLOCK_NODES",
                              "REDLOCK_MAX_TTL", "REDLOCK_PASSWORD"}),
             s.out);
  BOOST_TEST(s.out.find("--nonblock") == std::string::npos, s.out);
  auto n = run({"nodes", "-h"});
  BOOST_TEST(n.code == 0);
  BOOST_TEST(
      contains(n.out, {"usage: redlock nodes", "--nodes", "--tls-insecure", "REDLOCK_NODES"}),
      n.out);
  // Readable on a terminal: no line wider than 90 columns, no trailing blanks.
  for (const auto* text : {&r.out, &s.out, &n.out}) {
    std::istringstream lines{*text};
    for (std::string line; std::getline(lines, line);) {
      BOOST_TEST(line.size() <= 90, line);
      BOOST_TEST((line.empty() || line.back() != ' '), "[" << line << "]");
    }
  }
  // Without a command, the tool's help is a usage error.
  auto none = run({});
  BOOST_TEST(none.code == 64);
  BOOST_TEST(none.out.empty());
  BOOST_TEST(none.err.find("usage: redlock <command>") != std::string::npos, none.err);
}

BOOST_AUTO_TEST_CASE(the_environment_gives_defaults_and_the_command_line_wins) {
  // REDLOCK_NODES (set by the fixture) takes effect: no --nodes here.
  auto from_env = run({"run", "--ttl", "500", "envjob", "--", "true"});
  BOOST_TEST(from_env.code == 0, from_env.err);
  // A bad REDLOCK_NODES is named as such, and --nodes replaces it entirely.
  auto bad = run({"run", "--ttl", "500", "envjob", "--", "true"}, 30s, {"REDLOCK_NODES=bogus"});
  BOOST_TEST(bad.code == 64);
  BOOST_TEST(bad.err.find("REDLOCK_NODES: node 0:") != std::string::npos, bad.err);
  auto given = run({"run", "--nodes", nodes, "--ttl", "500", "envjob", "--", "true"}, 30s,
                   {"REDLOCK_NODES=bogus"});
  BOOST_TEST(given.code == 0, given.err);
  // REDLOCK_MAX_TTL takes effect: below --ttl, it is refused, and the message names it.
  auto low = run({"run", "--ttl", "1000", "envjob", "--", "true"}, 30s, {"REDLOCK_MAX_TTL=500"});
  BOOST_TEST(low.code == 64);
  BOOST_TEST(low.err == "redlock: REDLOCK_MAX_TTL (500 ms) is below --ttl (1000 ms)\n");
  // --max-ttl wins over it.
  auto over = run({"run", "--ttl", "1000", "--max-ttl", "2000", "envjob", "--", "true"}, 30s,
                  {"REDLOCK_MAX_TTL=500"});
  BOOST_TEST(over.code == 0, over.err);
  auto low_flag = run({"run", "--ttl", "1000", "--max-ttl", "500", "envjob", "--", "true"}, 30s,
                      {"REDLOCK_MAX_TTL=5000"});
  BOOST_TEST(low_flag.err == "redlock: --max-ttl (500 ms) is below --ttl (1000 ms)\n");
  // An empty variable is as good as unset.
  auto empty = run({"run", "--ttl", "500", "envjob", "--", "true"}, 30s, {"REDLOCK_MAX_TTL="});
  BOOST_TEST(empty.code == 0, empty.err);
}

BOOST_AUTO_TEST_CASE(every_parser_error_is_one_usage_line) {
  struct bad_case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<bad_case> cases{
      {{"run", "--frobnicate", "r", "--", "true"}, "unknown option --frobnicate"},
      {{"run", "-x", "r", "--", "true"}, "unknown option -x"},
      {{"run", "--non", "r", "--", "true"}, "unknown option --non"},  // no prefix guessing
      {{"run", "--password", "pw", "r", "--", "true"}, "unknown option --password"},
      {{"status", "--ttl", "5", "r"}, "unknown option --ttl"},
      {{"nodes", "--bogus"}, "unknown option --bogus"},
      {{"run", "r", "--", "true", "--ttl"}, nullptr},  // after --: COMMAND's, runs
      {{"run", "--ttl"}, "--ttl needs a value"},
      {{"run", "--ttl=", "r", "--", "true"}, "--ttl"},
      {{"run", "--nonblock=yes", "r", "--", "true"}, "--nonblock"},
      {{"run", "--ttl", "500", "--ttl", "600", "r", "--", "true"}, "more than once"},
      {{"run", "r", "extra", "--", "true"}, "unexpected argument \"extra\""},
      {{"nodes", "extra"}, "unexpected argument \"extra\""},
      {{"status", "--fence-stripes", "-1", "r"}, "--fence-stripes takes a whole number"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += " " + a;
    BOOST_TEST_CONTEXT("redlock" << shown) {
      auto o = run(c.args);
      if (!c.says) {
        BOOST_TEST(o.code == 0, o.err);
        continue;
      }
      BOOST_TEST(o.code == 64);
      BOOST_TEST(o.err.starts_with("redlock: "), o.err);
      BOOST_TEST(std::count(o.err.begin(), o.err.end(), '\n') == 1, o.err);
      BOOST_TEST(o.err.find(c.says) != std::string::npos, o.err);
      BOOST_TEST(o.out.empty(), o.out);
    }
  }
}

// Credentials are asked for in the tool's own words (its options and variable, not the
// library's config fields, and no "[redlock:19]"), and a password written percent-encoded
// in a URI, as URI tools write one, is the password the server knows.
BOOST_AUTO_TEST_CASE(credentials_are_asked_for_in_the_tools_words_and_uri_passwords_decoded) {
  const std::string nowhere = file("no-such-file");
  auto missing = run({"run", "--password-file", nowhere, "r", "--", "true"});
  BOOST_TEST(missing.code == 64);
  BOOST_TEST(missing.err == "redlock: --password-file: cannot read \"" + nowhere +
                                "\": No such file or directory\n");
  auto user = run({"run", "--user", "bob", "r", "--", "true"});
  BOOST_TEST(user.code == 64);
  BOOST_TEST(user.err ==
             "redlock: --user needs a password: give --password-file or "
             "REDLOCK_PASSWORD\n");
  const std::string pw = "p@ss:w%rd";
  for (std::size_t i = 0; i < fleet.size(); ++i)
    fleet[i].command({"CONFIG", "SET", "requirepass", pw});
  auto noauth = run({"run", "--wait", "1500", "r", "--", "true"});
  BOOST_TEST(noauth.code == 69, noauth.err);
  BOOST_TEST(noauth.err.find("--password-file or REDLOCK_PASSWORD") != std::string::npos,
             noauth.err);
  BOOST_TEST(noauth.err.find("config::") == std::string::npos, noauth.err);
  BOOST_TEST(noauth.err.find("[redlock:") == std::string::npos, noauth.err);
  std::string encoded;
  for (std::size_t i = 0; i < fleet.size(); ++i)
    encoded += (i ? "," : "") + std::string{"redis://:p%40ss%3Aw%25rd@127.0.0.1:"} +
               std::to_string(fleet[i].port());
  auto decoded = run({"run", "--nodes", encoded, "--ttl", "1000", "r", "--", "true"});
  BOOST_TEST(decoded.code == 0, decoded.err);
  auto stray = run({"run", "--nodes", "redis://:50%@127.0.0.1:1", "r", "--", "true"});
  BOOST_TEST(stray.code == 64, stray.err);
  BOOST_TEST(stray.err.find("percent-encoded") != std::string::npos, stray.err);
}

BOOST_AUTO_TEST_CASE(a_command_that_cannot_run_exits_126_or_127_and_releases) {
  auto o = run({"run", "--ttl", "500", "cmd", "--", "/no/such/program"});
  BOOST_TEST(o.code == 127, o.err);
  auto o2 = run({"run", "--ttl", "500", "cmd", "--", "/etc/hostname"});
  BOOST_TEST(o2.code == 126, o2.err);
  for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(!fleet.has_key(i, "cmd"));
}

// An interactive COMMAND (one that reads the terminal, as psql or a y/N prompt does) runs
// in the terminal's foreground: under a pseudo-terminal it reads its line and exits 0,
// where a background process group would be stopped by SIGTTIN for ever.
BOOST_AUTO_TEST_CASE(an_interactive_command_reads_the_terminal_and_exits_0) {
  int master = -1;
  const std::string env_nodes = "REDLOCK_NODES=" + nodes;
  const pid_t p = ::forkpty(&master, nullptr, nullptr, nullptr);
  BOOST_TEST_REQUIRE(p >= 0);
  if (p == 0) {
    ::putenv(const_cast<char*>(env_nodes.c_str()));
    ::execl(REDLOCK_CLI_PATH, REDLOCK_CLI_PATH, "run", "--ttl", "2000", "tty", "--", "head", "-1",
            static_cast<char*>(nullptr));
    ::_exit(99);
  }
  started_pids.push_back(p);
  const std::string line = "an answer\n";
  BOOST_TEST_REQUIRE(::write(master, line.data(), line.size()) ==
                     static_cast<ssize_t>(line.size()));
  // Drain the terminal while it runs (its echo and head's output), so that nothing blocks.
  std::string seen;
  std::atomic<bool> stop{false};
  std::thread drain{[&] {
    char buf[256];
    while (!stop) {
      pollfd in{master, POLLIN, 0};
      if (::poll(&in, 1, 50) <= 0) continue;
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;  // EIO: every holder of the terminal's other end has gone
      seen.append(buf, static_cast<std::size_t>(n));
    }
  }};
  struct end_drain {
    std::atomic<bool>& stop;
    std::thread& t;
    int fd;
    ~end_drain() {
      stop = true;
      t.join();
      ::close(fd);
    }
  };
  int code = -1;
  {
    end_drain ending{stop, drain, master};
    code = wait_exit(p, 20s);
  }
  BOOST_TEST(code == 0, seen);
  // The terminal echoes the line once, and head prints it once more.
  const auto first = seen.find("an answer");
  BOOST_TEST((first != std::string::npos && seen.find("an answer", first + 1) != std::string::npos),
             seen);
}

// Whether process `pid` has ended: gone, or a zombie its new parent has not reaped yet.
bool ended(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

// kill -9 of redlock (the OOM killer, a systemd stop) leaves nobody renewing the lock: its
// COMMAND and what COMMAND started must end before the lock's keys can expire, so that
// no second holder ever runs beside them.
BOOST_AUTO_TEST_CASE(a_killed_redlock_takes_its_command_and_grandchildren_with_it) {
  const std::string pids = file("pids");
  const pid_t r = start_cli(
      {"run", "--ttl", "4000", "orphan", "--", "sh", "-c",
       "sleep 1000 & echo $$ $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; wait"},
      dir, "orphan", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(pids, 20s));
  pid_t command = 0, grandchild = 0;
  std::istringstream{slurp(pids)} >> command >> grandchild;
  BOOST_TEST_REQUIRE((command > 0 && grandchild > 0));
  BOOST_TEST_REQUIRE(!ended(command));
  ::kill(r, SIGKILL);
  BOOST_TEST(wait_exit(r) == 128 + SIGKILL);
  BOOST_TEST(redlock::test::wait_until([&] { return ended(command) && ended(grandchild); }, 10s));
  // Both ended while the lock's keys still lived: nobody else could have held it meanwhile.
  int still_held = 0;
  for (std::size_t i = 0; i < fleet.size(); ++i) still_held += fleet.has_key(i, "orphan");
  BOOST_TEST(still_held >= 2);
}

BOOST_AUTO_TEST_CASE(a_lost_lock_terminates_the_command_and_exits_76) {
  const std::string started = file("started"), finished = file("finished");
  const pid_t p = start_cli({"run", "--ttl", "600", "--grace", "500", "lost", "--", "sh", "-c",
                             "touch " + started + "; sleep 30; touch " + finished},
                            dir, "lost", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  fleet[0].freeze();
  fleet[1].freeze();
  const auto t0 = std::chrono::steady_clock::now();
  const int code = wait_exit(p, 10s);
  const auto took = std::chrono::steady_clock::now() - t0;
  fleet[0].thaw();
  fleet[1].thaw();
  BOOST_TEST(code == 76, slurp(file("lost.err")));
  BOOST_TEST(!std::filesystem::exists(finished));
  const std::string err = slurp(file("lost.err"));
  BOOST_TEST(err.find("lost the lock") != std::string::npos, err);
  // It says why: nothing confirmed a renewal in time (two of three nodes frozen).
  BOOST_TEST(err.find("no renewal was confirmed by a majority") != std::string::npos, err);
  // SIGTERM ended `sh` at once: well within TTL + grace (a bound, not a benchmark).
  BOOST_TEST((took < 5s));
}

BOOST_AUTO_TEST_CASE(a_lock_deleted_on_a_majority_is_lost_and_the_line_says_so) {
  const std::string started = file("started");
  const pid_t p = start_cli({"run", "--ttl", "600", "--grace", "500", "gone", "--", "sh", "-c",
                             "touch " + started + "; sleep 30"},
                            dir, "gone", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  fleet[0].command({"DEL", "gone"});
  fleet[1].command({"DEL", "gone"});
  BOOST_TEST(wait_exit(p, 10s) == 76);
  const std::string err = slurp(file("gone.err"));
  BOOST_TEST(err.find("lost the lock on gone") != std::string::npos, err);
  BOOST_TEST(err.find("no longer hold our token") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(max_hold_stops_renewal_and_the_command_is_treated_as_having_lost_the_lock) {
  // A COMMAND shorter than the cap is not affected.
  auto quick =
      run({"run", "--ttl", "300", "--max-hold", "5000", "capped", "--", "sh", "-c", "exit 4"});
  BOOST_TEST(quick.code == 4, quick.err);

  // A longer one outlives the cap: renewal stops, the lock runs out (some time within one
  // TTL after the cap) and COMMAND is terminated as for any loss.
  const std::string started = file("capped-started"), finished = file("capped-finished");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t p =
      start_cli({"run", "--ttl", "300", "--max-hold", "900", "--grace", "500", "capped", "--", "sh",
                 "-c", "touch " + started + "; sleep 30; touch " + finished},
                dir, "capped", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  const int code = wait_exit(p, 15s);
  const auto took = std::chrono::steady_clock::now() - t0;
  const std::string err = slurp(file("capped.err"));
  BOOST_TEST(code == 76, err);
  BOOST_TEST(!std::filesystem::exists(finished));
  BOOST_TEST(err.find("--max-hold (900 ms) has passed") != std::string::npos, err);
  BOOST_TEST(std::count(err.begin(), err.end(), '\n') == 1, err);
  // Held at least the cap (renewed past the first TTL), and stopped long before `sleep 30`
  // would end (bounds, not a benchmark).
  BOOST_TEST((took >= 900ms));
  BOOST_TEST((took < 8s));
  // No renewal went out after the cap: the key runs out on every node (the servers' own
  // expiry lags the client's deadline by the drift allowance, hence a bounded wait).
  auto gone_everywhere = [&] {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet.has_key(i, "capped")) return false;
    return true;
  };
  BOOST_TEST(redlock::test::wait_until(gone_everywhere, 1s));
}

BOOST_AUTO_TEST_CASE(a_minority_node_frozen_while_connected_does_not_hold_the_exit_back) {
  // The lock is taken on all three nodes; node 0 then freezes with its connection open,
  // and COMMAND ends. The release reaches nodes 1 and 2 at once; node 0 cannot answer.
  // TTL 3 s: the key on node 0 cannot simply expire while the test looks at it.
  const std::string started = file("frozen-started"), go = file("frozen-go");
  const pid_t p =
      start_cli({"run", "--ttl", "3000", "frozen", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.01; done"},
                dir, "frozen", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  BOOST_TEST_REQUIRE(fleet.has_key(0, "frozen"));
  fleet[0].freeze();
  const auto t0 = std::chrono::steady_clock::now();
  std::ofstream{go}.put('\n');
  const int code = wait_exit(p, 20s);
  const auto took = std::chrono::steady_clock::now() - t0;
  BOOST_TEST(code == 0, slurp(file("frozen.err")));
  // Within the node timeout (250 ms) plus COMMAND's own polling; 3 s is a generous
  // bound for a correctness contract, not a benchmark. It took about 10 s before.
  BOOST_TEST((took < 3s), std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                              << " ms");
  BOOST_TEST(!fleet.has_key(1, "frozen"));
  BOOST_TEST(!fleet.has_key(2, "frozen"));
  // The release sent to node 0 waited in its socket: thawed, it carries it out, long
  // before the 3 s TTL would have removed the key.
  fleet[0].thaw();
  BOOST_TEST(redlock::test::wait_until([&] { return !fleet.has_key(0, "frozen"); }, 500ms));
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 3s));  // not the TTL at work
}

BOOST_AUTO_TEST_CASE(signals_are_forwarded_and_the_lock_released_after_the_command) {
  const std::string got = file("got"), ready = file("ready");
  const pid_t p = start_cli({"run", "--ttl", "500", "sig", "--", "sh", "-c",
                             "trap 'echo term > " + got + "; exit 7' TERM; touch " + ready +
                                 "; while :; do sleep 0.05; done"},
                            dir, "sig", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(ready, 10s));
  ::kill(p, SIGTERM);
  BOOST_TEST(wait_exit(p) == 7);
  BOOST_TEST(slurp(got) == "term\n");
  for (std::size_t i = 0; i < fleet.size(); ++i) BOOST_TEST(!fleet.has_key(i, "sig"));
}

BOOST_AUTO_TEST_CASE(concurrent_runs_never_overlap_and_fences_increase) {
  // The critical section: mkdir fails if another holder is inside.
  const std::string inside = file("inside"), log = file("log");
  const std::string section = "mkdir " + inside + " 2>/dev/null || echo OVERLAP >> " + log +
                              "; echo $REDLOCK_FENCE >> " + log + "; sleep 0.02; rmdir " + inside;
  run_workers(4, "run --ttl 1000 --wait 20000 shared", section);
  std::istringstream lines{slurp(log)};
  long long last = 0;
  int entries = 0;
  for (std::string line; std::getline(lines, line);) {
    BOOST_TEST(line != "OVERLAP");
    const long long fence = std::stoll(line);
    BOOST_TEST(fence > last);
    last = fence;
    ++entries;
  }
  BOOST_TEST(entries == 20);
}

BOOST_AUTO_TEST_CASE(shared_runs_overlap_and_a_writer_runs_after_them_alone) {
  // Each reader waits, inside, until all four are inside at once: only shared holders can
  // get there. They stay until told to go. The writer, started while they are inside,
  // must find nobody inside when it runs.
  const std::string room = file("room"), seen = file("seen"), log = file("shared-log"),
                    go = file("shared-go");
  std::filesystem::create_directory(room);
  std::filesystem::create_directory(seen);
  std::vector<pid_t> readers;
  for (int r = 0; r < 4; ++r) {
    const std::string me = room + "/inside-" + std::to_string(r);
    const std::string body =
        "touch " + me + "; n=0; while [ $(ls " + room + " | wc -l) -lt 4 ] && [ $n -lt 1500 ]; " +
        "do sleep 0.01; n=$((n+1)); done; [ $n -lt 1500 ] || echo APART >> " + log + "; touch " +
        seen + "/" + std::to_string(r) + "; echo reader $REDLOCK_FENCE >> " + log +
        "; n=0; while [ ! -e " + go +
        " ] && [ $n -lt 1500 ]; do sleep 0.01; n=$((n+1)); done; rm " + me;
    readers.push_back(start_cli(
        {"run", "--shared", "--ttl", "1000", "--wait", "20000", "doc", "--", "sh", "-c", body}, dir,
        "reader" + std::to_string(r), {"REDLOCK_NODES=" + nodes}));
  }
  const bool all_in = redlock::test::wait_until(
      [&] {
        return std::distance(std::filesystem::directory_iterator{seen},
                             std::filesystem::directory_iterator{}) == 4;
      },
      20s, 5ms);
  BOOST_TEST_REQUIRE(all_in, "four --shared runs were never inside at once");
  // status names the readers, not a record's text.
  const auto status = run({"status", "doc"});
  BOOST_TEST(status.code == 0, status.err);
  BOOST_TEST(status.out.find("doc: held shared by readers on a majority") != std::string::npos,
             status.out);
  BOOST_TEST(status.out.find("4 readers") != std::string::npos, status.out);
  const pid_t writer =
      start_cli({"run", "--ttl", "1000", "--wait", "20000", "doc", "--", "sh", "-c",
                 "[ -z \"$(ls " + room + ")\" ] || echo OVERLAP >> " + log +
                     "; echo writer $REDLOCK_FENCE >> " + log},
                dir, "writer", {"REDLOCK_NODES=" + nodes});
  // The writer is waiting (or about to): the readers leave, and it runs after them.
  std::ofstream{go}.put('\n');
  for (pid_t r : readers) BOOST_TEST(wait_exit(r) == 0);
  const int writer_code = wait_exit(writer);
  BOOST_TEST(writer_code == 0, slurp(dir + "/writer.err"));
  std::istringstream lines{slurp(log)};
  std::vector<std::string> kinds;
  std::vector<long long> fences;
  for (std::string kind, fence; lines >> kind;) {
    kinds.push_back(kind);
    if (kind == "reader" || kind == "writer") {
      lines >> fence;
      fences.push_back(std::stoll(fence));
    }
  }
  const std::vector<std::string> expected{"reader", "reader", "reader", "reader", "writer"};
  BOOST_TEST(kinds == expected, boost::test_tools::per_element());
  // Readers' tokens are below every later writer's (docs/safety.md, reader's fence).
  BOOST_TEST_REQUIRE(fences.size() == 5u);
  for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(fences[i] < fences[4]);
}

BOOST_AUTO_TEST_CASE(fair_waiters_run_in_the_order_they_started) {
  wait_until_nodes_are_older_than(2);
  const std::string started = file("fair-started"), go = file("fair-go"), order = file("order");
  const pid_t holder =
      start_cli({"run", "--ttl", "1000", "--fair", "queue", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.01; done"},
                dir, "fair-holder", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  // Each waiter starts once the previous one has its place on every node and the clock
  // has moved past its ticket (equal tickets would be ordered by random ids).
  auto placed = [&](long long n) {
    for (std::size_t i = 0; i < fleet.size(); ++i)
      if (fleet[i].command({"ZCARD", "redlock:line:queue"}).integer != n) return false;
    return true;
  };
  std::vector<pid_t> waiters;
  for (const std::string name : {"first", "second", "third"}) {
    waiters.push_back(start_cli({"run", "--ttl", "1000", "--fair", "queue", "--", "sh", "-c",
                                 "echo " + name + " >> " + order},
                                dir, "fair-" + name, {"REDLOCK_NODES=" + nodes}));
    const auto n = static_cast<long long>(waiters.size());
    BOOST_TEST_REQUIRE(redlock::test::wait_until([&] { return placed(n); }, 10s, 10ms),
                       "waiter " << name << " has no place on every node");
    const auto last = fleet[0].command({"ZRANGE", "redlock:line:queue", "-1", "-1", "WITHSCORES"});
    const long long ticket = std::stoll(last.elements.at(1).text);
    while (std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() <= ticket)
      std::this_thread::yield();
  }
  std::ofstream{go}.put('\n');
  BOOST_TEST(wait_exit(holder) == 0);
  for (pid_t w : waiters) BOOST_TEST(wait_exit(w) == 0);
  BOOST_TEST(slurp(order) == "first\nsecond\nthird\n");
}

BOOST_AUTO_TEST_CASE(an_interrupted_wait_exits_130_and_leaves_nothing_running) {
  const std::string started = file("busy-started");
  const pid_t holder = start_cli(
      {"run", "--ttl", "1000", "busy", "--", "sh", "-c", "touch " + started + "; sleep 2"}, dir,
      "busy", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  const pid_t waiter = start_cli({"run", "--ttl", "1000", "busy", "--", "true"}, dir, "waiter",
                                 {"REDLOCK_NODES=" + nodes});
  // Wait until it is connected (its signal handlers are set up before it connects):
  // node 0 then lists three clients, the holder, the waiter and this query.
  auto clients = [&] {
    const auto list = fleet[0].command({"CLIENT", "LIST"}).text;
    return std::count(list.begin(), list.end(), '\n');
  };
  BOOST_TEST_REQUIRE(redlock::test::wait_until([&] { return clients() >= 3; }, 5s));
  ::kill(waiter, SIGINT);
  BOOST_TEST(wait_exit(waiter, 5s) == 130);
  BOOST_TEST(wait_exit(holder) == 0);
}

BOOST_AUTO_TEST_CASE(status_and_nodes_describe_the_fleet) {
  auto o = run({"nodes"});
  BOOST_TEST(o.code == 0, o.err);
  BOOST_TEST(o.out.find("3 of 3 nodes reachable") != std::string::npos, o.out);
  BOOST_TEST(o.err.find("can lose acknowledged writes") != std::string::npos, o.err);
  fleet[0].command({"SET", "thing", "sometoken", "PX", "60000"});
  fleet[1].command({"SET", "thing", "sometoken", "PX", "60000"});
  auto s = run({"status", "thing"});
  BOOST_TEST(s.code == 0);
  BOOST_TEST(s.out.find("held (token sometoken") != std::string::npos, s.out);
  fleet[2].kill();
  fleet[1].kill();
  auto s2 = run({"status", "thing"});
  BOOST_TEST(s2.code == 69);
}

// "free" is a majority's word: nodes that do not answer, or hold a key of another type,
// cannot vouch for it; a semaphore's name is free while its permits are all held.
BOOST_AUTO_TEST_CASE(status_says_free_only_when_a_majority_says_so) {
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    fleet[i].command({"RPUSH", "listed", "x"});
    for (std::size_t p = 0; p < 2; ++p)
      fleet[i].command({"SET", redlock::permit_resource("pool", p),
                        "token" + std::to_string(p) + "/web1:" + std::to_string(p), "PX", "60000"});
    fleet[i].command({"SET", redlock::permit_count_resource("pool"), "2", "PX", "60000"});
  }
  auto wrong = run({"status", "listed"});
  BOOST_TEST(wrong.code == 65, wrong.err);
  BOOST_TEST(wrong.out.find("listed: a key of another type is in the way on 3 of 3 nodes") !=
                 std::string::npos,
             wrong.out);
  for (const auto& args : {std::vector<std::string>{"status", "pool"},
                           std::vector<std::string>{"status", "--permits", "2", "pool"}}) {
    auto pool = run(args);
    BOOST_TEST(pool.code == 0, pool.err);
    BOOST_TEST(pool.out.find("pool: free") == std::string::npos, pool.out);
    BOOST_TEST(pool.out.find("permit 1: held by web1:1 (token token1...) on a majority") !=
                   std::string::npos,
               pool.out);
    BOOST_TEST(pool.out.find("pool: a semaphore of 2 permits: 2 held on a majority, 0 free;") !=
                   std::string::npos,
               pool.out);
  }
  auto free = run({"status", "--permits", "3", "pool"});
  BOOST_TEST(free.out.find("2 held on a majority, 1 free;") != std::string::npos, free.out);
  fleet[1].kill();
  auto one_down = run({"status", "nothing"});
  BOOST_TEST(one_down.code == 0, one_down.err);
  BOOST_TEST(one_down.out.find("nothing: free; 2 of 3 nodes reachable") != std::string::npos,
             one_down.out);
  for (std::size_t i : {0u, 2u}) fleet[i].kill();
  auto none = run({"status", "nothing"});
  BOOST_TEST(none.code == 69, none.err);
  BOOST_TEST(none.out.find("nothing: unknown: 0 of 3 nodes say it is free, 2 needed; 0 of 3 "
                           "nodes reachable") != std::string::npos,
             none.out);
}

// `nodes` judges the restart guard by the fleet's max TTL, as `run` does.
BOOST_AUTO_TEST_CASE(nodes_judges_the_restart_guard_by_the_max_ttl_it_is_given) {
  wait_until_nodes_are_older_than(2);
  auto short_ttl = run({"nodes", "--max-ttl", "1000"});
  BOOST_TEST(short_ttl.code == 0, short_ttl.err);
  BOOST_TEST(short_ttl.err.find("may not vote now") == std::string::npos, short_ttl.err);
  for (auto o :
       {run({"nodes", "--max-ttl", "3600000"}), run({"nodes"}, 30s, {"REDLOCK_MAX_TTL=3600000"})}) {
    BOOST_TEST(o.code == 0, o.err);
    BOOST_TEST(o.err.find("node 2 may not vote now") != std::string::npos, o.err);
  }
  auto bad = run({"nodes", "--max-ttl", "5"});
  BOOST_TEST(bad.code == 64, bad.err);
}

BOOST_AUTO_TEST_CASE(permits_run_at_most_n_commands_at_once_each_with_its_permit_and_fence) {
  // Three workers, two permits. A command entering takes the first free of three slot
  // directories: taking the third means three ran at once.
  const std::string log = file("permit-log"), slots = file("slots");
  std::filesystem::create_directory(slots);
  const std::string section = "for s in 0 1 2; do mkdir " + slots +
                              "/$s 2>/dev/null && break; done; "
                              "[ $s = 2 ] && echo OVERLAP >> " +
                              log + "; [ $s = 1 ] && echo TWO >> " + log +
                              "; "
                              "echo \"$REDLOCK_PERMIT $REDLOCK_FENCE $REDLOCK_RESOURCE\" >> " +
                              log + "; sleep 0.05; rmdir " + slots + "/$s";
  run_workers(3, "run --permits 2 --ttl 1000 --wait 20000 pool", section);
  std::istringstream lines{slurp(log)};
  std::map<std::string, long long> last;  // per permit
  int entries = 0, two = 0;
  for (std::string line; std::getline(lines, line);) {
    BOOST_TEST(line != "OVERLAP");
    if (line == "TWO") {
      ++two;
      continue;
    }
    std::istringstream fields{line};
    std::string permit, resource;
    long long fence = 0;
    fields >> permit >> fence >> resource;
    BOOST_TEST((permit == "0" || permit == "1"), line);
    BOOST_TEST(resource == "pool");
    // Each permit's fencing token increases from one holder to the next.
    BOOST_TEST(fence > last[permit], line);
    last[permit] = fence;
    ++entries;
  }
  BOOST_TEST(entries == 15);
  BOOST_TEST_MESSAGE(two << " of 15 commands ran beside another");
}

// The nodes record a semaphore's count: a run asking another count while a permit is
// held is refused at once (no wait mends it) with one line naming the nodes' count and
// exit 78, and takes nothing; a run with the nodes' count goes on as before.
BOOST_AUTO_TEST_CASE(a_run_with_another_permit_count_exits_78_with_one_line) {
  wait_until_nodes_are_older_than(2);
  const std::string started = file("permit-holder-started"), done = file("permit-holder-done");
  const pid_t holder =
      start_cli({"run", "--permits", "2", "--ttl", "1000", "counted", "--", "sh", "-c",
                 "touch " + started + "; while [ ! -e " + done + " ]; do sleep 0.02; done"},
                dir, "permit-holder", {"REDLOCK_NODES=" + nodes});
  BOOST_TEST_REQUIRE(redlock::test::wait_for_file(started, 10s));
  for (const std::vector<std::string>& wait :
       {std::vector<std::string>{"--nonblock"}, std::vector<std::string>{"--wait", "20000"}}) {
    std::vector<std::string> args{"run", "--permits", "3", "--ttl", "1000"};
    args.insert(args.end(), wait.begin(), wait.end());
    args.insert(args.end(), {"counted", "--", "true"});
    auto other = run(args);
    BOOST_TEST(other.code == 78, other.err);
    BOOST_TEST(std::count(other.err.begin(), other.err.end(), '\n') == 1, other.err);
    BOOST_TEST(other.err.find("with 2 permits") != std::string::npos, other.err);
  }
  // The same count: one of the two permits is still free.
  auto same =
      run({"run", "--permits", "2", "--ttl", "1000", "--nonblock", "counted", "--", "true"});
  BOOST_TEST(same.code == 0, same.err);
  std::ofstream{done}.put('\n');
  BOOST_TEST(wait_exit(holder) == 0);
}

// A plain lock's name cannot reach a permit's key (nor the semaphore's record): such a
// name is refused before any I/O.
BOOST_AUTO_TEST_CASE(a_plain_run_cannot_name_a_permit_key) {
  for (const std::string name : {"redlock:permit:{pool}:0", "redlock:permit:{pool}:count"}) {
    auto o = run({"run", "--nonblock", name, "--", "true"});
    BOOST_TEST(o.code == 64, o.err);
    BOOST_TEST(std::count(o.err.begin(), o.err.end(), '\n') == 1, o.err);
  }
}

BOOST_AUTO_TEST_CASE(permits_out_of_range_or_with_fair_are_usage_errors) {
  for (const std::string n : {"0", "65", "two", "-1"}) {
    auto o = run({"run", "--permits", n, "r", "--", "true"});
    BOOST_TEST(o.code == 64, n);
    BOOST_TEST(std::count(o.err.begin(), o.err.end(), '\n') == 1, o.err);
  }
  auto fair = run({"run", "--permits", "2", "--fair", "r", "--", "true"});
  BOOST_TEST(fair.code == 64);
  auto shared = run({"run", "--permits", "2", "--shared", "r", "--", "true"});
  BOOST_TEST(shared.code == 64);
  BOOST_TEST(shared.err == "redlock: --permits and --shared exclude each other\n");
  auto help = run({"run", "--help"});
  BOOST_TEST(help.out.find("--permits") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
