// SPDX-License-Identifier: BSL-1.0
// Several workers, in three independent clients, contend for one lock across the
// nodes given on the command line, and print who holds it.
//
//   contention_demo redis://127.0.0.1:7001,redis://127.0.0.1:7002,...

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <iostream>
#include <sstream>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in{s};
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

asio::awaitable<void> worker(redlock::client& locks, std::string name, int* inside, int* overlaps) {
  asio::steady_timer pause{co_await asio::this_coro::executor};
  for (int round = 1; round <= 3; ++round) {
    redlock::lock lk =
        co_await locks.async_lock("demo:printer", {.ttl = 2s, .wait = 30s}, asio::use_awaitable);
    if (++*inside != 1) ++*overlaps;
    fmt::print("{:>9} holds the lock (round {}, token {}..., {} ms of validity left){}\n", name,
               round, lk.token().substr(0, 8), lk.validity().count(),
               *inside == 1 ? "" : "  <-- OVERLAP!");
    pause.expires_after(50ms);  // the "work"
    co_await pause.async_wait(asio::use_awaitable);
    --*inside;
    co_await locks.async_unlock(std::move(lk), asio::use_awaitable);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: contention_demo redis://host:port,redis://host:port,...\n";
    return 64;
  }
  asio::io_context io;
  const auto nodes = split(argv[1]);
  std::vector<redlock::client> clients;
  // max_ttl is the fleet's longest lock TTL: a node that restarted less than that long
  // ago does not vote (the restart guard). The demo's nodes have just started, so the
  // first locks wait about that long.
  const redlock::config cfg{.nodes = nodes, .max_ttl = 2s};
  for (int i = 0; i < 3; ++i) clients.emplace_back(io.get_executor(), cfg);
  fmt::print("{} workers in 3 clients contend for \"demo:printer\" on {} nodes\n", 6, nodes.size());
  fmt::print("(freshly started nodes are held back by the restart guard for max_ttl = 2 s)\n");

  int inside = 0;
  int overlaps = 0;
  int failures = 0;
  int finished = 0;
  for (int w = 0; w < 6; ++w) {
    auto& c = clients[static_cast<std::size_t>(w % 3)];
    asio::co_spawn(io, worker(c, fmt::format("worker-{}", w + 1), &inside, &overlaps),
                   [&](std::exception_ptr e) {
                     if (e) {
                       ++failures;
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& ex) {
                         std::cerr << "worker failed: " << ex.what() << "\n";
                       }
                     }
                     if (++finished == 6)
                       for (auto& cl : clients) cl.async_shutdown(asio::detached);
                   });
  }
  io.run();
  fmt::print("done: {} failed workers, {} overlapping turns\n", failures, overlaps);
  return failures == 0 && overlaps == 0 ? 0 : 1;
}
