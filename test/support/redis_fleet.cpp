// SPDX-License-Identifier: BSL-1.0
#include "redis_fleet.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "connection/info.hpp"

namespace redlock::test {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto start_timeout = 10s;
constexpr auto ready_poll_interval = 10ms;
constexpr auto connect_timeout = 1s;
constexpr auto command_timeout = 5s;
// Bounds one readiness probe: a listener that accepts but never replies (not a Redis)
// then costs a second of the start-up budget, not all of it.
constexpr auto ready_ping_timeout = 1s;
// Retries when the server dies during start-up, most likely because another process
// took the free port between our probe and its bind.
constexpr int max_start_attempts = 5;
// An exit code of 127 is what our child uses when exec fails, as shells do.
constexpr int exec_failed_code = 127;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Owns a file descriptor; keeps error paths in the socket code leak-free.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) : fd_(fd) {}
  ~unique_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&&) = delete;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_;
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

std::string endpoint(std::uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

// The OS knows which ports are free; binding port 0 asks it. The port is free again once
// we close, and stays unlikely to be handed out soon because the kernel rotates through
// its ephemeral range.
std::uint16_t pick_free_port() {
  unique_fd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (!fd) throw_errno("socket");
  sockaddr_in addr = loopback(0);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw_errno("bind 127.0.0.1:0");
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw_errno("getsockname");
  return ntohs(addr.sin_port);
}

// Tells a lost race for the port (retry elsewhere) from any other start-up failure, such as
// a bad argument (retrying would only repeat it), without parsing the server's log.
bool port_taken(std::uint16_t port) {
  unique_fd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (!fd) return false;
  const sockaddr_in addr = loopback(port);
  return ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
         errno == EADDRINUSE;
}

timeval to_timeval(std::chrono::microseconds d) {
  return timeval{static_cast<time_t>(d.count() / 1'000'000),
                 static_cast<suseconds_t>(d.count() % 1'000'000)};
}

// Connects without blocking longer than connect_timeout (a frozen server still completes
// the handshake from its backlog, but a full backlog would hang a plain connect), then
// switches to blocking I/O bounded by `io_timeout`.
unique_fd connect_to(std::uint16_t port, std::chrono::milliseconds io_timeout) {
  unique_fd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (!fd) throw_errno("socket");
  const sockaddr_in addr = loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) throw_errno("connect to " + endpoint(port));
    pollfd p{fd.get(), POLLOUT, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(connect_timeout);
    int n = 0;
    do n = ::poll(&p, 1, static_cast<int>(ms.count()));
    while (n < 0 && errno == EINTR);
    if (n < 0) throw_errno("poll");
    if (n == 0) throw std::runtime_error("connect to " + endpoint(port) + " timed out");
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
      throw std::system_error(err, std::generic_category(), "connect to " + endpoint(port));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  const timeval tv = to_timeval(io_timeout);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    // MSG_NOSIGNAL: a server killed mid-test must give us EPIPE, not end the test run.
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("send");
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

sync_reply to_tree(const resp::reply& nodes, std::size_t& i) {
  const resp::node& n = nodes[i++];
  sync_reply r;
  r.kind = n.kind;
  r.text = std::string(n.text);
  r.integer = n.integer;
  r.elements.reserve(n.size);
  for (std::size_t k = 0; k < n.size; ++k) r.elements.push_back(to_tree(nodes, i));
  return r;
}

sync_reply read_reply(int fd, resp::reader& in) {
  resp::reply nodes;
  for (;;) {
    const resp::parse_status status = in.next(nodes);
    if (status == resp::parse_status::complete) {
      std::size_t i = 0;
      return to_tree(nodes, i);
    }
    if (status != resp::parse_status::incomplete)
      throw std::runtime_error(std::string("bad reply from redis-server: ") +
                               resp::to_string(status));
    const std::span<char> space = in.prepare();
    const ssize_t n = ::recv(fd, space.data(), space.size(), 0);
    if (n > 0) {
      in.commit(static_cast<std::size_t>(n));
    } else if (n == 0) {
      throw std::runtime_error("redis-server closed the connection before replying");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      throw std::runtime_error("no reply from redis-server in time (is it frozen?)");
    } else if (errno != EINTR) {
      throw_errno("recv");
    }
  }
}

// Sends the commands as one pipeline on a fresh connection and reads one reply for each.
std::vector<sync_reply> exchange(std::uint16_t port,
                                 std::span<const std::vector<std::string>> commands,
                                 std::chrono::milliseconds io_timeout) {
  std::string out;
  for (const auto& args : commands) {
    if (args.empty()) throw std::invalid_argument("redis command without a name");
    resp::command_writer w{out};
    w.begin(args.size());
    for (const auto& a : args) w.arg(std::string_view{a});
  }
  const unique_fd fd = connect_to(port, io_timeout);
  send_all(fd.get(), out);
  resp::reader in;
  std::vector<sync_reply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) replies.push_back(read_reply(fd.get(), in));
  return replies;
}

// Any answer means the server is serving: with --requirepass, PING gets NOAUTH. LOADING
// is the one answer that means "not yet".
bool answers_ping(std::uint16_t port) {
  try {
    const std::vector<std::vector<std::string>> ping{{"PING"}};
    const auto replies = exchange(port, ping, ready_ping_timeout);
    return !(replies[0].is_error() && replies[0].text.starts_with("LOADING"));
  } catch (const std::exception&) {
    return false;
  }
}

// Resolved in the parent: execvp may allocate while searching PATH, which is unsafe
// between fork and exec in a process that may have other threads.
std::string find_redis_server() {
  if (const char* p = std::getenv("REDLOCK_TEST_REDIS_SERVER"); p && *p) return p;
  return detail::find_program("redis-server");
}

}  // namespace

