// SPDX-License-Identifier: BSL-1.0
#pragma once
// State shared by a client and its operations; lives on the client's strand.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/config_check.hpp"
#include "client/parts.hpp"
#include "client/string_map.hpp"
#include "client/token.hpp"
#include "connection/cluster.hpp"
#include "connection/connection.hpp"
#include "quorum/completion.hpp"
#include "quorum/round.hpp"
#include "quorum/rules.hpp"
#include "redlock/config.hpp"
#include "redlock/lock.hpp"
#include "redlock/observer.hpp"
#include "scripts/scripts.hpp"
#include "util/keyspace.hpp"
#include "waiting/lines.hpp"
#include "waiting/permit_line.hpp"

namespace redlock::detail {

/// A new lock_data from this thread's pool (src/client/lock.cpp).
lock_ptr make_lock_data();

using redlock::max_nodes;           // redlock/config.hpp: shared with the CLI
using redlock::max_resource_bytes;  // likewise

class renewal_scheduler;
/// Stops every keeper of a client (at shutdown): defined by the guard layer above, so
/// that the client layer needs only this declaration (src/guard/renewal.cpp).
void stop_renewals(renewal_scheduler& r);
class claim_coalescer;
class wake_hub;

/// Where the fencing counters of a lock key live: a hash and its marker key. One pair per
/// fleet (keyspace::fence_hash and fence_marker), or, on a fleet with a Redis Cluster
/// node, the pair of the key's slot ("redlock:fence:{T}", "redlock:fence:marker:{T}" with
/// T = slot_tag), so that a script touches keys of one slot only. Views into the client's
/// strings, or owned.
struct fence_key_pair {
  std::string_view hash, marker;
  std::string own_hash, own_marker;  // the slot's pair; hash and marker view them
  fence_key_pair() = default;
  fence_key_pair(const fence_key_pair& o) { *this = o; }
  fence_key_pair& operator=(const fence_key_pair& o) {
    own_hash = o.own_hash;
    own_marker = o.own_marker;
    hash = o.own_hash.empty() ? o.hash : std::string_view{own_hash};
    marker = o.own_marker.empty() ? o.marker : std::string_view{own_marker};
    return *this;
  }
  /// The pair of the key's slot, not the fleet's one pair: its nodes' marks are per
  /// slot, vouched for by each answer, not by the node (node_status::fence_marked).
  bool per_slot() const { return !own_hash.empty(); }
};

/// A client's shared state: its configuration and strand, and its named parts (the
/// fleet, the locks it holds, the calls waiting for a release), with what ties them to
/// the nodes (background releases, wake-ups, fence repairs, node events).
struct client_state : std::enable_shared_from_this<client_state>, fleet, held_locks {
  client_state(asio::any_io_executor ex, config c);

  strand_type strand;
  config cfg;
  keyspace names;  // every name of a key, from cfg
  /// detail::set_fence_writeback_hook's hook (tests and the benchmark), or empty.
  std::function<void(std::string_view)> before_fence_writeback;
  /// cfg.observer, or null: every event is built only after checking it.
  redlock::observer* obs = nullptr;
  token_source tokens;
  std::minstd_rand rng;
  bool closed = false;
  /// Set once shutdown or destruction began (before anything held is released), and read
  /// from any thread by lock, multi_lock and keeper: what this client held is no longer
  /// valid, whatever its deadline says.
  std::atomic<bool> shut{false};
  /// Marks every lock, set and keeper of this client as no longer held.
  void mark_shut() { shut.store(true, std::memory_order_release); }
  std::shared_ptr<renewal_scheduler> renewals;  // created by the first keeper
  std::unique_ptr<claim_coalescer> claims;      // created by the first single claim
  std::size_t claim_rotor = 0;                  // first node asked by the next claim batch
  ~client_state();

