// SPDX-License-Identifier: BSL-1.0
// `redlock run`: take a fenced lock, run COMMAND as a direct child in its own process
// group while the lock is renewed, terminate it if the lock is lost, release, and exit
// with COMMAND's status.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "redlock/redlock.hpp"
#include "supervise.hpp"

extern char** environ;

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

void say(const std::string& line) {
  fmt::print(stderr, "redlock: {}\n", line);
}

// Beyond the client's own node_timeout, for its shutdown to hand its completion back.
constexpr std::chrono::milliseconds shutdown_slack{50};

// PATH lookup done before fork (the child may only make async-signal-safe calls).
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const auto end = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

int exit_code_for(error_code ec) {
  if (ec == error::wait_timeout || ec == error::contended) return exit_busy;
  if (ec == error::no_quorum || ec == error::validity_exhausted || ec == error::node_held_back)
    return exit_unavailable;
  if (is_argument_error(ec) || ec == error::invalid_config || ec == error::unsupported)
    return exit_usage;
  if (ec == error::wrong_type) return exit_data;
  if (ec == error::permit_count_mismatch) return exit_config;
  return exit_software;
}

config run_config(const run_options& o) {
  config cfg = client_config(o.common);
  cfg.max_ttl = o.max_ttl;
  return cfg;
}

using hold_rule = node_report::hold_back::rule;

// "0.4 s", "12 s", "5 min": a time a person reads at a glance.
std::string approx(std::chrono::milliseconds d) {
  if (d < std::chrono::seconds{10}) return fmt::format("{:.1f} s", d.count() / 1000.0);
  if (d < std::chrono::minutes{2}) return fmt::format("{} s", (d.count() + 500) / 1000);
  return fmt::format("{} min", (d.count() + 30000) / 60000);
}

// The times of several nodes: one when they read the same, else "0.4-1.2 s".
std::string approx_range(std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
  const std::string a = approx(lo), b = approx(hi);
  if (a == b) return a;
  const auto unit = [](const std::string& t) { return t.substr(t.find(' ')); };
  if (unit(a) == unit(b)) return a.substr(0, a.find(' ')) + "-" + b;
  return a + " to " + b;
}

// The one line for every node the restart guard holds back: they restarted (or were
// started) together as a rule, and one sentence says it for all of them.
std::string guard_line(const std::vector<const node_report*>& held, std::size_t nodes) {
  auto since = std::minmax_element(held.begin(), held.end(),
                                   [](auto* a, auto* b) { return a->hold.since < b->hold.since; });
  auto left = std::minmax_element(held.begin(), held.end(),
                                  [](auto* a, auto* b) { return a->hold.left < b->hold.left; });
  return fmt::format(
      "still waiting: {} of {} nodes started {} ago; the restart guard holds {} back {} more",
      held.size(), nodes, approx_range((*since.first)->hold.since, (*since.second)->hold.since),
      held.size() == 1 ? "it" : "them",
      approx_range((*left.first)->hold.left, (*left.second)->hold.left));
}

// Why one node that is not in the guard's line cannot be used, in a short line.
std::string node_line(const node_report& n) {
  std::string why;
  if (!n.problem.empty())
    why = n.problem;
  else if (n.hold.by == hold_rule::failover)
    why = fmt::format("a replica was promoted in it {} ago (a failover); held back {} more",
                      approx(n.hold.since), approx(n.hold.left));
  else if (n.hold.by == hold_rule::clock_jump)
    why = fmt::format("its clock jumped {} ago; held back {} more", approx(n.hold.since),
                      approx(n.hold.left));
  else
    why = n.held_back;
  return fmt::format("node {} ({}): {}", n.node, n.address, why);
}

// A line's gist: its text without digits, so that "held back 0.9 s more" and "held back
// 0.4 s more" are the same news.
std::string gist(std::string text) {
  std::erase_if(text, [](char ch) { return ch >= '0' && ch <= '9'; });
  return text;
}

class runner {
 public:
  runner(asio::io_context& io, const run_options& o)
      : io_(io),
        o_(o),
        signals_(io, SIGINT, SIGTERM, SIGCHLD),
        kill_timer_(io),
        exited_(io, asio::steady_timer::time_point::max()),
        shutdown_limit_(io),
        watch_timer_(io),
        node_timeout_(run_config(o).node_timeout),
        locks_(io.get_executor(), run_config(o)) {}

