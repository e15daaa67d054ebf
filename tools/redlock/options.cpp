// SPDX-License-Identifier: BSL-1.0
#include "options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "redlock/config.hpp"

namespace redlock::cli {

namespace po = boost::program_options;

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
  bool in_cluster = false;  // the last node is a cluster: an address without scheme is its seed
  for (;;) {
    const auto comma = list.find(',', start);
    std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool seed = in_cluster && !item.empty() && item.find("://") == std::string::npos;
    if (!seed) out.emplace_back();
    // Numbered from 0, as every other message of the tool numbers nodes.
    const std::string index = std::to_string(out.size() - 1);
    // A stray comma is a typo for a node that was meant to be there: dropping it would
    // quietly shrink the fleet (and its majority) the user had in mind.
    if (item.empty())
      throw usage_error{source + ": node " + index +
                        " is empty (a leading, trailing or doubled comma)"};
    if (seed) out.back() += ',';
    out.back() += item;
    node_uri u;
    std::string why;
    // The URI itself is not repeated: it may hold a password.
    if (!parse_node_uri(out.back(), u, why))
      throw usage_error{source + ": node " + index + ": " + why};
    in_cluster = u.cluster;
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace {

// ---- the environment -----------------------------------------------------------------

// Every environment variable the tool reads, and the option it stands in for: bound here
// and nowhere else. Parsing reads this table (the command line wins over it), and so does
// --help. REDLOCK_PASSWORD has no command-line form, since argv is visible to every user
// of the host: its option is known to the environment only (see env_only_description).
struct env_binding {
  std::string_view variable;
  std::string_view option;
  std::string_view meaning;
};
constexpr env_binding environment[] = {
    {"REDLOCK_NODES", "nodes", "the nodes, when --nodes is not given"},
    {"REDLOCK_MAX_TTL", "max-ttl", "the restart guard's period, when --max-ttl is not given"},
    {"REDLOCK_PASSWORD", "password", "the password, when --password-file is not given"},
};

std::string variable_for(std::string_view option) {
  for (const auto& b : environment)
    if (b.option == option) return std::string{b.variable};
  return {};
}

// ---- what each command takes -----------------------------------------------------------

po::typed_value<std::string>* text(const char* name) {
  return po::value<std::string>()->value_name(name);
}

// An option's help, naming the variable bound to `option` as its default.
std::string with_env_default(std::string_view help, std::string_view option,
                             std::string_view otherwise = "") {
  return fmt::format("{} (default: ${}{})", help, variable_for(option), otherwise);
}

// Options every command takes: the nodes, credentials and TLS.
po::options_description common_description() {
  po::options_description d{"Nodes, credentials and TLS (every command)"};
  const auto nodes = with_env_default(
      "the Redis masters, comma-separated: redis://[user:password@]host:port[/db], or "
      "rediss://... for TLS; a node that is a Redis Cluster is "
      "redis+cluster://host:port, the addresses after it without a scheme its other seeds",
      "nodes");
  const auto password_file = with_env_default(
      "the password for nodes whose URI names none, from the file's first line", "password");
  d.add_options()                                                                  //
      ("nodes", text("URI,..."), nodes.c_str())                                    //
      ("user", text("NAME"), "the ACL user for nodes whose URI names none")        //
      ("password-file", text("FILE"), password_file.c_str())                       //
      ("tls-ca", text("FILE"), "trusted CA certificates (default: the system's)")  //
      ("tls-ca-dir", text("DIR"),
       "a directory of trusted CA certificates (openssl rehash layout)")               //
      ("tls-cert", text("FILE"), "a client certificate, with --tls-key (mutual TLS)")  //
      ("tls-key", text("FILE"), "the client certificate's private key")                //
      ("tls-server-name", text("NAME"),
       "the name the servers' certificates must carry (default: each URI's host)")  //
      ("tls-insecure", po::bool_switch(),
       "do not verify the servers' certificates (warned on stderr for every connection)")  //
      ("verbose,v", po::bool_switch(),
       "more on stderr (run: who holds the lock, once a second while waiting)")  //
      ("help,h", "print this help and exit");
  return d;
}

// Options that only the environment gives (never accepted on the command line).
po::options_description env_only_description() {
  po::options_description d;
  d.add_options()("password", text("PASSWORD"), "");
  return d;
}

// --max-ttl's help; `otherwise` says what it is when neither it nor its variable is set.
std::string max_ttl_help(std::string_view otherwise) {
  return with_env_default("the longest TTL any client of these nodes uses, for the restart guard",
                          "max-ttl", otherwise);
}

po::options_description run_description() {
  po::options_description d{"Options of run"};
  const auto max_ttl = max_ttl_help(", else --ttl; not below --ttl");
  d.add_options()  //
      ("ttl", text("MS"),
       "the lock's TTL, renewed every third of it (default 10000, at least 10)")          //
      ("wait", text("MS"), "give up after MS milliseconds (default: wait indefinitely)")  //
      ("nonblock,n", po::bool_switch(), "make one attempt only")                          //
      ("fair", po::bool_switch(),
       "wait in a line kept on the nodes: first come, first served (give it to every waiter of "
       "RESOURCE)")  //
      ("shared", po::bool_switch(),
       "take a reader's lease: any number of --shared runs hold RESOURCE at once, a run "
       "without it alone")  //
      ("grace", text("MS"),
       "after the lock is lost, SIGKILL this long after SIGTERM (default 2000)")  //
      ("max-hold", text("MS"),
       "stop renewing once the lock has been held this long: it then runs out and COMMAND is "
       "treated as having lost it (exit 76; default: renew while COMMAND runs)")  //
      ("max-ttl", text("MS"), max_ttl.c_str())                                    //
      ("permits", text("N"),
       "take one of N permits of RESOURCE instead of its lock: at most N holders at once (1 to "
       "64; the nodes record N: a run with another N exits 78; not with --shared or --fair)");
  return d;
}

po::options_description status_description() {
  po::options_description d{"Options of status"};
  const auto max_ttl = max_ttl_help(", else 10000");
  d.add_options()  //
      ("fence-stripes", text("N"),
       "the fleet's fence_stripes setting, to find the right counter (default 0)")  //
      ("permits", text("N"),
       "RESOURCE is a semaphore of N permits: show each permit (default: the count the nodes "
       "record, when a permit is held)")  //
      ("max-ttl", text("MS"), max_ttl.c_str());
  return d;
}

po::options_description nodes_description() {
  po::options_description d{"Options of nodes"};
  const auto max_ttl = max_ttl_help(", else 10000");
  d.add_options()("max-ttl", text("MS"), max_ttl.c_str());
  return d;
}

// What --help says around the options, per command.
struct command_text {
  std::string_view name;
  std::string_view synopsis;  // after "redlock <name> "
  std::string_view operands;  // for `redlock --help`
  std::string_view summary;   // for `redlock --help`
  std::string_view description;
  po::options_description (*options)();  // the command's own options
};

constexpr command_text commands[] = {
    {"run",
     "[--nodes URI,...] [--ttl MS] [--wait MS | --nonblock]\n"
     "                   [--fair | --shared | --permits N] [--grace MS] [--max-hold MS]\n"
     "                   [--max-ttl MS] [--verbose]\n"
     "                   RESOURCE -- COMMAND [ARG...]",
     "RESOURCE -- COMMAND [ARG...]", "run COMMAND while holding a lock on RESOURCE",
     R"(Takes a lock on RESOURCE across the nodes (a majority must agree), runs COMMAND as a
direct child in its own process group while the lock is renewed in the background,
releases the lock, and exits with COMMAND's status. At a terminal, COMMAND's group gets
the terminal while it runs; if redlock itself is killed, COMMAND's group is killed too.

COMMAND's environment gets REDLOCK_RESOURCE, REDLOCK_FENCE (fencing token: strictly
increasing per resource; with --shared at least every earlier writer's and below every
later writer's) and REDLOCK_VALIDITY_MS (validity left when it started). With --shared,
COMMAND runs beside other --shared holders of RESOURCE and never beside a run without it
(a writer), which in turn keeps new readers out while it waits. With --permits N,
COMMAND holds one of N permits of RESOURCE (at most N run at once), REDLOCK_PERMIT is
its index (0 to N-1) and REDLOCK_FENCE that permit's token.
If the lock is lost while COMMAND runs, its process group gets SIGTERM at once and
SIGKILL after --grace; SIGINT and SIGTERM sent to redlock are forwarded to it.

Exit status: COMMAND's status; 75 not acquired in time (others hold it); 69 no majority
of nodes available; 76 lock lost while COMMAND ran; 64 usage error; 126/127 COMMAND
could not be run; 65 a key of another type exists under RESOURCE; 78 --permits N but
the nodes record RESOURCE with another number of permits.
)",
     run_description},
    {"status",
     "[--nodes URI,...] [--fence-stripes N] [--permits N]\n"
     "                      [--max-ttl MS] RESOURCE",
     "RESOURCE", "show who holds RESOURCE on each node",
     R"(For each node: whether RESOURCE is held, by which token, for how many more
milliseconds, and the current fencing counter; then a verdict, which says "free" only
when a majority of the nodes say so. For a semaphore (the nodes record its count, or
--permits N), the same for each permit. Exit 0; 69 when fewer than a majority of nodes
answer; 65 when a key of another type is in the way on a majority.
)",
     status_description},
    {"nodes", "[--nodes URI,...] [--max-ttl MS]", "", "check the nodes and the safety of the setup",
     R"(For each node: reachable or not, round trip, server version, uptime, role and
persistence settings; warnings on stderr when the setup cannot honour the safety model
(replicas, one server listed twice, persistence that can lose writes, nodes the
restart guard holds back for --max-ttl). Exit 0, or 69 when fewer than a majority of
nodes answer.
)",
     nodes_description},
};

