// `redlock status` and `redlock nodes`: read-only views of the fleet, one node at a time,
// through a small blocking client (probe.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <boost/system/system_error.hpp>
#include <map>
#include <memory>

#include "client/client_state.hpp"
#include "commands.hpp"
#include "probe.hpp"
#include "redlock/error.hpp"

namespace redlock::cli {
namespace {

using namespace std::chrono_literals;

// The nodes with their credentials resolved as the lock client resolves them, and the
// TLS settings for rediss:// ones. Throws system_error(invalid_config).
struct resolved_nodes {
  std::vector<node_uri> uris;
  std::shared_ptr<detail::tls_settings> tls;
};

resolved_nodes resolve(const common_options& o) {
  resolved_nodes r{detail::validate(client_config(o)), nullptr};
  if (std::any_of(r.uris.begin(), r.uris.end(), [](const node_uri& u) { return u.tls; })) {
    std::string why;
    r.tls = detail::make_tls_settings(o.tls, why);
    if (!r.tls) throw boost::system::system_error(error::invalid_config, why);
    if (!o.tls.verify)
      fmt::print(stderr,
                 "redlock: warning: --tls-insecure: the servers' certificates are not "
                 "verified\n");
  }
  return r;
}

std::string info_field(const std::string& info, const std::string& name) {
  const std::string key = name + ":";
  auto at = info.find("\n" + key);
  if (at == std::string::npos) {
    if (info.rfind(key, 0) != 0) return {};
    at = 0;
  } else {
    ++at;
  }
  const auto start = at + key.size();
  const auto end = info.find_first_of("\r\n", start);
  return info.substr(start, end - start);
}

std::string text_of(const std::optional<value>& v) {
  if (!v) return "?";
  switch (v->what) {
    case value::kind::nil:
      return "-";
    case value::kind::integer:
      return std::to_string(v->integer);
    default:
      return v->text;
  }
}

}  // namespace

int status_command(const status_options& o) {
  fmt::print("{:<4} {:<24} {:<10} {:<42} {:>10} {:>8}\n", "node", "address", "state",
             "holder token", "ttl_ms", "fence");
  std::size_t reachable = 0, holding = 0;
  std::map<std::string, std::size_t> holders;
  const auto nodes = resolve(o.common);
  for (std::size_t i = 0; i < nodes.uris.size(); ++i) {
    const node_uri& u = nodes.uris[i];
    probe p{1000ms};
    if (!p.connect(u, nodes.tls.get())) {
      fmt::print("{:<4} {:<24} {:<10} {}\n", i, u.display(), "down", p.error());
      continue;
    }
    ++reachable;
    auto holder = p.command({"GET", o.resource});
    auto pttl = p.command({"PTTL", o.resource});
    auto fence =
        p.command({"HGET", "redlock:fence", redlock::fence_field(o.resource, o.fence_stripes)});
    const bool held = holder && holder->what == value::kind::string;
    if (held) {
      ++holding;
      ++holders[holder->text];
    }
    const std::string state = !holder                              ? "error"
                              : holder->what == value::kind::error ? "wrong type"
                              : held                               ? "held"
                                                                   : "free";
    fmt::print("{:<4} {:<24} {:<10} {:<42} {:>10} {:>8}\n", i, u.display(), state,
               held ? holder->text : "-", held ? text_of(pttl) : "-", text_of(fence));
  }
  const std::size_t quorum = o.common.nodes.size() / 2 + 1;
  std::string verdict = "free";
  for (auto& [token, count] : holders)
    if (count >= quorum) verdict = "held (token " + token.substr(0, 12) + "...) on a majority";
  if (verdict == "free" && holding > 0)
    verdict = "partly held (no majority: expiring or being taken)";
  fmt::print("{}: {}; {} of {} nodes reachable\n", o.resource, verdict, reachable,
             o.common.nodes.size());
  return reachable >= quorum ? exit_ok : exit_unavailable;
}

int nodes_command(const common_options& o) {
  std::size_t reachable = 0;
  std::map<std::string, std::size_t> run_ids;
  std::vector<std::string> warnings;
  fmt::print("{:<4} {:<24} {:<6} {:>8} {:<8} {:>10} {:<7} {:<10} {:<10} {}\n", "node", "address",
             "state", "rtt_us", "version", "uptime_s", "role", "appendonly", "appendfsync", "save");
  const auto nodes = resolve(o);
  for (std::size_t i = 0; i < nodes.uris.size(); ++i) {
    const node_uri& u = nodes.uris[i];
    probe p{1000ms};
    if (!p.connect(u, nodes.tls.get())) {
      fmt::print("{:<4} {:<24} {:<6} {}\n", i, u.display(), "down", p.error());
      warnings.push_back(fmt::format("node {} ({}) is unreachable: {}", i, u.display(), p.error()));
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto pong = p.command({"PING"});
    const auto rtt = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - t0);
    auto info = p.command({"INFO", "server"});
    auto role = p.command({"ROLE"});
    auto aof = p.command({"CONFIG", "GET", "appendonly"});
    auto fsync = p.command({"CONFIG", "GET", "appendfsync"});
    auto save = p.command({"CONFIG", "GET", "save"});
    if (!pong) {
      fmt::print("{:<4} {:<24} {:<6} {}\n", i, u.display(), "error", p.error());
      continue;
    }
    ++reachable;
    const std::string info_text = info && info->what == value::kind::string ? info->text : "";
    const std::string version = info_field(info_text, "redis_version");
    const std::string uptime = info_field(info_text, "uptime_in_seconds");
    const std::string run_id = info_field(info_text, "run_id");
    const std::string role_text =
        role && role->what == value::kind::array && !role->elements.empty() ? role->elements[0].text
                                                                            : "?";
    auto config_value = [](const std::optional<value>& v) -> std::string {
      if (!v) return "?";
      if (v->what == value::kind::error) return "denied";
      if (v->what == value::kind::array && v->elements.size() == 2) return v->elements[1].text;
      return "?";
    };
    const std::string aof_text = config_value(aof), fsync_text = config_value(fsync),
                      save_text = config_value(save);
    fmt::print("{:<4} {:<24} {:<6} {:>8} {:<8} {:>10} {:<7} {:<10} {:<10} {}\n", i, u.display(),
               "up", rtt.count(), version, uptime, role_text, aof_text, fsync_text,
               save_text.empty() ? "\"\"" : save_text);
    if (role_text != "master")
      warnings.push_back(
          fmt::format("node {} is a {}: only independent masters may vote; it never "
                      "will",
                      i, role_text));
    if (!run_id.empty() && run_ids.count(run_id))
      warnings.push_back(
          fmt::format("node {} is the same server as node {} (run id {}): it counts once", i,
                      run_ids[run_id], run_id));
    run_ids.emplace(run_id, i);
    if (!(aof_text == "yes" && fsync_text == "always"))
      warnings.push_back(fmt::format(
          "node {} can lose acknowledged writes on restart (appendonly {}, appendfsync {}): keep "
          "the restart guard on and give every client the same max_ttl",
          i, aof_text, fsync_text));
  }
  const std::size_t quorum = o.nodes.size() / 2 + 1;
  if (o.nodes.size() % 2 == 0)
    warnings.push_back("an even number of nodes tolerates no more failures than one node fewer");
  if (o.nodes.size() < 3) warnings.push_back("fewer than 3 nodes: no node may fail");
  for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
  fmt::print("{} of {} nodes reachable; a lock needs {}\n", reachable, o.nodes.size(), quorum);
  return reachable >= quorum ? exit_ok : exit_unavailable;
}

}  // namespace redlock::cli