std::string detail::find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    std::string dir{dirs.substr(0, colon)};
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  throw std::runtime_error(name +
                           " not found in PATH; install it (redis-server: or set "
                           "REDLOCK_TEST_REDIS_SERVER)");
}

namespace {

std::string log_tail(const std::string& path, std::size_t max_lines = 20) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "(no log at " + path + ")";
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  const std::streamoff from = size > 4096 ? size - 4096 : 0;
  f.seekg(from);
  std::string text(static_cast<std::size_t>(size - from), '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::size_t start = text.size();
  for (std::size_t lines = 0; start > 0 && lines < max_lines;) {
    if (text[--start] == '\n' && start + 1 < text.size()) ++lines;
  }
  if (start > 0) text.erase(0, start + 1);
  return text;
}

// Ignored once per process: a test writing to a connection whose server was just killed
// must see EPIPE as an error, not die silently from the signal. The library under test
// may not pass MSG_NOSIGNAL everywhere, and neither may other helpers.
void ignore_sigpipe() {
  static const bool done = [] {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, nullptr);
    return true;
  }();
  (void)done;
}

}  // namespace

// ---- detail::temp_dir ----------------------------------------------------------------

namespace detail {

temp_dir::temp_dir() {
  std::string pattern = "/tmp/redlock-redis-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("mkdtemp " + pattern);
  path_ = std::move(pattern);
}

temp_dir::~temp_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

// ---- detail::child_process -------------------------------------------------------------

void child_process::spawn(const std::vector<std::string>& argv, const std::string& output_path,
                          const std::vector<std::string>& env) {
  stop();
  // Everything the child needs is prepared here: after fork, only async-signal-safe calls
  // are allowed (another thread may have held the allocator's lock when we forked).
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  // The environment: ours plus `env` ("NAME=value"), prepared before fork as well.
  std::vector<char*> c_env;
  for (char** e = environ; *e; ++e) c_env.push_back(*e);
  for (const auto& e : env) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);
  const unique_fd out{::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (!out) throw_errno("open " + output_path);
  const unique_fd null_in{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (!null_in) throw_errno("open /dev/null");
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  const int max_fd = files.rlim_cur == RLIM_INFINITY || files.rlim_cur > 65536
                         ? 65536
                         : static_cast<int>(files.rlim_cur);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    // Dies with the test process, even on SIGKILL of the test, so no server outlives it.
    // The death signal follows the forking *thread*; tests start servers from their main
    // thread, which lives as long as the process.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(exec_failed_code);  // the parent died before prctl
    ::dup2(null_in.get(), STDIN_FILENO);
    ::dup2(out.get(), STDOUT_FILENO);
    ::dup2(out.get(), STDERR_FILENO);
    // Otherwise the server would inherit the test's sockets (a proxy's listener, say) and
    // keep them open after the test closed them.
    if (::close_range(3, ~0U, 0) != 0) {
      for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    }
    // Ignored signals and the signal mask survive exec; start the server as a shell would.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    constexpr char msg[] = "redlock test support: exec of redis-server failed\n";
    [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(exec_failed_code);
  }
  pid_ = pid;
  frozen_ = false;
}

void child_process::stop() noexcept {
  if (pid_ <= 0) return;
  // Linux delivers SIGKILL to a stopped process anyway; continuing it first is cheap and
  // means a failed kill never leaves a frozen server behind.
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  frozen_ = false;
}

void child_process::freeze() {
  if (!running()) throw std::logic_error("freeze: redis-server is not running");
  if (frozen_) return;
  if (::kill(pid_, SIGSTOP) != 0) throw_errno("kill SIGSTOP");
  // SIGSTOP takes effect asynchronously; without this wait a test could still get a reply
  // from a server it believes frozen. WNOWAIT leaves an exit to be reaped by stop().
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WEXITED | WNOWAIT) < 0) {
    if (errno != EINTR) throw_errno("waitid");
  }
  frozen_ = info.si_code == CLD_STOPPED;
}

