// SPDX-License-Identifier: BSL-1.0
#include "fake_server.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cctype>

#include "loopback.hpp"
#include "resp/resp.hpp"

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string{s} + "\r\n";
}

std::string upper(std::string_view s) {
  std::string u{s};
  for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

// A command is an array of bulk strings; anything else is kept as its top node's text.
fake_server::command to_command(const resp::reply& r) {
  fake_server::command c;
  if (r[0].kind != resp::type::array) {
    c.emplace_back(r[0].text);
    return c;
  }
  for (std::size_t i = 1; i < r.size(); ++i) c.emplace_back(r[i].text);
  return c;
}

// Generous: the client under test may send large arguments.
resp::limits command_limits() {
  resp::limits lim;
  lim.max_bulk = 600u << 20;
  lim.max_reply = 1200u << 20;
  return lim;
}

}  // namespace

struct fake_server::impl {
  fake_server& owner;
  responder respond;
  std::string run_id;
  asio::io_context io;
  tcp::acceptor acceptor{io};

  impl(fake_server& o, responder r) : owner(o), respond(std::move(r)) {}

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, sock] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      const std::size_t id = owner.accepted_++;
      asio::co_spawn(io, serve(std::move(sock), id), asio::detached);
    }
  }

  // Writes `data` unless the connection stalls; false once the client is gone.
  asio::awaitable<bool> send(tcp::socket& sock, std::string_view data) {
    auto [ec, n] = co_await asio::async_write(sock, asio::buffer(data.data(), data.size()),
                                              asio::as_tuple(asio::use_awaitable));
    owner.written_ += n;
    co_return !ec;
  }

  asio::awaitable<bool> flood(tcp::socket& sock, const fake_reply& r) {
    if (r.flood_bytes == 0 || r.flood_unit.empty()) co_return true;
    std::string chunk;
    while (chunk.size() < (64u << 10)) chunk += r.flood_unit;
    std::uint64_t left = r.flood_bytes;
    while (left > 0) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
      const bool ok = co_await send(sock, std::string_view{chunk}.substr(0, n));
      if (!ok) co_return false;
      left -= n;
    }
    co_return true;
  }

  asio::awaitable<void> serve(tcp::socket sock, std::size_t id) {
    resp::reader in{command_limits()};
    resp::reply r;
    bool stalled = false;
    for (;;) {
      auto space = in.prepare(64u << 10);
      auto [ec, n] = co_await sock.async_read_some(asio::buffer(space.data(), space.size()),
                                                   asio::as_tuple(asio::use_awaitable));
      if (ec) {
        ++owner.closed_by_client_;
        co_return;
      }
      in.commit(n);
      for (;;) {
        const auto st = in.next(r);
        if (st == resp::parse_status::incomplete) break;
        if (st != resp::parse_status::complete) co_return;  // the client sent garbage
        command cmd = to_command(r);
        {
          std::lock_guard<std::mutex> g{owner.mutex_};
          owner.received_.push_back(cmd);
        }
        if (stalled) continue;
        std::optional<fake_reply> reply = respond ? respond(cmd, id) : std::nullopt;
        if (!reply) {
          auto standard = standard_reply(cmd, run_id);
          reply = fake_reply{.bytes = standard ? *standard : "-ERR unknown command\r\n"};
        }
        if (reply->stall) {
          stalled = true;
          continue;
        }
        bool alive = co_await send(sock, reply->bytes);
        if (alive) alive = co_await flood(sock, *reply);
        if (!alive) {
          ++owner.closed_by_client_;
          co_return;
        }
        if (reply->close) {
          boost::system::error_code ignored;
          sock.shutdown(tcp::socket::shutdown_both, ignored);
          sock.close(ignored);
          co_return;
        }
      }
    }
  }
};

fake_server::fake_server(responder r) : impl_(std::make_unique<impl>(*this, std::move(r))) {
  port_ = listen_on_loopback(impl_->acceptor);
  impl_->run_id = std::string(34, 'f') + std::to_string(100000 + port_);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  thread_ = std::thread{[this] { impl_->io.run(); }};
}

fake_server::~fake_server() {
  impl_->io.stop();
  thread_.join();
  impl_.reset();  // destroys the coroutines, and with them every socket
}

std::string fake_server::uri() const {
  return "redis://127.0.0.1:" + std::to_string(port_);
}

std::vector<fake_server::command> fake_server::received() const {
  std::lock_guard<std::mutex> g{mutex_};
  return received_;
}

std::size_t fake_server::count(std::string_view name) const {
  const std::string want = upper(name);
  std::lock_guard<std::mutex> g{mutex_};
  return static_cast<std::size_t>(
      std::count_if(received_.begin(), received_.end(),
                    [&](const command& c) { return !c.empty() && upper(c[0]) == want; }));
}

std::optional<std::string> fake_server::standard_reply(const command& c,
                                                       const std::string& run_id) {
  if (c.empty()) return std::nullopt;
  const std::string name = upper(c[0]);
  if (name == "AUTH" || name == "SELECT") return "+OK\r\n";
  if (name == "PING") return "+PONG\r\n";
  if (name == "INFO")
    return bulk("# Server\r\nredis_version:7.0.0\r\nrun_id:" + run_id +
                "\r\nuptime_in_seconds:100000\r\n");
  if (name == "ROLE") return "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
  if (name == "EXISTS") return ":0\r\n";
  // The handshake's read of the fence marker: none.
  if (name == "GET" && c.size() == 2 && c[1].ends_with("redlock:fence:marker")) return "$-1\r\n";
  if (name == "TIME") {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    return "*2\r\n" + bulk(std::to_string(us / 1'000'000)) + bulk(std::to_string(us % 1'000'000));
  }
  return std::nullopt;
}

}  // namespace redlock::test