  /// The fencing hashes whose repair runs now (one at a time per hash).
  std::vector<std::string> repairs_running;
  /// Calls waiting for the repair of `hash` (await_repairs): one entry per hash.
  struct repair_wait {
    const void* call;
    std::string hash;
    std::function<void()> wake;
  };
  std::vector<repair_wait> repair_waits;
  /// Why the last fence repair failed on some node ("" if it did not), for diagnostics.
  std::string repair_problem;
  /// The calls waiting for a release, per key: single locks' lines (the head polls;
  /// releases wake it) and sets; and every acquisition in progress. Listening for the
  /// keys' releases is set_waits' and line_formed's.
  waiter_lines lines;
  /// Wakes the first local waiter for `key` after a release of `token` ("" if unknown):
  /// a local one (`announced` false) or one a node announced. A local release hands the
  /// lock over at once, but at most local_handoff_budget times in a row while other
  /// clients listen (wake_hub::hand_off_locally). On the strand.
  void wake_waiter(std::string_view key, std::string_view token = {}, bool announced = false);
  /// Wakes the first local waiter for `key` after `delay` (see waiter::wake_after).
  void wake_waiter_after(std::string_view key, boot_clock::duration delay);
  /// Release announcements from the nodes (pub/sub), for keys with a local line; created
  /// by the first line (src/waiting/wake.cpp).
  std::unique_ptr<wake_hub> wakes;
  /// A line of waiters formed for `key` / emptied: start / stop listening for its releases
  /// (counted with the sets waiting on `key`: the last one leaving stops).
  void line_formed(const std::string& key);
  void line_gone(const std::string& key);
  /// `w` starts / stops waiting on every key of `keys` (and listening for their releases).
  void set_waits(set_waiter& w, const std::vector<std::string>& keys);
  void set_stops(set_waiter& w, const std::vector<std::string>& keys);
  /// Wakes every set waiting on `key` (a release of `token`, "" if unknown).
  void wake_sets(std::string_view key, std::string_view token);
  /// At shutdown: ends every acquisition in progress with shut_down (a call parked in a
  /// line, waiting out a retry delay, or with its attempt out), undoing the attempts out,
  /// and wakes every waiting permit to finish. On the strand, before the connections drain.
  void end_waits();
  /// The calls of this client waiting in semaphores' lines (src/waiting/permit_line.cpp).
  permit_places places;
  /// Registers `w` as waiting for a permit and listens on the client's offers channel; its
  /// place for the nodes' lines, or "" when no offer could be heard (wake_on_release off).
  std::string join_permit_line(permit_waiter& w, std::chrono::milliseconds grant_ttl = {});
  /// The call of `place` (join_permit_line's, may be "") stopped waiting.
  void leave_permit_line(std::string_view place);
  /// Node `node` offered a permit ("<id> <permit key>" on the offers channel).
  void permit_offered(std::size_t node, std::string_view message);
  /// Node `node` granted permit `key` (holding `value`, "g|" and the place) to a call that no
  /// longer waits: kept if this client holds that permit with that token, else released there.
  void grant_unclaimed(std::size_t node, std::string_view key, std::string_view value);
  /// Every waiting permit call sweeps again (the channel came up; shutdown).
  void wake_permit_waiters();
  /// Election observers' listeners (src/guard/election.cpp), owned here while they wait in
  /// the lines as sets on the keys they follow (a release of one wakes them, as it wakes a
  /// set): an observer dropped without its hop onto the strand leaves its listener harmless
  /// until the client goes. On the strand.
  std::vector<std::shared_ptr<set_waiter>> listeners;
  std::string fence_hash_key;    // names.fence_hash()
  std::string fence_marker_key;  // names.fence_marker()

