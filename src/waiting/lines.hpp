// SPDX-License-Identifier: BSL-1.0
#pragma once
// The calls of one client that wait for a release, per key, without I/O: the line of
// single-resource calls (only its head polls the nodes; a release wakes it, and the next
// one moves up when it leaves) and the sets waiting on any of their keys; and every
// acquisition in progress, in a line or not, so that shutdown reaches each. The client
// state owns one (client_state::lines) and listens for releases of the keys it names.

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "client/string_map.hpp"

namespace redlock::detail {

/// An acquisition call (acquisition_op, of a single lock or a set), listed from its start to its
/// completion (waiter_lines::begin_call, end_call). The lines hold only calls refused by a holder:
/// a call whose attempt is out, or that waits out its retry delay after a failure that
/// was not contention, is in none, and shutdown reaches it through this list.
class acquisition {
 public:
  /// The client shut down: complete with shut_down now, undoing the attempt whose round
  /// is out (behind it on every connection; its late answers are still read).
  virtual void end_at_shutdown() = 0;

 protected:
  ~acquisition() = default;

 private:
  friend class waiter_lines;
  acquisition* prev_ = nullptr;
  acquisition* next_ = nullptr;
  bool listed_ = false;
};

/// A single-resource lock call waiting in its key's line (single_target's local_waiter).
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

  /// Lists `c` as in progress until end_call(c). Both in constant time, without
  /// allocating: every lock call makes them.
  void begin_call(acquisition& c);
  /// Takes `c` off the list (nothing if it is not on it).
  void end_call(acquisition& c);
  /// Every acquisition in progress, in a line or not (at shutdown each is ended).
  std::vector<acquisition*> calls() const;

  /// Every waiting set, each once (at shutdown each is woken to finish).
  std::vector<set_waiter*> all_sets() const;

 private:
  string_map<std::deque<waiter*>> lines_;
  string_map<std::vector<set_waiter*>> sets_;
  acquisition* calls_ = nullptr;  // the latest begun, linked to the others
};

}  // namespace redlock::detail