  /// True once finish() stopped waiting for a shutdown that had not ended: the client's
  /// connections may then still hold io_context::run() going, and must be abandoned.
  bool gave_up_on_shutdown() const { return finishing_ && !shut_down_; }

  asio::awaitable<int> run() {
    watch_signals();
    int code = co_await acquire();
    if (code != exit_ok) {
      co_await finish();
      co_return code;
    }
    code = spawn();
    if (code != exit_ok) {
      // COMMAND could not be run: release the lock and say so as a shell would.
      co_await locks_.async_unlock(std::move(lock_), asio::as_tuple(asio::use_awaitable));
      co_await finish();
      co_return code;
    }
    keeper_.emplace(locks_, std::move(lock_), renew_options{.max_hold = o_.max_hold});
    watch_loss();
    auto [ignored] = co_await exited_.async_wait(asio::as_tuple(asio::use_awaitable));
    (void)ignored;
    kill_timer_.cancel();
    watchdog_.stand_down();
    take_terminal_back(tty_);
    if (lost_) {
      keeper_.reset();
      co_await finish();
      co_return exit_lost;
    }
    auto [stop_ec, held] = co_await keeper_->async_stop(asio::as_tuple(asio::use_awaitable));
    if (stop_ec == error::lock_lost) {
      say(fmt::format("the lock on {} was lost just as COMMAND ended", o_.resource));
      co_await finish();
      co_return exit_lost;
    }
    if (held.owns()) {
      diagnostics diag;
      auto [unlock_ec] =
          co_await locks_.async_unlock(std::move(held), diag, asio::as_tuple(asio::use_awaitable));
      if (unlock_ec && o_.common.verbose) say(diag.message);
    }
    co_await finish();
    co_return child_code_;
  }

 private:
  // Shuts the client down, waiting for it no longer than it promises to take: it reads
  // the replies already due for at most node_timeout. A node that froze with a request
  // of ours in flight can hold its connection (and so the shutdown) open for far longer,
  // about 10 s, and a shell script waiting on us must not pay for it. What that node was
  // sent (the release included) waits in its socket and runs when it thaws; what was
  // never sent to it expires with the TTL.
  asio::awaitable<void> finish() {
    finishing_ = true;  // no more signal waits: they would keep io_context::run() going
    signals_.cancel();
    shutdown_limit_.expires_after(node_timeout_ + shutdown_slack);
    locks_.async_shutdown([this](error_code) {
      shut_down_ = true;
      shutdown_limit_.cancel();
    });
    if (shut_down_) co_return;  // its completion is posted, but be sure the wait can end
    auto [ignored] = co_await shutdown_limit_.async_wait(asio::as_tuple(asio::use_awaitable));
    (void)ignored;
  }

  void watch_signals() {
    signals_.async_wait([this](error_code ec, int sig) {
      if (ec) return;
      if (sig == SIGCHLD) {
        reap();
      } else if (child_ > 0) {
        ::kill(-child_, sig);  // forwarded; the lock is released once COMMAND exits
      } else {
        interrupted_ = sig;
        // Emitted from its own handler: the cancelled wait may resume the main
        // coroutine inline, and it must not run inside this one.
        asio::post(io_, [this] { cancel_wait_.emit(asio::cancellation_type::terminal); });
      }
      if (!done_ && !finishing_) watch_signals();
    });
  }

  void reap() {
    if (child_ <= 0) return;
    int status = 0;
    const pid_t r = ::waitpid(child_, &status, WNOHANG);
    if (r != child_) return;
    child_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : exit_signalled + WTERMSIG(status);
    child_ = -1;
    done_ = true;
    exited_.expires_at(asio::steady_timer::time_point::min());  // wakes the wait, now or later
  }

