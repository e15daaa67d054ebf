// SPDX-License-Identifier: BSL-1.0
// client::async_inspect: a read of every node on the quorum engine, one script call (the
// server's INFO and, for a resource, its lock key and fencing counter) and then one
// CONFIG GET per node. What each answer means and when the inspection is over is
// inspect_fsm's; this file sends the requests.

#include "client/client_state.hpp"
#include "drivers/carry_out.hpp"
#include "machines/inspect_fsm.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {
namespace {

using namespace std::chrono_literals;

// Drives an inspect_fsm: sends the script to every node, each node's persistence request
// when the machine asks for it, and completes when the machine says so.
class inspect_op final
    : public quorum_op<client_state, void(error_code, std::vector<node_report>)> {
 public:
  inspect_op(std::shared_ptr<client_state> s, inspect_handler h)
      : quorum_op(std::move(s), nullptr, std::move(h)), fsm_({s_->addresses.data(), s_->size()}) {
    verb_ = "inspect";
    reports_ = false;
  }

  void start(const std::string& resource) {
    if (s_->closed) return complete(error::shut_down, {});
    if (resource.size() > max_resource_bytes) return complete(error::invalid_resource, {});
    if (resource.empty())
      write_inspect(payload_, {}, {}, {});
    else {
      // The counters' hash is the fleet's, or on a fleet with a cluster node the one of the
      // lock key's slot: the script's two keys share a slot.
      const std::string key = s_->names.key(resource);
      const fence_key_pair fence = s_->fence_keys(key);
      write_inspect(payload_, key, fence.hash, s_->fence_field(resource));
    }
    resp::append_command(config_payload_, "CONFIG", "GET", "appendonly", "appendfsync", "save");
    // A fresh client may still be connecting: its requests wait for the handshake.
    deadline_ = boot_clock::now() + s_->cfg.connect_timeout + s_->cfg.node_timeout;
    watch_cancellation(cancel_any);  // a read: nothing to undo
    send_to_all(payload_, &inspect_script, deadline_);
    act(fsm_.round_sent());
  }

 private:
  vote classify(std::size_t i, const resp::reply& r) override {
    if (!inspect_answer_well_formed(r)) return vote::failed;
    act(fsm_.first_answered(i, r, boot_clock::now()));
    return vote::yes;
  }

  void on_second_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    act(fsm_.second_answered(i, ec, r, boot_clock::now()));
  }

  void on_failed(std::size_t i) override {
    act(fsm_.node_failed(i, round_.errors[i], round_.texts[i], s_->nodes[i]->last_problem()));
  }

  // The machine completes on the event that finishes the last node.
  void on_tally() override {}

  void on_cancel() override { act(fsm_.cancel()); }

  // Carries out what the machine decided (carry_out.hpp): the first round is start()'s.
  void act(const inspect_action& a) { action_runner::carry_out(*this, a); }
  friend action_runner;
  void do_second_round(const inspect_action& a) {
    for (std::size_t i = 0; i < s_->size(); ++i)
      if ((a.nodes & bit(i)) && !send_second(second_[i], i, config_payload_, nullptr, deadline_))
        act(fsm_.second_refused(i));
  }
  void do_complete(const inspect_action& a) {
    if (a.ec) return complete(a.ec, fsm_.take_reports());
    complete({}, standing(fsm_.take_reports()));
  }

  // Whether each node votes now, and a cluster node's primaries, as the client sees them
  // at the end.
  std::vector<node_report> standing(std::vector<node_report> out) const {
    const auto ttl = s_->cfg.max_ttl.count() > 0 ? s_->cfg.max_ttl : 10000ms;
    const auto now = boot_clock::now();
    for (node_report& o : out) {
      o.hold = s_->vote_hold(o.node, ttl, now);
      o.votes = o.hold.by == node_report::hold_back::rule::none;
      o.held_back = describe_hold(o.hold, s_->guard_for(ttl));
      if (!s_->nodes[o.node]->is_cluster()) continue;
      for (auto& v : static_cast<const cluster_node&>(*s_->nodes[o.node]).shards())
        o.shards.push_back(
            {std::move(v.address), std::move(v.node_id), v.slots, v.ready, std::move(v.problem)});
    }
    return out;
  }

  inspect_fsm fsm_;
  std::string payload_;
  std::string config_payload_;
  boot_clock::time_point deadline_;
  std::array<request, max_nodes> second_{};
};

}  // namespace

void start_inspect(std::shared_ptr<client_state> s, std::string resource, inspect_handler h) {
  if (!s) return complete_without_client(std::move(h), std::vector<node_report>{});
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new inspect_op(std::move(s), std::move(h)), strand,
            [resource = std::move(resource)](inspect_op& op) { op.start(resource); });
}

}  // namespace redlock::detail
