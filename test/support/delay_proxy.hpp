// SPDX-License-Identifier: BSL-1.0
#pragma once
// A TCP forwarder that adds a network's latency in user space, for kernels without the
// netem queueing discipline: every chunk of bytes read from one side is written to the
// other after a delay drawn per chunk (base plus uniform jitter), never overtaking the
// chunk before it, as on one TCP stream. A lost segment looks to an application like a
// stall of one retransmission timeout; with probability `loss` a chunk is held that much
// longer, and everything behind it waits too. Both directions are delayed independently.
//
// The proxy runs on its own thread with its own io_context. Given a network namespace,
// that thread enters it first, so the listener and every upstream connection live there.

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <thread>

namespace redlock::test {

/// What one link adds to each round trip.
struct link_model {
  /// Mean round trip added: each direction delays by half of it.
  std::chrono::microseconds rtt{0};
  /// Spread: each direction's delay is drawn uniformly from half the round trip ± half the
  /// jitter, so a round trip lies within rtt ± jitter. Must not exceed rtt.
  std::chrono::microseconds jitter{0};
  /// Probability, per chunk and direction, of a stall as a lost segment would cause.
  double loss = 0;
  /// That stall: Linux's minimum TCP retransmission timeout.
  std::chrono::microseconds loss_stall{200'000};
};

class delay_proxy {
 public:
  /// Listens on `listen` (port 0: one the OS picks) and forwards every connection to
  /// `target`, delayed as `model` says. With `netns_fd` >= 0 (an open /run/netns/NAME),
  /// the proxy's thread enters that network namespace before it opens any socket; the
  /// descriptor need only stay open until the constructor returns. Throws
  /// std::system_error if it cannot enter the namespace or listen.
  delay_proxy(int netns_fd, boost::asio::ip::tcp::endpoint listen,
              boost::asio::ip::tcp::endpoint target, link_model model);
  /// Closes every connection and joins the thread. Never throws.
  ~delay_proxy();
  delay_proxy(const delay_proxy&) = delete;
  delay_proxy& operator=(const delay_proxy&) = delete;

  /// Where it listens (with the port the OS picked).
  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::thread thread_;
};

}  // namespace redlock::test
