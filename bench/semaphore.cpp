// SPDX-License-Identifier: BSL-1.0
// sem4x16: a semaphore of 4 permits (async_lock_permit) and 16 contenders, each its own
// client with its own connections, as separate processes would be: each takes a permit
// (waiting, woken by releases), holds it --hold-ms, releases it, and again, for
// --contention-duration. One line: permit acquisitions per second, acquire and release
// latency, and the bound checked at every acquisition (`overlaps`: acquisitions that
// found 4 other holders whose permits were still valid; must be 0). With --count-commands,
// also the commands the clients sent to the first node per permit granted: a MONITOR feed
// of that node, counting the commands clients sent and not those the scripts ran inside
// (INFO commandstats and total_commands_processed count both, and cannot tell them apart).

#include "redlock/semaphore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <map>
#include <optional>
#include <tuple>

#include "cycles.hpp"

namespace redlock::bench {
namespace {

using boost::system::error_code;

constexpr std::size_t fleet_size = 3;
constexpr std::size_t permits = 4;
constexpr std::size_t contenders = 16;

struct sem_run {
  std::string resource;
  redlock::lock_options opts;
  std::chrono::milliseconds hold;
  measure_window window;
  latency_samples acquire, release;
  std::uint64_t ops = 0, failures = 0, overlaps = 0;
  std::uint64_t grants = 0;  // measured or not, for commands per grant
  std::size_t most = 0;
  std::string first_error;
  // Each contender's permit deadline while it holds one.
  std::array<std::optional<redlock::boot_clock::time_point>, contenders> held{};

  void note_failure(bool measured, error_code ec, const char* phase) {
    if (!measured) return;
    ++failures;
    if (first_error.empty()) first_error = fmt::format("{}: {}", phase, ec.message());
  }
  // The bound, judged on valid permits only: one past its deadline may be taken again.
  void acquired(std::size_t who, redlock::boot_clock::time_point deadline) {
    const auto now = redlock::boot_clock::now();
    std::size_t holders = 1;
    for (std::size_t w = 0; w < held.size(); ++w)
      if (w != who && held[w] && *held[w] > now) ++holders;
    if (holders > permits) ++overlaps;
    most = std::max(most, holders);
    held[who] = deadline;
  }
};

asio::awaitable<void> contender(redlock::client& c, sem_run& run, std::size_t who) {
  asio::steady_timer pause{co_await asio::this_coro::executor};
  for (;;) {
    const auto t0 = bench_clock::now();
    if (run.window.over(t0)) break;
    const bool measured = run.window.enter(t0);
    std::tuple<error_code, redlock::permit> got = co_await redlock::async_lock_permit(
        c, run.resource, permits, run.opts, asio::as_tuple(asio::use_awaitable));
    const auto t1 = bench_clock::now();
    if (std::get<0>(got)) {
      run.note_failure(measured, std::get<0>(got), "acquire");
      co_await yield_after_failure();
      continue;
    }
    redlock::permit& p = std::get<1>(got);
    ++run.grants;
    run.acquired(who, p.lock.deadline());
    if (run.hold.count() > 0) {
      pause.expires_after(run.hold);
      co_await pause.async_wait(asio::use_awaitable);
    }
    run.held[who].reset();
    const auto t2 = bench_clock::now();
    std::tuple<error_code> released =
        co_await c.async_unlock(std::move(p.lock), asio::as_tuple(asio::use_awaitable));
    const auto t3 = bench_clock::now();
    if (std::get<0>(released)) {
      run.note_failure(measured, std::get<0>(released), "release");
      continue;
    }
    if (!measured) continue;
    ++run.ops;
    run.acquire.add(t1 - t0);
    run.release.add(t3 - t2);
    run.window.completed(t3);
  }
}

// The commands clients send to one node, from its MONITOR feed: each line names the
// client that sent the command, "lua" for a command a script ran.
class command_tap {
 public:
  explicit command_tap(asio::io_context& io) : socket_(io) {}

  /// Connects to the node of `uri` (redis://host:port, no password) and starts counting.
  void start(asio::io_context& io, std::string_view uri) {
    auto rest = uri.substr(uri.find("://") + 3);
    if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
    rest = rest.substr(0, rest.find('/'));
    const auto colon = rest.rfind(':');
    asio::ip::tcp::resolver resolver{io};
    asio::connect(socket_, resolver.resolve(std::string{rest.substr(0, colon)},
                                            std::string{rest.substr(colon + 1)}));
    asio::write(socket_, asio::buffer(std::string_view{"MONITOR\r\n"}));
    read();
  }
  void stop() {
    stopped_ = true;
    error_code ignored;
    socket_.close(ignored);
  }
  std::uint64_t sent() const { return sent_; }
  /// The feed ended before stop() (the server dropped a monitor that fell behind): the
  /// counts miss commands.
  bool broken() const { return broken_; }
  /// Each command's count, "NAME n" each, the most frequent first.
  std::string by_command() const {
    std::vector<std::pair<std::uint64_t, std::string>> v;
    for (const auto& [name, n] : by_name_) v.emplace_back(n, name);
    std::sort(v.rbegin(), v.rend());
    std::string out;
    for (const auto& [n, name] : v) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, n);
    return out;
  }

