#pragma once
// The calls of one client that wait for a release, per key, without I/O: the line of
// single-resource calls (only its head polls the nodes; a release wakes it, and the next
// one moves up when it leaves) and the sets waiting on any of their keys. The client
// state owns one (client_state::lines) and listens for releases of the keys it names.

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "client/string_map.hpp"

namespace redlock::detail {

/// A single-resource lock call waiting in its key's line (acquire_op).
class waiter {
 public:
  /// A local release: try again now (or right after the attempt in flight).
  virtual void wake() = 0;
  /// Now first in line: start polling.
  virtual void promote() = 0;
  /// The announcement of this client's own release that was left to other clients'
  /// waiters came back: try after `delay` (or right after the attempt in flight), so
  /// that theirs, woken by the same announcement, arrive first.
  virtual void wake_after(std::chrono::nanoseconds delay) = 0;

  /// Fair mode (non-empty line_id): the call's place in the nodes' line, by which the
  /// local line is ordered too, so that its head is this client's first on the nodes.
  std::int64_t line_ticket = 0;
  std::string_view line_id;

 protected:
  ~waiter() = default;
};

/// A multi-resource lock call waiting for a release of any of its resources. Not in a
/// line: each set needs its own keys free.
class set_waiter {
 public:
  /// A release of one of the set's resources by the owner of `token` ("" if unknown:
  /// a fresh subscription, or shutdown): try again now (or right after the attempt in
  /// flight); the same token again is the same release (a set releases all its keys).
  virtual void wake(std::string_view token) = 0;

 protected:
  ~set_waiter() = default;
};

/// The waiting calls of one client, per key. On the client's strand.
class waiter_lines {
 public:
  /// Puts `w` in `key`'s line: at the back, or a fair call before the first fair call
  /// with a later place on the nodes. Returns whether the line was empty (the caller
  /// starts listening for the key's releases).
  bool join(std::string_view key, waiter& w);

  /// What leaving a line did.
  struct departure {
    bool gone = false;           ///< the line is empty now: stop listening
    waiter* promoted = nullptr;  ///< the new head, when `w` was the head
  };
  /// Takes `w` out of `key`'s line (nothing if it is not in it).
  departure leave(std::string_view key, waiter& w);

  /// The head of `key`'s line, or null. Inline: every release asks.
  waiter* head(std::string_view key) const {
    // No hashing of the key on the common path, where nobody waits.
    if (lines_.empty()) return nullptr;
    auto it = lines_.find(key);
    return it == lines_.end() || it->second.empty() ? nullptr : it->second.front();
  }
  /// Whether `key` has a line with someone in it.
  bool has_line(std::string_view key) const { return head(key) != nullptr; }

  /// `w` waits on each of `keys` (each key counts as one more listener).
  void set_waits(set_waiter& w, const std::vector<std::string>& keys);
  /// `w` stops waiting; returns the keys it was waiting on (one listener fewer each).
  std::vector<std::string_view> set_stops(set_waiter& w, const std::vector<std::string>& keys);
  /// Whether any set waits at all (every release asks, before any hashing).
  bool any_sets() const { return !sets_.empty(); }
  /// The sets waiting on `key` (copied: a woken set may stop waiting at once).
  std::vector<set_waiter*> sets_on(std::string_view key) const;

  /// Every waiting call and set, each once (at shutdown each is woken to finish).
  std::vector<waiter*> all_waiters() const;
  std::vector<set_waiter*> all_sets() const;

 private:
  string_map<std::deque<waiter*>> lines_;
  string_map<std::vector<set_waiter*>> sets_;
};

}  // namespace redlock::detail