  asio::awaitable<int> acquire() {
    const lock_options opts{.ttl = o_.ttl,
                            .wait = o_.wait.value_or(wait_forever),
                            .fenced = true,
                            .fair = o_.fair,
                            .shared = o_.shared};
    diagnostics diag;
    if (o_.common.verbose) {
      say(fmt::format("waiting for {} on {} nodes (ttl {} ms, {})", o_.resource,
                      o_.common.nodes.size(), o_.ttl.count(),
                      o_.nonblock ? "one attempt"
                      : o_.wait   ? fmt::format("wait {} ms", o_.wait->count())
                                  : std::string{"wait indefinitely"}));
    }
    error_code ec;
    if (o_.nonblock) {
      ec = co_await take(opts, diag, false);
    } else if (o_.common.verbose) {
      ec = co_await verbose_wait(opts, diag);
    } else {
      waiting_ = true;
      asio::co_spawn(io_, watch_nodes(), asio::detached);
      ec = co_await take(opts, diag, true);
      waiting_ = false;
      watch_timer_.cancel();
    }
    if (interrupted_) co_return exit_signalled + interrupted_;
    if (ec) {
      say(diag.message.empty() ? ec.message() : diag.message);
      co_return exit_code_for(ec);
    }
    locked_at_ = std::chrono::steady_clock::now();
    if (o_.common.verbose)
      say(fmt::format("locked {}{} (fence {}, {} ms of validity)", o_.resource,
                      o_.permits > 0 ? fmt::format(" permit {} of {}", permit_, o_.permits) : "",
                      lock_.fence(), lock_.validity().count()));
    co_return exit_ok;
  }

  // While a wait lasts, says on stderr why it cannot be granted when too few nodes are
  // usable: first after a second, then when something changes. Nodes the restart guard
  // holds back share one line, said once, and again only if a node restarts during the
  // wait (a run id not seen before); every other unusable node (unreachable, refusing our
  // credentials, a replica, failed over) has its own line, said again when its reason
  // changes. Without a guard line, a first line gives the count. Waiting for a holder is
  // silent.
  asio::awaitable<void> watch_nodes() {
    std::set<std::string> guard_said;              // run ids of the nodes in a guard line
    std::map<std::size_t, std::string> node_said;  // node -> gist of its last line
    for (auto pause = std::chrono::milliseconds{1000}; waiting_;
         pause = std::chrono::milliseconds{500}) {
      watch_timer_.expires_after(pause);
      auto [te] = co_await watch_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
      if (te || !waiting_) co_return;
      auto [ie, report] = co_await locks_.async_inspect("", asio::as_tuple(asio::use_awaitable));
      if (ie || !waiting_) co_return;
      std::size_t usable = 0;
      std::vector<const node_report*> guarded;
      std::vector<std::pair<std::size_t, std::string>> lines;  // node, its line if news
      bool news_in_guard = false;
      for (const auto& n : report) {
        if (n.votes && n.problem.empty()) {
          ++usable;
          node_said.erase(n.node);  // should it fail again, that is news
        } else if (n.problem.empty() && n.hold.by == hold_rule::restart) {
          guarded.push_back(&n);
          node_said.erase(n.node);
          news_in_guard = news_in_guard || !guard_said.contains(n.run_id);
        } else if (std::string line = node_line(n);
                   !node_said.contains(n.node) || node_said[n.node] != gist(line)) {
          lines.emplace_back(n.node, std::move(line));
        }
      }
      const std::size_t needed = redlock::majority(report.size());
      if (usable >= needed) continue;  // a majority can vote: waiting on a holder, if any
      if (news_in_guard) {
        say(guard_line(guarded, report.size()));
        for (const auto* n : guarded) guard_said.insert(n->run_id);
      } else if (guarded.empty() && !lines.empty()) {
        say(fmt::format("still waiting: {} of {} nodes usable, {} needed", usable, report.size(),
                        needed));
      }
      for (auto& [node, line] : lines) {
        node_said[node] = gist(line);
        say(line);
      }
    }
  }

