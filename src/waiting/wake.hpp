// SPDX-License-Identifier: BSL-1.0
#pragma once
// Cross-client wake-up: releases announce themselves by pub/sub, waiters listen.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/string_map.hpp"
#include "connection/connection.hpp"

namespace redlock::detail {

struct client_state;

/// One subscriber connection per node, opened when the first local line of waiters (or
/// waiting multi-resource set) forms and closed at shutdown, subscribed to the channel of
/// every key that has a line or a waiting set (the channel is named like the key; the
/// release scripts publish the released token on it). A message wakes the head of that
/// key's line and each set waiting on it, once per release however many nodes announce
/// it, so a release sets off at most one attempt per line and per set. Lost messages (a
/// subscriber connection that dropped) only cost them their retry delay. Everything
/// runs on the client's strand.
class wake_hub {
 public:
  /// Local hand-offs of one key in a row before a release is left to its announcement:
  /// bounds how long the lock can circle inside one client while others wait.
  static constexpr unsigned local_handoff_budget = 3;

  explicit wake_hub(client_state& s) : s_(s) {}
  wake_hub(const wake_hub&) = delete;
  wake_hub& operator=(const wake_hub&) = delete;

  /// Starts / stops listening for releases of `key`. Counted: a line and the sets waiting
  /// on one key each watch it, and the last unwatch unsubscribes.
  void watch(const std::string& key);
  void unwatch(const std::string& key);
  /// Listens on the client's offers channel (permit_line.hpp) from now until shutdown.
  void watch_offers(const std::string& channel);
  /// A release of `token` on `key` is known (a local one, or announced by a node).
  /// Returns false if it was already known: its waiter is awake.
  bool heard(std::string_view key, std::string_view token);
  /// A local release of `key` with a local waiter: whether to hand the lock to that
  /// waiter at once. Yes, except after local_handoff_budget such hand-offs in a row while
  /// a node confirms the subscription (so the announcement will come): then no, and the
  /// head waits for the announcement like every other client's. A release announced
  /// by a node (another client's, or one left to its announcement) starts a new run.
  bool hand_off_locally(std::string_view key, std::string_view token);
  /// Whether the last local release of `key` was left to its announcement and no release
  /// has been announced since: a new call of this client then queues instead of racing.
  bool yielding(std::string_view key) const;
  /// Whether `token`'s release on `key` has been heard (one of the latest): a node that
  /// still answers "held by token" has not run that release yet.
  bool released(std::string_view key, std::string_view token) const;
  /// Node `node`'s subscription to the offers channel: a number no other subscription of this
  /// client had, from its confirmation until its connection drops; 0 when there is none.
  /// A permit grant counts only on the subscription its place was sent under
  /// (machines/permit_grant_decisions.hpp).
  std::uint64_t offers_epoch(std::size_t node) const {
    return node < offers_epoch_.size() ? offers_epoch_[node] : 0;
  }
  /// Closes the subscriber connections for good.
  void shutdown();

 private:
  struct watched {
    // The latest releases heard, to wake once per release: the nodes' announcements of
    // one release can come after the next local release, when the lock is held again.
    std::array<std::string, 4> recent;
    std::size_t next = 0;                 // where the next release heard goes in `recent`
    bool confirmed = false;               // a node confirmed the subscription
    unsigned local_handoffs = 0;          // local releases handed to a local waiter in a row
    bool yielded = false;                 // the last local release was left to its announcement
    std::string yielded_token;            // that release's token, until its announcement comes
    boot_clock::time_point yielded_at{};  // when that release was sent
    std::size_t watchers = 0;
  };
  void open();
  void on_message(std::size_t node, const resp::reply& r);
  void on_event(std::size_t node, node_event::kind k);
  void send(std::size_t node, std::string_view command, const std::string& key);

  client_state& s_;
  std::vector<std::shared_ptr<connection>> subscribers_;
  std::vector<bool> up_;  // subscriber i is connected (SUBSCRIBE now, or at connect)
  std::vector<std::uint64_t> offers_epoch_;  // offers_epoch(i)
  std::uint64_t epochs_ = 0;                 // the last epoch given
  string_map<watched> watched_;
  std::string offers_;  // the offers channel, once watched
  bool closed_ = false;
};

}  // namespace redlock::detail
