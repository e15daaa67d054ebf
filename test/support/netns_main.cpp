// SPDX-License-Identifier: BSL-1.0
// redlock-netns: runs a command against redis-server nodes in network namespaces, a real
// network away (netns_fleet.hpp), and removes them when it ends. bench/netns.sh uses it.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "netns_fleet.hpp"

namespace {

using redlock::test::netns_fleet;
using redlock::test::netns_options;

constexpr std::string_view usage = R"(usage: redlock-netns [options] -- COMMAND [ARG...]
       redlock-netns --cleanup

Starts redis-server nodes, each in its own network namespace behind a veth pair with the
round trip, jitter and loss asked for, runs COMMAND with
  REDLOCK_NODES       the nodes' redis:// URIs, comma-separated
  REDLOCK_NODE_PIDS   their servers' pids, in the same order (to freeze them)
  REDLOCK_NETNS_DELAY what adds the delay: netem, or proxy (user space)
then removes the nodes and namespaces and exits with COMMAND's status. Needs root and ip.

  --nodes N           number of nodes (default 5)
  --rtt-ms MS[,MS..]  round trip of every node, or of each (default 10)
  --jitter-ms MS      each round trip varies by +- MS, uniformly (default 0)
  --loss-percent P    loss per direction; in the proxy, a 200 ms stall per lost chunk
                      (default 0)
  --delay WHAT        auto (netem if the kernel has it, else proxy), netem or proxy
  --cleanup           remove what runs that died left behind, and exit
)";

int usage_error(const std::string& what) {
  std::cerr << "redlock-netns: " << what << " (see --help)\n";
  return 64;
}

bool parse_ms(std::string_view text, double& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && out >= 0;
}

std::chrono::microseconds from_ms(double ms) {
  return std::chrono::microseconds{static_cast<std::int64_t>(ms * 1000 + 0.5)};
}

pid_t child = -1;

// Ctrl-C or a kill reaches COMMAND, and we tear down after it exits.
void forward(int sig) {
  if (child > 0) ::kill(child, sig);
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  netns_options opts;
  std::vector<double> rtts{10};
  std::size_t nodes = 5;
  double jitter_ms = 0;
  std::vector<char*> command;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto takes_value = [&] {
      if (!value) return false;
      ++i;
      return true;
    };
    if (flag == "--help" || flag == "-h") {
      std::cout << usage;
      return 0;
    } else if (flag == "--cleanup") {
      netns_fleet::sweep();
      return 0;
    } else if (flag == "--") {
      command.assign(argv + i + 1, argv + argc);
      break;
    } else if (flag == "--nodes" && takes_value()) {
      double n = 0;
      if (!parse_ms(value, n) || n < 1 || n != static_cast<std::size_t>(n))
        return usage_error("--nodes: not a positive count");
      nodes = static_cast<std::size_t>(n);
    } else if (flag == "--rtt-ms" && takes_value()) {
      rtts.clear();
      std::string_view list = value;
      while (!list.empty()) {
        const std::size_t comma = list.find(',');
        double ms = 0;
        if (!parse_ms(list.substr(0, comma), ms)) return usage_error("--rtt-ms: not a duration");
        rtts.push_back(ms);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      }
      if (rtts.empty()) return usage_error("--rtt-ms needs a value");
    } else if (flag == "--jitter-ms" && takes_value()) {
      if (!parse_ms(value, jitter_ms)) return usage_error("--jitter-ms: not a duration");
    } else if (flag == "--loss-percent" && takes_value()) {
      double p = 0;
      if (!parse_ms(value, p) || p > 100) return usage_error("--loss-percent: 0 to 100");
      opts.loss = p / 100;
    } else if (flag == "--delay" && takes_value()) {
      const std::string_view d = value;
      if (d == "auto") {
        opts.delay = netns_options::delay_method::automatic;
      } else if (d == "netem") {
        opts.delay = netns_options::delay_method::netem;
      } else if (d == "proxy") {
        opts.delay = netns_options::delay_method::proxy;
      } else {
        return usage_error("--delay: auto, netem or proxy");
      }
    } else {
      return usage_error("unknown option or missing value: " + std::string(flag));
    }
  }
  if (command.empty()) return usage_error("no command given after --");
  if (rtts.size() != 1 && rtts.size() != nodes) {
    // A list names every node's round trip, so it sets the count unless --nodes disagrees.
    bool nodes_given = false;
    for (int i = 1; i < argc && std::string_view{argv[i]} != "--"; ++i)
      nodes_given = nodes_given || std::string_view{argv[i]} == "--nodes";
    if (nodes_given) return usage_error("--rtt-ms lists a different number of nodes than --nodes");
    nodes = rtts.size();
  }
  for (std::size_t i = 0; i < nodes; ++i)
    opts.rtt.push_back(from_ms(rtts[rtts.size() == 1 ? 0 : i]));
  opts.jitter = from_ms(jitter_ms);
  command.push_back(nullptr);

  try {
    netns_fleet fleet{opts};
    std::vector<std::string> pids;
    for (std::size_t i = 0; i < fleet.size(); ++i) pids.push_back(std::to_string(fleet.pid(i)));
    std::ostringstream rtt_text;
    for (std::size_t i = 0; i < rtts.size(); ++i) rtt_text << (i ? "," : "") << rtts[i];
    std::cerr << "redlock-netns: " << fleet.size() << " nodes, round trip " << rtt_text.str()
              << " ms +- " << jitter_ms << " ms, loss " << opts.loss * 100
              << " % each way, delay added by " << fleet.delay_method() << "\n";

    const std::string env_nodes = "REDLOCK_NODES=" + joined(fleet.uris());
    const std::string env_pids = "REDLOCK_NODE_PIDS=" + joined(pids);
    const std::string env_delay = std::string("REDLOCK_NETNS_DELAY=") + fleet.delay_method();
    std::vector<char*> env;
    for (char** e = environ; *e; ++e) {
      const std::string_view v = *e;
      if (!v.starts_with("REDLOCK_NODES=") && !v.starts_with("REDLOCK_NODE_PIDS=") &&
          !v.starts_with("REDLOCK_NETNS_DELAY="))
        env.push_back(*e);
    }
    for (const std::string* s : {&env_nodes, &env_pids, &env_delay})
      env.push_back(const_cast<char*>(s->c_str()));
    env.push_back(nullptr);

    struct sigaction sa {};
    sa.sa_handler = forward;
    ::sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    if (const int rc =
            ::posix_spawnp(&child, command[0], nullptr, nullptr, command.data(), env.data());
        rc != 0) {
      std::cerr << "redlock-netns: cannot run " << command[0] << ": " << std::strerror(rc) << "\n";
      return 127;
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    child = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } catch (const redlock::test::netns_unavailable& e) {
    std::cerr << "redlock-netns: network namespaces cannot be made here: " << e.what() << "\n";
    return 69;
  } catch (const std::exception& e) {
    std::cerr << "redlock-netns: " << e.what() << "\n";
    return 1;
  }
}