  // One acquisition call, cancelled by a signal: a try, or a wait when `wait`. Of
  // RESOURCE's lock, or with --permits of any one of its permits (the permit's index goes
  // to permit_). The lock goes to lock_.
  asio::awaitable<error_code> take(const lock_options& opts, diagnostics& diag, bool wait) {
    auto token =
        asio::bind_cancellation_slot(cancel_wait_.slot(), asio::as_tuple(asio::use_awaitable));
    if (o_.permits > 0) {
      std::tuple<error_code, permit> got;
      if (wait) {
        auto r = co_await async_lock_permit(locks_, o_.resource, o_.permits, opts, diag, token);
        got = std::move(r);
      } else {
        auto r = co_await async_try_lock_permit(locks_, o_.resource, o_.permits, opts, diag, token);
        got = std::move(r);
      }
      auto& [ec, p] = got;
      lock_ = std::move(p.lock);
      permit_ = p.index;
      co_return ec;
    }
    std::tuple<error_code, lock> got;
    if (wait) {
      auto r = co_await locks_.async_lock(o_.resource, opts, diag, token);
      got = std::move(r);
    } else {
      auto r = co_await locks_.async_try_lock(o_.resource, opts, diag, token);
      got = std::move(r);
    }
    auto& [ec, lk] = got;
    lock_ = std::move(lk);
    co_return ec;
  }

  // --verbose: one attempt at a time, saying after each failed one who holds the lock
  // and which nodes answered, at most once a second.
  asio::awaitable<error_code> verbose_wait(const lock_options& opts, diagnostics& diag) {
    const auto end = o_.wait ? std::chrono::steady_clock::now() + *o_.wait
                             : std::chrono::steady_clock::time_point::max();
    auto last_said = std::chrono::steady_clock::time_point{};
    asio::steady_timer pause{io_};
    for (;;) {
      const error_code ec = co_await take(opts, diag, false);
      if (!ec) co_return ec;
      if (interrupted_ ||
          (ec != error::contended && ec != error::no_quorum && ec != error::validity_exhausted))
        co_return ec;
      const auto now = std::chrono::steady_clock::now();
      if (now >= end) co_return ec == error::contended ? error_code{error::wait_timeout} : ec;
      if (now - last_said >= std::chrono::seconds{1}) {
        say("still waiting: " + diag.message);
        last_said = now;
      }
      pause.expires_after(std::chrono::milliseconds{50});
      auto [pe] = co_await pause.async_wait(
          asio::bind_cancellation_slot(cancel_wait_.slot(), asio::as_tuple(asio::use_awaitable)));
      if (pe || interrupted_) co_return error_code{error::cancelled};
    }
  }

