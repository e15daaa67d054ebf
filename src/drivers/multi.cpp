// SPDX-License-Identifier: BSL-1.0
// Multi-resource locks: a whole set of resources taken all or none. Each node runs one
// script for the set that checks every key first and sets them all only if none is
// held, so a node never keeps part of a set; the set is ours with a majority of such
// nodes within validity, exactly as one key is. Because no attempt leaves a partial hold
// behind (a failed one is released everywhere), two callers naming the same resources in
// any order cannot deadlock: the loser simply retries, when a release of one of its
// resources is heard (client_state::waiting_sets) or after its jittered delay.
//
// The ops are quorum_ops (quorum/operation.hpp), with its one lifetime rule.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/system_error.hpp>

#include "client/call_checks.hpp"
#include "drivers/acquisition.hpp"
#include "drivers/claims.hpp"
#include "drivers/extend.hpp"
#include "drivers/release.hpp"
#include "machines/lock_answer.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"

namespace redlock {
namespace detail {

/// Grants the ops access to multi_lock's private members.
struct multi_lock_access {
  static std::weak_ptr<client_state>& owner(multi_lock& l) { return l.owner_; }
  static std::vector<std::string>& resources(multi_lock& l) { return l.resources_; }
  static std::vector<std::string>& keys(multi_lock& l) { return l.keys_; }
  static std::string& token(multi_lock& l) { return l.token_; }
  static std::vector<std::uint64_t>& fences(multi_lock& l) { return l.fences_; }
  static std::chrono::milliseconds& ttl(multi_lock& l) { return l.ttl_; }
  static boot_clock::time_point& deadline(multi_lock& l) { return l.deadline_; }
  static bool& lost(multi_lock& l) { return l.lost_; }
  static bool& extending(multi_lock& l) { return l.extending_; }
};

void client_state::release_set_detached(const std::vector<std::string>& keys,
                                        std::string_view token,
                                        const std::array<bool, max_nodes>* only, bool announce) {
  // EVAL, not EVALSHA: nobody reads this reply, so a flushed script cache must not
  // turn it into a silent NOSCRIPT.
  std::string payload;
  write_set_release(payload, keys, token, send_as::text, announce);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!only || (*only)[i]) nodes[i]->submit_detached(payload);
}

namespace {

// "a, b, c", shortened for messages: a set may hold 64 long names.
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    if (out.size() + n.size() > 120) return out + "...";
    out += n;
  }
  return out;
}

// ---- acquire -----------------------------------------------------------------------

// A set that waits, refused by readers: as a single writer does, it marks the key the
// readers hold (`blocked`: per node, its 1-based index, 0 for none; cleared here) on each
// node that said so, so that new readers are refused until its next attempt
// (writer_wait_script); without the mark a stream of readers could starve it.
void mark_waiting(client_state& s, const std::vector<std::string>& keys,
                  std::array<std::size_t, max_nodes>& blocked) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t k = std::exchange(blocked[i], 0);
    if (k == 0) continue;
    std::string payload;
    write_writer_wait(payload, keys[k - 1], writer_mark_lasts(s.cfg));
    s.nodes[i]->submit_detached(std::move(payload));
  }
}

// What a set's acquisition (acquisition_op, acquisition.hpp) asks of its target: the set's
// one script per node and its answers (the first key held, each key's counter and marker),
// the undo, the hand-out, and its wait for a release of any of its keys.
template <typename Op>
class set_target : public set_waiter {
 public:
  void wake(std::string_view token) override {
    if (op().done_) return;
    if (!token.empty()) {
      if (token == last_release_) return;  // heard already on another key of the set
      last_release_.assign(token);
    }
    // Now: after a local release, the script leaves right behind it on every connection.
    op().wake_attempt();
  }

 protected:
  using waiting_part = set_waiter;
  using lock_part = set_target;
  static constexpr std::string_view tokens_noun = "tokens";
  static constexpr const char* verb = "lock all of";

  set_target(std::vector<std::string> resources, lock_options opts, bool wait)
      : opts_(opts), wait_(wait), resources_(std::move(resources)) {}

  call_problem check(const config& cfg) {
    call_problem problem = check_set_call(resources_, opts_, wait_, cfg);
    // The checks put the names in order: the failure texts follow it.
    if (op().diag_) op().subject_ = join_names(resources_);
    return problem;
  }
  std::string subject() const { return join_names(resources_); }
  void name_keys() {
    client_state& s = *op().s_;
    keys_.reserve(resources_.size());
    for (const auto& r : resources_) {
      keys_.push_back(s.names.key(r));
      // Each key's counter pair: the fleet's, or on a fleet with a cluster node the one
      // in the key's slot.
      if (opts_.fenced) fields_.push_back(s.fence_field(r));
      if (opts_.fenced) pairs_.push_back(s.fence_keys(keys_.back()));
    }
    if (opts_.fenced) counters_.resize(s.size() * keys_.size());
  }
  bool queue_behind_yield() { return false; }

