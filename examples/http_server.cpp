// SPDX-License-Identifier: BSL-1.0
// An HTTP/1.1 payment service that pays each order exactly once, however many copies of
// the request arrive and however many of them arrive at once: Boost.Beast, one coroutine
// per connection, and a Redlock client taking the order's lock with co_await.
//
//   http_server --nodes URI,... --port P [--bind ADDR] [--journal FILE] [--pay-ms MS]
//               [--ttl MS] [--max-ttl MS] [--done-ttl MS]
//
//   POST /orders/{id}/pay  200 paid now; 409 already paid, or being paid by another
//                          request; 503 the nodes could not decide (too few answered)
//   GET  /metrics          the lock client's metrics and the server's own, as Prometheus text
//   any other path 404; another method on these two paths 405.
//
// Paying: try-lock "order:{id}" (one attempt: a second request for the same order must
// not queue behind the first, it is a duplicate), do the payment (a short delay, then one
// line appended to the journal), and turn the lock into a done marker (async_settle) so
// that later requests, from this server or another one sharing the nodes, find the order
// taken. The journal is also read at start: an order paid before a restart stays paid.
// SIGINT or SIGTERM: stop accepting, finish the requests in progress, close idle
// connections, shut the client down, exit 0.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ranges>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct settings {
  std::vector<std::string> nodes;
  std::string bind = "127.0.0.1";
  std::uint16_t port = 8080;
  std::string journal = "payments.journal";
  std::chrono::milliseconds pay{20};            // how long a "payment" takes
  std::chrono::milliseconds ttl{5000};          // the order lock's TTL
  std::chrono::milliseconds max_ttl{0};         // the fleet's restart guard (0: ttl)
  std::chrono::milliseconds done_ttl{3600000};  // how long the done marker stays
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr,
             "http_server: {}\nusage: http_server --nodes URI,... --port P [--bind ADDR] "
             "[--journal FILE] [--pay-ms MS] [--ttl MS] [--max-ttl MS] [--done-ttl MS]\n",
             why);
  std::exit(64);
}

template <typename T>
T number(std::string_view flag, std::string_view text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    usage(fmt::format("{}: not a number", flag));
  return v;
}

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  for (const auto part : std::views::split(s, ','))
    if (!part.empty()) out.emplace_back(part.begin(), part.end());
  return out;
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", flag));
    const std::string_view v = argv[++i];
    if (flag == "--nodes")
      s.nodes = split(v);
    else if (flag == "--bind")
      s.bind = v;
    else if (flag == "--port")
      s.port = number<std::uint16_t>(flag, v);
    else if (flag == "--journal")
      s.journal = v;
    else if (flag == "--pay-ms")
      s.pay = std::chrono::milliseconds{number<unsigned>(flag, v)};
    else if (flag == "--ttl")
      s.ttl = std::chrono::milliseconds{number<unsigned>(flag, v)};
    else if (flag == "--max-ttl")
      s.max_ttl = std::chrono::milliseconds{number<unsigned>(flag, v)};
    else if (flag == "--done-ttl")
      s.done_ttl = std::chrono::milliseconds{number<unsigned>(flag, v)};
    else
      usage(fmt::format("unknown option {}", flag));
  }
  if (s.nodes.empty()) {
    const char* env = std::getenv("REDLOCK_NODES");
    if (!env || !*env) usage("no nodes: give --nodes or set REDLOCK_NODES");
    s.nodes = split(env);
  }
  if (s.pay >= s.ttl) usage("--pay-ms must be shorter than --ttl");
  if (s.max_ttl.count() > 0 && s.max_ttl < s.ttl) usage("--max-ttl must not be below --ttl");
  return s;
}

// ---- the journal: one "paid <id>" line per payment ------------------------------------

