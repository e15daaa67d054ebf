// SPDX-License-Identifier: BSL-1.0
// Who may vote (restart guard, clock jumps, replicas, duplicates), the fencing scripts,
// and the repair of fencing counters on nodes that lost them.
//
// Fencing counters live in one hash per node. A persistent marker key says a node's
// counters can be trusted: its value names the incarnation of the server they were repaired
// on (run id and replication id). A node whose marker is missing or names another
// incarnation (new, restarted empty or from disk, a replica promoted) contributes no
// counter value to a token until a repair has raised its counters to a maximum that covers
// every token handed out, and then named its incarnation in the marker. The repair's rule, checked
// with spin (verify/redlock.pml; docs/safety.md, "What was model-checked"):
// - the maximum is taken when a majority of the nodes that answered are marked, or when
//   every node answered (a new fleet, or one whose first repair reached only some
//   nodes: a read of all of them sees every counter that still exists);
// - it is written only to a node that was already past its restart guard when the
//   repair started, and only over the connection it has now (never queued behind a
//   reconnect). Every write-back such a server acknowledged before it lost its counters
//   was then complete elsewhere before our first read; a server that restarted after
//   the start fails the test.
// A node left out is repaired by a later run, which every fenced attempt starts while
// some node is unmarked (on a fleet with a cluster node, per slot: an attempt that got an
// unmarked answer, even one that came after its decision).

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>

#include "client/client_state.hpp"
#include "connection/slots.hpp"
#include "drivers/carry_out.hpp"
#include "machines/repair_decisions.hpp"
#include "machines/repair_fsm.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "scripts/script_calls.hpp"

namespace redlock::detail {

// ---- who votes ---------------------------------------------------------------------

void client_state::wire_events() {
  fence_hash_key = names.fence_hash();
  fence_marker_key = names.fence_marker();
  std::weak_ptr<client_state> self = weak_from_this();
  for (auto& n : nodes) {
    n->on_event = [self](node& c, node_event::kind k, const std::string& msg) {
      if (auto s = self.lock()) s->on_node_event(c, k, msg);
    };
  }
}

void client_state::on_node_event(node& c, node_event::kind k, const std::string& message) {
  if (k == node_event::kind::connected) {
    // One server listed under two names must count once: the later name stays out.
    const std::size_t i = c.id();
    duplicate[i] = false;
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      if (j == i || nodes[j]->status().run_id.empty()) continue;
      if (nodes[j]->status().run_id == c.status().run_id && (j < i || duplicate[j] == false)) {
        const std::size_t later = std::max(i, j);
        duplicate[later] = true;
        duplicate_of[later] = std::min(i, j);
        if (cfg.on_event || obs)
          report(node_event{node_event::kind::duplicate, later, addresses[later],
                            fmt::format("same server as node {} (run id {}); it does not vote",
                                        std::min(i, j), c.status().run_id)});
      }
    }
  }
  if (cfg.on_event || obs) report(node_event{k, c.id(), addresses[c.id()], message});
  // A waiting permit call took its place in line only on the nodes its try reached: one that
  // connects now (or again, perhaps restarted empty) gets it from a new sweep.
  if (k == node_event::kind::connected && !places.empty()) wake_permit_waiters();
}

void client_state::report(const node_event& e) {
  if (cfg.on_event) cfg.on_event(e);
  if (obs) obs->on_node_event(e);
}

bool client_state::independent(std::size_t i, std::string* why) const {
  return independent_master(facts(i), why);
}

node_report::hold_back client_state::vote_hold(std::size_t i, std::chrono::milliseconds ttl,
                                               boot_clock::time_point now) const {
  return hold_of(facts(i), cfg.restart_guard, guard_for(ttl), now);
}

fence_key_pair client_state::fence_keys(std::string_view key) const {
  fence_key_pair k;
  const auto tag = colocation_tag(key);
  if (!tag) {
    k.hash = fence_hash_key;
    k.marker = fence_marker_key;
    return k;
  }
  k.own_hash = names.fence_hash(*tag);
  k.own_marker = names.fence_marker(*tag);
  k.hash = k.own_hash;
  k.marker = k.own_marker;
  return k;
}

std::string client_state::fence_field(std::string_view resource) const {
  return redlock::fence_field(resource, cfg.fence_stripes);
}

// ---- repair ------------------------------------------------------------------------

namespace {

// Drives a repair_fsm: reads every node's marker and counters, then writes the repair to
// the nodes the machine names, as a quorum_op of two rounds (the writes as its second
// round). It completes to nobody; the client keeps why it last failed.
class fence_repair_op final : public quorum_op<client_state, void(error_code)> {
 public:
  fence_repair_op(std::shared_ptr<client_state> s, std::chrono::milliseconds ttl,
                  const fence_key_pair& keys)
      : quorum_op(std::move(s), nullptr, {}),
        ttl_(ttl),
        hash_(keys.hash.empty() ? s_->fence_hash_key : std::string{keys.hash}),
        marker_(keys.marker.empty() ? s_->fence_marker_key : std::string{keys.marker}),
        fsm_(s_->size()) {
    reports_ = false;
  }

  void start() {
    write_fence_read(payload_, hash_, marker_);
    started_ = boot_clock::now();
    fsm_.reads_sent();
    send_to_all(payload_, &fence_read_script, request_deadline(started_, s_->cfg.node_timeout));
    on_tally();
  }