const command_text& command_named(std::string_view name) {
  for (const auto& c : commands)
    if (c.name == name) return c;
  throw usage_error{fmt::format("unknown command \"{}\" (try redlock --help)", name)};
}

// The environment section of --help: the variables bound to options in `options`, or all
// of them.
std::string environment_help(const po::options_description* options = nullptr) {
  std::string out = "Environment (an option given on the command line wins):\n";
  for (const auto& b : environment)
    if (!options || options->find_nothrow(std::string{b.option}, false))
      out += fmt::format("  {:<18}{}\n", b.variable, b.meaning);
  return out;
}

// Every option `command` knows: its own, the common ones, and those only the environment
// gives.
po::options_description all_options(const command_text& command) {
  po::options_description all;
  all.add(command.options()).add(common_description()).add(env_only_description());
  return all;
}

// Program_options leaves a blank at the end of each line it wraps.
std::string without_trailing_blanks(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n')
      while (!out.empty() && out.back() == ' ') out.pop_back();
    out += c;
  }
  return out;
}

// ---- parsing ---------------------------------------------------------------------------

// One command's command line and environment, parsed.
struct parsed_args {
  po::variables_map values;
  std::vector<std::string> operands;  // the positional arguments, in order
  std::vector<std::string> command;   // what follows "--"
  std::set<std::string, std::less<>> on_command_line;

