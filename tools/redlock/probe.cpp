#include "probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "connection/connection.hpp"
#include "resp/resp.hpp"

namespace redlock::cli {

probe::~probe() {
  if (ssl_) SSL_free(ssl_);
  if (fd_ >= 0) ::close(fd_);
}

bool probe::fail(std::string why) {
  error_ = std::move(why);
  if (ssl_) SSL_free(ssl_);
  ssl_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return false;
}

bool probe::wait_for_tls(int rc, int timeout_ms) {
  const int e = SSL_get_error(ssl_, rc);
  const short events = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
  if (events == 0) return false;
  pollfd p{fd_, events, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

bool probe::start_tls(const node_uri& uri, detail::tls_settings& tls) {
  ssl_ = SSL_new(detail::native_context(tls));
  if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) return fail("TLS: cannot set up a session");
  detail::prepare_tls_peer(ssl_, tls, uri);
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return true;
    if (wait_for_tls(rc, static_cast<int>(timeout_.count()))) continue;
    char reason[256] = "no TLS handshake in time";
    if (const unsigned long e = ERR_peek_error()) ERR_error_string_n(e, reason, sizeof reason);
    return fail(
        detail::tls_failure_text(ssl_, tls, uri, std::string{"TLS handshake failed: "} + reason));
  }
}

long probe::send_some(const char* data, std::size_t n, int timeout_ms) {
  if (!ssl_) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return fail("write timed out"), -1;
    const ssize_t k = ::send(fd_, data, n, MSG_NOSIGNAL);
    if (k <= 0) return fail(std::string{"write: "} + std::strerror(errno)), -1;
    return k;
  }
  for (;;) {
    const int k = SSL_write(ssl_, data, static_cast<int>(n));
    if (k > 0) return k;
    if (!wait_for_tls(k, timeout_ms)) return fail("TLS write failed or timed out"), -1;
  }
}

long probe::recv_some(char* data, std::size_t n, int timeout_ms) {
  if (!ssl_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return fail("no reply in time"), -1;
    const ssize_t k = ::recv(fd_, data, n, 0);
    if (k <= 0) return fail(k == 0 ? "the server closed the connection" : std::strerror(errno)), -1;
    return k;
  }
  for (;;) {
    const int k = SSL_read(ssl_, data, static_cast<int>(n));
    if (k > 0) return k;
    if (SSL_get_error(ssl_, k) == SSL_ERROR_ZERO_RETURN)
      return fail("the server closed the connection"), -1;
    if (!wait_for_tls(k, timeout_ms)) return fail("TLS read failed or no reply in time"), -1;
  }
}

bool probe::connect(const node_uri& uri, detail::tls_settings* tls) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(uri.port);
  if (int rc = ::getaddrinfo(uri.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return fail(std::string{"resolve: "} + ::gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd_ < 0) continue;
    if (::connect(fd_, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      continue;
    }
    pollfd p{fd_, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, static_cast<int>(timeout_.count())) != 1 ||
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      last = err ? std::strerror(err) : "connect timed out";
      ::close(fd_);
      fd_ = -1;
      continue;
    }
    break;
  }
  ::freeaddrinfo(res);
  if (fd_ < 0) return fail("connect: " + last);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (uri.tls) {
    if (!tls) return fail("rediss:// without TLS settings");
    if (!start_tls(uri, *tls)) return false;
  }
  if (!uri.password.empty()) {
    auto r = uri.user.empty() ? command({"AUTH", uri.password})
                              : command({"AUTH", uri.user, uri.password});
    if (!r) return false;
    if (r->what == value::kind::error) return fail("AUTH refused: " + r->text);
  }
  if (uri.db != 0) {
    auto r = command({"SELECT", std::to_string(uri.db)});
    if (!r) return false;
    if (r->what == value::kind::error) return fail("SELECT refused: " + r->text);
  }
  return true;
}

namespace {

// Converts the parser's flat pre-order nodes into a tree, from index i.
value build(const resp::reply& r, std::size_t& i) {
  const resp::node& n = r[i++];
  value v;
  switch (n.kind) {
    case resp::type::integer:
    case resp::type::boolean:
      v.what = value::kind::integer;
      v.integer = n.integer;
      break;
    case resp::type::null:
      v.what = value::kind::nil;
      break;
    case resp::type::simple_error:
    case resp::type::bulk_error:
      v.what = value::kind::error;
      v.text = n.text;
      break;
    case resp::type::array:
    case resp::type::map:
    case resp::type::set:
    case resp::type::push:
      v.what = value::kind::array;
      for (std::size_t k = 0; k < n.size; ++k) v.elements.push_back(build(r, i));
      break;
    default:
      v.what = value::kind::string;
      v.text = n.text;
  }
  return v;
}

}  // namespace

std::optional<value> probe::command(const std::vector<std::string>& args) {
  if (fd_ < 0) return std::nullopt;
  std::string out;
  resp::command_writer w{out};
  w.begin(args.size());
  for (const auto& a : args) w.arg(a);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto left = [&] {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::int64_t>(0, ms.count()));
  };
  for (std::size_t sent = 0; sent < out.size();) {
    const long n = send_some(out.data() + sent, out.size() - sent, left());
    if (n <= 0) return std::nullopt;
    sent += static_cast<std::size_t>(n);
  }
  resp::reply reply;
  for (;;) {
    const auto r = resp::parse(buffer_, reply);
    if (r.status == resp::parse_status::complete) {
      std::size_t i = 0;
      value v = build(reply, i);
      buffer_.erase(0, r.consumed);
      return v;
    }
    if (r.status != resp::parse_status::incomplete)
      return fail(std::string{"protocol error: "} + resp::to_string(r.status)), std::nullopt;
    char chunk[16384];
    const long n = recv_some(chunk, sizeof chunk, left());
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace redlock::cli
