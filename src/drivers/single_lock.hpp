// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a single lock call sends and hands out, apart from how its attempts are driven
// (acquisition_op over single_target, lock_ops.cpp): its names (the key, the fencing pair and
// field, the fair line's keys and this call's place in it), each attempt's token and payload, the
// undo of an attempt, and the lock object made from a win.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client_state.hpp"
#include "machines/lock_answer.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "quorum/round.hpp"
#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/detail/buffer.hpp"
#include "redlock/lock.hpp"
#include "redlock/observer.hpp"
#include "scripts/script_calls.hpp"
#include "waiting/lines.hpp"

namespace redlock::detail {

/// What makes a single-lock try a semaphore's permit try (sweep_target, semaphore.cpp): the key
/// of the nodes' record of the semaphore's count and the count asked, checked by the try's own
/// script; and, written by the try, the count a node said it records when it refused.
struct permit_target {
  std::string record_key;
  std::size_t permits = 0;
  std::uint64_t nodes_count = 0;
  permit_line_keys line;                  // the semaphore's line of waiters
  std::chrono::milliseconds place_ttl{};  // how long a place in it lives
  // The next try, set by the semaphore's call: every permit's key and the window its script
  // reads (`span` keys from `first`, the one asked for, wrapping), and the call's place in
  // the line ("" for none).
  std::vector<std::string> keys;
  std::size_t first = 0, span = 1;
  std::string place;
  std::int64_t ticket = 0;  // the place's order in every node's line: the call's start
  std::uint64_t tries = 0;  // counts the call's tries (the id of the current one)
  /// What the current try was told besides its votes (pointers, places kept).
  permit_try_answers answers;

  /// Node `node` answered "held" to try `try_id`: as permit_try_answers decides, the call
  /// leaves its place there at once when it has already won.
  void held_answer(client_state& s, std::size_t node, const lock_answer& a, std::uint64_t try_id) {
    if (answers.held(try_id, node, a.free_at)) leave_line(s, node);
  }

  /// The call's place leaves the line on node `node` (one that kept it), once it won.
  void leave_line(client_state& s, std::size_t node) {
    std::array<bool, max_nodes> only{};
    only[node] = true;
    s.leave_line_detached(line.line, line.lapse, place, only);
  }
};

/// Keeps the nodes' record of a permit's semaphore (`record_key`, lock_data::record_key)
/// alive at least permit_record_keep(ttl): sent to every node beside an extension or renewal
/// of the permit to `ttl`. Nothing for a lock that is no permit (`record_key` empty).
void refresh_permit_record(client_state& s, std::string_view record_key,
                           std::chrono::milliseconds ttl);

class single_lock_call {
 protected:
  single_lock_call(buffer resource, lock_options opts, bool wait)
      : resource_(std::move(resource)), opts_(opts), wait_(wait) {}

  /// Names the call's keys, once its arguments passed their checks. A fair call also
  /// takes its place in line (`place`'s ticket): chosen once, so that retries keep it.
  void name_keys(const client_state& s, waiter& place) {
    s.names.key_into(key_, resource_);
    if (opts_.fenced || opts_.fair) name_extra_keys(s, place);
  }
  /// A new token for the next attempt (and a fair call's id, once). Throws system_error
  /// when the kernel gives no randomness: a guessable token is refused.
  void new_token(client_state& s, waiter& place) {
    s.tokens.next(token_);
    late_undo_ = false;  // the last attempt's answers are all back before the next is sent
    if (opts_.fair && line_id_.empty()) {
      s.tokens.next(line_id_);
      place.line_id = line_id_;
    }
  }
  /// The next attempt's payload, into `out`; returns its script (null: a plain SET).
  /// `join`: a fair call takes (or renews) its place in the nodes' line, at `ticket`.
  const script* write_attempt(std::string& out, const config& cfg, bool join, std::int64_t ticket) {
    out.clear();
    out.reserve(96 + 2 * key_.size());
    if (permit_) return write_permit_try(out);
    if (opts_.shared)
      return write_reader_acquire(out, key_, token_, opts_.ttl,
                                  opts_.fenced ? &fence_keys_ : nullptr, field_);
    if (opts_.fenced || opts_.fair) return write_scripted_attempt(out, cfg, join, ticket);
    write_plain_acquire(out, key_, token_, opts_.ttl);  // the common path, inline
    return nullptr;
  }
  /// Sends the releases of an attempt that failed to every node it may have taken.
  void undo(client_state& s, const round& r) const;
  /// After undo() left node `node` to its answer: that answer took the permit, or never
  /// came (a timeout, a lost connection), so the node is released now.
  void undo_late(client_state& s, std::size_t node) const;
  /// A writer's attempt refused by readers on the nodes `readers` says: marks there that
  /// it waits, so that new readers are refused until its next attempt (writer_wait_script).
  void mark_waiting(client_state& s, const std::array<bool, max_nodes>& readers) const;
  /// A fair call leaves the nodes' line where `still_in` says, if it ever joined it.
  void leave_fair_line(client_state& s, const std::array<bool, max_nodes>& still_in) const;
  /// Fenced, on the fleet's one pair: starts the background repair of the nodes whose
  /// counters are not trusted yet, so that a majority of marked nodes stays available
  /// for tokens. (A pair per slot is repaired from the answers that name it.)
  void repair_unmarked_nodes(client_state& s) const;
  /// Starts the repair of this key's pair once per attempt (repair_asked_ is per attempt).
  void repair_pair_once(client_state& s);
  /// Fair mode: the longest wait that keeps this call's place on the nodes.
  std::optional<std::chrono::nanoseconds> renew_interval(const config& cfg) const;
  /// Tells `obs` how the call ended (once: reported_).
  void report_call(redlock::observer& obs, error_code outcome, std::uint64_t fence);
  /// The lock handed out for a win valid until `deadline`, held by `s` from now on.
  lock make_lock(const std::shared_ptr<client_state>& s, boot_clock::time_point deadline,
                 std::uint64_t fence) const {
    lock lk;
    lock_data& d = lock_access::make(lk);
    d.owner = s;
    d.assign(key_, key_.size() - resource_.size(), token_);
    d.ttl = opts_.ttl;
    d.deadline = deadline;
    d.fence = fence;
    d.shared = opts_.shared;
    if (permit_) d.record_key = permit_->record_key;
    s->hold(d);  // released by async_shutdown if still held then
    return lk;
  }

  const script* write_scripted_attempt(std::string& out, const config& cfg, bool join,
                                       std::int64_t ticket);
  const script* write_permit_try(std::string& out);
  void name_extra_keys(const client_state& s, waiter& place);

  buffer resource_;
  buffer key_;
  buffer token_;
  std::string field_;          // fenced: the resource's field in the counters' hash
  fence_key_pair fence_keys_;  // fenced: the counters' hash and marker for key_
  lock_options opts_;
  bool wait_;
  permit_target* permit_ = nullptr;  // a semaphore's permit try (its sweep's), else null
  // Fair mode: the nodes' line (waiter::line_ticket / line_id hold the place).
  std::string line_key_, expiry_key_, line_id_;
  bool joined_ = false;             // took a place on some node: leave it at the end
  bool repair_asked_ = false;       // this attempt started the repair of an unmarked node
  mutable bool late_undo_ = false;  // undo() left unanswered nodes to undo_late
  // For the observer: when the call started, its attempts, whether its end was told.
  boot_clock::time_point call_start_{};
  unsigned attempts_ = 0;
  bool reported_ = false;
};

}  // namespace redlock::detail
