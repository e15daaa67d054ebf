// SPDX-License-Identifier: BSL-1.0
#include "fault_proxy.hpp"

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <future>
#include <list>
#include <optional>

#include "loopback.hpp"

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t chunk = 64u << 10;
}  // namespace

// Everything below runs on the proxy's thread; the public calls post to it and wait.
struct fault_proxy::impl {
  struct link {
    link(tcp::socket c, const asio::any_io_executor& ex) : client(std::move(c)), server(ex) {}
    tcp::socket client;
    tcp::socket server;
    std::optional<std::size_t> budget;  // server bytes still to pass on before a reset
    bool dead = false;
  };

  asio::io_context io;
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  std::atomic<std::size_t> accepted{0};
  std::list<std::shared_ptr<link>> links;
  // The faults in force.
  std::chrono::milliseconds delay{0};
  bool stalled = false;
  bool blackholed = false;
  // Never expires; cancelled whenever a fault changes, so that held pumps look again.
  asio::steady_timer changed{io, asio::steady_timer::time_point::max()};

  void faults_changed() { changed.cancel(); }

  asio::awaitable<void> wait_while(const std::function<bool()>& hold, const link& l) {
    while (hold() && !l.dead) co_await changed.async_wait(use_tuple);
  }

  void reset(link& l) {
    if (l.dead) return;
    l.dead = true;
    error_code ignored;
    l.client.set_option(tcp::socket::linger(true, 0), ignored);  // RST, not FIN
    l.client.close(ignored);
    l.server.close(ignored);
    faults_changed();  // wakes this link's held pumps, which then see it dead
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
      if (ec) co_return;
      ++accepted;
      links.remove_if([](const auto& l) { return l->dead; });
      auto l = std::make_shared<link>(std::move(sock), io.get_executor());
      links.push_back(l);
      asio::co_spawn(io, open(l), asio::detached);
    }
  }

  // A black hole accepts and then answers nothing, not even by connecting upstream.
  asio::awaitable<void> open(std::shared_ptr<link> l) {
    co_await wait_while([this] { return blackholed; }, *l);
    if (l->dead) co_return;
    auto [ec] = co_await l->server.async_connect(target, use_tuple);
    if (ec) {
      reset(*l);
      co_return;
    }
    asio::co_spawn(io, upstream(l), asio::detached);
    asio::co_spawn(io, downstream(l), asio::detached);
  }

  // Client to server: held (not dropped: TCP retransmits) while the hole lasts.
  asio::awaitable<void> upstream(std::shared_ptr<link> l) {
    std::array<char, chunk> buf;
    for (;;) {
      auto [ec, n] = co_await l->client.async_read_some(asio::buffer(buf), use_tuple);
      if (ec || l->dead) {
        reset(*l);
        co_return;
      }
      co_await wait_while([this] { return blackholed; }, *l);
      if (l->dead) co_return;
      auto [wec, w] = co_await asio::async_write(l->server, asio::buffer(buf.data(), n), use_tuple);
      if (wec) {
        reset(*l);
        co_return;
      }
    }
  }

  // Server to client: where delay, stall, black hole and cuts apply.
  asio::awaitable<void> downstream(std::shared_ptr<link> l) {
    std::array<char, chunk> buf;
    for (;;) {
      auto [ec, n] = co_await l->server.async_read_some(asio::buffer(buf), use_tuple);
      if (ec || l->dead) {
        reset(*l);
        co_return;
      }
      for (std::size_t off = 0; off < n;) {
        co_await wait_while([this] { return stalled || blackholed; }, *l);
        if (l->dead) co_return;
        if (delay.count() > 0) {
          asio::steady_timer t{io, delay};
          co_await t.async_wait(use_tuple);
          if (l->dead) co_return;
        }
        std::size_t len = n - off;
        if (l->budget) {
          len = std::min(len, *l->budget);
          *l->budget -= len;
        }
        if (len > 0) {
          auto [wec, w] =
              co_await asio::async_write(l->client, asio::buffer(buf.data() + off, len), use_tuple);
          if (wec) {
            reset(*l);
            co_return;
          }
          off += len;
        }
        if (l->budget && *l->budget == 0) {
          reset(*l);
          co_return;
        }
      }
    }
  }

  // Runs `f` on the proxy's thread and returns once it has.
  template <typename F>
  void apply(F f) {
    std::promise<void> done;
    auto applied = done.get_future();
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    applied.wait();
  }
};

fault_proxy::fault_proxy(std::uint16_t target) : impl_(std::make_unique<impl>()) {
  impl_->target = tcp::endpoint{asio::ip::address_v4::loopback(), target};
  port_ = listen_on_loopback(impl_->acceptor);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  thread_ = std::thread{[this] { impl_->io.run(); }};
}

fault_proxy::~fault_proxy() {
  impl_->apply([this] {
    for (auto& l : impl_->links) impl_->reset(*l);
  });
  impl_->io.stop();
  thread_.join();
  impl_.reset();
}

std::string fault_proxy::uri() const {
  return "redis://127.0.0.1:" + std::to_string(port_);
}

void fault_proxy::delay(std::chrono::milliseconds d) {
  impl_->apply([this, d] { impl_->delay = d; });
}

void fault_proxy::stall() {
  impl_->apply([this] { impl_->stalled = true; });
}

void fault_proxy::cut_after(std::size_t bytes) {
  impl_->apply([this, bytes] {
    for (auto& l : impl_->links) l->budget = bytes;
  });
}

void fault_proxy::blackhole() {
  impl_->apply([this] { impl_->blackholed = true; });
}

void fault_proxy::reset_all() {
  impl_->apply([this] {
    for (auto& l : impl_->links) impl_->reset(*l);
  });
}

void fault_proxy::heal() {
  impl_->apply([this] {
    impl_->delay = std::chrono::milliseconds{0};
    impl_->stalled = false;
    impl_->blackholed = false;
    impl_->faults_changed();
  });
}

std::size_t fault_proxy::connections() const {
  return impl_->accepted.load();
}

}  // namespace redlock::test
