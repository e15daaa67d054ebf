// SPDX-License-Identifier: BSL-1.0
// A pool of workers sharing a resource that takes at most N users at once (a licence
// server, a GPU, a rate-limited API): each worker is a client of its own, as a separate
// process or machine would be, and takes one of N permits before each job.
//
//   worker_pool NODES PERMITS WORKERS JOBS
//   e.g. worker_pool redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 3 8 4
//
// Each job prints which permit it ran on and that permit's fencing token; at the end the
// program says how many jobs ran at once at most (never more than PERMITS) and exits 1 if
// any job failed.

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <optional>
#include <redlock/redlock.hpp>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct pool_stats {
  std::size_t running = 0, most = 0, done = 0, failed = 0;
};

// One worker: `jobs` times, take a permit, run a job under it (the permit kept alive by a
// keeper, as a long job's would be), give it back.
asio::awaitable<void> worker(redlock::client& locks, std::size_t id, std::size_t permits,
                             std::size_t jobs, pool_stats& stats) {
  asio::steady_timer work{co_await asio::this_coro::executor};
  for (std::size_t j = 0; j < jobs; ++j) {
    redlock::diagnostics diag;
    auto [ec, p] = co_await redlock::async_lock_permit(locks, "pool:renderer", permits,
                                                       {.ttl = 3s, .wait = 60s, .fenced = true},
                                                       diag, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      fmt::print(stderr, "worker {}: {}\n", id, diag.message);
      ++stats.failed;
      continue;
    }
    const std::size_t index = p.index;
    const std::uint64_t fence = p.fence();
    redlock::keeper kept{locks, std::move(p.lock)};
    stats.most = std::max(stats.most, ++stats.running);
    fmt::print("worker {} job {}: permit {} (fence {}), {} running\n", id, j, index, fence,
               stats.running);
    // The job: storage it writes to would check `fence` per permit index.
    work.expires_after(50ms);
    co_await work.async_wait(asio::use_awaitable);
    --stats.running;
    auto [stop_ec, lk] = co_await kept.async_stop(asio::as_tuple(asio::use_awaitable));
    if (stop_ec) {
      fmt::print(stderr, "worker {}: permit {} was lost during the job\n", id, index);
      ++stats.failed;
      continue;
    }
    co_await locks.async_unlock(std::move(lk), asio::as_tuple(asio::use_awaitable));
    ++stats.done;
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(list.substr(start, comma - start));
  out.push_back(list.substr(start));
  return out;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 5) {
    fmt::print(stderr, "usage: worker_pool NODES PERMITS WORKERS JOBS\n");
    return 64;
  }
  const auto nodes = split(argv[1]);
  const std::size_t permits = std::stoul(argv[2]), workers = std::stoul(argv[3]),
                    jobs = std::stoul(argv[4]);
  asio::io_context io;
  std::vector<redlock::client> clients;
  try {
    for (std::size_t w = 0; w < workers; ++w)
      clients.emplace_back(io.get_executor(), redlock::config{.nodes = nodes, .max_ttl = 3s});
  } catch (const std::exception& e) {
    fmt::print(stderr, "worker_pool: {}\n", e.what());
    return 64;
  }
  pool_stats stats;
  std::size_t left = workers;
  for (std::size_t w = 0; w < workers; ++w)
    asio::co_spawn(io, worker(clients[w], w, permits, jobs, stats), [&, w](std::exception_ptr e) {
      if (e) ++stats.failed;
      // Each client is shut down when its worker is done, or io.run()
      // would never return; the last one ends the run.
      clients[w].async_shutdown(asio::detached);
      --left;
    });
  io.run();
  fmt::print("{} jobs done, {} failed; at most {} of {} permits in use at once\n", stats.done,
             stats.failed, stats.most, permits);
  return stats.failed == 0 && left == 0 && stats.most <= permits ? 0 : 1;
}