  bool has(const char* option) const { return values.count(option) > 0; }
  const std::string& text(const char* option) const { return values[option].as<std::string>(); }
  bool flag(const char* option) const { return values[option].as<bool>(); }
  /// How messages name where `option`'s value came from: the flag, or the variable.
  std::string source(std::string_view option) const {
    if (on_command_line.contains(option)) return fmt::format("--{}", option);
    return variable_for(option);
  }
};

// The arguments of `command` (after its name): Program_options parses the options and the
// environment, and its exceptions become one-line usage errors. Everything after the
// first "--" is COMMAND, taken as it is.
parsed_args parse_args(const command_text& command, std::vector<std::string> args) {
  parsed_args out;
  if (command.name == "run") {
    if (const auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
      out.command.assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }
  po::options_description visible;
  visible.add(command.options()).add(common_description());
  try {
    // Exact names only: a guessed prefix (--non for --nonblock) would turn a typo into a
    // different option, and would change meaning when an option is added.
    const auto parsed =
        po::command_line_parser(args)
            .options(visible)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run();
    // Without a positional description, operands come back unnamed and store() skips them.
    for (const auto& o : parsed.options)
      if (o.string_key.empty())
        out.operands.insert(out.operands.end(), o.value.begin(), o.value.end());
    po::store(parsed, out.values);
    for (const auto& [name, value] : out.values)
      if (!value.defaulted()) out.on_command_line.insert(name);

    // The environment second: store() keeps what the command line set. An empty variable
    // counts as unset, and a variable listed twice counts once, as getenv() reads it.
    const auto all = all_options(command);
    auto from_env = po::parse_environment(all, [&](const std::string& variable) {
      for (const auto& b : environment)
        if (b.variable == variable && all.find_nothrow(std::string{b.option}, false))
          return std::string{b.option};
      return std::string{};
    });
    std::set<std::string, std::less<>> seen;
    std::erase_if(from_env.options, [&](const po::option& o) {
      const bool repeated = !seen.insert(o.string_key).second;
      return repeated || o.value.empty() || o.value.front().empty();
    });
    po::store(from_env, out.values);
    po::notify(out.values);
  } catch (const po::unknown_option& e) {
    throw usage_error{fmt::format("unknown option {} (see redlock {} --help)", e.get_option_name(),
                                  command.name)};
  } catch (const po::invalid_command_line_syntax& e) {
    if (e.kind() == po::invalid_syntax::missing_parameter)
      throw usage_error{e.get_option_name() + " needs a value"};
    throw usage_error{fmt::format("{} (see redlock {} --help)", e.what(), command.name)};
  } catch (const po::error& e) {
    throw usage_error{fmt::format("{} (see redlock {} --help)", e.what(), command.name)};
  }
  return out;
}

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

// The nodes, credentials and TLS settings every command takes.
common_options common_from(const parsed_args& a) {
  common_options o;
  const std::pair<const char*, std::string*> paths[] = {{"tls-ca", &o.tls.ca_file},
                                                        {"tls-ca-dir", &o.tls.ca_dir},
                                                        {"tls-cert", &o.tls.cert_file},
                                                        {"tls-key", &o.tls.key_file},
                                                        {"tls-server-name", &o.tls.server_name},
                                                        {"user", &o.user},
                                                        {"password-file", &o.password_file}};
  for (const auto& [option, field] : paths) {
    if (!a.has(option)) continue;
    *field = a.text(option);
    if (field->empty()) throw usage_error{fmt::format("--{} needs a non-empty value", option)};
  }
  if (a.flag("tls-insecure")) o.tls.verify = false;
  o.verbose = a.flag("verbose");
  if (o.password_file.empty() && a.has("password")) o.password_env = variable_for("password");
  return o;
}

// The node list, from --nodes or the environment; checked last, as the other settings do
// not depend on it.
std::vector<std::string> nodes_from(const parsed_args& a) {
  if (!a.has("nodes"))
    throw usage_error{fmt::format("no nodes: give --nodes or set {}", variable_for("nodes"))};
  return parse_node_list(a.text("nodes"), a.source("nodes"));
}

std::string only_operand(const parsed_args& a, const char* hint) {
  if (a.operands.size() > 1)
    throw usage_error{fmt::format("unexpected argument \"{}\"{}", a.operands[1], hint)};
  return a.operands.empty() ? std::string{} : a.operands.front();
}

}  // namespace

