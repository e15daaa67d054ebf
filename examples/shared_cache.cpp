// SPDX-License-Identifier: BSL-1.0
// A cache that readers serve from while a writer rebuilds it now and then: the readers
// hold the cache's shared lock (a reader's lease each, all at once), the writer its
// exclusive lock, so no reader ever sees a cache half rebuilt. Each reader and the writer
// has a client of its own, as separate processes would: the exclusion comes from the
// nodes, not from this program. Prints what happened; exits 1 if a reader ever saw the
// cache mid-rebuild or the readers never overlapped.
//
//   shared_cache redis://127.0.0.1:7001,redis://127.0.0.1:7002,... [seconds]

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// The cache, as the readers and the writer see it (in this process, for the example).
struct cache {
  std::string contents = "version 0";
  bool rebuilding = false;
  int readers_inside = 0, most_readers = 0, torn_reads = 0, reads = 0, rebuilds = 0;
};

asio::awaitable<void> serve(redlock::client& locks, cache& c, asio::steady_timer::time_point end) {
  asio::steady_timer t{co_await asio::this_coro::executor};
  const redlock::hold_options lease{.ttl = 2s, .wait = 10s, .shared = true};
  while (asio::steady_timer::clock_type::now() < end) {
    co_await redlock::with_lock(locks, "cache", lease,
                                [&](redlock::keeper&) -> asio::awaitable<void> {
                                  c.most_readers = std::max(c.most_readers, ++c.readers_inside);
                                  if (c.rebuilding) ++c.torn_reads;
                                  ++c.reads;
                                  t.expires_after(5ms);  // serving a request from the cache
                                  co_await t.async_wait(asio::use_awaitable);
                                  --c.readers_inside;
                                });
  }
}

asio::awaitable<void> rebuild(redlock::client& locks, cache& c,
                              asio::steady_timer::time_point end) {
  asio::steady_timer t{co_await asio::this_coro::executor};
  const redlock::hold_options exclusive{.ttl = 2s, .wait = 10s, .fenced = true};
  while (asio::steady_timer::clock_type::now() < end) {
    t.expires_after(100ms);
    co_await t.async_wait(asio::use_awaitable);
    co_await redlock::with_lock(locks, "cache", exclusive,
                                [&](redlock::keeper& k) -> asio::awaitable<void> {
                                  c.rebuilding = true;
                                  if (c.readers_inside > 0) ++c.torn_reads;
                                  t.expires_after(20ms);  // rebuilding takes a while
                                  co_await t.async_wait(asio::use_awaitable);
                                  c.contents = fmt::format("version {}", k.fence());
                                  c.rebuilding = false;
                                  ++c.rebuilds;
                                });
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: shared_cache redis://host:port,... [seconds]\n";
    return 64;
  }
  std::vector<std::string> nodes;
  std::stringstream in{argv[1]};
  for (std::string item; std::getline(in, item, ',');) nodes.push_back(item);
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;

  asio::io_context io;
  // Four readers and one writer, each with its own connections. Fresh nodes: the restart
  // guard's period is the longest TTL used here.
  const redlock::config cfg{.nodes = nodes, .max_ttl = 2s};
  std::vector<std::unique_ptr<redlock::client>> clients;
  for (int i = 0; i < 5; ++i)
    clients.push_back(std::make_unique<redlock::client>(io.get_executor(), cfg));
  cache c;
  int exit_code = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        const auto end = asio::steady_timer::clock_type::now() + std::chrono::seconds{seconds};
        try {
          co_await (serve(*clients[0], c, end) && serve(*clients[1], c, end) &&
                    serve(*clients[2], c, end) && serve(*clients[3], c, end) &&
                    rebuild(*clients[4], c, end));
        } catch (const boost::system::system_error& e) {
          fmt::print("stopped: {}\n", e.what());
          exit_code = 1;
        }
        for (auto& cl : clients) co_await cl->async_shutdown(asio::use_awaitable);
      },
      asio::detached);
  io.run();
  fmt::print(
      "{} reads, up to {} readers at once; {} rebuilds, now \"{}\"; {} reads of a cache "
      "mid-rebuild\n",
      c.reads, c.most_readers, c.rebuilds, c.contents, c.torn_reads);
  if (c.torn_reads > 0 || c.most_readers < 2 || c.rebuilds == 0) exit_code = 1;
  return exit_code;
}
