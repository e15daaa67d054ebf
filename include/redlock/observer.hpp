// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Observability: hooks a program installs on a client (config::observer) to see what its
/// locks do, and a ready-made observer that keeps Prometheus metrics.

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/config.hpp"

namespace redlock {

/// What one node answered in one round of a lock attempt or an extension.
enum class node_answer : std::uint8_t {
  yes,        ///< set the key for us (attempt), or extended it (extension)
  held,       ///< another owner holds the key (attempt)
  refused,    ///< the key no longer holds our token (extension)
  failed,     ///< an error: node_reply::error says which (timeout, unavailable, server error...)
  held_back,  ///< does not vote now: restart guard, clock jump, replica or duplicate
  no_answer,  ///< no reply yet when the outcome was decided (a majority had decided it)
};

/// Human-readable name of an answer ("yes", "held", ...).
const char* to_string(node_answer a) noexcept;

/// One node's part in one round.
struct node_reply {
  std::size_t node = 0;        ///< index in config::nodes
  std::string_view address{};  ///< "host:port", never credentials
  node_answer answer = node_answer::no_answer;
  boost::system::error_code error{};  ///< set when answer is failed or held_back
  /// From the start of the round (the request's enqueue) to this node's reply; negative
  /// when there was no reply before the decision.
  std::chrono::microseconds latency{-1};
};

/// One round of an async_lock or async_try_lock call (a waiting call may make several).
struct attempt_event {
  std::string_view resource{};  ///< as given to the call, without the key prefix
  bool fenced = false;
  unsigned attempt = 0;  ///< 1 for the call's first round
  /// Success when the round won the lock; otherwise contended, no_quorum,
  /// validity_exhausted, wrong_type, or cancelled or shut_down (the call ended with the
  /// round still out).
  boost::system::error_code outcome{};
  /// From the round's start to its decision (a fenced round's write-back included, when
  /// it had one).
  std::chrono::microseconds elapsed{0};
  std::uint64_t fence = 0;              ///< the fencing token of a won fenced round, else 0
  std::span<const node_reply> nodes{};  ///< one per node, in config::nodes order
};

/// The end of an async_lock or async_try_lock call.
struct acquire_event {
  std::string_view resource{};
  bool fenced = false;
  bool waiting = false;   ///< async_lock (true) or async_try_lock (false)
  unsigned attempts = 0;  ///< rounds sent (0 when refused before any I/O)
  /// The call's result: success, or the error its handler receives.
  boost::system::error_code outcome{};
  std::chrono::microseconds elapsed{0};  ///< from the call's start on the strand to completion
  std::uint64_t fence = 0;
};

/// The end of one extension: async_extend, or one lock's part of a keeper's renewal.
struct extend_event {
  std::string_view resource{};
  bool by_keeper = false;  ///< a keeper's background renewal (true) or async_extend
  /// Success, or why not: not_held, no_quorum, validity_exhausted, lock_lost, cancelled,
  /// an argument error (invalid_ttl, ...). A keeper retries no_quorum while validity remains.
  boost::system::error_code outcome{};
  std::chrono::microseconds elapsed{0};
  std::span<const node_reply> nodes{};  ///< empty when nothing was sent
};

/// A held lock found lost. Reported once per lock, where the library notices it: by a
/// keeper (or with_lock), or by an async_extend call. A lock nobody extends runs out at
/// its deadline without an event.
struct loss_event {
  std::string_view resource{};
  bool by_keeper = false;
  /// not_held: a majority no longer holds our token (expired there, or deleted);
  /// lock_lost: the validity deadline came without a confirmed extension.
  boost::system::error_code reason{};
};

/// Receives what a client does. Install one with config::observer; every hook does
/// nothing by default, so override only what you need.
///
/// Hooks run on the client's strand, inside the library's processing of replies: they
/// must not block, and should be quick (count, copy, hand off). Strings and spans in an
/// event are valid only during the call. One observer may serve several clients; its
/// hooks are then called from each client's strand, possibly at once, and must be
/// thread-safe. With no observer installed the library builds no event at all.
class observer {
 public:
  virtual ~observer() = default;

  virtual void on_attempt(const attempt_event&) {}
  virtual void on_acquire(const acquire_event&) {}
  virtual void on_extend(const extend_event&) {}
  virtual void on_loss(const loss_event&) {}
  /// The same events as config::on_event: connected, disconnected (connections up and
  /// down), restarted (held back by the restart guard), clock_jump, replica, duplicate
  /// (excluded from voting), tls_unverified (certificate verification turned off).
  virtual void on_node_event(const node_event&) {}
};

/// Settings of a metrics_observer.
struct metrics_options {
  /// Prepended to every metric name. Default "redlock_".
  std::string prefix = "redlock_";
  /// Upper bounds of the latency histograms' buckets, in seconds, increasing (a +Inf
  /// bucket is always added). Default: 100 us to 10 s.
  std::vector<double> latency_buckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
};

/// An observer that counts and times what it sees and renders it in the Prometheus text
/// exposition format (version 0.0.4), for a /metrics endpoint:
///
/// - `<prefix>lock_attempts_total{outcome}`: rounds of lock calls, by outcome ("ok",
///   "contended", "no_quorum", ...);
/// - `<prefix>lock_calls_total{outcome}`: completed async_lock/async_try_lock calls;
/// - `<prefix>acquire_seconds`: histogram of the time calls took to get their lock
///   (waiting included), successful calls only;
/// - `<prefix>node_latency_seconds{node}`: histogram of each node's reply time in lock
///   rounds and extensions (replies that came before the decision);
/// - `<prefix>extensions_total{by, outcome}`: extensions by keeper or call, by outcome;
/// - `<prefix>losses_total{reason}`: held locks found lost ("not_held", "lock_lost");
/// - `<prefix>node_events_total{node, kind}`: node events by kind, "connected" and
///   "disconnected" among them;
/// - `<prefix>node_connected{node}`: 1 while the connection to the node is up, else 0.
///
/// Thread-safe: hooks may run from several clients' strands and render() from any thread.
class metrics_observer : public observer {
 public:
  /// Throws std::invalid_argument if the buckets are empty, not increasing or not positive.
  explicit metrics_observer(metrics_options opts = {});
  ~metrics_observer() override;
  metrics_observer(const metrics_observer&) = delete;
  metrics_observer& operator=(const metrics_observer&) = delete;

  void on_attempt(const attempt_event& e) override;
  void on_acquire(const acquire_event& e) override;
  void on_extend(const extend_event& e) override;
  void on_loss(const loss_event& e) override;
  void on_node_event(const node_event& e) override;

  /// Everything counted so far, as Prometheus text (content type
  /// `text/plain; version=0.0.4`).
  std::string render() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace redlock
