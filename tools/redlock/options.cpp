#include "options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "redlock/config.hpp"

namespace redlock::cli {

std::chrono::milliseconds parse_ms(const std::string& flag, const std::string& text) {
  long long v = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || v < 0 ||
      v > 365LL * 24 * 3600 * 1000)
    throw usage_error{flag + " takes a whole number of milliseconds, not \"" + text + "\""};
  return std::chrono::milliseconds{v};
}

std::vector<std::string> parse_node_list(const std::string& list, const std::string& source) {
  if (list.empty()) throw usage_error{source + " names no node"};
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t index = 1;; ++index) {
    const auto comma = list.find(',', start);
    std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // A stray comma is a typo for a node that was meant to be there: dropping it would
    // quietly shrink the fleet (and its majority) the user had in mind.
    if (item.empty())
      throw usage_error{source + ": node " + std::to_string(index) +
                        " is empty (a leading, trailing or doubled comma)"};
    node_uri u;
    std::string why;
    // The URI itself is not repeated: it may hold a password.
    if (!parse_node_uri(item, u, why))
      throw usage_error{source + ": node " + std::to_string(index) + ": " + why};
    out.push_back(std::move(item));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace {

// What the lock client would refuse (after parsing each URI): too many nodes, or one
// server named twice. Caught here, so that it is a usage error like any bad URI. `status`
// and `nodes` take any list: they inspect setups, including wrong ones.
void check_lock_nodes(const std::vector<std::string>& nodes) {
  if (nodes.size() > redlock::max_nodes)
    throw usage_error{"--nodes names " + std::to_string(nodes.size()) + " nodes; at most " +
                      std::to_string(redlock::max_nodes) + " are supported"};
  std::vector<node_uri> seen;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_uri u;
    std::string why;
    parse_node_uri(nodes[i], u, why);  // already validated
    for (std::size_t j = 0; j < seen.size(); ++j)
      if (seen[j].host == u.host && seen[j].port == u.port)
        throw usage_error{"--nodes: nodes " + std::to_string(j + 1) + " and " +
                          std::to_string(i + 1) + " are the same node (" + u.display() +
                          "): a server must count once"};
    seen.push_back(std::move(u));
  }
}

// A control character in RESOURCE is nearly always a quoting slip in a script (a stray
// newline from $(...), a tab from a pasted field). The library would take such a key, but
// scripts that later compare names or `redlock status` them would not find it again.
void check_printable_resource(const std::string& resource) {
  for (std::size_t i = 0; i < resource.size(); ++i) {
    const auto byte = static_cast<unsigned char>(resource[i]);
    if (byte < 0x20 || byte == 0x7f)
      throw usage_error{
          fmt::format("RESOURCE holds a control character (0x{:02x} at byte {}): "
                      "give a name without newlines, tabs or other control characters",
                      byte, i + 1)};
  }
}

// Walks the arguments, handing out flag values with a clear error when one is missing.
class cursor {
 public:
  explicit cursor(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& peek() const { return args_[i_]; }
  std::string next() { return args_[i_++]; }
  std::string value_of(const std::string& flag) {
    if (done()) throw usage_error{flag + " needs a value"};
    return next();
  }
  std::vector<std::string> rest() {
    std::vector<std::string> r(args_.begin() + static_cast<std::ptrdiff_t>(i_), args_.end());
    i_ = args_.size();
    return r;
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

bool flag_value(cursor& c, const std::string& a, const std::string& flag, std::string& out);

// --nodes, --verbose, TLS and credentials, shared by every subcommand. Returns true if
// it consumed `a`.
bool common_flag(cursor& c, const std::string& a, common_options& o, bool& nodes_given) {
  const std::pair<const char*, std::string*> paths[] = {{"--tls-ca", &o.tls.ca_file},
                                                        {"--tls-ca-dir", &o.tls.ca_dir},
                                                        {"--tls-cert", &o.tls.cert_file},
                                                        {"--tls-key", &o.tls.key_file},
                                                        {"--tls-server-name", &o.tls.server_name},
                                                        {"--user", &o.user},
                                                        {"--password-file", &o.password_file}};
  for (const auto& [flag, field] : paths) {
    if (flag_value(c, a, flag, *field)) {
      if (field->empty()) throw usage_error{std::string{flag} + " needs a non-empty value"};
      return true;
    }
  }
  if (a == "--tls-insecure") {
    o.tls.verify = false;
    return true;
  }
  if (a == "--nodes") {
    o.nodes = parse_node_list(c.value_of("--nodes"), "--nodes");
    nodes_given = true;
    return true;
  }
  if (a.rfind("--nodes=", 0) == 0) {
    o.nodes = parse_node_list(a.substr(8), "--nodes");
    nodes_given = true;
    return true;
  }
  if (a == "--verbose" || a == "-v") {
    o.verbose = true;
    return true;
  }
  return false;
}

void default_nodes(common_options& o, bool given) {
  if (given) return;
  const char* env = std::getenv("REDLOCK_NODES");
  if (!env || !*env) throw usage_error{"no nodes: give --nodes or set REDLOCK_NODES"};
  o.nodes = parse_node_list(env, "REDLOCK_NODES");
}

// "--flag=value" or "--flag value".
bool flag_value(cursor& c, const std::string& a, const std::string& flag, std::string& out) {
  if (a == flag) {
    out = c.value_of(flag);
    return true;
  }
  if (a.rfind(flag + "=", 0) == 0) {
    out = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

}  // namespace

config client_config(const common_options& o) {
  config cfg{.nodes = o.nodes};
  cfg.tls = o.tls;
  cfg.user = o.user;
  cfg.password_file = o.password_file;
  if (o.password_file.empty())
    if (const char* env = std::getenv("REDLOCK_PASSWORD"); env && *env)
      cfg.password_env = "REDLOCK_PASSWORD";
  cfg.on_event = [](const node_event& e) {
    if (e.what == node_event::kind::tls_unverified)
      std::fprintf(stderr, "redlock: warning: node %zu (%s): %s\n", e.node, e.address.c_str(),
                   e.message.c_str());
  };
  return cfg;
}

run_options parse_run(const std::vector<std::string>& args) {
  run_options o;
  cursor c{args};
  bool nodes_given = false;
  bool resource_given = false;
  std::optional<std::chrono::milliseconds> max_ttl;
  std::string v;
  while (!c.done()) {
    std::string a = c.next();
    if (a == "--") {
      o.command = c.rest();
      break;
    }
    if (common_flag(c, a, o.common, nodes_given)) continue;
    if (flag_value(c, a, "--ttl", v)) {
      o.ttl = parse_ms("--ttl", v);
    } else if (flag_value(c, a, "--wait", v)) {
      o.wait = parse_ms("--wait", v);
    } else if (a == "--nonblock" || a == "-n") {
      o.nonblock = true;
    } else if (a == "--fair") {
      o.fair = true;
    } else if (flag_value(c, a, "--grace", v)) {
      o.grace = parse_ms("--grace", v);
    } else if (flag_value(c, a, "--max-hold", v)) {
      o.max_hold = parse_ms("--max-hold", v);
      if (o.max_hold.count() == 0)
        throw usage_error{
            "--max-hold must be at least 1 ms (leave it out to renew for as long as COMMAND runs)"};
    } else if (flag_value(c, a, "--max-ttl", v)) {
      max_ttl = parse_ms("--max-ttl", v);
    } else if (!a.empty() && a[0] == '-') {
      throw usage_error{"unknown option " + a + " (see redlock run --help)"};
    } else if (!resource_given) {
      o.resource = a;
      resource_given = true;
    } else {
      throw usage_error{"unexpected argument \"" + a + "\": the command goes after --"};
    }
  }
  if (o.resource.empty())
    throw usage_error{resource_given ? "RESOURCE is empty" : "no RESOURCE given"};
  // The client would refuse it too, but only once running: say so before connecting.
  if (o.resource.size() > redlock::max_resource_bytes)
    throw usage_error{"RESOURCE has " + std::to_string(o.resource.size()) + " bytes; at most " +
                      std::to_string(redlock::max_resource_bytes) + " bytes are allowed"};
  check_printable_resource(o.resource);
  if (o.command.empty()) throw usage_error{"no COMMAND given after --"};
  if (o.wait && o.nonblock) throw usage_error{"--wait and --nonblock exclude each other"};
  if (o.ttl.count() < 10) throw usage_error{"--ttl must be at least 10 ms"};
  if (o.ttl > std::chrono::hours{24}) throw usage_error{"--ttl must be at most 24 h"};
  if (!max_ttl) {
    if (const char* env = std::getenv("REDLOCK_MAX_TTL"); env && *env)
      max_ttl = parse_ms("REDLOCK_MAX_TTL", env);
  }
  o.max_ttl = max_ttl.value_or(o.ttl);
  if (o.max_ttl < o.ttl)
    throw usage_error{"--max-ttl (" + std::to_string(o.max_ttl.count()) + " ms) is below --ttl (" +
                      std::to_string(o.ttl.count()) + " ms)"};
  default_nodes(o.common, nodes_given);
  check_lock_nodes(o.common.nodes);
  return o;
}

status_options parse_status(const std::vector<std::string>& args) {
  status_options o;
  cursor c{args};
  bool nodes_given = false;
  std::string v;
  while (!c.done()) {
    std::string a = c.next();
    if (common_flag(c, a, o.common, nodes_given)) continue;
    if (flag_value(c, a, "--fence-stripes", v)) {
      o.fence_stripes = static_cast<std::size_t>(parse_ms("--fence-stripes", v).count());
    } else if (!a.empty() && a[0] == '-') {
      throw usage_error{"unknown option " + a + " (see redlock status --help)"};
    } else if (o.resource.empty()) {
      o.resource = a;
    } else {
      throw usage_error{"unexpected argument \"" + a + "\""};
    }
  }
  if (o.resource.empty()) throw usage_error{"no RESOURCE given"};
  check_printable_resource(o.resource);
  default_nodes(o.common, nodes_given);
  return o;
}

common_options parse_nodes(const std::vector<std::string>& args) {
  common_options o;
  cursor c{args};
  bool nodes_given = false;
  while (!c.done()) {
    std::string a = c.next();
    if (common_flag(c, a, o, nodes_given)) continue;
    throw usage_error{"unexpected argument \"" + a + "\" (see redlock nodes --help)"};
  }
  default_nodes(o, nodes_given);
  return o;
}

}  // namespace redlock::cli
