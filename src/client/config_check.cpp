// SPDX-License-Identifier: BSL-1.0
// A client's configuration checked before anything connects (the password's one source
// included), and the hint an ACL refusal inside a script gets: see config_check.hpp.

#include "client/config_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/system/system_error.hpp>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "redlock/error.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {

// Redis reports an ACL refusal inside a script by the script's SHA1, not by the command
// ("The user executing the script can't run this command or subcommand script: <sha>"):
// names the commands that script runs, so that the missing permission can be found.
std::string acl_hint(std::string_view server_text) {
  if (server_text.find("can't run this command") == std::string_view::npos) return {};
  for (const script* sc : all_scripts()) {
    if (server_text.find(sc->sha) == std::string_view::npos) continue;
    std::string names = " ";
    for (std::string_view body = sc->body;;) {
      const auto at = body.find("call(\"");
      if (at == std::string_view::npos) break;
      // pcall: a command whose refusal the script tolerates (the release's PUBLISH).
      const bool optional = at > 0 && body[at - 1] == 'p';
      body.remove_prefix(at + 6);
      if (optional) continue;
      std::string name{body.substr(0, body.find('"'))};
      for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (names.find(" " + name + " ") == std::string::npos) names += name + " ";
    }
    names.pop_back();
    return fmt::format(" [the script runs{}; the ACL user needs every one of them]", names);
  }
  return {};
}

void bad_config(const std::string& what) {
  throw boost::system::system_error(error::invalid_config, what);
}

namespace {

// The password for nodes whose URI has none, from the one source the config names.
std::string config_password(const config& c) {
  const int sources =
      int{!c.password.empty()} + int{!c.password_file.empty()} + int{!c.password_env.empty()};
  if (sources > 1)
    bad_config("set at most one of config.password, config.password_file and config.password_env");
  if (!c.password_file.empty()) {
    std::ifstream in(c.password_file);
    if (!in)
      bad_config(fmt::format("config.password_file: cannot read \"{}\": {}", c.password_file,
                             std::strerror(errno)));
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      bad_config(
          fmt::format("config.password_file: the first line of \"{}\" is empty", c.password_file));
    return line;
  }
  if (!c.password_env.empty()) {
    const char* v = std::getenv(c.password_env.c_str());
    if (v == nullptr || *v == '\0')
      bad_config(
          fmt::format("config.password_env: the environment variable {} is not set or is "
                      "empty",
                      c.password_env));
    return v;
  }
  if (!c.user.empty() && c.password.empty())
    bad_config("config.user needs a password (config.password, password_file or password_env)");
  return c.password;
}

}  // namespace

std::vector<node_uri> validate(const config& c) {
  if (c.nodes.empty()) bad_config("config.nodes is empty: give at least one redis:// URI");
  if (c.nodes.size() > max_nodes)
    bad_config(fmt::format("config.nodes has {} entries; at most {} are supported", c.nodes.size(),
                           max_nodes));
  std::vector<node_uri> out;
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    node_uri u;
    std::string why;
    if (!parse_node_uri(c.nodes[i], u, why))
      bad_config(fmt::format("config.nodes[{}]: {}", i, why));
    for (std::size_t j = 0; j < out.size(); ++j)
      if (out[j].host == u.host && out[j].port == u.port)
        bad_config(
            fmt::format("config.nodes[{}] and [{}] are the same node ({}): a server "
                        "must count once",
                        j, i, u.display()));
    out.push_back(std::move(u));
  }
  if (const std::string password = config_password(c); !password.empty()) {
    for (auto& u : out) {
      if (!u.password.empty()) continue;  // the URI's own credentials win
      u.user = c.user;
      u.password = password;
    }
  }
  auto positive = [](std::chrono::milliseconds d, const char* name) {
    if (d <= std::chrono::milliseconds::zero())
      bad_config(fmt::format("config.{} must be positive", name));
  };
  positive(c.connect_timeout, "connect_timeout");
  positive(c.node_timeout, "node_timeout");
  positive(c.reconnect_min, "reconnect_min");
  positive(c.retry_delay, "retry_delay");
  if (c.reconnect_max < c.reconnect_min)
    bad_config("config.reconnect_max must not be below config.reconnect_min");
  if (!(c.drift_factor >= 0.0 && c.drift_factor < 0.5))
    bad_config("config.drift_factor must be in [0, 0.5)");
  if (c.fair_entry_ttl < std::chrono::milliseconds{30} || c.fair_entry_ttl > std::chrono::hours{1})
    bad_config("config.fair_entry_ttl must be from 30 ms to 1 h");
  if (c.max_queued_per_node == 0) bad_config("config.max_queued_per_node must be positive");
  if (c.max_ttl < std::chrono::milliseconds::zero())
    bad_config("config.max_ttl must not be negative (0 means each lock's own TTL)");
  if (c.owner.size() > 64)
    bad_config(fmt::format("config.owner has {} bytes; at most 64 are allowed", c.owner.size()));
  if (std::any_of(c.owner.begin(), c.owner.end(), [](char ch) { return ch <= ' ' || ch > '~'; }))
    bad_config("config.owner must be printable ASCII without spaces");
  return out;
}

}  // namespace redlock::detail