void child_process::thaw() {
  if (!running()) throw std::logic_error("thaw: redis-server is not running");
  // The kernel resumes the process before kill() returns: no need to wait.
  if (::kill(pid_, SIGCONT) != 0) throw_errno("kill SIGCONT");
  frozen_ = false;
}

bool child_process::running() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  // WNOWAIT: only stop() reaps, so the pid stays ours until then.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;
  return info.si_pid == 0;
}

std::string child_process::exit_description() const {
  if (pid_ <= 0) return "not started";
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return {};
  if (info.si_code == CLD_EXITED) return "exited with code " + std::to_string(info.si_status);
  return "killed by signal " + std::to_string(info.si_status);
}

}  // namespace detail

// ---- redis_server ----------------------------------------------------------------------

redis_server::redis_server(std::vector<std::string> extra)
    : redis_server(std::move(extra), deferred_start{}) {
  wait_until_ready(true);
}

redis_server::redis_server(std::vector<std::string> extra, std::vector<std::string> env)
    : redis_server(std::move(extra), deferred_start{}, std::move(env)) {
  wait_until_ready(true);
}

redis_server::redis_server(std::vector<std::string> extra, deferred_start,
                           std::vector<std::string> env)
    : extra_(std::move(extra)), env_(std::move(env)) {
  ignore_sigpipe();
  // The last --requirepass wins, as in redis-server itself.
  for (std::size_t i = 0; i + 1 < extra_.size(); ++i)
    if (extra_[i] == "--requirepass") password_ = extra_[i + 1];
  port_ = pick_free_port();
  spawn();
}

std::string redis_server::uri() const {
  return "redis://" + endpoint(port_);
}

std::string redis_server::log_path() const {
  return dir_.path() + "/redis.log";
}