  void begin_target_attempt() { unmarked_keys_.clear(); }
  void draw_token() { op().s_->tokens.next(token_); }
  const script* write_attempt() {
    client_state& s = *op().s_;
    payload_.clear();
    write_set_acquire(payload_, keys_, pairs_, fields_, token_, opts_.ttl);
    // The fleet's one pair: unmarked nodes are repaired; pairs per slot are repaired from
    // the answers that name them (repair_unmarked).
    if (opts_.fenced && !pairs_.front().per_slot()) {
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s.nodes[i]->ready() && !s.nodes[i]->status().fence_marked) {
          s.start_fence_repair(opts_.ttl);
          break;
        }
    }
    return &multi_acquire_script;
  }

  // Starts the repairs this attempt's unmarked answers call for: the pair of each key an
  // answer did not vouch for. A pair whose repair runs is skipped (start_fence_repair).
  void repair_unmarked() {
    for (std::size_t k = 0; k < unmarked_keys_.size(); ++k)
      if (unmarked_keys_[k]) op().s_->start_fence_repair(opts_.ttl, pairs_[k]);
  }
  void failed_node(std::size_t) {}

  vote read_answer(std::size_t i, const resp::reply& r) {
    Op& o = op();
    // pairs_ (fenced) and resources_ (not) count the set's keys: a late answer may come after
    // the names went to the set handed out, and then names no key.
    const std::size_t n = pairs_.size();
    const set_answer a = read_set_answer(r, opts_.fenced ? n : resources_.size(), opts_.fenced);
    if (a.what == set_answer::kind::malformed) return vote::failed;
    if (a.what == set_answer::kind::held) {
      o.round_.texts[i] = held_text(a);
      readers_block_[i] = a.readers && a.blocker <= keys_.size() ? a.blocker : 0;
      return vote::held;
    }
    if (!opts_.fenced) return vote::yes;
    bool trusted = true;
    for (std::size_t k = 0; k < n; ++k) {
      counters_[i * n + k] = set_counter(r, k);
      if (o.trusted_marker(i, set_marker(r, k))) continue;
      // This key's pair is not vouched for on this node: repaired, and the node's vote does
      // not count.
      trusted = false;
      unmarked_keys_.resize(n);
      unmarked_keys_[k] = true;
    }
    o.fenced_.count(i, trusted);
    if (trusted) return vote::yes;
    // One that answers after the decision (a slow node behind the majority) is repaired too:
    // a node that always lags would otherwise never be.
    if (o.fsm_.decided()) repair_unmarked();
    o.round_.texts[i] =
        "took the set, but its fencing counters await repair (new, or restarted or promoted "
        "since they were last repaired), so its vote does not count";
    return vote::yes;
  }

  // A fenced win's tokens, per resource the largest counter of the `counted` nodes: true if
  // the write-back must raise some first (acquisition_op::do_won).
  bool decide_tokens(const std::array<bool, max_nodes>& counted) {
    fences_.assign(keys_.size(), 0);
    return decide_fences(op().s_->size(), counted, keys_.size(), counters_, fences_);
  }

  // Round two of a fenced acquisition: every resource's T raised to at least T on every
  // node where every key of the set still holds our token. Only then are the tokens valid.
  void start_write_back() {
    payload2_.clear();
    write_set_raise(payload2_, keys_, pairs_, fields_, fences_, token_);
    op().send_write_back(payload2_, &multi_raise_script);
  }

  void succeed() {
    Op& o = op();
    o.fsm_.finish();
    // While keys_ still names the keys.
    stop_waiting();
    o.s_->held_sets.emplace(token_, keys_);  // released by async_shutdown if still held then
    multi_lock lk;
    multi_lock_access::owner(lk) = o.s_;
    multi_lock_access::resources(lk) = std::move(resources_);
    multi_lock_access::keys(lk) = std::move(keys_);
    multi_lock_access::token(lk) = std::move(token_);
    multi_lock_access::fences(lk) = std::move(fences_);
    multi_lock_access::ttl(lk) = opts_.ttl;
    multi_lock_access::deadline(lk) = o.valid_until_;
    o.complete({}, std::move(lk));
  }

  // Undoes what this attempt may have taken: every node the script went to, except
  // those that answered "held" or "another type" (they took nothing: the script checks
  // every key before it sets any). Queued behind the script on each connection.
  void abandon_attempt(error_code = {}) {
    client_state& s = *op().s_;
    const round& r = op().round_;
    std::array<bool, max_nodes> mask{};
    bool any = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      // A WRONGTYPE failure comes from the check, before any SET.
      const bool took_nothing = r.votes[i] == vote::held ||
                                (r.votes[i] == vote::failed && r.errors[i] == error::wrong_type);
      mask[i] = r.sent_to[i] && !took_nothing;
      any = any || mask[i];
    }
    if (any) s.release_set_detached(keys_, token_, &mask, false);
  }

  error_code refused_after_loss() const {
    return op().s_->closed ? error_code{error::shut_down} : error_code{};
  }
  bool next_try_after_loss(error_code&) { return false; }
  bool retry_now() const { return false; }
  // A single try that lost only to nodes awaiting fence repairs waits for the repairs of its
  // unmarked pairs.
  std::vector<std::string_view> unmarked_hashes() const {
    std::vector<std::string_view> hashes;
    for (std::size_t k = 0; k < unmarked_keys_.size(); ++k)
      if (unmarked_keys_[k]) hashes.push_back(op().s_->repair_hash(pairs_[k]));
    return hashes;
  }
  void after_loss() { mark_waiting(*op().s_, keys_, readers_block_); }
  // Held by others: a release of any of the keys wakes the set.
  void wait_for_release() {
    if (std::exchange(waiting_, true)) return;
    op().s_->set_waits(*this, keys_);
  }
  retry_context retry_plan() { return {.delay = op().s_->jitter(op().s_->cfg.retry_delay)}; }

  void end_call(error_code) { stop_waiting(); }
  // Freed unfinished (its io_context went away): the client's waiting sets must not name it.
  void forget_waits() { stop_waiting(); }
  std::string failure_text(error_code, std::string text) const { return text; }

  lock_options opts_;
  bool wait_;
  std::string payload_;

 private:
  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  // "\"b\" held by web2:42 (token 3fa2c1d0...)", or "by this client, in another of its
  // calls" when the token is one this client holds.
  std::string held_text(const set_answer& a) const {
    if (a.blocker == 0 || a.blocker > resources_.size()) return "\"?\" held by another owner";
    const std::string& name = resources_[a.blocker - 1];
    if (!a.named) return fmt::format("\"{}\" held by another owner", name);
    // keys_ may be gone to the set handed out when this is a late answer.
    const bool ours =
        a.blocker <= keys_.size() && op().s_->holds_token(keys_[a.blocker - 1], a.holder);
    return fmt::format("\"{}\" {}", name, held_by_text(a.holder, ours));
  }

  void stop_waiting() {
    if (!std::exchange(waiting_, false)) return;
    op().s_->set_stops(*this, keys_);
  }

  std::vector<std::string> resources_;
  std::vector<std::string> keys_;
  std::vector<std::string> fields_;
  // A fenced set on a fleet with a cluster node: each key's pair, and which of them an
  // answer of this attempt said are unmarked.
  std::vector<fence_key_pair> pairs_;
  std::vector<bool> unmarked_keys_;
  std::string token_;
  std::string payload2_;
  // Waiting for releases (client_state::waiting_sets).
  bool waiting_ = false;
  std::string last_release_;  // the token of the last release that woke the set
  // Fencing: the counters each node answered, at node * keys_.size() + resource.
  std::vector<std::uint64_t> counters_;
  std::vector<std::uint64_t> fences_;
  // This attempt: per node, the 1-based index of the key a readers' record held (0: none).
  std::array<std::size_t, max_nodes> readers_block_{};
};