class journal {
 public:
  explicit journal(const std::string& path) {
    std::ifstream in{path};
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("paid ")) paid_.insert(line.substr(5));
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  }
  ~journal() { ::close(fd_); }
  journal(const journal&) = delete;
  journal& operator=(const journal&) = delete;

  bool paid(const std::string& id) const { return paid_.contains(id); }

  /// One write(2) per line: with O_APPEND, lines of concurrent writers never interleave.
  bool record(const std::string& id) {
    const std::string line = "paid " + id + "\n";
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return false;
    paid_.insert(id);
    return true;
  }

 private:
  int fd_ = -1;
  std::unordered_set<std::string> paid_;
};

// ---- requests -----------------------------------------------------------------------

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

struct service {
  const settings& opts;
  redlock::client& locks;
  redlock::metrics_observer& metrics;
  journal& paid;
  std::map<unsigned, std::uint64_t> responses;  // by status code
};

response reply(const request& req, http::status status, std::string body,
               std::string_view type = "application/json") {
  response res{status, req.version()};
  res.set(http::field::server, "redlock-asio http_server");
  res.set(http::field::content_type, type);
  res.body() = std::move(body);
  return res;
}

// A JSON string's contents: the diagnostics quote resource names.
std::string json_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

response order_reply(const request& req, http::status status, const std::string& id,
                     std::string_view result) {
  return reply(req, status,
               fmt::format("{{\"order\":\"{}\",\"result\":\"{}\"}}\n", id, json_escape(result)));
}

// An order id is 1 to 64 of [A-Za-z0-9_-]: anything else is no such order.
bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

asio::awaitable<response> pay(service& s, const request& req, std::string id) {
  if (s.paid.paid(id)) co_return order_reply(req, http::status::conflict, id, "already paid");
  const std::string resource = "order:" + id;
  const redlock::lock_options opts{.ttl = s.opts.ttl};
  redlock::diagnostics diag;
  auto [ec, lk] = co_await s.locks.async_try_lock(resource, opts, diag, use_tuple);
  if (ec == redlock::error::contended) {
    // Held: another request is paying it, or a done marker says it was paid.
    const char* what = s.paid.paid(id) ? "already paid" : "payment in progress or done";
    co_return order_reply(req, http::status::conflict, id, what);
  }
  if (ec) co_return order_reply(req, http::status::service_unavailable, id, diag.message);
  if (s.paid.paid(id)) {
    // Paid here before, and its done marker has expired (or never reached a majority):
    // the journal decides.
    co_await s.locks.async_unlock(std::move(lk), use_tuple);
    co_return order_reply(req, http::status::conflict, id, "already paid");
  }

  asio::steady_timer payment{co_await asio::this_coro::executor, s.opts.pay};
  co_await payment.async_wait(use_tuple);
  // Record the payment only while the lock is certainly ours.
  if (!lk.valid()) {
    co_await s.locks.async_unlock(std::move(lk), use_tuple);
    co_return order_reply(req, http::status::service_unavailable, id,
                          "lock expired before recording");
  }
  if (!s.paid.record(id)) {
    co_await s.locks.async_unlock(std::move(lk), use_tuple);
    co_return order_reply(req, http::status::internal_server_error, id, "journal write failed");
  }
  auto [settled] = co_await s.locks.async_settle(lk, s.opts.done_ttl, use_tuple);
  if (settled)
    fmt::print(stderr, "http_server: order {} paid, but its done marker: {}\n", id,
               settled.message());
  co_return order_reply(req, http::status::ok, id, "paid");
}

std::string metrics_text(const service& s) {
  std::string out = s.metrics.render();
  out +=
      "# HELP http_server_responses_total HTTP responses sent, by status code.\n"
      "# TYPE http_server_responses_total counter\n";
  for (const auto& [code, n] : s.responses)
    out += fmt::format("http_server_responses_total{{code=\"{}\"}} {}\n", code, n);
  return out;
}

response not_allowed(const request& req, std::string_view allow) {
  auto res = reply(req, http::status::method_not_allowed, "{\"error\":\"method not allowed\"}\n");
  res.set(http::field::allow, allow);
  return res;
}