namespace {

// The password for nodes whose URI names none, read here rather than by the client, so
// that what goes wrong is said in the tool's words (--password-file, REDLOCK_PASSWORD),
// not in the library's config fields.
std::string password_of(const common_options& o) {
  if (!o.password_file.empty()) {
    std::ifstream in(o.password_file);
    if (!in)
      throw usage_error{fmt::format("--password-file: cannot read \"{}\": {}", o.password_file,
                                    std::strerror(errno))};
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      throw usage_error{
          fmt::format("--password-file: the first line of \"{}\" is empty", o.password_file)};
    return line;
  }
  if (!o.password_env.empty()) {
    const char* v = std::getenv(o.password_env.c_str());
    if (v == nullptr || *v == '\0') throw usage_error{o.password_env + " is set but empty"};
    return v;
  }
  if (!o.user.empty())
    throw usage_error{"--user needs a password: give --password-file or REDLOCK_PASSWORD"};
  return {};
}

}  // namespace

config client_config(const common_options& o) {
  config cfg{.nodes = o.nodes};
  cfg.tls = o.tls;
  cfg.user = o.user;
  cfg.password = password_of(o);
  cfg.password_help = "--password-file or REDLOCK_PASSWORD";
  if (o.max_ttl) cfg.max_ttl = *o.max_ttl;
  // Every token says which host and process wrote it: `status` and `--verbose` show it.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "host");
  cfg.owner = fmt::format("{}:{}", host, ::getpid());
  if (cfg.owner.size() > 64) cfg.owner = cfg.owner.substr(cfg.owner.size() - 64);
  for (char& ch : cfg.owner)
    if (ch <= ' ' || ch > '~') ch = '_';
  cfg.on_event = [](const node_event& e) {
    if (e.what == node_event::kind::tls_unverified)
      std::fprintf(stderr, "redlock: warning: node %zu (%s): %s\n", e.node, e.address.c_str(),
                   e.message.c_str());
  };
  return cfg;
}

