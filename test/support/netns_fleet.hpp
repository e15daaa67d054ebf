// SPDX-License-Identifier: BSL-1.0
#pragma once
// Redis nodes a real network away: each redis-server runs in its own network namespace,
// reached from ours over a veth pair, with latency, jitter and loss on the way. Where the
// kernel has the netem queueing discipline, netem adds them on both ends of each veth;
// where it has not (our CI's kernel), a delay_proxy in the node's namespace does, between
// the veth and the server's loopback port. Either way the client's bytes cross a real
// network device into another network stack.
//
// Names are unique per run: a fleet takes a free "slot" (an flock'ed file under
// /run/redlock-netns) and names its namespaces rlnet<slot>-<i> and its host-side veths
// rln<slot>h<i>, with addresses 10.213.<slot>.0/24. A slot whose owner died is free again
// (the kernel drops the flock); what the dead run left behind is removed by the next
// fleet that sees it, or by sweep(). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and ip.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "delay_proxy.hpp"
#include "redis_fleet.hpp"

namespace redlock::test {

/// Thrown when network namespaces cannot be made here (no privileges, no ip, a kernel
/// without veth): a test skips on it rather than fails.
class netns_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct netns_options {
  /// One round trip per node, as link_model::rtt; the fleet has this many nodes.
  std::vector<std::chrono::microseconds> rtt;
  /// Jitter of every node's round trip (rtt ± jitter); at most the smallest rtt.
  std::chrono::microseconds jitter{0};
  /// Loss per direction (0.01: 1 %).
  double loss = 0;
  enum class delay_method { automatic, netem, proxy };
  /// automatic: netem where the kernel has it, else the user-space proxy.
  delay_method delay = delay_method::automatic;
  /// Extra redis-server arguments.
  std::vector<std::string> redis_args;
};

class netns_fleet {
 public:
  /// Why namespaces certainly cannot be made here (not root, no ip), or empty. A fleet
  /// may still fail with netns_unavailable where this says nothing.
  static std::string unavailable();
  /// Removes what runs that died left behind: namespaces (with any process still in
  /// them) and veths of slots nobody holds. Never throws.
  static void sweep() noexcept;

  /// Builds the namespaces and links, starts the servers and waits until each answers
  /// over its link. Throws netns_unavailable if the namespaces or links cannot be made,
  /// std::runtime_error on other failures (everything made so far is removed).
  explicit netns_fleet(netns_options opts);
  /// Stops the proxies, kills the servers by pid, deletes the veths and namespaces.
  ~netns_fleet();
  netns_fleet(const netns_fleet&) = delete;
  netns_fleet& operator=(const netns_fleet&) = delete;

  std::size_t size() const { return opts_.rtt.size(); }
  /// redis://<address in node i's namespace>:<port>, in node order: the delayed path.
  std::vector<std::string> uris() const;
  /// "netem" or "proxy": what adds the delay.
  const char* delay_method() const { return netem_ ? "netem" : "proxy"; }
  const netns_options& options() const { return opts_; }
  /// Node i's namespace name.
  std::string namespace_name(std::size_t i) const;

  /// Node i's server process.
  pid_t pid(std::size_t i) const { return servers_.at(i)->pid(); }
  /// SIGSTOP / SIGCONT node i's server (see redis_server::freeze).
  void freeze(std::size_t i) { servers_.at(i)->freeze(); }
  void thaw(std::size_t i) { servers_.at(i)->thaw(); }
  /// One command to node i over its own loopback, inside its namespace: no added delay,
  /// for assertions. As redis_server::command.
  sync_reply command(std::size_t i, const std::vector<std::string>& args) const;

 private:
  void build();
  void teardown() noexcept;

  netns_options opts_;
  int slot_ = -1;
  int slot_lock_ = -1;  // the flock'ed file descriptor that makes the slot ours
  bool netem_ = false;
  std::vector<int> netns_fds_;  // /run/netns/<name>, open for setns
  std::vector<std::unique_ptr<redis_server>> servers_;
  std::vector<std::unique_ptr<delay_proxy>> proxies_;
};

}  // namespace redlock::test