  /// What a server's error text needs added for a person (quorum_op's describing text).
  static std::string server_hint(std::string_view text) {
    // A plain redis:// node that is one server of a Redis Cluster answers MOVED for the
    // keys it does not own: say how to name it.
    if (text.substr(0, 6) == "MOVED " || text.substr(0, 4) == "ASK " ||
        text.substr(0, 11) == "CLUSTERDOWN")
      return " [the server is part of a Redis Cluster: name the node "
             "redis+cluster://host:port,... so that each key goes to the server that owns it]";
    return acl_hint(text);
  }
  /// Connects each connection's events to this state (after construction: needs
  /// weak_from_this).
  void wire_events();
  void on_node_event(node& c, node_event::kind k, const std::string& message);
  /// Hands a node event to config::on_event and the observer.
  void report(const node_event& e);
  /// The restart guard's period for a lock of `ttl`.
  std::chrono::nanoseconds guard_for(std::chrono::milliseconds ttl) const {
    return guard_period(cfg.max_ttl, ttl);
  }
  /// What decides whether node i's answers count (quorum/rules.hpp, may_vote).
  voter_facts facts(std::size_t i) const {
    const node_status& st = nodes[i]->status();
    return {.replica = st.replica,
            .duplicate = duplicate[i],
            .duplicate_of = duplicate_of[i],
            .started_at = st.started_at,
            .clock_jump_at = st.clock_jump_at,
            .promoted_at = st.promoted_at};
  }
  /// Whether node i is an independent master: not a replica, not a second name of a
  /// server listed earlier. If not and `why` is given, why.
  bool independent(std::size_t i, std::string* why = nullptr) const;
  /// Whether node i may vote now for a lock of `ttl`; if not and `why` is given, why.
  /// Inline: every node of every round asks, and most vote (votes_now).
  bool votes(std::size_t i, std::chrono::milliseconds ttl, boot_clock::time_point now,
             std::string* why = nullptr) const {
    const voter_facts f = facts(i);
    const auto guard = guard_for(ttl);
    if (votes_now(f, cfg.restart_guard, guard, now)) return true;
    return may_vote(f, cfg.restart_guard, guard, now, why);
  }
  /// Which rule, if any, keeps node i from voting now for a lock of `ttl` (rules.hpp,
  /// hold_of).
  node_report::hold_back vote_hold(std::size_t i, std::chrono::milliseconds ttl,
                                   boot_clock::time_point now) const;
  /// The fencing counter's field for a resource (the resource, or its stripe).
  std::string fence_field(std::string_view resource) const;
  /// Repairs the fence counters of unmarked nodes in the background (one run at a time).
  /// `keys`: the pair to repair (the fleet's one pair when empty).
  void start_fence_repair(std::chrono::milliseconds ttl, const fence_key_pair& keys = {});
  /// The hash a repair of `keys` is known by (the fleet's when `keys` is empty).
  std::string_view repair_hash(const fence_key_pair& keys) const {
    return keys.hash.empty() ? std::string_view{fence_hash_key} : keys.hash;
  }
  /// A single try that lost only to nodes awaiting a fence repair waits for the repairs
  /// of `hashes` (those running now) to end: `wake` is called when the last one does.
  /// `call` names the waiting call for forget_repair_wait, which it calls when it ends.
  /// Returns false when none of them runs now (nothing to wait for: try again now).
  bool await_repairs(const void* call, std::span<const std::string_view> hashes,
                     std::function<void()> wake);
  void forget_repair_wait(const void* call);
  /// The repair of `hash` ended (fencing.cpp): wakes the calls that waited only for it.
  void repair_ended(std::string_view hash);
  /// The fencing pair of a lock key (see fence_key_pair).
  fence_key_pair fence_keys(std::string_view key) const;
  /// Stops renewals and closes every connection for good. On the strand.
  void close_all();
  /// As close_all(), after releasing every lock still held and letting the connections
  /// send what is queued (releases included), for at most node_timeout. Calls `done`.
  void close_all_gracefully(std::function<void()> done);
  /// Queues a compare-and-delete of (key, token) on every node (or those in `only`),
  /// reply ignored; `announce`: publish the release to waiters (not for the clean-up of
  /// a failed attempt). A semaphore's permit (`permit`) is released by
  /// permit_release_script, which hands it to the head of the semaphore's line whether
  /// `announce` or not. On the strand.
  void release_detached(std::string_view key, std::string_view token,
                        const std::array<bool, max_nodes>* only = nullptr, bool announce = true,
                        bool permit = false);
  /// Fair mode: removes waiter `id` from a resource's line on the nodes in `only`, reply
  /// ignored (src/waiting/fair.cpp). On the strand.
  void leave_line_detached(std::string_view line_key, std::string_view expiry_key,
                           std::string_view id, const std::array<bool, max_nodes>& only);
  /// release_detached for every key of a set, in one script call per node.
  void release_set_detached(const std::vector<std::string>& keys, std::string_view token,
                            const std::array<bool, max_nodes>* only = nullptr,
                            bool announce = true);
  /// A delay drawn from [d/2, 3d/2].
  std::chrono::nanoseconds jitter(std::chrono::milliseconds d);
};

/// Whether the client behind `owner` still holds what it handed out (not shut down or
/// destroyed). Any thread.
bool owner_holds(const std::weak_ptr<client_state>& owner) noexcept;

/// Grants the ops access to lock's private members.
struct lock_access {
  /// The lock's data, made (from the pool) if it has none.
  static lock_data& make(lock& l) {
    if (!l.d_) l.d_ = make_lock_data();
    return *l.d_;
  }
  /// The data of a lock that has some (not empty: check token() first).
  static lock_data& data(lock& l) { return *l.d_; }
  /// Takes the data out: the lock is left empty, with nothing to release.
  static lock_ptr take(lock& l) { return std::move(l.d_); }
  static std::string_view token(const lock& l) { return l.token(); }
  static std::string_view key(const lock& l) { return l.key(); }
  static std::chrono::milliseconds& ttl(lock& l) { return l.d_->ttl; }
  static boot_clock::time_point& deadline(lock& l) { return l.d_->deadline; }
  static bool& lost(lock& l) { return l.d_->lost; }
  static bool& extending(lock& l) { return l.d_->extending; }
};

using void_completion = completion<void(error_code)>;

/// Takes a handler at initiation: it completes on its associated executor, or on the
/// client's (the system executor's for a moved-from client, which has no state).
template <typename Signature>
completion<Signature> take_handler(erased_handler<Signature> h,
                                   const std::shared_ptr<client_state>& s) {
  if (s) return {std::move(h), s->strand.get_inner_executor()};
  return {std::move(h), asio::any_io_executor{asio::system_executor{}}};
}

/// Completes `h` with error::shut_down (and `args`) for a moved-from client: on the
/// handler's own executor, never inline.
template <typename Signature, typename... Args>
void complete_without_client(erased_handler<Signature> h, Args... args) {
  take_handler(std::move(h), nullptr).post(error_code{error::shut_down}, std::move(args)...);
}

}  // namespace redlock::detail
