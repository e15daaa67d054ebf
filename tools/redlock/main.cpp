// redlock: a distributed flock(1) across Redis masters (docs/cli.md).

#include <fmt/format.h>

#include <boost/system/system_error.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"
#include "redlock/error.hpp"

namespace {

constexpr const char* main_help = R"(usage: redlock <command> [options]

Commands:
  run     RESOURCE -- COMMAND [ARG...]   run COMMAND while holding a lock on RESOURCE
  status  RESOURCE                       show who holds RESOURCE on each node
  nodes                                  check the nodes and the safety of the setup

Every command takes --nodes URI,URI,... (default: $REDLOCK_NODES) with URIs
redis://[user:password@]host:port[/db] or rediss://... (TLS), and --help.
Credentials and TLS, for every command:
  --user NAME             ACL user for nodes whose URI names none
  --password-file FILE    password from the file's first line (else $REDLOCK_PASSWORD)
  --tls-ca FILE           trusted CA certificates (default: the system's)
  --tls-ca-dir DIR        trusted CA directory (openssl rehash layout)
  --tls-cert FILE         client certificate, with --tls-key FILE (mutual TLS)
  --tls-server-name NAME  name the servers' certificates must carry
  --tls-insecure          do not verify the servers' certificates (warned on stderr)
See docs/cli.md and docs/deployment.md.
)";

constexpr const char* run_help =
    R"(usage: redlock run [--nodes URI,...] [--ttl MS] [--wait MS | --nonblock] [--fair]
                   [--grace MS] [--max-hold MS] [--max-ttl MS] [--verbose]
                   RESOURCE -- COMMAND [ARG...]

Takes a lock on RESOURCE across the nodes (a majority must agree), runs COMMAND as a
direct child in its own process group while the lock is renewed in the background,
releases the lock, and exits with COMMAND's status.

  --nodes URI,...  the Redis masters (default: $REDLOCK_NODES)
  --ttl MS         lock TTL, renewed every third of it (default 10000)
  --wait MS        give up after MS milliseconds (default: wait indefinitely)
  --nonblock       one attempt only
  --fair           wait in a line kept on the nodes: first come, first served
                   (every waiter of RESOURCE should use it)
  --grace MS       after a lost lock, SIGKILL this long after SIGTERM (default 2000)
  --max-hold MS    stop renewing once the lock has been held this long: the lock then
                   runs out and COMMAND is treated as having lost it (exit 76)
  --max-ttl MS     the longest TTL any client of these nodes uses, for the restart
                   guard (default: $REDLOCK_MAX_TTL, else --ttl)
  --verbose        say what happens while waiting

COMMAND's environment gets REDLOCK_RESOURCE, REDLOCK_FENCE (fencing token: strictly
increasing per resource) and REDLOCK_VALIDITY_MS (validity left when it started).
If the lock is lost while COMMAND runs, its process group gets SIGTERM at once and
SIGKILL after --grace; SIGINT and SIGTERM sent to redlock are forwarded to it.

Exit status: COMMAND's status; 75 not acquired in time (others hold it); 69 no majority
of nodes available; 76 lock lost while COMMAND ran; 64 usage error; 126/127 COMMAND
could not be run; 65 a key of another type exists under RESOURCE.
)";

constexpr const char* status_help =
    R"(usage: redlock status [--nodes URI,...] [--fence-stripes N] RESOURCE

For each node: whether RESOURCE is held, by which token, for how many more
milliseconds, and the current fencing counter. Exit 0, or 69 when fewer than a
majority of nodes answer.
)";

constexpr const char* nodes_help = R"(usage: redlock nodes [--nodes URI,...]

For each node: reachable or not, round trip, server version, uptime, role and
persistence settings; warnings on stderr when the setup cannot honour the safety model
(replicas, one server listed twice, persistence that can lose writes). Exit 0, or 69
when fewer than a majority of nodes answer.
)";

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace redlock::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    fmt::print(args.empty() ? stderr : stdout, "{}", main_help);
    return args.empty() ? exit_usage : exit_ok;
  }
  const std::string sub = args[0];
  args.erase(args.begin());
  try {
    if (sub == "run") {
      if (wants_help(args)) return fmt::print("{}", run_help), exit_ok;
      return run_command(parse_run(args));
    }
    if (sub == "status") {
      if (wants_help(args)) return fmt::print("{}", status_help), exit_ok;
      return status_command(parse_status(args));
    }
    if (sub == "nodes") {
      if (wants_help(args)) return fmt::print("{}", nodes_help), exit_ok;
      return nodes_command(parse_nodes(args));
    }
    fmt::print(stderr, "redlock: unknown command \"{}\" (try redlock --help)\n", sub);
    return exit_usage;
  } catch (const usage_error& e) {
    fmt::print(stderr, "redlock: {}\n", e.what);
    return exit_usage;
  } catch (const boost::system::system_error& e) {
    // The client refused its configuration: the command line asked for it.
    const bool usage =
        e.code() == redlock::error::invalid_config || e.code() == redlock::error::invalid_argument;
    fmt::print(stderr, "redlock: {}\n", e.what());
    return usage ? exit_usage : exit_software;
  } catch (const std::exception& e) {
    fmt::print(stderr, "redlock: {}\n", e.what());
    return exit_software;
  }
}