// ---- release -----------------------------------------------------------------------

class unlock_all_op final : public release_op_base {
 public:
  using release_op_base::release_op_base;

  void start(multi_lock& lk) {
    verb_ = "unlock all of";
    if (diag_) subject_ = join_names(lk.resources());
    if (!may_release(!multi_lock_access::token(lk).empty(), lk.owns())) return;
    // Emptied now: its destructor must not release it again.
    keys_ = std::move(multi_lock_access::keys(lk));
    token_ = std::move(multi_lock_access::token(lk));
    s_->held_sets.erase(token_);
    lk = multi_lock{};
    write_set_release(payload_, keys_, token_, send_as::sha);
    send(payload_, multi_release_script);
    // Queued first on every connection: local waiters woken now send after it.
    for (const auto& k : keys_) s_->wake_waiter(k, token_);
    sent();
  }

 private:
  vote answer(std::size_t, const resp::reply& r) override { return set_release_answer(r); }

  // As a single lock's release: the nodes that may not have run it get it in the
  // background, kept across reconnects.
  void on_unsent(std::size_t i) override {
    std::array<bool, max_nodes> only{};
    only[i] = true;
    s_->release_set_detached(keys_, token_, &only);
  }

  std::vector<std::string> keys_;
  std::string token_;
  std::string payload_;
};