namespace {

// A RESOURCE the client would refuse, said before connecting (a usage error, exit 64):
// too long, or with a control character.
void check_resource(const std::string& resource) {
  if (resource.size() > redlock::max_resource_bytes)
    throw usage_error{"RESOURCE has " + std::to_string(resource.size()) + " bytes; at most " +
                      std::to_string(redlock::max_resource_bytes) + " bytes are allowed"};
  check_printable_resource(resource);
}

// --max-ttl or REDLOCK_MAX_TTL for status and nodes, if either is given.
std::optional<std::chrono::milliseconds> max_ttl_from(const parsed_args& a) {
  if (!a.has("max-ttl")) return std::nullopt;
  const auto ms = parse_ms(a.source("max-ttl"), a.text("max-ttl"));
  if (ms.count() < 10) throw usage_error{a.source("max-ttl") + " must be at least 10 ms"};
  return ms;
}

// --permits: 1 to max_permits, as every holder of the resource must give it.
std::size_t parse_permits(const std::string& text) {
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || p != text.data() + text.size() || n == 0 || n > redlock::max_permits)
    throw usage_error{fmt::format("--permits takes a whole number from 1 to {}, not \"{}\"",
                                  redlock::max_permits, text)};
  return n;
}

}  // namespace

run_options parse_run(const std::vector<std::string>& args) {
  const parsed_args a = parse_args(command_named("run"), args);
  run_options o;
  o.common = common_from(a);
  if (a.has("ttl")) o.ttl = parse_ms("--ttl", a.text("ttl"));
  if (a.has("wait")) o.wait = parse_ms("--wait", a.text("wait"));
  o.nonblock = a.flag("nonblock");
  o.fair = a.flag("fair");
  o.shared = a.flag("shared");
  if (a.has("grace")) o.grace = parse_ms("--grace", a.text("grace"));
  if (a.has("max-hold")) {
    o.max_hold = parse_ms("--max-hold", a.text("max-hold"));
    if (o.max_hold.count() == 0)
      throw usage_error{
          "--max-hold must be at least 1 ms (leave it out to renew for as long as COMMAND runs)"};
  }
  if (a.has("permits")) o.permits = parse_permits(a.text("permits"));
  if (o.permits > 0 && o.fair) throw usage_error{"--permits and --fair exclude each other"};
  if (o.permits > 0 && o.shared) throw usage_error{"--permits and --shared exclude each other"};
  o.resource = only_operand(a, ": the command goes after --");
  if (o.resource.empty())
    throw usage_error{a.operands.empty() ? "no RESOURCE given" : "RESOURCE is empty"};
  check_resource(o.resource);
  o.command = a.command;
  if (o.command.empty()) throw usage_error{"no COMMAND given after --"};
  if (o.wait && o.nonblock) throw usage_error{"--wait and --nonblock exclude each other"};
  if (o.fair && o.shared) throw usage_error{"--fair and --shared exclude each other"};
  if (o.ttl.count() < 10) throw usage_error{"--ttl must be at least 10 ms"};
  if (o.ttl > std::chrono::hours{24}) throw usage_error{"--ttl must be at most 24 h"};
  o.max_ttl = a.has("max-ttl") ? parse_ms(a.source("max-ttl"), a.text("max-ttl")) : o.ttl;
  if (o.max_ttl < o.ttl)
    throw usage_error{fmt::format("{} ({} ms) is below --ttl ({} ms)", a.source("max-ttl"),
                                  o.max_ttl.count(), o.ttl.count())};
  o.common.nodes = nodes_from(a);
  check_lock_nodes(o.common.nodes);
  return o;
}

