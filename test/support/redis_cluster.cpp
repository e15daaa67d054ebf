// SPDX-License-Identifier: BSL-1.0
#include "redis_cluster.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace redlock::test {
namespace {

// Each server's bus port is picked too: the default (port + 10000) does not exist for the
// high ports the OS hands out.
std::vector<std::vector<std::string>> cluster_args(std::size_t n) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                   "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                   "--cluster-port", std::to_string(detail::free_port()),
                   // A replica syncs at once (by default a primary waits 5 s for more).
                   "--repl-diskless-sync-delay", "0"});
  return out;
}

std::string file_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The owner of every slot as one server sees it: "port" per slot, "" if uncovered.
std::vector<std::uint16_t> slot_owners(const redis_server& s) {
  const sync_reply r = s.command({"CLUSTER", "SLOTS"});
  if (r.is_error()) throw std::runtime_error("CLUSTER SLOTS: " + r.text);
  std::vector<std::uint16_t> owner(16384, 0);
  for (const auto& e : r.elements) {
    if (e.elements.size() < 3) continue;
    const auto port = static_cast<std::uint16_t>(e.elements[2].elements.at(1).integer);
    for (auto slot = e.elements[0].integer; slot <= e.elements[1].integer; ++slot)
      owner[static_cast<std::size_t>(slot)] = port;
  }
  return owner;
}

}  // namespace

redis_cluster::redis_cluster(std::size_t primaries, std::size_t replicas)
    : servers_(cluster_args(primaries * (1 + replicas))) {
  std::vector<std::string> argv{detail::find_program("redis-cli"), "--cluster", "create"};
  for (std::size_t i = 0; i < servers_.size(); ++i)
    argv.push_back("127.0.0.1:" + std::to_string(servers_[i].port()));
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  detail::temp_dir dir;
  const std::string log = dir.path() + "/create.log";
  detail::child_process cli;
  cli.spawn(argv, log);
  // Waits on the exit itself (a pidfd turns readable), without reaping: cli reaps at stop().
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, cli.pid(), 0));
  pollfd p{fd, POLLIN, 0};
  const bool exited = fd >= 0 && ::poll(&p, 1, 30'000) == 1;
  if (fd >= 0) ::close(fd);
  if (!exited)
    throw std::runtime_error("redis-cli --cluster create did not finish: " + file_text(log));
  if (cli.exit_description() != "exited with code 0")
    throw std::runtime_error("redis-cli --cluster create " + cli.exit_description() + ": " +
                             file_text(log));
  wait_until_agreed();
  // A replica that never synced would not stand for election: wait for every link.
  const auto synced_by = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    for (;;) {
      const std::string info = servers_[i].command({"INFO", "replication"}).text;
      if (info.find("role:master") != std::string::npos ||
          info.find("master_link_status:up") != std::string::npos)
        break;
      if (std::chrono::steady_clock::now() > synced_by)
        throw std::runtime_error("replica " + std::to_string(i) + " did not sync: " + info);
      std::this_thread::sleep_for(std::chrono::milliseconds{20});  // polls the link
    }
  }
}

std::string redis_cluster::uri() const {
  return "redis+cluster://127.0.0.1:" + std::to_string(servers_[0].port()) +
         ",127.0.0.1:" + std::to_string(servers_[1].port());
}

std::string redis_cluster::node_id(std::size_t i) const {
  const sync_reply r = servers_[i].command({"CLUSTER", "MYID"});
  if (r.is_error()) throw std::runtime_error("CLUSTER MYID: " + r.text);
  return r.text;
}

std::size_t redis_cluster::owner_of(std::uint16_t slot) const {
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (!servers_[i].running() || servers_[i].frozen()) continue;
    const auto port = slot_owners(servers_[i])[slot];
    for (std::size_t j = 0; j < servers_.size(); ++j)
      if (servers_[j].port() == port) return j;
    break;
  }
  throw std::runtime_error("no server owns slot " + std::to_string(slot));
}

