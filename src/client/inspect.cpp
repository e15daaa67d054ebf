// client::async_inspect: a read of every node on the quorum engine, one script call (the
// server's INFO and, for a resource, its lock key and fencing counter) and then one
// CONFIG GET per node. Nothing is counted towards a majority: every node is read to the
// end, or to its failure, and the op completes with what each said.

#include <fmt/format.h>

#include <charconv>

#include "client/client_state.hpp"
#include "client/script_calls.hpp"
#include "client/scripts.hpp"
#include "quorum/operation.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {
namespace {

using namespace std::chrono_literals;

class inspect_op final
    : public quorum_op<client_state, void(error_code, std::vector<node_report>)> {
 public:
  inspect_op(std::shared_ptr<client_state> s, inspect_handler h)
      : quorum_op(std::move(s), nullptr, std::move(h)) {
    verb_ = "inspect";
    reports_ = false;
  }

  void start(const std::string& resource) {
    if (s_->closed) return complete(error::shut_down, {});
    if (resource.size() > max_resource_bytes) return complete(error::invalid_resource, {});
    const std::size_t n = s_->size();
    out_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      out_[i].node = i;
      out_[i].address = s_->addresses[i];
    }
    if (resource.empty())
      write_inspect(payload_, {}, {}, {});
    else {
      // The counters' hash is the fleet's, or on a fleet with a cluster node the one of the
      // lock key's slot: the script's two keys share a slot.
      const std::string key = s_->cfg.key_prefix + resource;
      const fence_key_pair fence = s_->fence_keys(key);
      write_inspect(payload_, key, fence.hash, s_->fence_field(resource));
    }
    resp::append_command(config_payload_, "CONFIG", "GET", "appendonly", "appendfsync", "save");
    // A fresh client may still be connecting: its requests wait for the handshake.
    deadline_ = boot_clock::now() + s_->cfg.connect_timeout + s_->cfg.node_timeout;
    watch_cancellation(cancel_any);  // a read: nothing to undo
    send_to_all(payload_, &inspect_script, deadline_);
    on_tally();
  }

 private:
  vote classify(std::size_t i, const resp::reply& r) override {
    const auto& top = r[0];
    // Flat: every element a scalar (a hostile server could nest).
    if (top.kind != resp::type::array || top.size < 1 || r.size() != top.size + 1)
      return vote::failed;
    node_report& o = out_[i];
    const std::string_view info = r[1].text;
    o.version = info_field(info, "redis_version");
    o.run_id = info_field(info, "run_id");
    o.role = info_field(info, "role");
    const auto up = info_field(info, "uptime_in_seconds");
    std::from_chars(up.data(), up.data() + up.size(), o.uptime_s);
    if (top.size >= 5) read_key(o, r);
    // Then the persistence settings, timed: the script's reply may have waited for the
    // connection's handshake, this one is a plain round trip.
    second_sent_[i] = boot_clock::now();
    if (!send_second(second_[i], i, config_payload_, nullptr, deadline_)) finished_[i] = true;
    return vote::yes;
  }

  static void read_key(node_report& o, const resp::reply& r) {
    // {info, type, value, pttl, fence}: elements 2..5 of the flattened reply.
    const std::string_view type = r[2].text;
    o.key = type == "none"     ? node_report::key_state::free
            : type == "string" ? node_report::key_state::held
                               : node_report::key_state::wrong_type;
    if (o.key == node_report::key_state::held) o.holder = r[3].text;
    if (r[4].kind == resp::type::integer) o.ttl = std::chrono::milliseconds{r[4].integer};
    if (r[5].is_string()) {
      std::uint64_t f = 0;
      const std::string_view t = r[5].text;
      if (std::from_chars(t.data(), t.data() + t.size(), f).ec == std::errc{}) o.fence = f;
    }
  }

  void on_second_reply(std::size_t i, error_code ec, const resp::reply* r) override {
    finished_[i] = true;
    node_report& o = out_[i];
    if (!ec) {
      o.round_trip = micros(boot_clock::now() - second_sent_[i]);
      const auto& top = (*r)[0];
      if (top.is_error()) {
        o.appendonly = o.appendfsync = o.save = "denied";
      } else if (top.kind == resp::type::array && r->size() == top.size + 1) {
        // Name, value, name, value...
        for (std::size_t k = 1; k + 1 <= top.size; k += 2) {
          const std::string_view name = (*r)[k].text;
          std::string value{(*r)[k + 1].text};
          if (name == "appendonly")
            o.appendonly = std::move(value);
          else if (name == "appendfsync")
            o.appendfsync = std::move(value);
          else if (name == "save")
            o.save = std::move(value);
        }
      }
    }
    if (!done_) on_tally();
  }

  void on_failed(std::size_t i) override {
    finished_[i] = true;
    node_report& o = out_[i];
    o.error = round_.errors[i];
    o.problem = !round_.texts[i].empty() ? round_.texts[i] : s_->nodes[i]->last_problem();
    if (o.problem.empty()) o.problem = o.error.message();
  }

  void on_tally() override {
    for (std::size_t i = 0; i < out_.size(); ++i)
      if (!finished_[i]) return;
    const auto ttl = s_->cfg.max_ttl.count() > 0 ? s_->cfg.max_ttl : 10000ms;
    const auto now = boot_clock::now();
    for (node_report& o : out_) {
      o.votes = s_->votes(o.node, ttl, now, &o.held_back);
      if (!s_->nodes[o.node]->is_cluster()) continue;
      for (auto& v : static_cast<const cluster_node&>(*s_->nodes[o.node]).shards())
        o.shards.push_back(
            {std::move(v.address), std::move(v.node_id), v.slots, v.ready, std::move(v.problem)});
    }
    complete({}, std::move(out_));
  }

  // A copy: late replies still fill out_ (the op lives until they are in).
  void on_cancel() override { complete(error::cancelled, std::vector<node_report>{out_}); }

  std::vector<node_report> out_;
  std::string payload_;
  std::string config_payload_;
  boot_clock::time_point deadline_;
  std::array<request, max_nodes> second_{};
  std::array<boot_clock::time_point, max_nodes> second_sent_{};
  std::array<bool, max_nodes> finished_{};
};

}  // namespace

void start_inspect(std::shared_ptr<client_state> s, std::string resource, inspect_handler h) {
  if (!s) return complete_without_client(std::move(h), std::vector<node_report>{});
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new inspect_op(std::move(s), std::move(h)), strand,
            [resource = std::move(resource)](inspect_op& op) { op.start(resource); });
}

}  // namespace redlock::detail
