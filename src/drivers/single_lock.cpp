// SPDX-License-Identifier: BSL-1.0
// A single lock call's names, payloads and lock: see single_lock.hpp.

#include "drivers/single_lock.hpp"

#include <fmt/format.h>

#include "machines/lock_answer.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "quorum/observed.hpp"
#include "scripts/script_calls.hpp"

namespace redlock::detail {

void single_lock_call::name_extra_keys(const client_state& s, waiter& place) {
  if (opts_.fenced) {
    field_ = s.fence_field(resource_);
    fence_keys_ = s.fence_keys(key_);
  }
  if (!opts_.fair) return;
  // Where keys are spread by slot the line lives in the lock key's slot (the tag of the
  // fencing counters), so that one script may touch the lock key and its line.
  std::string tag;
  if (auto t = s.colocation_tag(key_)) tag = fmt::format("{{{}}}:", *t);
  line_key_ = s.names.fair_line(tag, resource_);
  expiry_key_ = s.names.fair_expiry(tag, resource_);
  place.line_ticket = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
}

const script* single_lock_call::write_scripted_attempt(std::string& out, const config& cfg,
                                                       bool join, std::int64_t ticket) {
  joined_ = joined_ || join;
  return write_acquire(out, {.key = key_,
                             .token = token_,
                             .ttl = opts_.ttl,
                             .fence = opts_.fenced ? &fence_keys_ : nullptr,
                             .field = field_,
                             .line_key = line_key_,
                             .expiry_key = expiry_key_,
                             .line_id = line_id_,
                             .ticket = ticket,
                             .place_ttl = cfg.fair_entry_ttl,
                             .fair = opts_.fair,
                             .join = join});
}

void refresh_permit_record(client_state& s, std::string_view record_key,
                           std::chrono::milliseconds ttl) {
  if (record_key.empty()) return;
  // Queued behind the extension on each connection: it runs while the record still has at
  // least the permit's old TTL left (permit_record_keep), so it cannot miss it.
  std::string payload;
  write_permit_record_refresh(payload, record_key, permit_record_keep(ttl));
  for (std::size_t i = 0; i < s.size(); ++i) s.nodes[i]->submit_detached(payload);
}

const script* single_lock_call::write_permit_try(std::string& out) {
  return write_permit_acquire(out, {.keys = permit_->keys,
                                    .first = permit_->first,
                                    .span = permit_->span,
                                    .record_key = permit_->record_key,
                                    .token = token_,
                                    .line = &permit_->line,
                                    .place = permit_->place,
                                    .ticket = permit_->ticket,
                                    .ttl = opts_.ttl,
                                    .keep = permit_record_keep(opts_.ttl),
                                    .place_ttl = permit_->place_ttl,
                                    .permits = permit_->permits,
                                    .fence = opts_.fenced ? &fence_keys_ : nullptr,
                                    .field = field_});
}

void single_lock_call::undo(client_state& s, const round& r) const {
  std::array<bool, max_nodes> mask{};
  bool any = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    // A permit's try lost to the answers of a majority: a node yet to answer is released
    // only if its answer says it took the permit, or never comes (undo_late), so that a
    // lost try costs those nodes nothing when they only say "held", as most do.
    if (permit_ && r.sent_to[i] && r.votes[i] == vote::pending) {
      late_undo_ = true;
      continue;
    }
    mask[i] = r.sent_to[i] &&
              may_have_taken(r.votes[i], r.errors[i],
                             opts_.fenced || opts_.fair || opts_.shared || permit_ != nullptr);
    any = any || mask[i];
  }
  // Queued behind the SET on each connection, so it runs after it. A permit's too is a quiet
  // delete, not a hand-off to the next in line: the nodes where this try lost gave the permit
  // to the call that won it, and this node's copy must be free for that call's try, not passed
  // to a third call that would lose in turn.
  if (any) s.release_detached(key_, token_, &mask, false);
}

void single_lock_call::undo_late(client_state& s, std::size_t node) const {
  std::array<bool, max_nodes> only{};
  only[node] = true;
  s.release_detached(key_, token_, &only, false);
}

void single_lock_call::mark_waiting(client_state& s,
                                    const std::array<bool, max_nodes>& readers) const {
  std::string payload;
  write_writer_wait(payload, key_, writer_mark_lasts(s.cfg));
  for (std::size_t i = 0; i < s.size(); ++i)
    if (readers[i]) s.nodes[i]->submit_detached(payload);
}

void single_lock_call::leave_fair_line(client_state& s,
                                       const std::array<bool, max_nodes>& still_in) const {
  if (joined_) s.leave_line_detached(line_key_, expiry_key_, line_id_, still_in);
}

void single_lock_call::repair_unmarked_nodes(client_state& s) const {
  if (fence_keys_.per_slot()) return;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.nodes[i]->ready() && !s.nodes[i]->status().fence_marked) {
      s.start_fence_repair(opts_.ttl, fence_keys_);
      return;
    }
}

void single_lock_call::repair_pair_once(client_state& s) {
  if (std::exchange(repair_asked_, true)) return;
  s.start_fence_repair(opts_.ttl, fence_keys_);
}

std::optional<std::chrono::nanoseconds> single_lock_call::renew_interval(const config& cfg) const {
  // Attempts come often enough that the nodes keep this call's place.
  if (!opts_.fair) return std::nullopt;
  return std::chrono::nanoseconds{cfg.fair_entry_ttl / 3};
}

void single_lock_call::report_call(redlock::observer& obs, error_code outcome,
                                   std::uint64_t fence) {
  reported_ = true;
  const auto elapsed = call_start_ == boot_clock::time_point{}
                           ? std::chrono::microseconds{0}
                           : micros(boot_clock::now() - call_start_);
  obs.on_acquire({.resource = resource_,
                  .fenced = opts_.fenced,
                  .waiting = wait_,
                  .attempts = attempts_,
                  .outcome = outcome,
                  .elapsed = elapsed,
                  .fence = fence});
}

}  // namespace redlock::detail
