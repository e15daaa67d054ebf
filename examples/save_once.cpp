// SPDX-License-Identifier: BSL-1.0
// Save each distinct result exactly once, although the same result arrives from many
// producers at nearly the same moment: the claim gate in front of a real database.
//
//   save_once NODES [--producers P] [--events N] [--keys K] [--in-flight C] [--db FILE]
//
// P producer threads stand for P service instances: each has its own io_context, its own
// redlock::client and its own SQLite connection to one database file. Each emits N
// events whose keys follow a skewed (Zipf) distribution over K keys; half of them come
// from a stream all producers share, so the same key reaches every producer at about
// the same time. Every event goes through the gate, one coroutine per event:
//
//   claim the key -> won: INSERT the row (UNIQUE key) -> settle as "done" for the run
//                 -> held / done / duplicate: stopped, no database write
//
// The table's UNIQUE constraint is the last line of defence: a violation means two
// producers both believed they were first. Exit code 0 when there were none and the
// table holds exactly the rows the winners inserted.

#include <fmt/format.h>
#include <sqlite3.h>

#include <atomic>
#include <boost/asio.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redlock/redlock.hpp"
#include "sqlite_util.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct settings {
  std::vector<std::string> nodes;
  int producers = 4;
  std::uint64_t events = 50000;  // per producer
  std::uint64_t keys = 20000;
  int in_flight = 128;  // events in progress per producer
  std::string db = "save_once.db";
};

struct totals {
  std::atomic<std::int64_t> busiest_ns{0};  // the longest a producer took, from its first event
  std::atomic<std::uint64_t> events{0}, won{0}, inserted{0}, violations{0}, held{0}, done{0},
      duplicate{0}, failed{0}, retries{0}, db_errors{0};
};

// ---- the database ---------------------------------------------------------------------

using examples::database;
using examples::exec;

database open_db(const std::string& path) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(path.c_str(), &raw) != SQLITE_OK) {
    database guard{raw};
    throw std::runtime_error("sqlite: cannot open " + path);
  }
  database db{raw};
  sqlite3_busy_timeout(db.get(), 5000);
  exec(db.get(), "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL");
  return db;
}

enum class insert_result { inserted, violation, error };

insert_result insert_row(sqlite3* db, const std::string& key, int producer) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO results (key, producer) VALUES (?1, ?2)", -1, &st,
                         nullptr) != SQLITE_OK)
    return insert_result::error;
  sqlite3_bind_text(st, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 2, producer);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc == SQLITE_DONE) return insert_result::inserted;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return insert_result::violation;
  return insert_result::error;
}

