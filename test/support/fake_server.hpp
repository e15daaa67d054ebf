// SPDX-License-Identifier: BSL-1.0
#pragma once
// A scripted server on a loopback port that speaks just enough RESP to pass for a Redis 7
// master, then does what a test tells it: malformed RESP, absurd lengths, deep nesting,
// unexpected types, floods, silence. Only for what a real redis-server cannot be made to
// do; everything else is tested against the real one (redis_fleet.hpp).
//
// It runs on its own thread with its own io_context, so a client under test cannot slow
// it down, and it records every command it receives. Thread-safe accessors.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

/// What the server does with one command.
struct fake_reply {
  /// Written as is; any bytes at all.
  std::string bytes;
  /// Then `flood_unit` repeated until this many more bytes have gone out, or the client
  /// closed the connection.
  std::uint64_t flood_bytes = 0;
  std::string flood_unit = ":1\r\n";
  /// After writing: close the connection.
  bool close = false;
  /// Write nothing, now or later, on this connection (it still reads).
  bool stall = false;
};

class fake_server {
 public:
  using command = std::vector<std::string>;
  /// Decides the reply to a command; `connection` counts accepted connections from 0.
  /// nullopt: the standard reply (standard_reply()), or an error for unknown commands.
  /// Runs on the server's thread.
  using responder =
      std::function<std::optional<fake_reply>(const command&, std::size_t connection)>;

  /// Listens on 127.0.0.1 on a free port and serves until destroyed. Throws
  /// boost::system::system_error if it cannot listen.
  explicit fake_server(responder r);
  /// Closes every connection and joins the thread. Never throws.
  ~fake_server();
  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;

  std::uint16_t port() const { return port_; }
  /// "redis://127.0.0.1:<port>"
  std::string uri() const;

  /// Connections accepted so far.
  std::size_t connections() const { return accepted_.load(); }
  /// Connections the client closed (end of file or reset seen by the server).
  std::size_t closed_by_client() const { return closed_by_client_.load(); }
  /// Bytes written to clients so far, floods included.
  std::uint64_t bytes_written() const { return written_.load(); }
  /// Every command received, in order of arrival.
  std::vector<command> received() const;
  /// How many received commands have this name (case-insensitive).
  std::size_t count(std::string_view name) const;

  /// The answers of a healthy Redis 7 master to the commands a connection's handshake
  /// sends (AUTH, SELECT, INFO, ROLE, EXISTS, TIME) and to PING; nullopt otherwise.
  /// `run_id` goes into INFO.
  static std::optional<std::string> standard_reply(const command& c, const std::string& run_id);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::size_t> closed_by_client_{0};
  std::atomic<std::uint64_t> written_{0};
  mutable std::mutex mutex_;
  std::vector<command> received_;
  std::thread thread_;
};

}  // namespace redlock::test
