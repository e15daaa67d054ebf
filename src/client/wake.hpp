#pragma once
// Cross-client wake-up: releases announce themselves by pub/sub, waiters listen.

#include <cstddef>
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
  explicit wake_hub(client_state& s) : s_(s) {}
  wake_hub(const wake_hub&) = delete;
  wake_hub& operator=(const wake_hub&) = delete;

  /// Starts / stops listening for releases of `key`. Counted: a line and the sets waiting
  /// on one key each watch it, and the last unwatch unsubscribes.
  void watch(const std::string& key);
  void unwatch(const std::string& key);
  /// A release of `token` on `key` is known (a local one, or announced by a node).
  /// Returns false if it was already known: its waiter is awake.
  bool heard(std::string_view key, std::string_view token);
  /// Whether `token`'s release on `key` has been heard (the latest one): a node that
  /// still answers "held by token" has not run that release yet.
  bool released(std::string_view key, std::string_view token) const;
  /// Closes the subscriber connections for good.
  void shutdown();

 private:
  struct watched {
    std::string last_token;  // the latest release heard, to wake once per release
    bool confirmed = false;  // a node confirmed the subscription
    std::size_t watchers = 0;
  };
  void open();
  void on_message(const resp::reply& r);
  void on_event(std::size_t node, node_event::kind k);
  void send(std::size_t node, std::string_view command, const std::string& key);

  client_state& s_;
  std::vector<std::shared_ptr<connection>> subscribers_;
  std::vector<bool> up_;  // subscriber i is connected (SUBSCRIBE now, or at connect)
  string_map<watched> watched_;
  bool closed_ = false;
};

}  // namespace redlock::detail