asio::awaitable<response> route(service& s, const request& req) {
  std::string_view path = req.target();
  path = path.substr(0, path.find('?'));
  if (path == "/metrics") {
    if (req.method() != http::verb::get) co_return not_allowed(req, "GET");
    co_return reply(req, http::status::ok, metrics_text(s),
                    "text/plain; version=0.0.4; charset=utf-8");
  }
  constexpr std::string_view prefix = "/orders/", suffix = "/pay";
  if (path.starts_with(prefix) && path.ends_with(suffix) &&
      path.size() > prefix.size() + suffix.size()) {
    const auto id = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    if (valid_id(id)) {
      if (req.method() != http::verb::post) co_return not_allowed(req, "POST");
      std::string order{id};
      auto res = co_await pay(s, req, std::move(order));
      co_return res;
    }
  }
  co_return reply(req, http::status::not_found, "{\"error\":\"not found\"}\n");
}

// The metrics observer, also noting which nodes are connected and whether the last lock
// round had a node held back or failing. Its hooks run on the client's strand: here, the
// only thread.
class lock_observer final : public redlock::metrics_observer {
 public:
  void on_attempt(const redlock::attempt_event& e) override {
    metrics_observer::on_attempt(e);
    none_held_back = std::none_of(e.nodes.begin(), e.nodes.end(), [](const redlock::node_reply& n) {
      return n.answer == redlock::node_answer::held_back ||
             n.answer == redlock::node_answer::failed;
    });
  }
  void on_node_event(const redlock::node_event& e) override {
    metrics_observer::on_node_event(e);
    if (e.what == redlock::node_event::kind::connected) connected.insert(e.node);
    if (e.what == redlock::node_event::kind::disconnected) connected.erase(e.node);
  }
  /// Nodes whose connection is up (and so whose restart-guard standing is known).
  std::size_t connected_nodes() const { return connected.size(); }
  /// No node was kept out of the last round, as held back or failing.
  bool none_held_back = false;

 private:
  std::set<std::size_t> connected;
};

// ---- connections and shutdown ---------------------------------------------------------

struct server {
  service& svc;
  tcp::acceptor acceptor;
  bool stopping = false;
  std::size_t sessions = 0;
  std::set<beast::tcp_stream*> idle;  // waiting for a request: closed at once on stop
  asio::steady_timer all_closed;      // cancelled when the last session ends while stopping

  // Counts a session for as long as it lives, whatever way its coroutine ends.
  struct session_count {
    explicit session_count(server& s) : s_(s) { ++s_.sessions; }
    ~session_count() {
      if (--s_.sessions == 0 && s_.stopping) s_.all_closed.cancel();
    }
    server& s_;
  };
};

asio::awaitable<void> session(server& srv, tcp::socket socket) {
  server::session_count counted{srv};
  beast::tcp_stream stream{std::move(socket)};
  beast::flat_buffer buffer;
  while (!srv.stopping) {
    request req;
    stream.expires_after(60s);  // how long an idle keep-alive connection may wait
    srv.idle.insert(&stream);
    auto [ec, n] = co_await http::async_read(stream, buffer, req, use_tuple);
    srv.idle.erase(&stream);
    if (ec) break;  // closed by the client, idle too long, malformed, or stopping
    stream.expires_never();
    response res = co_await route(srv.svc, req);
    ++srv.svc.responses[res.result_int()];
    res.keep_alive(req.keep_alive() && !srv.stopping);
    res.prepare_payload();
    stream.expires_after(30s);
    auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
    if (wec || !res.keep_alive()) break;
  }
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> accept_loop(server& srv) {
  const auto ex = co_await asio::this_coro::executor;
  while (!srv.stopping) {
    auto [ec, socket] = co_await srv.acceptor.async_accept(use_tuple);
    if (ec) {
      if (srv.stopping) break;
      // Out of descriptors, say: back off a little instead of spinning.
      fmt::print(stderr, "http_server: accept: {}\n", ec.message());
      asio::steady_timer pause{ex, 100ms};
      co_await pause.async_wait(use_tuple);
      continue;
    }
    asio::co_spawn(ex, session(srv, std::move(socket)), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        fmt::print(stderr, "http_server: connection ended by: {}\n", x.what());
      }
    });
  }
}