std::int64_t count_rows(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  std::int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

// ---- the events -----------------------------------------------------------------------

std::uint64_t mix(std::uint64_t x) {  // splitmix64: a fixed, well-spread hash of x
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Zipf(1.1) over [0, keys): the cumulative weights, searched with a uniform draw.
class zipf {
 public:
  explicit zipf(std::uint64_t keys) : cdf_(keys) {
    double sum = 0;
    for (std::uint64_t k = 0; k < keys; ++k) cdf_[k] = sum += 1.0 / std::pow(double(k + 1), 1.1);
    for (auto& c : cdf_) c /= sum;
  }
  std::uint64_t pick(std::uint64_t random) const {
    const double u = double(random >> 11) * 0x1.0p-53;
    return static_cast<std::uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

// Event i of a producer: even events come from the stream every producer shares (the
// same key at the same position everywhere), odd ones from the producer's own.
std::string key_of(const zipf& z, int producer, std::uint64_t i) {
  const std::uint64_t r = (i % 2 == 0) ? mix(i) : mix(i ^ (std::uint64_t(producer + 1) << 48));
  return fmt::format("result:{}", z.pick(r));
}

// ---- one producer ---------------------------------------------------------------------

void run_producer(const settings& s, const zipf& z, int id, totals& t) {
  asio::io_context io{1};
  redlock::client locks{io.get_executor(), redlock::config{.nodes = s.nodes}};
  database db = open_db(s.db);
  std::uint64_t next = 0;
  int active = s.in_flight;

  auto worker = [&]() -> asio::awaitable<void> {
    asio::steady_timer pause{io};
    while (next < s.events) {
      const std::string key = key_of(z, id, next++);
      auto c = co_await locks.async_claim(key, 10s, asio::use_awaitable);
      // Undecided (too few nodes answered in time, e.g. on an overloaded machine): the
      // event is not lost, try again a little later.
      for (int retry = 0; c.status == redlock::claim_status::failed && retry < 50; ++retry) {
        t.retries.fetch_add(1, std::memory_order_relaxed);
        pause.expires_after(20ms);
        co_await pause.async_wait(asio::use_awaitable);
        auto again = co_await locks.async_claim(key, 10s, asio::use_awaitable);
        c = std::move(again);
      }
      t.events.fetch_add(1, std::memory_order_relaxed);
      switch (c.status) {
        case redlock::claim_status::won:
          break;
        case redlock::claim_status::held:
          t.held.fetch_add(1);
          continue;
        case redlock::claim_status::done:
          t.done.fetch_add(1);
          continue;
        case redlock::claim_status::duplicate:
          t.duplicate.fetch_add(1);
          continue;
        case redlock::claim_status::failed:
          t.failed.fetch_add(1);
          continue;
      }
      t.won.fetch_add(1);
      const auto r = insert_row(db.get(), key, id);
      if (r == insert_result::inserted) t.inserted.fetch_add(1);
      if (r == insert_result::violation) t.violations.fetch_add(1);
      if (r == insert_result::error) t.db_errors.fetch_add(1);
      // Saved: a done marker for longer than the run, so no later event saves it again.
      // Not saved: release, so another producer may try.
      const auto keep = r == insert_result::inserted ? std::chrono::milliseconds{10min} : 0ms;
      auto [ec] = co_await locks.async_settle(c.lock, keep, asio::as_tuple(asio::use_awaitable));
      if (ec) fmt::print(stderr, "producer {}: settling {}: {}\n", id, key, ec.message());
    }
    // The last worker shuts the client down (it sends what is queued and closes), so
    // that io.run() returns.
    if (--active == 0) co_await locks.async_shutdown(asio::use_awaitable);
  };
  std::chrono::steady_clock::time_point started;
  // Fresh (or restarted) nodes are held back by the restart guard for the fleet's longest
  // TTL, and claims do not wait: open the gate once a probe claim goes through.
  auto open_gate = [&]() -> asio::awaitable<void> {
    asio::steady_timer pause{io};
    for (int attempt = 0;; ++attempt) {
      auto probe = co_await locks.async_claim(fmt::format("save_once:probe:{}", id), 10s,
                                              asio::use_awaitable);
      if (probe.won()) {
        co_await locks.async_settle(probe.lock, 0ms, asio::use_awaitable);
        break;
      }
      if (attempt == 400)
        throw std::runtime_error(
            "the gate did not open within 20 s: " + std::string{redlock::to_string(probe.status)} +
            " " + probe.error.message());
      pause.expires_after(50ms);
      co_await pause.async_wait(asio::use_awaitable);
    }
    started = std::chrono::steady_clock::now();
    for (int w = 0; w < s.in_flight; ++w)
      asio::co_spawn(io, worker(), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  };
  asio::co_spawn(io, open_gate(), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  io.run();
  const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
  auto prev = t.busiest_ns.load();
  while (prev < took && !t.busiest_ns.compare_exchange_weak(prev, took)) {
  }
}

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr,
             "save_once: {}\nusage: save_once redis://host:port,... [--producers P] "
             "[--events N] [--keys K] [--in-flight C] [--db FILE]\n",
             why);
  std::exit(64);
}

settings parse(int argc, char** argv) {
  if (argc < 2) usage("no nodes given");
  settings s;
  std::string list = argv[1];
  for (std::size_t at = 0; at <= list.size();) {
    const auto comma = std::min(list.find(',', at), list.size());
    if (comma > at) s.nodes.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string v = argv[i + 1];
    try {
      if (flag == "--producers")
        s.producers = std::stoi(v);
      else if (flag == "--events")
        s.events = std::stoull(v);
      else if (flag == "--keys")
        s.keys = std::stoull(v);
      else if (flag == "--in-flight")
        s.in_flight = std::stoi(v);
      else if (flag == "--db")
        s.db = v;
      else
        usage("unknown option " + flag);
    } catch (const std::logic_error&) {
      usage("bad number for " + flag + ": " + v);
    }
  }
  if (s.producers < 1 || s.in_flight < 1 || s.keys < 1) usage("counts must be positive");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  try {
    std::remove(s.db.c_str());
    std::remove((s.db + "-wal").c_str());
    std::remove((s.db + "-shm").c_str());
    {
      database db = open_db(s.db);
      exec(db.get(), "CREATE TABLE results (key TEXT NOT NULL UNIQUE, producer INTEGER NOT NULL)");
    }
    const zipf z{s.keys};
    totals t;
    std::vector<std::thread> producers;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(s.producers));
    for (int p = 0; p < s.producers; ++p)
      producers.emplace_back([&, p] {
        try {
          run_producer(s, z, p, t);
        } catch (...) {
          errors[static_cast<std::size_t>(p)] = std::current_exception();
        }
      });
    for (auto& th : producers) th.join();
    const double secs = double(t.busiest_ns.load()) / 1e9;
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);

    database db = open_db(s.db);
    const auto rows = count_rows(db.get(), "SELECT COUNT(*) FROM results");
    const auto distinct = count_rows(db.get(), "SELECT COUNT(DISTINCT key) FROM results");
    const auto events = t.events.load();
    const auto stopped = t.held + t.done + t.duplicate;
    fmt::print(
        "save_once: {} producers x {} events over {} keys (Zipf 1.1, half shared), {} in flight "
        "each\n"
        "  {} events in {:.2f} s: {:.0f} events/s = {:.0f} claims/s\n"
        "  won {}: inserted {}, unique-key violations {}, database errors {}\n"
        "  stopped by the gate {} ({:.1f}%): held {}, done {}, duplicate {}; failed {} (after {} "
        "retries)\n"
        "  table rows {} (distinct keys {})\n",
        s.producers, s.events, s.keys, s.in_flight, events, secs, double(events) / secs,
        double(events) / secs, t.won.load(), t.inserted.load(), t.violations.load(),
        t.db_errors.load(), stopped, events ? 100.0 * double(stopped) / double(events) : 0.0,
        t.held.load(), t.done.load(), t.duplicate.load(), t.failed.load(), t.retries.load(), rows,
        distinct);
    const bool ok = t.violations == 0 && t.db_errors == 0 && t.failed == 0 && rows > 0 &&
                    rows == std::int64_t(t.inserted.load()) && rows == distinct;
    if (!ok)
      fmt::print(stderr, "save_once: FAILED: {}\n",
                 t.violations || rows != distinct ? "duplicates reached the database"
                                                  : "claims failed or nothing was saved");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "save_once: {}\n", e.what());
    return 1;
  }
}
