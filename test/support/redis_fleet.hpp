// SPDX-License-Identifier: BSL-1.0
#pragma once
// Real redis-server processes for integration tests. Each server gets a free loopback
// port and a private temp directory, runs without persistence, and is killed by pid when
// its owner goes out of scope, so a failing test cannot leak a server into the next one.
// The blocking command() helper exists for assertions only: the library under test never
// goes through it, so a bug in the library cannot hide a bug in the check.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "resp/resp.hpp"

namespace redlock::test {

/// A reply as a tree, owning its text; what command() returns.
struct sync_reply {
  resp::type kind = resp::type::null;
  std::string text;                  ///< strings, errors, doubles and big numbers
  std::int64_t integer = 0;          ///< integers; 1 or 0 for booleans
  std::vector<sync_reply> elements;  ///< aggregates; a map alternates keys and values

  bool is_nil() const { return kind == resp::type::null; }
  bool is_error() const {
    return kind == resp::type::simple_error || kind == resp::type::bulk_error;
  }
};

namespace detail {

/// A loopback port that is free now (the OS's pick).
std::uint16_t free_port();

/// The path of executable `name` found in PATH. Throws std::runtime_error if there is none.
std::string find_program(const std::string& name);

/// A directory made with mkdtemp under /tmp; removed with its contents on destruction.
class temp_dir {
 public:
  /// Throws std::system_error if the directory cannot be made.
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A child process owned by pid. It is only ever reaped by stop(), so the pid cannot be
/// recycled under us while this object still refers to it.
class child_process {
 public:
  child_process() = default;
  ~child_process() { stop(); }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Runs argv[0] (a path) with stdin from /dev/null and stdout/stderr appended to
  /// `output_path`. The child gets SIGKILL if this process dies. Throws std::system_error.
  void spawn(const std::vector<std::string>& argv, const std::string& output_path,
             const std::vector<std::string>& env = {});
  /// SIGCONT, SIGKILL, then reap. Does nothing if there is no child. Never throws.
  void stop() noexcept;
  /// SIGSTOP, returning once the whole process has stopped (or died). Idempotent.
  void freeze();
  /// SIGCONT. Idempotent.
  void thaw();

  /// The child exists and has not exited (it may be frozen).
  bool running() const;
  bool frozen() const { return frozen_; }
  /// -1 when there is no child.
  pid_t pid() const { return pid_; }
  /// "exited with code N" / "killed by signal N" if the child has exited, without
  /// reaping it; empty while it runs.
  std::string exit_description() const;

 private:
  pid_t pid_ = -1;
  bool frozen_ = false;
};

}  // namespace detail

/// One redis-server on 127.0.0.1, started by the constructor and killed by the destructor.
/// Not thread-safe: drive it from the test's thread (command() alone may run concurrently).
class redis_server {
 public:
  /// Starts redis-server (found in PATH, or at $REDLOCK_TEST_REDIS_SERVER) on a free
  /// port, with no persistence and protected mode off, and waits until it answers PING.
  /// `extra` is appended to the command line, e.g. {"--requirepass", "pw"}.
  /// Throws std::runtime_error, with the server's log tail, if it does not come up in 10 s.
  explicit redis_server(std::vector<std::string> extra = {});
  /// As above, with extra environment variables ("NAME=value") for the server process,
  /// e.g. LD_PRELOAD of libfaketime to run its clock at another rate.
  redis_server(std::vector<std::string> extra, std::vector<std::string> env);
  /// Kills the server (thawing it first) and removes its directory. Never throws.
  ~redis_server() = default;
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  redis_server(redis_server&&) = delete;
  redis_server& operator=(redis_server&&) = delete;

  std::uint16_t port() const { return port_; }
  /// -1 after kill().
  pid_t pid() const { return process_.pid(); }
  /// "redis://127.0.0.1:<port>"
  std::string uri() const;
  /// The server's log file (redis-server's own log plus its stdout and stderr).
  std::string log_path() const;

  /// SIGSTOP: the server keeps its sockets but answers nothing, like a paused VM.
  /// Returns once it has actually stopped. Idempotent; throws std::logic_error if the
  /// server is not running.
  void freeze();
  /// SIGCONT. Idempotent; throws std::logic_error if the server is not running.
  void thaw();
  /// SIGKILL and reap: the data set is lost (there is no persistence). Idempotent.
  void kill();
  /// Kills the server if it runs, starts it again on the same port with the same
  /// arguments, and waits until it answers PING. Throws std::runtime_error if it does not.
  void restart();
  /// Started and not exited (frozen counts as running).
  bool running() const { return process_.running(); }
  bool frozen() const { return process_.frozen(); }

