// SPDX-License-Identifier: BSL-1.0
#include "delay_proxy.hpp"

#include <sched.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <deque>
#include <future>
#include <random>
#include <system_error>
#include <vector>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t chunk_size = 64u << 10;

// One direction of one connection: chunks waiting for their time to be written.
struct delay_line {
  struct held {
    clock_type::time_point due;
    std::vector<char> bytes;
  };
  explicit delay_line(const asio::any_io_executor& ex) : wake(ex) {}

  std::deque<held> queue;
  clock_type::time_point last_due{};
  // The writer sleeps on it; the reader cancels it when it adds a chunk or stops.
  asio::steady_timer wake;
  bool ended = false;  // the reading side saw end of stream (or an error)
};

struct link {
  link(tcp::socket c, const asio::any_io_executor& ex)
      : client(std::move(c)), server(ex), up(ex), down(ex) {}

  // Drops the connection both ways at once, with whatever was still held: what a reset
  // does on a real network. (The queues are left to their writers, which may be writing
  // from them; they stop at the closed socket.)
  void abort() {
    error_code ignored;
    client.close(ignored);
    server.close(ignored);
    for (delay_line* line : {&up, &down}) {
      line->ended = true;
      line->wake.cancel();
    }
  }

  tcp::socket client;
  tcp::socket server;
  delay_line up;    // client to server
  delay_line down;  // server to client
};

}  // namespace

struct delay_proxy::impl {
  impl(tcp::endpoint t, link_model m) : target(t), model(m), rng(std::random_device{}()) {}

  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  link_model model;
  std::mt19937_64 rng;

  // This chunk's one-way delay: half the round trip, ± half the jitter, plus a stall now
  // and then.
  clock_type::duration draw_delay() {
    const auto half = model.rtt / 2;
    const auto spread = model.jitter / 2;
    std::uniform_int_distribution<std::int64_t> jitter(-spread.count(), spread.count());
    auto d = half + std::chrono::microseconds{jitter(rng)};
    if (model.loss > 0 && std::bernoulli_distribution{model.loss}(rng)) d += model.loss_stall;
    return d;
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
      if (ec) co_return;
      auto l = std::make_shared<link>(std::move(sock), io.get_executor());
      asio::co_spawn(io, open(l), asio::detached);
    }
  }

  asio::awaitable<void> open(std::shared_ptr<link> l) {
    auto [ec] = co_await l->server.async_connect(target, use_tuple);
    if (ec) {
      l->abort();
      co_return;
    }
    // The delay is ours to add; Nagle's algorithm would add its own on top.
    error_code ignored;
    l->client.set_option(tcp::no_delay(true), ignored);
    l->server.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(io, read_side(l, l->client, l->up), asio::detached);
    asio::co_spawn(io, write_side(l, l->server, l->up), asio::detached);
    asio::co_spawn(io, read_side(l, l->server, l->down), asio::detached);
    asio::co_spawn(io, write_side(l, l->client, l->down), asio::detached);
  }

  // Reads as soon as bytes arrive, stamps each chunk with its due time, and keeps reading:
  // the delay must not slow down what follows (a pipelined stream keeps flowing).
  asio::awaitable<void> read_side(std::shared_ptr<link> l, tcp::socket& from, delay_line& line) {
    std::array<char, chunk_size> buf;
    for (;;) {
      auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), use_tuple);
      if (ec) {
        if (ec != asio::error::eof) l->abort();
        line.ended = true;
        line.wake.cancel();
        co_return;
      }
      // Never before the chunk ahead of it: one stream keeps its order.
      const auto due = std::max(clock_type::now() + draw_delay(), line.last_due);
      line.last_due = due;
      line.queue.push_back({due, std::vector<char>(buf.data(), buf.data() + n)});
      line.wake.cancel();
    }
  }

  // Writes each chunk when it is due; passes the end of the stream on once all is written.
  asio::awaitable<void> write_side(std::shared_ptr<link> l, tcp::socket& to, delay_line& line) {
    for (;;) {
      if (!to.is_open()) co_return;
      if (line.queue.empty()) {
        if (line.ended) {
          error_code ignored;
          to.shutdown(tcp::socket::shutdown_send, ignored);
          co_return;
        }
        line.wake.expires_at(clock_type::time_point::max());
        co_await line.wake.async_wait(use_tuple);
        continue;
      }
      const auto due = line.queue.front().due;
      if (clock_type::now() < due) {
        line.wake.expires_at(due);
        co_await line.wake.async_wait(use_tuple);
        continue;
      }
      auto [ec, n] =
          co_await asio::async_write(to, asio::buffer(line.queue.front().bytes), use_tuple);
      if (ec) {
        l->abort();
        co_return;
      }
      line.queue.pop_front();
    }
  }
};

delay_proxy::delay_proxy(int netns_fd, tcp::endpoint listen, tcp::endpoint target, link_model model)
    : impl_(std::make_unique<impl>(target, model)) {
  if (model.jitter > model.rtt) throw std::invalid_argument("delay_proxy: jitter exceeds rtt");
  std::promise<tcp::endpoint> started;
  auto listening = started.get_future();
  thread_ = std::thread{[this, netns_fd, listen, &started] {
    try {
      // setns moves only the calling thread; sockets keep the namespace they were made in.
      if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0)
        throw std::system_error(errno, std::generic_category(), "setns");
      impl_->acceptor.open(listen.protocol());
      impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
      impl_->acceptor.bind(listen);
      impl_->acceptor.listen();
      started.set_value(impl_->acceptor.local_endpoint());
    } catch (const boost::system::system_error& e) {
      started.set_exception(std::make_exception_ptr(std::system_error(e.code(), e.what())));
      return;
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
    impl_->io.run();
  }};
  try {
    endpoint_ = listening.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

delay_proxy::~delay_proxy() {
  impl_->io.stop();
  thread_.join();
  // Destroying the io_context destroys the suspended coroutines, and with them the links
  // and their sockets.
  impl_.reset();
}

}  // namespace redlock::test
