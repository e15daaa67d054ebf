// SPDX-License-Identifier: BSL-1.0
#pragma once
// Command-line parsing for the `redlock` tool (Boost.Program_options): strict, with one
// clear line per mistake, and the environment variables bound in one table.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/config.hpp"

namespace redlock::cli {

/// Exit codes (sysexits.h where one fits); see docs/cli.md.
enum exit_code : int {
  exit_ok = 0,
  exit_data = 65,         // a key of another type is in the way
  exit_unavailable = 69,  // no majority of nodes available when the wait ended
  exit_software = 70,     // an internal error (a bug)
  exit_busy = 75,         // not acquired in time: others hold it
  exit_lost = 76,         // the lock was lost while COMMAND ran
  exit_config = 78,       // --permits N, but the nodes hold RESOURCE with another count
  exit_usage = 64,
  exit_cannot_run = 126,
  exit_not_found = 127,
  exit_signalled = 128,  // + N: a wait stopped by signal N, or COMMAND killed by it
};

/// Thrown for usage errors; main prints "redlock: <what>" and exits 64.
struct usage_error {
  std::string what;
};

struct common_options {
  std::vector<std::string> nodes;  // URIs, validated
  bool verbose = false;
  tls_options tls;            // --tls-*
  std::string user;           // --user
  std::string password_file;  // --password-file
  std::string password_env;   // else the variable holding the password, when it is set
  // status and nodes: --max-ttl or REDLOCK_MAX_TTL, the fleet's longest TTL, by which they
  // judge the restart guard as `run` does (run resolves its own, in run_options).
  std::optional<std::chrono::milliseconds> max_ttl;
};

/// A client configuration with the nodes, TLS settings and credentials of `o`.
config client_config(const common_options& o);

struct run_options {
  common_options common;
  std::chrono::milliseconds ttl{10000};
  std::optional<std::chrono::milliseconds> wait;  // nullopt: indefinitely
  bool nonblock = false;
  bool fair = false;        // lock_options::fair
  bool shared = false;      // lock_options::shared: a reader's lease
  std::size_t permits = 0;  // --permits: take one of this many permits; 0: the lock itself
  std::chrono::milliseconds grace{2000};
  std::chrono::milliseconds max_hold{0};  // --max-hold: stop renewing after this; 0: never
  std::chrono::milliseconds max_ttl{0};   // resolved: --max-ttl, REDLOCK_MAX_TTL, or ttl
  std::string resource;
  std::vector<std::string> command;
};

struct status_options {
  common_options common;
  std::string resource;
  std::size_t fence_stripes = 0;
  std::size_t permits = 0;  // --permits: RESOURCE is a semaphore of N; 0: as the nodes record
};

/// Each parses the arguments after the command's name, and the environment; throws
/// usage_error.
run_options parse_run(const std::vector<std::string>& args);
status_options parse_status(const std::vector<std::string>& args);
common_options parse_nodes(const std::vector<std::string>& args);

/// True if `name` is one of the tool's commands.
bool is_command(std::string_view name);
/// True if `args` ask for help (-h or --help before any "--").
bool wants_help(const std::vector<std::string>& args);
/// What --help prints: for the tool (`command` empty) or for one command. The options and
/// environment variables in it are those the parser knows.
std::string help_text(std::string_view command);

/// Parses a non-negative decimal number of milliseconds; throws usage_error naming `flag`.
std::chrono::milliseconds parse_ms(const std::string& flag, const std::string& text);
/// Splits and validates a comma-separated node list; throws usage_error.
std::vector<std::string> parse_node_list(const std::string& list, const std::string& source);

}  // namespace redlock::cli