  /// Sends one command on a fresh blocking connection and returns the reply. Server
  /// errors come back as replies; throws std::runtime_error on a connect or I/O failure,
  /// including no reply within 5 s (e.g. the server is frozen).
  sync_reply command(const std::vector<std::string>& args) const;
  /// Several commands on one fresh connection, in order (e.g. READONLY, then a read on a
  /// cluster replica); their replies. Throws as command().
  std::vector<sync_reply> commands(const std::vector<std::vector<std::string>>& batch) const;
  /// The server's incarnation as a client names it in fence markers: "<run_id>:<master_replid>"
  /// (new at every restart and promotion). Throws as command().
  std::string incarnation() const;
  /// Whether the fence marker `key` names this server's incarnation (its counters are
  /// trusted): a marker kept by a restart from disk, or copied to a promoted replica, does
  /// not. Throws as command().
  bool marker_names_me(const std::string& key = "redlock:fence:marker") const;
  /// How many times the server ran `name` (lower case, e.g. "evalsha"), by INFO
  /// commandstats; 0 if never. Throws as command().
  std::int64_t calls(std::string_view name) const;
  /// From now on every command the server runs goes to its slow log, the commands that
  /// scripts call too (up to 100,000 entries): for calls_naming().
  void log_every_command() const;
  /// How many logged runs of `name` (any case, e.g. "evalsha") had `arg` among their
  /// arguments: counts one script's calls, or one key's SETs, where calls() counts all.
  /// Only commands run since log_every_command(). Throws as command().
  std::int64_t calls_naming(std::string_view name, std::string_view arg) const;

 private:
  friend class redis_fleet;
  struct deferred_start {};

  // Spawns the server without waiting, so a fleet can start all its servers at once.
  redis_server(std::vector<std::string> extra, deferred_start, std::vector<std::string> env = {});
  void spawn();
  // Waits for PING; if the server dies first and `may_change_port`, retries on a new port
  // (another process may have taken the one we were given).
  void wait_until_ready(bool may_change_port);
  // Two test processes can be handed the same free port; while our server is still
  // failing to bind, the other one's answers PING. Checks the pid the server reports.
  bool answering_server_is_ours() const;
  // command(), authenticated first when the server was started with --requirepass.
  sync_reply admin_command(const std::vector<std::string>& args) const;

  std::vector<std::string> extra_;
  std::vector<std::string> env_;
  std::string password_;
  std::uint16_t port_ = 0;
  detail::temp_dir dir_;  // declared before process_: the server dies first
  detail::child_process process_;
};

/// N independent servers with the same arguments, started in parallel; the destructor
/// kills them all, also when a test fails. Not thread-safe.
class redis_fleet {
 public:
  /// Throws std::runtime_error if any server fails to start (the others are killed).
  explicit redis_fleet(std::size_t n, std::vector<std::string> extra = {});
  /// One server per element, each with its own extra arguments.
  explicit redis_fleet(std::vector<std::vector<std::string>> extras);

  std::size_t size() const { return servers_.size(); }
  /// Throws std::out_of_range.
  redis_server& operator[](std::size_t i) { return *servers_.at(i); }
  const redis_server& operator[](std::size_t i) const { return *servers_.at(i); }
  /// Every server's uri(), in order.
  std::vector<std::string> uris() const;

  /// Sum of DBSIZE over the servers that run and are not frozen.
  /// Throws std::runtime_error on an I/O failure or an error reply.
  std::int64_t total_keys() const;
  /// Whether `key` exists on server i (which must run and not be frozen).
  bool has_key(std::size_t i, std::string_view key) const;
  /// The keys that would live for ever (PTTL -1) on the servers that run and are not
  /// frozen, as " node i: key" each; empty if none. Keys whose name contains `exempt`
  /// (when not empty) are left out, e.g. "fence" for the fencing counters, which have no
  /// TTL by design. Throws as total_keys().
  std::string keys_without_ttl(std::string_view exempt = {}) const;

 private:
  // unique_ptr because a server is pinned: its pid and port belong to one object.
  std::vector<std::unique_ptr<redis_server>> servers_;
};

}  // namespace redlock::test