void redis_server::spawn() {
  // One option and its value per line.
  // clang-format off
  std::vector<std::string> argv{find_redis_server(),
                                "--port", std::to_string(port_),
                                "--bind", "127.0.0.1",
                                "--protected-mode", "no",
                                "--save", "",  // no RDB snapshots: a restart starts empty
                                "--appendonly", "no",
                                "--daemonize", "no",  // we own the pid; a daemon would escape
                                "--dir", dir_.path(),
                                "--logfile", log_path()};
  // clang-format on
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  process_.spawn(argv, log_path(), env_);
}

void redis_server::wait_until_ready(bool may_change_port) {
  for (int attempt = 1;; ++attempt) {
    const auto deadline = clock_type::now() + start_timeout;
    bool died = false;
    while (clock_type::now() < deadline) {
      if (!process_.running()) {
        died = true;
        break;
      }
      if (answers_ping(port_) && answering_server_is_ours()) return;
      std::this_thread::sleep_for(ready_poll_interval);
    }
    // A lost race for a port: ours, or the cluster bus port our arguments name (picked
    // free earlier, it may since have been handed to another server, or be ours).
    std::string* bus = nullptr;
    for (std::size_t i = 0; i + 1 < extra_.size(); ++i)
      if (extra_[i] == "--cluster-port") bus = &extra_[i + 1];
    const bool bus_lost = bus && (*bus == std::to_string(port_) ||
                                  port_taken(static_cast<std::uint16_t>(std::stoi(*bus))));
    if (died && may_change_port && attempt < max_start_attempts &&
        (port_taken(port_) || bus_lost)) {
      process_.stop();
      port_ = pick_free_port();
      while (bus && (*bus = std::to_string(pick_free_port())) == std::to_string(port_)) {
      }
      spawn();
      continue;
    }
    const std::string why =
        died ? "redis-server on " + endpoint(port_) + " " + process_.exit_description()
             : "redis-server on " + endpoint(port_) + " did not answer PING within 10 s";
    process_.stop();
    throw std::runtime_error(why + "\n--- " + log_path() + " (tail) ---\n" + log_tail(log_path()));
  }
}

bool redis_server::answering_server_is_ours() const {
  try {
    const sync_reply info = admin_command({"INFO", "server"});
    if (info.is_error()) return true;  // INFO denied (say, by an ACL): we cannot tell
    return info.text.find("process_id:" + std::to_string(pid()) + "\r\n") != std::string::npos;
  } catch (const std::exception&) {
    return false;
  }
}

void redis_server::freeze() {
  process_.freeze();
}

void redis_server::thaw() {
  process_.thaw();
}

void redis_server::kill() {
  process_.stop();
}

void redis_server::restart() {
  process_.stop();
  spawn();
  // The same port, deliberately: clients under test must find the server where it was.
  wait_until_ready(false);
}

sync_reply redis_server::command(const std::vector<std::string>& args) const {
  const std::vector<std::vector<std::string>> one{args};
  return std::move(exchange(port_, one, command_timeout).front());
}

std::vector<sync_reply> redis_server::commands(
    const std::vector<std::vector<std::string>>& batch) const {
  return exchange(port_, batch, command_timeout);
}

std::string redis_server::incarnation() const {
  const std::string info = admin_command({"INFO", "server", "replication"}).text;
  return std::string{redlock::detail::info_field(info, "run_id")} + ":" +
         std::string{redlock::detail::info_field(info, "master_replid")};
}

bool redis_server::marker_names_me(const std::string& key) const {
  return admin_command({"GET", key}).text == incarnation();
}

sync_reply redis_server::admin_command(const std::vector<std::string>& args) const {
  if (password_.empty()) return command(args);
  const std::vector<std::vector<std::string>> both{{"AUTH", password_}, args};
  auto replies = exchange(port_, both, command_timeout);
  if (replies[0].is_error())
    throw std::runtime_error("AUTH on " + endpoint(port_) + " failed: " + replies[0].text);
  return std::move(replies[1]);
}

// ---- redis_fleet -----------------------------------------------------------------------