std::vector<std::size_t> redis_cluster::primaries() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (!servers_[i].running() || servers_[i].frozen()) continue;
    const auto owners = slot_owners(servers_[i]);
    for (std::size_t j = 0; j < servers_.size(); ++j)
      for (auto p : owners)
        if (p == servers_[j].port()) {
          out.push_back(j);
          break;
        }
    return out;
  }
  return out;
}

void redis_cluster::move_slot(std::uint16_t slot, std::size_t to,
                              const std::function<void()>& while_migrating) {
  move_slot_key_by_key(slot, to, {}, [&](std::size_t moved) {
    if (moved == 0 && while_migrating) while_migrating();
  });
}

void redis_cluster::move_slot_key_by_key(std::uint16_t slot, std::size_t to,
                                         const std::vector<std::string>& first,
                                         const std::function<void(std::size_t)>& between) {
  const std::size_t from = owner_of(slot);
  if (from == to) return;
  const std::string s = std::to_string(slot);
  auto check = [](const sync_reply& r, const std::string& what) {
    if (r.is_error()) throw std::runtime_error(what + ": " + r.text);
  };
  check(servers_[to].command({"CLUSTER", "SETSLOT", s, "IMPORTING", node_id(from)}), "IMPORTING");
  check(servers_[from].command({"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(to)}), "MIGRATING");
  std::size_t moved = 0;
  between(moved);
  auto migrate = [&](const std::string& key) {
    const sync_reply r = servers_[from].command(
        {"MIGRATE", "127.0.0.1", std::to_string(servers_[to].port()), key, "0", "5000"});
    // NOKEY: it expired or was deleted meanwhile.
    if (r.is_error() || r.text == "NOKEY") {
      if (r.is_error()) check(r, "MIGRATE " + key);
      return;
    }
    between(++moved);
  };
  for (const auto& key : first)
    if (servers_[from].command({"EXISTS", key}).integer == 1) migrate(key);
  for (;;) {
    const sync_reply keys = servers_[from].command({"CLUSTER", "GETKEYSINSLOT", s, "1"});
    check(keys, "GETKEYSINSLOT");
    if (keys.elements.empty()) break;
    migrate(keys.elements.front().text);
  }
  const std::string target = node_id(to);
  for (std::size_t i : primaries())
    check(servers_[i].command({"CLUSTER", "SETSLOT", s, "NODE", target}), "SETSLOT NODE");
  check(servers_[to].command({"CLUSTER", "SETSLOT", s, "NODE", target}), "SETSLOT NODE");
  // The new owner's claim must outrank the old one's for good: with equal config epochs
  // (a slot moved there and back) gossip may hand the slot back to the old owner after
  // the servers first agreed, as an ASan run showed. A unique greatest epoch settles it.
  check(servers_[to].command({"CLUSTER", "BUMPEPOCH"}), "BUMPEPOCH");
  wait_until_agreed();
}

void redis_cluster::wait_until_agreed(int seconds) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
  std::string last;
  for (;;) {
    bool ok = true;
    std::vector<std::uint16_t> first;
    for (std::size_t i = 0; i < servers_.size() && ok; ++i) {
      if (!servers_[i].running() || servers_[i].frozen()) continue;
      const sync_reply info = servers_[i].command({"CLUSTER", "INFO"});
      if (info.text.find("cluster_state:ok") == std::string::npos) {
        ok = false;
        last = "server " + std::to_string(i) + " is not ok";
        break;
      }
      auto owners = slot_owners(servers_[i]);
      if (first.empty()) {
        first = std::move(owners);
      } else if (owners != first) {
        ok = false;
        last = "servers 0 and " + std::to_string(i) + " disagree on the slot map";
      }
    }
    if (ok) return;
    if (std::chrono::steady_clock::now() > until)
      throw std::runtime_error("the cluster did not settle: " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds{20});  // polls the servers' view
  }
}

std::int64_t redis_cluster::total_keys() const {
  std::int64_t total = 0;
  for (std::size_t i : primaries()) total += servers_[i].command({"DBSIZE"}).integer;
  return total;
}

std::string redis_cluster::keys_without_ttl(std::string_view exempt) const {
  return servers_.keys_without_ttl(exempt);
}

}  // namespace redlock::test