asio::awaitable<void> stop_on_signal(server& srv, asio::signal_set& signals) {
  auto [ec, signal] = co_await signals.async_wait(use_tuple);
  if (ec) co_return;
  srv.stopping = true;
  error_code ignored;
  srv.acceptor.close(ignored);
  const auto idle = srv.idle;  // cancelling completes reads later, on this thread
  for (auto* stream : idle) stream->cancel();
  if (srv.sessions > 0) co_await srv.all_closed.async_wait(use_tuple);
  co_await srv.svc.locks.async_shutdown(use_tuple);
  fmt::print("stopped on signal {}\n", signal);
}

// Waits until every node votes: freshly started (or restarted) nodes are held back by the
// restart guard for max_ttl, and with one of three held back, a second request for an
// order being paid can only be told "no majority" (503) instead of "in progress" (409).
// Past the guard (plus slack) it starts with a majority, or fails without one.
asio::awaitable<error_code> wait_until_lockable(redlock::client& locks, const settings& opts,
                                                const lock_observer& seen) {
  const auto guard = opts.max_ttl.count() > 0 ? opts.max_ttl : opts.ttl;
  const auto give_up = std::chrono::steady_clock::now() + guard + 2s;
  const redlock::lock_options probe{.ttl = opts.ttl};
  asio::steady_timer pause{co_await asio::this_coro::executor};
  for (;;) {
    // Connected before the round is sent: a node still connecting would only be "no
    // answer yet" in it, not held back.
    const bool all_connected = seen.connected_nodes() == locks.node_count();
    redlock::diagnostics diag;
    auto [ec, lk] = co_await locks.async_try_lock("http_server:ready", probe, diag, use_tuple);
    if (!ec) co_await locks.async_unlock(std::move(lk), use_tuple);
    const bool every_node_votes = all_connected && seen.none_held_back;
    const bool late = std::chrono::steady_clock::now() >= give_up;
    if ((!ec && (every_node_votes || late)) || (ec && late)) {
      if (ec) fmt::print(stderr, "http_server: {}\n", diag.message);
      co_return ec;
    }
    pause.expires_after(50ms);
    co_await pause.async_wait(use_tuple);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const settings opts = parse(argc, argv);
  try {
    asio::io_context io{1};
    // Installed first: a signal that comes during start-up is not lost.
    asio::signal_set signals{io, SIGINT, SIGTERM};
    auto metrics = std::make_shared<lock_observer>();
    redlock::client locks{io.get_executor(), redlock::config{.nodes = opts.nodes,
                                                             .node_timeout = 100ms,
                                                             .max_ttl = opts.max_ttl,
                                                             .observer = metrics}};
    journal paid{opts.journal};
    service svc{opts, locks, *metrics, paid, {}};
    server srv{svc,   tcp::acceptor{io},
               false, 0,
               {},    asio::steady_timer{io, asio::steady_timer::time_point::max()}};

    int exit_code = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          const error_code ec = co_await wait_until_lockable(locks, opts, *metrics);
          if (ec) {
            exit_code = 69;
            signals.cancel();
            co_await locks.async_shutdown(use_tuple);
            co_return;
          }
          const tcp::endpoint at{asio::ip::make_address(opts.bind), opts.port};
          srv.acceptor.open(at.protocol());
          srv.acceptor.set_option(tcp::acceptor::reuse_address(true));
          srv.acceptor.bind(at);
          srv.acceptor.listen();
          const auto bound = srv.acceptor.local_endpoint();
          fmt::print("listening on http://{}:{}\n", bound.address().to_string(), bound.port());
          std::fflush(stdout);
          asio::co_spawn(co_await asio::this_coro::executor, accept_loop(srv), asio::detached);
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    asio::co_spawn(io, stop_on_signal(srv, signals), asio::detached);
    io.run();
    return exit_code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "http_server: {}\n", e.what());
    return 1;
  }
}