 private:
  vote classify(std::size_t i, const resp::reply& r) override {
    if (!fence_read_well_formed(r)) return vote::failed;
    fence_read nr{.answered = true, .marked = trusted_marker(i, r[1])};
    // The incarnation of the server behind the answer ("" if unknown): its write names it.
    if (const std::string* by = reqs_answered_by(i)) nr.incarnation = *by;
    read_fence_counters(r, nr.counters);
    act(fsm_.read_answered(i, std::move(nr)));
    return vote::yes;
  }

  void on_failed(std::size_t i) override {
    act(fsm_.read_failed(i, round_.errors[i], round_.texts[i]));
  }

  // Every read is in (or failed): the machine decides, on each node's standing now.
  void on_tally() override {
    if (!fsm_.reads_in()) return;
    std::array<repair_standing, max_nodes> standing{};
    for (std::size_t i = 0; i < s_->size(); ++i)
      standing[i] = {.independent = s_->independent(i),
                     .ready = s_->nodes[i]->ready(),
                     .voted_at_start = s_->votes(i, ttl_, started_)};
    act(fsm_.reads_done({standing.data(), s_->size()}));
  }

  void on_second_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    act(fsm_.write_answered(i, ec, r, writes_[i].answered_by));
  }

  // No handler, so no cancellation slot: only a stop the machine is told of ends it early.
  void on_cancel() override { act(fsm_.stop(error::cancelled)); }

  // Carries out what the machine decided (carry_out.hpp): the reads are start()'s.
  void act(repair_action a) {
    // The node-wide flag is the fleet's one pair's; a slot's pair is asked by each lock.
    if (a.detail.mark && hash_ == s_->fence_hash_key) s_->nodes[*a.detail.mark]->set_fence_marked();
    action_runner::carry_out(*this, a);
  }
  friend action_runner;
  void do_second_round(const repair_action& a) { send_writes(a); }
  void do_complete(const repair_action& a) {
    std::erase(s_->repairs_running, hash_);
    keep_repair_problem(s_->repair_problem, std::string{a.detail.problem}, a.detail.wrote);
    s_->repair_ended(hash_);
    complete(a.ec);
  }

  // Each write names the incarnation its node's read came from.
  void send_writes(const repair_action& a) {
    const auto deadline = request_deadline(boot_clock::now(), s_->cfg.node_timeout);
    node_mask sent = 0;
    for (std::size_t i = 0; i < s_->size(); ++i) {
      if ((a.nodes & bit(i)) == 0) continue;
      std::string& write = write_[i];
      write.clear();
      write_fence_repair(write, hash_, marker_, fsm_.read(i).incarnation, a.detail.maxima);
      if (send_second(writes_[i], i, write, &fence_repair_script, deadline)) sent |= bit(i);
    }
    act(fsm_.writes_sent(sent));
  }

  std::chrono::milliseconds ttl_;
  std::string hash_, marker_;         // the pair repaired
  boot_clock::time_point started_{};  // before the first read was queued
  repair_fsm fsm_;
  std::array<request, max_nodes> writes_{};
  std::string payload_;
  std::array<std::string, max_nodes> write_;
};

}  // namespace

void client_state::start_fence_repair(std::chrono::milliseconds ttl, const fence_key_pair& keys) {
  const std::string_view hash = repair_hash(keys);
  if (closed ||
      std::find(repairs_running.begin(), repairs_running.end(), hash) != repairs_running.end())
    return;
  repairs_running.emplace_back(hash);
  auto* op = new fence_repair_op(shared_from_this(), ttl, keys);
  op->run_guarded([op] { op->start(); });  // it frees itself by quorum_op's rule
}

bool client_state::await_repairs(const void* call, std::span<const std::string_view> hashes,
                                 std::function<void()> wake) {
  // A pair whose repair does not run now (it ended already, or could not start) is not
  // waited for.
  bool waits = false;
  for (std::string_view h : hashes)
    if (std::find(repairs_running.begin(), repairs_running.end(), h) != repairs_running.end()) {
      repair_waits.push_back({call, std::string{h}, wake});
      waits = true;
    }
  return waits;
}

void client_state::forget_repair_wait(const void* call) {
  std::erase_if(repair_waits, [call](const repair_wait& w) { return w.call == call; });
}

void client_state::repair_ended(std::string_view hash) {
  // One at a time from the live list: a wake may end other waiting calls, which forget
  // their entries.
  for (;;) {
    auto it = std::find_if(repair_waits.begin(), repair_waits.end(),
                           [hash](const repair_wait& w) { return w.hash == hash; });
    if (it == repair_waits.end()) return;
    const void* call = it->call;
    auto wake = std::move(it->wake);
    repair_waits.erase(it);
    if (std::none_of(repair_waits.begin(), repair_waits.end(),
                     [call](const repair_wait& w) { return w.call == call; }))
      wake();
  }
}

}  // namespace redlock::detail

std::string redlock::fence_field(std::string_view resource, std::size_t stripes) {
  if (stripes == 0) return std::string{resource};
  // FNV-1a, 64 bit: stable across clients and platforms, as the stripe must be.
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : resource) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return fmt::format("stripe:{}", h % stripes);
}
