// SPDX-License-Identifier: BSL-1.0
// A fencing token stops a holder that paused past its lock's validity from overwriting
// the work of the next holder, in a real SQLite database.
//
//   fenced_sqlite redis://...,redis://...,redis://... [database-file]
//
// Holder A takes a fenced lock with a short TTL and then "pauses" (it does nothing
// while its lock expires). Holder B takes the lock, with a larger token, and writes.
// A wakes up and writes with its old token: the database refuses it, because the row
// already carries a larger token. Exit code 0 when that is what happened.

#include <fmt/format.h>
#include <sqlite3.h>

#include <boost/asio.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "redlock/redlock.hpp"
#include "sqlite_util.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using examples::database;
using examples::exec;

// The fenced write: applies only if no larger token has written this row yet.
// Returns whether the row changed.
bool fenced_write(sqlite3* db, const std::string& id, std::int64_t balance, std::uint64_t token) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "UPDATE accounts SET balance = ?1, fence = ?2 WHERE id = ?3 AND fence < ?2",
                     -1, &st, nullptr);
  sqlite3_bind_int64(st, 1, balance);
  sqlite3_bind_int64(st, 2, static_cast<sqlite3_int64>(token));
  sqlite3_bind_text(st, 3, id.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) throw std::runtime_error(std::string{"sqlite: "} + sqlite3_errmsg(db));
  return sqlite3_changes(db) == 1;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: fenced_sqlite redis://host:port,... [database-file]\n";
    return 64;
  }
  std::vector<std::string> nodes;
  std::stringstream in{argv[1]};
  for (std::string item; std::getline(in, item, ',');) nodes.push_back(item);
  const std::string path = argc > 2 ? argv[2] : ":memory:";

  sqlite3* raw = nullptr;
  if (sqlite3_open(path.c_str(), &raw) != SQLITE_OK) {
    std::cerr << "cannot open " << path << "\n";
    return 1;
  }
  database db{raw};
  exec(db.get(),
       "CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL, "
       "fence INTEGER NOT NULL DEFAULT 0);"
       "INSERT OR IGNORE INTO accounts (id, balance) VALUES ('acct:7', 100);");

  asio::io_context io;
  // Two independent clients, as two processes would have. max_ttl: the fleet's longest
  // TTL, for the restart guard (freshly started nodes are held back that long).
  const redlock::config cfg{.nodes = nodes, .max_ttl = 1s};
  redlock::client a{io.get_executor(), cfg};
  redlock::client b{io.get_executor(), cfg};
  bool stale_refused = false, fresh_applied = false;
  redlock::diagnostics diag;  // per-node detail of the last lock call that failed

  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto lock_a = co_await a.async_lock("acct:7", {.ttl = 300ms, .wait = 10s, .fenced = true},
                                            diag, asio::use_awaitable);
        fmt::print("A holds acct:7 with fencing token {}\n", lock_a.fence());

        // A "pauses" here (a GC pause, a swapped-out process) while B takes over.
        auto lock_b = co_await b.async_lock("acct:7", {.ttl = 1s, .wait = 5s, .fenced = true}, diag,
                                            asio::use_awaitable);
        fmt::print("A's lock expired; B holds acct:7 with fencing token {}\n", lock_b.fence());
        fresh_applied = fenced_write(db.get(), "acct:7", 250, lock_b.fence());
        fmt::print("B writes balance 250 with token {}: {}\n", lock_b.fence(),
                   fresh_applied ? "applied" : "refused");
        co_await b.async_unlock(std::move(lock_b), asio::use_awaitable);

        co_await sleep_for(10ms);
        // A wakes up, unaware, and writes with its old token.
        const bool applied = fenced_write(db.get(), "acct:7", 40, lock_a.fence());
        stale_refused = !applied;
        fmt::print("A writes balance 40 with its stale token {}: {}\n", lock_a.fence(),
                   applied ? "applied (WRONG)" : "refused by the database");
        co_await a.async_shutdown(asio::use_awaitable);
        co_await b.async_shutdown(asio::use_awaitable);
      },
      [&](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          std::cerr << "failed: " << ex.what() << "\n";
          if (!diag.message.empty()) std::cerr << "  " << diag.message << "\n";
        }
        // Close the clients' connections so that io.run() returns.
        a.async_shutdown(asio::detached);
        b.async_shutdown(asio::detached);
      });
  io.run();

  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.get(), "SELECT balance, fence FROM accounts WHERE id = 'acct:7'", -1, &st,
                     nullptr);
  if (sqlite3_step(st) == SQLITE_ROW)
    fmt::print("final row: balance {}, fence {}\n", sqlite3_column_int64(st, 0),
               sqlite3_column_int64(st, 1));
  sqlite3_finalize(st);
  return stale_refused && fresh_applied ? 0 : 1;
}
