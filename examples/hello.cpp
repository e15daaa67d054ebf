// The README's example, compiled with the project so that it cannot go stale.
#include <boost/asio.hpp>
#include <redlock/redlock.hpp>
namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> save_once(redlock::client& locks) {
  // Waits up to 2 s for the lock; throws boost::system::system_error if it cannot get it.
  redlock::lock lk = co_await locks.async_lock("order:42", {.ttl = 10s, .wait = 2s},
                                               asio::use_awaitable);
  // ... work while lk.valid(), finishing before lk.deadline() ...
  co_await locks.async_unlock(lk, asio::use_awaitable);
}

int main() {
  asio::io_context io;
  redlock::client locks{io.get_executor(), redlock::config{
      .nodes = {"redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003"}}};
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    co_await save_once(locks);
    co_await locks.async_shutdown(asio::use_awaitable);  // lets io.run() return
  }, asio::detached);
  io.run();
}