// ---- extend ------------------------------------------------------------------------

class extend_all_op final : public extend_op_base<multi_lock, multi_lock_access> {
 public:
  using extend_op_base::extend_op_base;

  void start(multi_lock& lk, std::chrono::milliseconds ttl) {
    verb_ = "extend all of";
    if (diag_) subject_ = join_names(lk.resources());
    if (!begin(lk, ttl)) return;
    write_set_extend(payload_, lk.keys(), lk.token(), ttl);
    send(multi_extend_script);
  }

 private:
  // An observer hears of the set's extension once per resource, as of a single lock's.
  void before_complete(error_code ec) override {
    if (!s_->obs) return;
    for (const auto& r : lk_->resources())
      report_extension(r, ec, started(), !was_lost_ && lk_->lost());
  }
};

// Creates the op and runs `start` on the strand.
template <typename Op, typename Handler, typename Start>
void launch(std::shared_ptr<client_state> s, diagnostics* diag, Handler h, Start start) {
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new Op(std::move(s), diag, std::move(h)), strand, std::move(start));
}

}  // namespace

void start_lock_all(std::shared_ptr<client_state> s, std::vector<std::string> resources,
                    lock_options opts, bool wait, diagnostics* diag, multi_lock_handler h) {
  if (!s) return complete_without_client(std::move(h), multi_lock{});
  launch_acquisition<multi_lock, set_target>(std::move(s), diag, std::move(h), std::move(resources),
                                             opts, wait);
}

void start_unlock_all(std::shared_ptr<client_state> s, multi_lock lk, diagnostics* diag,
                      void_handler h) {
  if (!s) return complete_without_client(std::move(h));
  // The operation owns the set until it starts on the strand.
  launch<unlock_all_op>(std::move(s), diag, std::move(h),
                        [lk = std::move(lk)](unlock_all_op& op) mutable { op.start(lk); });
}

void start_extend_all(std::shared_ptr<client_state> s, multi_lock& lk,
                      std::chrono::milliseconds ttl, diagnostics* diag, void_handler h) {
  if (!s) return complete_without_client(std::move(h));
  launch<extend_all_op>(std::move(s), diag, std::move(h),
                        [&lk, ttl](extend_all_op& op) { op.start(lk, ttl); });
}

}  // namespace detail

// ---- multi_lock --------------------------------------------------------------------

multi_lock::multi_lock(multi_lock&& other) noexcept
    : owner_(std::move(other.owner_)),
      resources_(std::move(other.resources_)),
      keys_(std::move(other.keys_)),
      token_(std::move(other.token_)),
      fences_(std::move(other.fences_)),
      ttl_(other.ttl_),
      deadline_(other.deadline_),
      lost_(other.lost_) {
  other.token_.clear();
}

multi_lock& multi_lock::operator=(multi_lock&& other) noexcept {
  if (this != &other) {
    release_in_background();
    owner_ = std::move(other.owner_);
    resources_ = std::move(other.resources_);
    keys_ = std::move(other.keys_);
    token_ = std::move(other.token_);
    fences_ = std::move(other.fences_);
    ttl_ = other.ttl_;
    deadline_ = other.deadline_;
    lost_ = other.lost_;
    other.token_.clear();
  }
  return *this;
}

multi_lock::~multi_lock() {
  release_in_background();
}

std::uint64_t multi_lock::fence(std::string_view resource) const noexcept {
  const auto it = std::lower_bound(resources_.begin(), resources_.end(), resource);
  if (it == resources_.end() || *it != resource || fences_.empty()) return 0;
  return fences_[static_cast<std::size_t>(it - resources_.begin())];
}

std::chrono::milliseconds multi_lock::validity() const noexcept {
  if (!valid()) return std::chrono::milliseconds{0};
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - boot_clock::now());
}

bool multi_lock::owns() const noexcept {
  return !token_.empty() && detail::owner_holds(owner_);
}

bool multi_lock::valid() const noexcept {
  return !token_.empty() && !lost_ && boot_clock::now() < deadline_ && detail::owner_holds(owner_);
}

void multi_lock::release_in_background() noexcept {
  if (token_.empty()) return;
  if (auto s = owner_.lock()) {
    try {
      boost::asio::post(s->strand, [s, keys = std::move(keys_), token = std::move(token_)] {
        if (s->closed) return;
        s->held_sets.erase(token);
        s->release_set_detached(keys, token);
        for (const auto& k : keys) s->wake_waiter(k, token);
      });
    } catch (...) {
      // Best effort by contract: the keys expire with their TTL.
    }
  }
  token_.clear();
  owner_.reset();
}

}  // namespace redlock
