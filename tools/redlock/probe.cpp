#include "probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "resp/resp.hpp"

namespace redlock::cli {

probe::~probe() {
  if (fd_ >= 0) ::close(fd_);
}

bool probe::fail(std::string why) {
  error_ = std::move(why);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return false;
}

bool probe::connect(const node_uri& uri) {
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
    case resp::type::null: v.what = value::kind::nil; break;
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
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, left()) != 1) return fail("write timed out"), std::nullopt;
    const ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return fail(std::string{"write: "} + std::strerror(errno)), std::nullopt;
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
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, left()) != 1) return fail("no reply in time"), std::nullopt;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return fail(n == 0 ? "the server closed the connection" : std::strerror(errno)), std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace redlock::cli
