// SPDX-License-Identifier: BSL-1.0
#pragma once
// A Redlock node that is a Redis Cluster: one pipelined connection per primary, each
// request sent to the primary that owns its key's slot.
//
// The slot map comes from CLUSTER SLOTS, asked of a seed (rotating through the seeds while
// none answers) and asked again whenever a shard redirects us or goes away. A MOVED reply
// updates the map for its slot and sends the request to the new owner; an ASK reply sends
// it once more, after ASKING, to the shard importing the slot. Both prove the command did
// not run where it was refused, so nothing runs twice; a request that timed out is never
// sent again. Detached commands (releases) follow redirections too.
//
// For the restart guard the node's status is its shards' together: the latest start of
// any primary counts, and a primary that was promoted from a replica (a failover, which
// may have lost acknowledged writes) counts as started when this client first saw it in
// that role (`second_repl_offset`, read at each shard's handshake). A call of a multi-key
// script whose keys span slots is split per slot (split_form), so that every part declares
// all the keys it touches; the parts' outcomes go to the lock kind's merge (split_merge),
// which this node never second-guesses. Everything runs on the client's strand.

#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "connection/connection.hpp"
#include "connection/slots.hpp"

namespace redlock::detail {

/// What a cluster node shows of its shards (the CLI's `status`, diagnostics).
struct shard_view {
  std::string address;  ///< host:port of the primary
  std::string node_id;  ///< the cluster's node id ("" when learned from a redirection)
  std::size_t slots = 0;
  bool ready = false;
  std::string problem;  ///< why it is not ready ("" when it is)
};

class cluster_node final : public node,
                           public request_sink,
                           public std::enable_shared_from_this<cluster_node> {
 public:
  /// As connection's constructor; `uri.cluster` is set and `uri.seeds` is not empty.
  cluster_node(strand_type strand, node_uri uri, const config& cfg, std::size_t id,
               const std::vector<const script*>* preload, std::shared_ptr<tls_settings> tls);
  ~cluster_node() override;

  void start() override;
  error_code submit(request& r) override;
  void submit_detached(std::string payload) override;
  void close() override;
  void close_gracefully(std::chrono::milliseconds limit, std::function<void()> done) override;
  bool ready() const override;
  bool connecting() const override;
  bool accepts() const override;
  const std::string& last_problem() const override;
  const node_status& status() const override { return status_; }
  void set_fence_marked() override {}
  bool is_cluster() const override { return true; }
  std::optional<std::string_view> colocation_tag(std::string_view key) const override {
    return slot_tag(key_slot(key));
  }
  std::size_t keys_per_call(std::size_t) const override { return 1; }
  const std::shared_ptr<tls_settings>& tls() const override { return tls_; }

  /// The primaries of the current slot map.
  std::vector<shard_view> shards() const;

  void on_reply(std::size_t index, error_code ec, const resp::reply* reply) override;

 private:
  struct shard {
    std::string node_id;
    node_uri uri;  // host, port, credentials and TLS of the primary
    std::shared_ptr<connection> conn;
    std::size_t slots = 0;
  };
  // A user's request on its way through the cluster: `inner` is what the shard holds,
  // pointing back here; the user's request is answered when `inner` is (or redirected).
  struct hop {
    request inner;
    request* outer = nullptr;
    std::uint16_t at = 0;  // the shard it was sent to
    std::uint8_t redirects = 0;
  };
  static constexpr std::uint16_t no_shard = 0xffff;
  static constexpr std::uint32_t no_part = 0xffffffff;
  static constexpr std::size_t map_request = static_cast<std::size_t>(-1);
  // Redirections followed per request: a slot moved twice while one request was on its
  // way is possible, a longer chain is a broken cluster.
  static constexpr std::uint8_t max_redirects = 4;

  class splitter;  // a call split per slot, its parts routed (cluster.cpp)
  struct split_plan {
    std::vector<std::string> payloads;              // one call of the same script each
    std::vector<std::vector<std::uint32_t>> items;  // the items each part carries
    std::vector<std::string> undo;                  // set_acquire: each part's giving back
    std::size_t items_in_call = 0;                  // items in the whole call
  };
  enum class plan_result : std::uint8_t { whole, split, unmapped };
  /// How a script call goes to the shards; `form` null: the script's own, looked up by the
  /// text or SHA1 the payload names (a detached command has no script pointer).
  plan_result plan_split(std::string_view payload, const split_form* form, split_plan& out);

  void open_seed();
  void ask_for_map(const std::shared_ptr<connection>& via);
  void on_map(error_code ec, const resp::reply* reply);
  bool apply_map(const resp::reply& r);
  void schedule_refresh(std::chrono::milliseconds at_least = {});
  std::size_t shard_for(const node_uri::endpoint& e, std::string_view node_id);
  std::shared_ptr<connection> make_connection(const node_uri& u, bool as_shard);
  void on_shard_event(connection& c, node_event::kind k, const std::string& message);
  void route_detached(std::string payload);
  error_code route(request& outer);
  error_code send_hop(std::size_t h, std::size_t shard, bool asking);
  void fail_pending(error_code ec);
  void watch_pending();
  void update_status();
  bool any_primary(bool (connection::*test)() const) const;

  strand_type strand_;
  config cfg_;
  const std::vector<const script*>* preload_;
  std::shared_ptr<tls_settings> tls_;

  std::vector<shard> shards_;
  std::vector<std::uint16_t> owner_;  // slot -> index in shards_ (no_shard: uncovered)
  bool map_known_ = false;
  bool closed_ = false;

  std::vector<std::shared_ptr<connection>> retired_;  // primaries let go, finishing up
  std::shared_ptr<connection> seed_;                  // asked for the first map, then closed
  std::size_t next_seed_ = 0;
  bool seed_failed_ = false;  // no map yet, and the last seed asked gave none
  std::string map_via_;       // host the map was asked at
  std::string map_problem_;   // why the last map could not be had ("" if it could)
  bool map_asked_ = false;    // a CLUSTER SLOTS is out
  bool refresh_wanted_ = false;
  request map_req_{};
  std::string map_payload_;
  boot_timer refresh_timer_;
  bool refresh_armed_ = false;
  boot_clock::time_point refresh_at_{};   // when the armed refresh fires
  std::uint64_t refresh_generation_ = 0;  // of the wait that counts (others were superseded)
  int refresh_failures_ = 0;

  std::deque<hop> hops_;  // stable addresses: shards hold `inner`
  std::list<splitter> splits_;
  std::vector<std::size_t> free_hops_;
  std::deque<request*> pending_;  // before the first map
  std::deque<std::string> pending_detached_;
  boot_timer pending_timer_;
  bool pending_armed_ = false;

  node_status status_;
  // Per node id: the second_repl_offset whose promotion was accounted for.
  std::vector<std::pair<std::string, std::int64_t>> promotions_;
  boot_clock::time_point held_from_ = boot_clock::time_point::min();
  mutable std::string problem_;  // last_problem()'s text
};

}  // namespace redlock::detail