 private:
  // `line`: +<time> [<db> <client>] "NAME" "arg" ... A script call is counted by script:
  // EVALSHA by the first 8 digits of its SHA1, EVAL by its number of keys.
  void count(std::string_view line) {
    ++sent_;
    const auto open = line.find("] \"");
    if (open == std::string_view::npos) return;
    const auto end = line.find('"', open + 3);
    std::string name{line.substr(open + 3, end - open - 3)};
    if (name == "EVALSHA" || name == "EVAL") {
      // The next quoted argument is the SHA1 or the body; EVAL's key count follows the body.
      const auto arg = line.find('"', end + 1);
      const auto arg_end = arg == std::string_view::npos ? arg : line.find("\" \"", arg + 1);
      if (name == "EVALSHA" && arg != std::string_view::npos)
        name += ":" + std::string{line.substr(arg + 1, 8)};
      else if (arg_end != std::string_view::npos)
        name +=
            "/" + std::string{line.substr(arg_end + 3, line.find('"', arg_end + 3) - arg_end - 3)};
    }
    ++by_name_[name];
  }

  void read() {
    asio::async_read_until(socket_, asio::dynamic_buffer(buf_), '\n',
                           [this](error_code ec, std::size_t n) {
                             if (ec) {
                               broken_ = !stopped_;
                               return;
                             }
                             const std::string_view line{buf_.data(), n};
                             if (line.find(" [") != std::string_view::npos &&
                                 line.find(" lua] ") == std::string_view::npos)
                               count(line);
                             buf_.erase(0, n);
                             read();
                           });
  }

  asio::ip::tcp::socket socket_;
  std::string buf_;
  std::uint64_t sent_ = 0;
  bool stopped_ = false, broken_ = false;
  std::map<std::string, std::uint64_t> by_name_;
};

}  // namespace

void run_sem(bench_context& ctx) {
  const auto& o = ctx.opts;
  const auto uris = ctx.node_uris(fleet_size);
  asio::io_context io{1};
  std::vector<redlock::client> clients;
  for (std::size_t i = 0; i < contenders; ++i) {
    clients.emplace_back(io.get_executor(), ctx.client_config(uris));
    wait_until_lockable(io, clients.back(), ctx);
  }
  sem_run run{.resource = ctx.key_prefix("sem4x16") + "pool",
              .opts = {.ttl = o.ttl, .wait = wait_forever},
              .hold = o.hold,
              .window = {o.warmup, o.contention_duration}};
  command_tap tap{io};
  if (o.count_commands) tap.start(io, uris.front());
  std::size_t next = 0;
  run_workers(io, contenders, [&] {
    const std::size_t who = next++;
    return contender(clients[who], run, who);
  });
  tap.stop();
  for (auto& c : clients) shut_down(io, c);

  json_line l = base_line("sem4x16", uris.size(), contenders, run.ops, run.window.seconds());
  l.add("permits", permits);
  l.add_latency("acquire", run.acquire);
  l.add_latency("release", run.release);
  l.add("holders_max", run.most);
  l.add("overlaps", static_cast<std::size_t>(run.overlaps));
  l.add("failures", static_cast<std::size_t>(run.failures));
  l.add("hold_ms", static_cast<std::size_t>(o.hold.count()));
  l.add("ttl_ms", static_cast<std::size_t>(o.ttl.count()));
  std::string per_grant;
  if (o.count_commands && tap.broken()) {
    per_grant = "; the command count is unknown: the MONITOR feed was dropped";
  } else if (o.count_commands && run.grants > 0) {
    const double cmds = static_cast<double>(tap.sent()) / static_cast<double>(run.grants);
    l.add("cmds_per_grant_node", std::optional<double>{cmds});
    per_grant = fmt::format("; {:.2f} commands sent per grant to a node ({} in {} grants)", cmds,
                            tap.by_command(), run.grants);
  }
  const std::string human = fmt::format(
      "sem4x16 ({} permits, {} contenders, hold {} ms): {:.0f} acquisitions/s; {}; at most {} "
      "holders at once, {} overlaps{}{}",
      permits, contenders, o.hold.count(), l.number("ops_per_s").value_or(0), latency_text(l),
      run.most, run.overlaps, per_grant,
      run.failures ? fmt::format("; {} failures (first: {})", run.failures, run.first_error)
                   : std::string{});
  ctx.emit(std::move(l), human);
}

}  // namespace redlock::bench