redis_fleet::redis_fleet(std::vector<std::vector<std::string>> extras) {
  servers_.reserve(extras.size());
  for (auto& extra : extras)
    servers_.push_back(std::unique_ptr<redis_server>(
        new redis_server(std::move(extra), redis_server::deferred_start{})));
  for (auto& s : servers_) s->wait_until_ready(true);
}

std::uint16_t detail::free_port() {
  return pick_free_port();
}

redis_fleet::redis_fleet(std::size_t n, std::vector<std::string> extra) {
  servers_.reserve(n);
  // All spawned first, then awaited: start-up cost is paid once, not n times. make_unique
  // cannot reach the private constructor.
  for (std::size_t i = 0; i < n; ++i)
    servers_.push_back(
        std::unique_ptr<redis_server>(new redis_server(extra, redis_server::deferred_start{})));
  for (auto& s : servers_) s->wait_until_ready(true);
}

std::vector<std::string> redis_fleet::uris() const {
  std::vector<std::string> out;
  out.reserve(servers_.size());
  for (const auto& s : servers_) out.push_back(s->uri());
  return out;
}

std::int64_t redis_fleet::total_keys() const {
  std::int64_t total = 0;
  for (const auto& s : servers_) {
    if (!s->running() || s->frozen()) continue;
    const sync_reply r = s->admin_command({"DBSIZE"});
    if (r.kind != resp::type::integer)
      throw std::runtime_error("DBSIZE on " + s->uri() + " failed: " + r.text);
    total += r.integer;
  }
  return total;
}

std::string redis_fleet::keys_without_ttl(std::string_view exempt) const {
  std::string found;
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    const redis_server& s = *servers_[i];
    if (!s.running() || s.frozen()) continue;
    for (const auto& key : s.admin_command({"KEYS", "*"}).elements) {
      if (!exempt.empty() && key.text.find(exempt) != std::string::npos) continue;
      const sync_reply ttl = s.admin_command({"PTTL", key.text});
      if (ttl.kind != resp::type::integer)
        throw std::runtime_error("PTTL on " + s.uri() + " failed: " + ttl.text);
      if (ttl.integer == -1) found += " node " + std::to_string(i) + ": " + key.text;
    }
  }
  return found;
}

std::int64_t redis_server::calls(std::string_view name) const {
  const std::string info = admin_command({"INFO", "commandstats"}).text;
  const std::string field = "cmdstat_" + std::string(name) + ":calls=";
  const auto at = info.find(field);
  std::int64_t n = 0;
  if (at != std::string::npos)
    std::from_chars(info.data() + at + field.size(), info.data() + info.size(), n);
  return n;
}

void redis_server::log_every_command() const {
  for (const auto& [option, value] :
       {std::pair{"slowlog-log-slower-than", "0"}, std::pair{"slowlog-max-len", "100000"}}) {
    const sync_reply r = admin_command({"CONFIG", "SET", option, value});
    if (r.is_error()) throw std::runtime_error("CONFIG SET on " + uri() + " failed: " + r.text);
  }
}

std::int64_t redis_server::calls_naming(std::string_view name, std::string_view arg) const {
  // Each entry: id, time, duration, arguments, client address, client name.
  std::int64_t n = 0;
  for (const auto& entry : admin_command({"SLOWLOG", "GET", "-1"}).elements) {
    if (entry.elements.size() < 4) continue;
    const auto& args = entry.elements[3].elements;
    if (args.empty() || !boost::algorithm::iequals(args[0].text, name)) continue;
    if (std::any_of(args.begin() + 1, args.end(), [&](const auto& a) { return a.text == arg; }))
      ++n;
  }
  return n;
}

bool redis_fleet::has_key(std::size_t i, std::string_view key) const {
  const redis_server& s = (*this)[i];
  const sync_reply r = s.admin_command({"EXISTS", std::string(key)});
  if (r.kind != resp::type::integer)
    throw std::runtime_error("EXISTS on " + s.uri() + " failed: " + r.text);
  return r.integer == 1;
}

}  // namespace redlock::test
