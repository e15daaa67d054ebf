// SPDX-License-Identifier: BSL-1.0
#pragma once
// A fault-injecting TCP proxy between a client under test and one real redis-server:
// the server's answers can be delayed, stalled, cut after a number of bytes (mid-reply),
// swallowed (a black hole that accepts and never answers), or every connection reset,
// on command and at once. Runs on its own thread with its own io_context; every control
// call returns once the fault is in force.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace redlock::test {

class fault_proxy {
 public:
  /// Listens on a free loopback port and forwards each connection to 127.0.0.1:`target`.
  /// Throws boost::system::system_error if it cannot listen.
  explicit fault_proxy(std::uint16_t target);
  /// Resets every connection and joins the thread. Never throws.
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  std::uint16_t port() const { return port_; }
  /// "redis://127.0.0.1:<port>"
  std::string uri() const;

  /// Holds every chunk the server sends for `d` before passing it on (order kept).
  void delay(std::chrono::milliseconds d);
  /// Holds everything the server sends until heal(); requests still reach the server.
  void stall();
  /// Passes on `bytes` more bytes from the server on each open connection, then resets
  /// it: a reply cut where the test says. New connections are not affected.
  void cut_after(std::size_t bytes);
  /// Nothing passes either way, on open and new connections; new connections are
  /// accepted and never answered (a host whose server hangs, or a firewall that drops).
  void blackhole();
  /// Resets (RST) every open connection now.
  void reset_all();
  /// Ends delay, stall and black hole; what was held passes on.
  void heal();

  /// Connections accepted so far.
  std::size_t connections() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace redlock::test