  int spawn() {
    const std::string program = find_program(o_.command[0]);
    if (program.empty()) {
      say(o_.command[0] + ": command not found");
      return exit_not_found;
    }
    // Everything the child needs is built before fork.
    std::vector<std::string> env_strings{
        "REDLOCK_RESOURCE=" + o_.resource, "REDLOCK_FENCE=" + std::to_string(lock_.fence()),
        "REDLOCK_VALIDITY_MS=" + std::to_string(lock_.validity().count())};
    if (o_.permits > 0) env_strings.push_back("REDLOCK_PERMIT=" + std::to_string(permit_));
    std::vector<char*> envp;
    // An inherited REDLOCK_PERMIT (a run inside another's COMMAND) must not pass for ours.
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "REDLOCK_RESOURCE=", 17) != 0 &&
          std::strncmp(*e, "REDLOCK_FENCE=", 14) != 0 &&
          std::strncmp(*e, "REDLOCK_VALIDITY_MS=", 20) != 0 &&
          std::strncmp(*e, "REDLOCK_PERMIT=", 15) != 0)
        envp.push_back(*e);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);

    tty_ = foreground_terminal();
    const pid_t parent = ::getpid();
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      say(std::string{"pipe: "} + std::strerror(errno));
      return exit_software;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      say(std::string{"fork: "} + std::strerror(errno));
      return exit_software;
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      // Until the watchdog runs, COMMAND itself dies with redlock.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(exit_cannot_run);
      give_terminal(tty_, ::getpid());
      // Default signal handling and an empty mask, as after a shell's fork.
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP, SIGQUIT})
        ::sigaction(sig, &dfl, nullptr);
      sigset_t none;
      ::sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(program.c_str(), argv.data(), envp.data());
      const int err = errno;
      [[maybe_unused]] auto w = ::write(pipe_fds[1], &err, sizeof err);
      ::_exit(exit_cannot_run);
    }
    ::setpgid(pid, pid);  // also here: no window in which a signal misses the group
    give_terminal(tty_, pid);
    if (!watchdog_.start(pid)) {
      say(std::string{"cannot start the watchdog of COMMAND's process group: "} +
          std::strerror(errno));
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      take_terminal_back(tty_);
      return exit_software;
    }
    ::close(pipe_fds[1]);
    int err = 0;
    const ssize_t n = ::read(pipe_fds[0], &err, sizeof err);
    ::close(pipe_fds[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
      ::waitpid(pid, nullptr, 0);
      watchdog_.stand_down();
      take_terminal_back(tty_);
      say(fmt::format("{}: {}", o_.command[0], std::strerror(err)));
      return err == ENOENT ? exit_not_found : exit_cannot_run;
    }
    child_ = pid;
    reap();  // it may already have exited (SIGCHLD came before child_ was set)
    return exit_ok;
  }

  // Why the keeper lost the lock, in the words an operator acts on.
  static std::string loss_text(error_code why) {
    if (why == error::not_held)
      return " (a majority of nodes no longer hold our token: it expired there, or was deleted "
             "or taken)";
    if (why == error::lock_lost)
      return " (no renewal was confirmed by a majority before the validity ran out: nodes "
             "down, frozen or too slow, or this process was paused)";
    return why ? " (" + why.message() + ")" : std::string{};
  }

  void watch_loss() {
    keeper_->async_wait_lost([this](error_code ec) {
      if (ec != error::lock_lost || child_ <= 0) return;
      lost_ = true;
      // With --max-hold, renewal stops on purpose and the loss that follows is the cap
      // at work, not a fault of the nodes: say which, so nobody hunts for an outage.
      const bool capped =
          o_.max_hold.count() > 0 && std::chrono::steady_clock::now() - locked_at_ >= o_.max_hold;
      say(fmt::format("{} the lock on {}{}: terminating COMMAND (SIGTERM, SIGKILL after {} ms)",
                      capped ? fmt::format("--max-hold ({} ms) has passed, no longer renewing",
                                           o_.max_hold.count())
                             : std::string{"lost"},
                      o_.resource, capped ? std::string{} : loss_text(keeper_->loss_reason()),
                      o_.grace.count()));
      ::kill(-child_, SIGTERM);
      kill_timer_.expires_after(o_.grace);
      kill_timer_.async_wait([this](error_code e) {
        if (!e && child_ > 0) ::kill(-child_, SIGKILL);
      });
    });
  }

  asio::io_context& io_;
  const run_options& o_;
  asio::signal_set signals_;
  asio::steady_timer kill_timer_;
  asio::steady_timer exited_;  // expires (at once) when COMMAND has exited
  asio::steady_timer shutdown_limit_;
  asio::steady_timer watch_timer_;  // the nodes watch while a wait lasts (cancelled after)
  bool waiting_ = false;
  std::chrono::milliseconds node_timeout_;
  asio::cancellation_signal cancel_wait_;
  client locks_;
  lock lock_;
  std::size_t permit_ = 0;  // with --permits: the index of the permit lock_ holds
  std::optional<keeper> keeper_;
  std::chrono::steady_clock::time_point locked_at_;  // for telling a --max-hold loss apart
  pid_t child_ = -1;
  int tty_ = -1;       // the terminal COMMAND's group runs in the foreground of, or -1
  watchdog watchdog_;  // kills COMMAND's group should redlock die first
  int child_code_ = 0;
  int interrupted_ = 0;
  bool lost_ = false;
  bool done_ = false;
  bool finishing_ = false;
  bool shut_down_ = false;
};

}  // namespace

int run_command(const run_options& o) {
  asio::io_context io;
  runner r{io, o};
  int code = exit_software;
  asio::co_spawn(io, r.run(), [&](std::exception_ptr e, int c) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        say(std::string{"internal error: "} + ex.what());
      }
      code = exit_software;
      io.stop();
      return;
    }
    code = c;
    // Left over is only a shutdown that overran its promise (see finish()): stop here.
    // Destroying the io_context then closes the client's sockets; what was written to
    // them is still delivered by the kernel.
    if (r.gave_up_on_shutdown()) io.stop();
  });
  io.run();
  return code;
}

}  // namespace redlock::cli
