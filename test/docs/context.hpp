// SPDX-License-Identifier: BSL-1.0
#pragma once
// The names the C++ blocks of README.md and docs/ take for granted (a client called
// `locks`, an io_context, a database, a job, ...), declared so that every block can be
// compiled as it is written: check_blocks.sh wraps each block in a coroutine that has
// these in scope. Stubs only: nothing here runs.

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;
using boost::system::error_code;

namespace doc_context {

struct database {
  void update(const char*, std::uint64_t) {}
  asio::awaitable<void> async_update(const char*, std::uint64_t) { co_return; }
};
struct row_type {};
inline bool insert_row(database&, const row_type&) {
  return true;
}
inline void alert(const std::string&, const std::string&) {}
inline void serve_from_cache() {}
inline void rebuild_cache() {}
template <typename... Args>
void log(const Args&...) {}
inline asio::awaitable<void> process(int) {
  co_return;
}
struct my_queue {
  void push(std::string) {}
};
using T = int;

/// What a block sees: one of these, its members under their usual names.
struct scope {
  asio::io_context io;
  redlock::client locks{io.get_executor(), redlock::config{.nodes = {"redis://127.0.0.1:1"}}};
  asio::steady_timer timer{io};
  database db;
  row_type row;
  redlock::diagnostics diag;
  std::vector<std::string> nodes{"redis://127.0.0.1:1"};
  std::vector<int> chunks;
  std::string digest;
  bool saved = true;
  redlock::lock lk;
  redlock::hold_options hold{.ttl = 10s};
  std::function<asio::awaitable<int>(redlock::keeper&)> work, job;
};

}  // namespace doc_context

using doc_context::T;
