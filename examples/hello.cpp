// SPDX-License-Identifier: BSL-1.0
// The README's example, compiled with the project so that it cannot go stale.
#include <boost/asio.hpp>
#include <iostream>
#include <optional>
#include <redlock/redlock.hpp>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Throws redlock::error_with_diagnostics when a step fails: its what() says what each
// node did. (Called without a token, each operation is awaitable and throws that.)
asio::awaitable<void> save_once(redlock::client& locks) {
  // Waiting up to 5 s also outlasts the restart guard of nodes started just before.
  const redlock::lock_options opts{.ttl = 2s, .wait = 5s};
  redlock::lock lk = co_await locks.async_lock("order:42", opts);
  std::cout << "locked " << lk.resource() << " for " << lk.validity().count() << " ms\n";
  // ... work while lk.valid(), finishing before lk.deadline() ...
  co_await locks.async_unlock(std::move(lk));  // the release takes the lock over
}

int main(int argc, char* argv[]) {
  std::vector<std::string> nodes(argv + 1, argv + argc);  // redis://host:port ...
  if (nodes.empty())
    nodes = {"redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003"};
  asio::io_context io;
  // max_ttl: the longest TTL any client of these nodes uses; a node that started less
  // than that long ago does not vote yet (the restart guard, docs/getting-started.md).
  std::optional<redlock::client> client;
  try {  // a malformed node URI is refused here, before any I/O
    client.emplace(io.get_executor(), redlock::config{.nodes = nodes, .max_ttl = 2s});
  } catch (const std::exception& e) {
    std::cerr << "hello: " << e.what() << "\n";
    return 1;
  }
  redlock::client& locks = *client;
  int status = 0;
  asio::co_spawn(io, save_once(locks), [&](std::exception_ptr failure) {
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        std::cerr << "hello: " << e.what() << "\n";
      }
      status = 1;
    }
    locks.async_shutdown(asio::detached);  // in every case, or io.run() never returns
  });
  io.run();
  return status;
}
