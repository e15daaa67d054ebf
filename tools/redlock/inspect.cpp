// SPDX-License-Identifier: BSL-1.0
// `redlock status` and `redlock nodes`: read-only views of the fleet, through the
// library's own client::async_inspect (every node read at once, TLS and credentials as
// for a lock).

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "redlock/redlock.hpp"

namespace redlock::cli {
namespace {

namespace asio = boost::asio;

// Every node's report of each of `resources`, in order, read at once by one client
// (the client's own errors: a bad config throws system_error(invalid_config), which
// main() reports as a usage error).
std::vector<std::vector<node_report>> inspect(const config& cfg,
                                              const std::vector<std::string>& resources) {
  asio::io_context io;
  client c{io.get_executor(), cfg};
  std::vector<std::vector<node_report>> out(resources.size());
  std::size_t left = resources.size();
  for (std::size_t k = 0; k < resources.size(); ++k)
    c.async_inspect(resources[k], [&, k](boost::system::error_code, std::vector<node_report> r) {
      out[k] = std::move(r);
      if (--left == 0) c.async_shutdown([](boost::system::error_code) {});
    });
  io.run();
  return out;
}

// A node that gave no answer: "down" when it could not be reached in time, "error" when
// it answered with one.
const char* failure(const node_report& r) {
  const bool answered = r.error == error::server_error || r.error == error::unexpected_reply ||
                        r.error == error::protocol_error || r.error == error::wrong_type;
  return answered ? "error" : "down";
}

// A cluster node's primaries, one line each ("0.1" is node 0's second shard).
void print_shards(const node_report& r, std::vector<std::string>* warnings) {
  for (std::size_t k = 0; k < r.shards.size(); ++k) {
    const auto& sh = r.shards[k];
    fmt::print("{:<4} {:<24} {:<6} {} slots{}\n", fmt::format("{}.{}", r.node, k), sh.address,
               sh.up ? "up" : "down", sh.slots, sh.up ? "" : ": " + sh.problem);
    if (!sh.up && warnings)
      warnings->push_back(
          fmt::format("node {}: shard {} is down: {}", r.node, sh.address, sh.problem));
  }
}

std::string fence_text(const node_report& r) {
  return r.fence ? std::to_string(*r.fence) : "-";
}

// A readers' record (lock_options::shared), where a writer's lock holds its token, is shown
// as the readers it lists (node_report::held_as and what the library read of it).
std::string readers_text(const node_report& r) {
  return fmt::format("{} reader{}{}", r.readers, r.readers == 1 ? "" : "s",
                     r.writer_mark ? ", a writer waits" : "");
}

// What a majority of the nodes say of one key, and the line that says it. "free" only
// when a majority says so: nodes that did not answer, or hold a key of another type,
// cannot vouch for it.
struct verdict {
  enum class of : std::uint8_t { held, shared, offered, free, partly, wrong_type, unknown };
  of what;
  std::string text;
};

// "held by host:42 (token 3fa2c1d09b1e...) on a majority" for a token with an owner label
// after its digits (redlock run writes one).
std::string held_text(const std::string& token) {
  const auto slash = token.find('/');
  return "held" + (slash == std::string::npos ? "" : " by " + token.substr(slash + 1)) +
         " (token " + token.substr(0, std::min<std::size_t>(slash, 12)) + "...) on a majority";
}

verdict judge(const std::vector<node_report>& reports) {
  const std::size_t n = reports.size(), quorum = redlock::majority(n);
  std::size_t free = 0, wrong = 0, shared = 0, offered = 0, holding = 0;
  std::map<std::string, std::size_t> holders;
  for (const node_report& r : reports) {
    if (r.error) continue;
    if (r.key == node_report::key_state::free) ++free;
    if (r.key == node_report::key_state::wrong_type) ++wrong;
    if (r.key != node_report::key_state::held) continue;
    ++holding;
    if (r.held_as == node_report::holding::readers)
      ++shared;
    else if (r.held_as == node_report::holding::offer)
      ++offered;
    else
      ++holders[r.holder];
  }
  for (const auto& [token, count] : holders)
    if (count >= quorum) return {verdict::of::held, held_text(token)};
  if (shared >= quorum) return {verdict::of::shared, "held shared by readers on a majority"};
  if (offered >= quorum)
    return {verdict::of::offered,
            "offered to the call first in line on a majority (being handed over)"};
  if (free >= quorum) return {verdict::of::free, "free"};
  if (wrong >= quorum)
    return {verdict::of::wrong_type,
            fmt::format("a key of another type is in the way on {} of {} nodes", wrong, n)};
  if (holding > 0)
    return {verdict::of::partly, "partly held (no majority: expiring or being taken)"};
  return {verdict::of::unknown,
          fmt::format("unknown: {} of {} nodes say it is free, {} needed", free, n, quorum)};
}

// The per-node table of one key (status).
void print_key_table(const std::vector<node_report>& reports) {
  fmt::print("{:<4} {:<24} {:<10} {:<42} {:>10} {:>8}\n", "node", "address", "state",
             "holder token", "ttl_ms", "fence");
  for (const node_report& r : reports) {
    if (r.error) {
      fmt::print("{:<4} {:<24} {:<10} {}\n", r.node, r.address, failure(r), r.problem);
      continue;
    }
    const bool held = r.key == node_report::key_state::held;
    const bool readers = held && r.held_as == node_report::holding::readers;
    const bool offered = held && r.held_as == node_report::holding::offer;
    const char* state = readers                                       ? "shared"
                        : offered                                     ? "offered"
                        : held                                        ? "held"
                        : r.key == node_report::key_state::free       ? "free"
                        : r.key == node_report::key_state::wrong_type ? "wrong type"
                                                                      : "error";
    fmt::print("{:<4} {:<24} {:<10} {:<42} {:>10} {:>8}\n", r.node, r.address, state,
               readers ? readers_text(r)
               : held  ? r.holder
                       : "-",
               held ? std::to_string(r.ttl.count()) : "-", fence_text(r));
    print_shards(r, nullptr);
  }
}

// The permit count the nodes record for a semaphore (the largest any node holds), or 0
// when none records one: no permit of it is held.
std::size_t recorded_permits(const std::vector<node_report>& record) {
  std::size_t most = 0;
  for (const node_report& r : record) {
    if (r.error || r.key != node_report::key_state::held) continue;
    std::size_t n = 0;
    const auto [p, ec] = std::from_chars(r.holder.data(), r.holder.data() + r.holder.size(), n);
    if (ec == std::errc{} && p == r.holder.data() + r.holder.size() && n <= max_permits)
      most = std::max(most, n);
  }
  return most;
}

}  // namespace

int status_command(const status_options& o) {
  config cfg = client_config(o.common);
  cfg.fence_stripes = o.fence_stripes;
  const auto first = inspect(cfg, {o.resource, permit_count_resource(o.resource)});
  const auto& reports = first[0];
  std::size_t reachable = 0;
  for (const node_report& r : reports) reachable += r.error ? 0 : 1;
  const std::size_t quorum = redlock::majority(reports.size());
  const auto footer = fmt::format("{} of {} nodes reachable", reachable, reports.size());
  const int code = reachable < quorum ? exit_unavailable : exit_ok;
  const std::size_t permits = o.permits ? o.permits : recorded_permits(first[1]);
  const verdict own = judge(reports);
  // A semaphore's permits are other keys: its name's own key, free, is not the news.
  if (permits == 0 || own.what != verdict::of::free) {
    print_key_table(reports);
    fmt::print("{}: {}; {}\n", o.resource, own.text, footer);
    if (permits == 0)
      return code == exit_ok && own.what == verdict::of::wrong_type ? exit_data : code;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < permits; ++i) names.push_back(permit_resource(o.resource, i));
  const auto each = inspect(cfg, names);
  std::size_t held = 0, free = 0;
  for (std::size_t i = 0; i < permits; ++i) {
    fmt::print("permit {} ({}):\n", i, names[i]);
    print_key_table(each[i]);
    const verdict v = judge(each[i]);
    fmt::print("permit {}: {}\n", i, v.text);
    held += v.what == verdict::of::held || v.what == verdict::of::shared ||
                    v.what == verdict::of::offered
                ? 1
                : 0;
    free += v.what == verdict::of::free ? 1 : 0;
  }
  const std::size_t unknown = permits - held - free;
  fmt::print("{}: a semaphore of {} permits: {} held on a majority, {} free{}; {}\n", o.resource,
             permits, held, free,
             unknown ? fmt::format(", {} neither (partly held or unknown)", unknown) : "", footer);
  return code;
}

int nodes_command(const common_options& o) {
  const auto reports = inspect(client_config(o), {""})[0];
  std::size_t reachable = 0;
  std::map<std::string, std::size_t> run_ids;
  std::vector<std::string> warnings;
  fmt::print("{:<4} {:<24} {:<6} {:>8} {:<8} {:>10} {:<7} {:<10} {:<10} {}\n", "node", "address",
             "state", "rtt_us", "version", "uptime_s", "role", "appendonly", "appendfsync", "save");
  for (const node_report& r : reports) {
    if (r.error) {
      fmt::print("{:<4} {:<24} {:<6} {}\n", r.node, r.address, failure(r), r.problem);
      warnings.push_back(
          fmt::format("node {} ({}) is unreachable: {}", r.node, r.address, r.problem));
      continue;
    }
    ++reachable;
    auto shown = [](const std::string& v) { return v.empty() ? std::string{"?"} : v; };
    fmt::print("{:<4} {:<24} {:<6} {:>8} {:<8} {:>10} {:<7} {:<10} {:<10} {}\n", r.node, r.address,
               "up", r.round_trip.count(), shown(r.version), r.uptime_s, shown(r.role),
               shown(r.appendonly), shown(r.appendfsync), r.save.empty() ? "\"\"" : r.save);
    print_shards(r, &warnings);
    if (r.role != "master")
      warnings.push_back(
          fmt::format("node {} is a {}: only independent masters may vote; it never will", r.node,
                      shown(r.role)));
    if (!r.run_id.empty() && run_ids.count(r.run_id))
      warnings.push_back(
          fmt::format("node {} is the same server as node {} (run id {}): it counts once", r.node,
                      run_ids[r.run_id], r.run_id));
    else if (!r.votes && r.role == "master")
      warnings.push_back(fmt::format("node {} may not vote now: {}", r.node, r.held_back));
    run_ids.emplace(r.run_id, r.node);
    if (!(r.appendonly == "yes" && r.appendfsync == "always"))
      warnings.push_back(fmt::format(
          "node {} can lose acknowledged writes on restart (appendonly {}, appendfsync {}): keep "
          "the restart guard on and give every client the same max_ttl",
          r.node, shown(r.appendonly), shown(r.appendfsync)));
  }
  const std::size_t quorum = redlock::majority(o.nodes.size());
  if (o.nodes.size() % 2 == 0)
    warnings.push_back("an even number of nodes tolerates no more failures than one node fewer");
  if (o.nodes.size() < 3) warnings.push_back("fewer than 3 nodes: no node may fail");
  for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
  fmt::print("{} of {} nodes reachable; a lock needs {}\n", reachable, o.nodes.size(), quorum);
  return reachable >= quorum ? exit_ok : exit_unavailable;
}

}  // namespace redlock::cli
