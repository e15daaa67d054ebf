// SPDX-License-Identifier: BSL-1.0
#include "netns_fleet.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

namespace redlock::test {

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

constexpr int max_slots = 64;
constexpr std::size_t max_nodes = 60;  // 4 addresses each in one /24
constexpr const char* slot_dir = "/run/redlock-netns";
// The proxy's port in each namespace: every namespace has all its ports to itself.
constexpr std::uint16_t proxy_port = 6379;
// A node must answer PING over its link within this (a loss stall and a few round trips).
constexpr auto reach_timeout = 3s;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string namespace_of(int slot, std::size_t i) {
  return "rlnet" + std::to_string(slot) + "-" + std::to_string(i);
}
std::string host_link_of(int slot, std::size_t i) {
  return "rln" + std::to_string(slot) + "h" + std::to_string(i);
}
// A /30 per node: .4i+1 on our side of the veth, .4i+2 in the node's namespace.
std::string host_address(int slot, std::size_t i) {
  return "10.213." + std::to_string(slot) + "." + std::to_string(4 * i + 1);
}
std::string node_address(int slot, std::size_t i) {
  return "10.213." + std::to_string(slot) + "." + std::to_string(4 * i + 2);
}

// A program by name, from PATH or the sbin directories a non-login root shell may lack.
std::string find_program(const std::string& name) {
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/sbin:/sbin:/usr/bin:/bin";
  std::istringstream in{dirs};
  for (std::string dir; std::getline(in, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

struct run_result {
  int status = -1;
  std::string output;  // stdout and stderr together
  bool ok() const { return status == 0; }
};

// Runs argv (argv[0] a path) to completion with `input` on its stdin. posix_spawn, not
// fork: the caller may have other threads (proxies) running.
run_result run(const std::vector<std::string>& argv, std::string_view input = {}) {
  run_result result;
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw_errno("pipe2");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw_errno("pipe2");
  }
  // Written whole before the child starts: a batch fits the pipe's buffer, so this cannot
  // block, and no SIGPIPE can come from a child that exits early.
  const bool fits = input.size() < 65536 && ::write(in[1], input.data(), input.size()) ==
                                                static_cast<ssize_t>(input.size());
  ::close(in[1]);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      fits ? ::posix_spawn(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ) : E2BIG;
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    result.output = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Moves the calling thread into another network namespace for its lifetime: sockets and
// child processes made meanwhile belong there, and stay there after it ends.
class scoped_netns {
 public:
  explicit scoped_netns(int target)
      : home_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {
    if (home_ < 0) throw_errno("open /proc/thread-self/ns/net");
    if (::setns(target, CLONE_NEWNET) != 0) {
      const int e = errno;
      ::close(home_);
      throw std::system_error(e, std::generic_category(), "setns");
    }
  }
  ~scoped_netns() {
    // A thread left in a node's namespace would talk to the wrong servers: stop here.
    if (::setns(home_, CLONE_NEWNET) != 0) std::terminate();
    ::close(home_);
  }
  scoped_netns(const scoped_netns&) = delete;
  scoped_netns& operator=(const scoped_netns&) = delete;

 private:
  int home_;
};

// The slot's flock: held for the fleet's life, dropped by the kernel if its owner dies.
// Returns the descriptor, or -1 if another process holds the slot.
int lock_slot(int slot) {
  ::mkdir(slot_dir, 0755);
  const std::string path = std::string(slot_dir) + "/slot-" + std::to_string(slot) + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// "rln<slot>h<i>" or "rlnet<slot>-<i>" -> slot; -1 if the name is not ours.
int slot_of(std::string_view name, std::string_view prefix, char separator) {
  if (!name.starts_with(prefix)) return -1;
  name.remove_prefix(prefix.size());
  const std::size_t sep = name.find(separator);
  if (sep == 0 || sep == std::string_view::npos || sep + 1 == name.size()) return -1;
  int slot = 0;
  for (std::size_t k = 0; k < name.size(); ++k) {
    const char c = name[k];
    if (k == sep) continue;
    if (c < '0' || c > '9') return -1;
    if (k < sep) slot = slot * 10 + (c - '0');
    if (slot >= max_slots) return -1;
  }
  return slot;
}

struct slot_names {
  std::vector<std::string> namespaces;
  std::vector<std::string> links;
};

// Our namespaces and host-side veths that exist now, by slot.
std::map<int, slot_names> list_ours(const std::string& ip) {
  std::map<int, slot_names> found;
  std::istringstream ns{run({ip, "netns", "list"}).output};
  for (std::string line; std::getline(ns, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (const int s = slot_of(name, "rlnet", '-'); s >= 0) found[s].namespaces.push_back(name);
  }
  // "7: rln3h0@if2: <BROADCAST,..." (one line per link with -o)
  std::istringstream links{run({ip, "-o", "link", "show"}).output};
  for (std::string line; std::getline(links, line);) {
    const std::size_t from = line.find(": ");
    if (from == std::string::npos) continue;
    const std::size_t to = line.find_first_of("@:", from + 2);
    const std::string name = line.substr(from + 2, to - from - 2);
    if (const int s = slot_of(name, "rln", 'h'); s >= 0) found[s].links.push_back(name);
  }
  return found;
}

// Deleting one end of a veth deletes both, at once; deleting a namespace only drops its
// name, and the kernel frees it (and its end of the veth) later. So links go first.
void remove_names(const std::string& ip, const slot_names& names) {
  std::string batch;
  for (const auto& l : names.links) batch += "link del " + l + "\n";
  for (const auto& n : names.namespaces) batch += "netns del " + n + "\n";
  if (!batch.empty()) run({ip, "-force", "-batch", "-"}, batch);
}

// Removes what dead runs left, and anything already named as `own` (a slot we hold).
void sweep_slots(const std::string& ip, int own) {
  for (auto& [slot, names] : list_ours(ip)) {
    const int fd = slot == own ? -1 : lock_slot(slot);
    if (slot != own && fd < 0) continue;  // a live run's
    // A server of a run that died in an unusual way (its death signal not delivered)
    // would keep the namespace alive: its pid is only known from inside.
    for (const auto& n : names.namespaces) {
      std::istringstream pids{run({ip, "netns", "pids", n}).output};
      for (std::string p; std::getline(pids, p);)
        if (const int pid = std::atoi(p.c_str()); pid > 1) ::kill(pid, SIGKILL);
    }
    remove_names(ip, names);
    if (fd >= 0) ::close(fd);
  }
}

std::string microseconds_arg(std::chrono::microseconds d) {
  return std::to_string(d.count()) + "us";
}

// The node answers PING over its link, from our namespace: the route, the veth, the
// proxy or qdisc, and the server all work.
void check_reachable(const std::string& address, std::uint16_t port) {
  const std::string where = address + ":" + std::to_string(port);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket");
  const timeval tv{std::chrono::duration_cast<std::chrono::seconds>(reach_timeout).count(), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  std::string reply;
  constexpr std::string_view ping = "*1\r\n$4\r\nPING\r\n";
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, ping.data(), ping.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(ping.size())) {
    char buf[64];
    while (reply.find("\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
  }
  const int e = errno;
  ::close(fd);
  if (reply != "+PONG\r\n")
    throw std::runtime_error("node " + where + " does not answer PING over its link (" +
                             (reply.empty() ? std::strerror(e) : reply) + ")");
}

}  // namespace

std::string netns_fleet::unavailable() {
  if (::geteuid() != 0) return "network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)";
  if (find_program("ip").empty()) return "ip (iproute2) is not installed";
  return {};
}

void netns_fleet::sweep() noexcept {
  try {
    if (const std::string ip = find_program("ip"); !ip.empty() && ::geteuid() == 0)
      sweep_slots(ip, -1);
  } catch (...) {
    // Leftovers stay for the next sweep.
  }
}

netns_fleet::netns_fleet(netns_options opts) : opts_(std::move(opts)) {
  if (opts_.rtt.empty() || opts_.rtt.size() > max_nodes)
    throw std::invalid_argument("netns_fleet: 1 to " + std::to_string(max_nodes) + " nodes");
  for (const auto rtt : opts_.rtt)
    if (opts_.jitter > rtt) throw std::invalid_argument("netns_fleet: jitter exceeds a round trip");
  if (const std::string why = unavailable(); !why.empty()) throw netns_unavailable(why);
  try {
    build();
  } catch (...) {
    teardown();
    throw;
  }
}

netns_fleet::~netns_fleet() {
  teardown();
}

void netns_fleet::build() {
  const std::string ip = find_program("ip");
  for (int s = 0; s < max_slots && slot_lock_ < 0; ++s) {
    slot_lock_ = lock_slot(s);
    if (slot_lock_ >= 0) slot_ = s;
  }
  if (slot_lock_ < 0)
    throw netns_unavailable(std::string("no free slot under ") + slot_dir +
                            " (64 fleets at once, or the directory cannot be written)");
  sweep_slots(ip, slot_);

  std::string links;
  for (std::size_t i = 0; i < size(); ++i) {
    const std::string ns = namespace_of(slot_, i);
    const std::string host = host_link_of(slot_, i);
    links += "netns add " + ns + "\n";
    links += "link add " + host + " type veth peer name eth0 netns " + ns + "\n";
    links += "addr add " + host_address(slot_, i) + "/30 dev " + host + "\n";
    links += "link set " + host + " up\n";
  }
  if (const run_result r = run({ip, "-batch", "-"}, links); !r.ok())
    throw netns_unavailable("cannot make network namespaces and veth pairs here: " + r.output);
  for (std::size_t i = 0; i < size(); ++i) {
    const std::string inside =
        "link set lo up\naddr add " + node_address(slot_, i) + "/30 dev eth0\nlink set eth0 up\n";
    if (const run_result r = run({ip, "-n", namespace_of(slot_, i), "-batch", "-"}, inside);
        !r.ok())
      throw std::runtime_error("setting up " + namespace_of(slot_, i) + ": " + r.output);
    const std::string path = "/run/netns/" + namespace_of(slot_, i);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open " + path);
    netns_fds_.push_back(fd);
  }

  // netem where the kernel has it: a probe on the first link says.
  using method = netns_options::delay_method;
  const std::string tc = find_program("tc");
  if (opts_.delay != method::proxy && !tc.empty()) {
    const std::vector<std::string> probe{tc,     "qdisc", "add",   "dev", host_link_of(slot_, 0),
                                         "root", "netem", "delay", "1ms"};
    netem_ = run(probe).ok();
  }
  if (opts_.delay == method::netem && !netem_)
    throw netns_unavailable("the netem qdisc is not available in this kernel (or tc is missing)");
  for (std::size_t i = 0; netem_ && i < size(); ++i) {
    // Each direction: half the round trip ± half the jitter (uniform), and the loss.
    std::vector<std::string> spec{"root", "netem", "delay", microseconds_arg(opts_.rtt[i] / 2)};
    if (opts_.jitter.count() > 0) spec.push_back(microseconds_arg(opts_.jitter / 2));
    if (opts_.loss > 0) spec.insert(spec.end(), {"loss", std::to_string(opts_.loss * 100) + "%"});
    std::vector<std::string> ours{tc, "qdisc", "replace", "dev", host_link_of(slot_, i)};
    std::vector<std::string> theirs{tc,    "-n",  namespace_of(slot_, i), "qdisc", "replace",
                                    "dev", "eth0"};
    for (auto* cmd : {&ours, &theirs}) {
      cmd->insert(cmd->end(), spec.begin(), spec.end());
      if (const run_result r = run(*cmd); !r.ok())
        throw std::runtime_error(command_line(*cmd) + ": " + r.output);
    }
  }

  for (std::size_t i = 0; i < size(); ++i) {
    std::vector<std::string> args = opts_.redis_args;
    // With netem the server listens on its veth too; with the proxy, on loopback only.
    if (netem_) args.insert(args.end(), {"--bind", "127.0.0.1", node_address(slot_, i)});
    const scoped_netns inside{netns_fds_[i]};
    servers_.push_back(std::make_unique<redis_server>(std::move(args)));
  }
  for (std::size_t i = 0; !netem_ && i < size(); ++i) {
    const asio::ip::tcp::endpoint listen{asio::ip::make_address_v4(node_address(slot_, i)),
                                         proxy_port};
    const asio::ip::tcp::endpoint target{asio::ip::address_v4::loopback(), servers_[i]->port()};
    proxies_.push_back(std::make_unique<delay_proxy>(
        netns_fds_[i], listen, target,
        link_model{.rtt = opts_.rtt[i], .jitter = opts_.jitter, .loss = opts_.loss}));
  }
  for (std::size_t i = 0; i < size(); ++i)
    check_reachable(node_address(slot_, i), netem_ ? servers_[i]->port() : proxy_port);
}

void netns_fleet::teardown() noexcept {
  proxies_.clear();
  servers_.clear();
  for (const int fd : netns_fds_) ::close(fd);
  netns_fds_.clear();
  if (slot_ >= 0) {
    slot_names names;
    for (std::size_t i = 0; i < size(); ++i) {
      names.links.push_back(host_link_of(slot_, i));
      names.namespaces.push_back(namespace_of(slot_, i));
    }
    try {
      remove_names(find_program("ip"), names);
    } catch (...) {
      // Left for the next sweep: the slot is free once our lock is gone.
    }
  }
  if (slot_lock_ >= 0) ::close(slot_lock_);
  slot_lock_ = -1;
  slot_ = -1;
}

std::vector<std::string> netns_fleet::uris() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < size(); ++i) {
    const std::uint16_t port = netem_ ? servers_.at(i)->port() : proxy_port;
    out.push_back("redis://" + node_address(slot_, i) + ":" + std::to_string(port));
  }
  return out;
}

std::string netns_fleet::namespace_name(std::size_t i) const {
  return namespace_of(slot_, i);
}

sync_reply netns_fleet::command(std::size_t i, const std::vector<std::string>& args) const {
  const scoped_netns inside{netns_fds_.at(i)};
  return servers_.at(i)->command(args);
}

}  // namespace redlock::test