status_options parse_status(const std::vector<std::string>& args) {
  const parsed_args a = parse_args(command_named("status"), args);
  status_options o;
  o.common = common_from(a);
  if (a.has("fence-stripes")) {
    // A count, with the same limits as a number of milliseconds.
    const std::string& v = a.text("fence-stripes");
    std::size_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc{} || p != v.data() + v.size())
      throw usage_error{"--fence-stripes takes a whole number, not \"" + v + "\""};
    o.fence_stripes = n;
  }
  if (a.has("permits")) o.permits = parse_permits(a.text("permits"));
  o.common.max_ttl = max_ttl_from(a);
  o.resource = only_operand(a, "");
  if (o.resource.empty()) throw usage_error{"no RESOURCE given"};
  check_resource(o.resource);
  o.common.nodes = nodes_from(a);
  return o;
}

common_options parse_nodes(const std::vector<std::string>& args) {
  const parsed_args a = parse_args(command_named("nodes"), args);
  if (!a.operands.empty())
    throw usage_error{
        fmt::format("unexpected argument \"{}\" (see redlock nodes --help)", a.operands.front())};
  common_options o = common_from(a);
  o.max_ttl = max_ttl_from(a);
  o.nodes = nodes_from(a);
  return o;
}

bool is_command(std::string_view name) {
  return std::any_of(std::begin(commands), std::end(commands),
                     [&](const command_text& c) { return c.name == name; });
}

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

std::string help_text(std::string_view command) {
  std::ostringstream out;
  if (command.empty()) {
    out << "usage: redlock <command> [options]\n\nCommands:\n";
    for (const auto& c : commands)
      out << fmt::format("  {:<7} {:<29} {}\n", c.name, c.operands, c.summary);
    out << "\n`redlock <command> --help` describes a command and its options; "
           "`redlock --version` prints the version.\n\n"
        << common_description() << "\n"
        << environment_help() << "\nSee man redlock, docs/cli.md and docs/deployment.md.\n";
    return without_trailing_blanks(out.str());
  }
  const command_text& c = command_named(command);
  out << "usage: redlock " << c.name << " " << c.synopsis << "\n\n" << c.description << "\n";
  // One description for both groups, so that their columns line up.
  po::options_description shown;
  shown.add(c.options()).add(common_description());
  const auto all = all_options(c);
  out << shown << "\n" << environment_help(&all);
  return without_trailing_blanks(out.str());
}

}  // namespace redlock::cli
