// SPDX-License-Identifier: BSL-1.0
#pragma once
// One long-lived, pipelined connection to one Redis node.
//
// Many concurrent requests share the socket: everything queued while a write is in
// flight goes out in the next single write, replies are matched to requests in FIFO
// order, and each request carries its own deadline, watched by one timer per
// connection. A request that times out completes at once with node_timeout; its late
// reply is still read and dropped, so the connection stays usable. After a timeout the
// connection accepts no new requests until a PING it sent answers (a frozen node is
// not flooded with a backlog when it thaws). All members run on the client's strand.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "connection/info.hpp"
#include "redlock/clock.hpp"
#include "redlock/config.hpp"
#include "resp/resp.hpp"

struct ssl_st;      // OpenSSL's SSL
struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using strand_type = asio::strand<asio::any_io_executor>;
using boot_timer = asio::basic_waitable_timer<boot_clock>;

/// What the handshake and the clock probes learned about the server behind a connection.
struct node_status {
  std::string run_id;
  /// The server's run id and replication id ("<run_id>:<master_replid>"): new at every
  /// restart and every promotion of a replica. Fence markers name it.
  std::string incarnation;
  /// When the server started, by its uptime at the last handshake (rounded towards
  /// "later", so the restart guard errs on the safe side).
  boot_clock::time_point started_at = boot_clock::time_point::min();
  /// When a clock jump was last detected on this node (min() if never).
  boot_clock::time_point clock_jump_at = boot_clock::time_point::min();
  /// When a promotion of a replica was last seen in this node (a cluster's failover;
  /// min() if never): held back as a restart is, whether the restart guard is on or not.
  boot_clock::time_point promoted_at = boot_clock::time_point::min();
  bool replica = false;       ///< ROLE said "slave": never votes
  bool fence_marked = false;  ///< the fence marker names this incarnation (counters trusted)
  /// A cluster shard's `second_repl_offset` (INFO replication): -1 for a primary that
  /// was never a replica; else where its last promotion began, so a new value is a new
  /// promotion (read on cluster shards only).
  std::int64_t second_repl_offset = -1;
  std::uint64_t session = 0;  ///< bumped at every successful handshake
};

/// A client's TLS configuration (an OpenSSL context), shared by its rediss:// connections.
/// Opaque here so that only connection.cpp includes the SSL headers.
struct tls_settings;
/// Builds it from the config (reads the CA, certificate and key files). On failure returns
/// null and sets `why` to a message that names the file or setting.
std::shared_ptr<tls_settings> make_tls_settings(const tls_options& opts, std::string& why);

/// For blocking tools that do their own I/O (the CLI's probe): the settings' OpenSSL
/// context, and the per-connection setup and failure text the connection itself uses.
ssl_ctx_st* native_context(tls_settings& t);
/// SNI and the name or address the certificate must carry, on a new SSL object.
void prepare_tls_peer(ssl_st* ssl, const tls_settings& t, const node_uri& uri);
/// Why a handshake failed: the certificate verdict if there is one, else `fallback`.
std::string tls_failure_text(ssl_st* ssl, const tls_settings& t, const node_uri& uri,
                             std::string fallback);

struct split_form;
struct request;

/// A Lua script run by EVALSHA; `sha` is the SHA1 of `body` (checked by a test).
struct script {
  std::string_view body;
  std::string_view sha;
  /// Set for a script that takes many independent keys (claims, lock sets): how a node
  /// that is a Redis Cluster sends a call of it whose keys span slots.
  const split_form* split = nullptr;
};

/// The lock kind's half of a call split per slot (split_form): it reads what each part
/// answered and says what the whole call answered. The cluster node routes the parts and
/// hands their outcomes here; it does not read them (src/drivers/split_merge.cpp has the
/// lock kinds' merges). One per split call, on the client's strand.
class split_merge {
 public:
  using items = std::span<const std::uint32_t>;  // a part's items, by place in the call
  virtual ~split_merge() = default;
  /// The part sent as `part` (its answered_by names the server that answered, for
  /// marker_trusted) answered `r`. Returns whether it may hold keys the call took.
  virtual bool reply(const request& part, items its, const resp::reply& r) = 0;
  /// The part was sent and failed (timeout, lost connection): it may have run.
  virtual void failed(items its, error_code ec) = 0;
  /// The part could not be sent: it did not run.
  virtual void not_sent(error_code ec) = 0;
  /// After every part: the whole call's reply, or empty when the call failed with
  /// `failure`.
  virtual resp::reply merged(error_code& failure) = 0;
  /// After every part: whether the parts that may hold keys must give them back
  /// (split_form::undo): a set is taken whole or not at all.
  virtual bool give_back() const { return false; }
};

/// How a cluster node sends a call whose keys span slots: one call of the same script per
/// slot, each declaring just that slot's keys (Redis Cluster refuses declared keys of several
/// slots, and applies its migration rules only to declared keys), with the parts' replies
/// merged by the lock kind (`merge`) into the one the whole call would have given. A call is
/// a list of items: each `keys_per_item` consecutive KEYS (one slot) with `args_per_item`
/// ARGV entries after the `shared_args` every part gets; a call with no ARGV beyond the
/// shared ones has one key per item.
struct split_form {
  std::uint8_t shared_args;
  std::uint8_t keys_per_item;
  std::uint8_t args_per_item;
  /// Makes the merge of a call of `items_in_call` items.
  std::unique_ptr<split_merge> (*merge)(std::size_t items_in_call);
  /// The script that gives a part's keys back (KEYS: the part's lock keys; ARGV: the
  /// token, the call's first ARGV entry) when the merge says so (split_merge::give_back).
  const script* undo = nullptr;
};

/// The value a cluster node gives a fence marker in a merged reply when the marker named
/// the server that answered its part (split_form): request::answered_by then points to it.
inline constexpr std::string_view vetted_marker = "+vetted";

/// What one connection accepts from its server: enough for every reply a lock client
/// reads (the largest are INFO and, for unstriped fencing, HGETALL of the counters), and
/// a bound on the memory a broken or hostile server can make it use.
resp::limits reply_limits();

/// Receives the one outcome of each request: a reply, or an error (timeout, lost
/// connection, shut down). Called on the strand, never from inside submit().
class request_sink {
 public:
  virtual void on_reply(std::size_t index, error_code ec, const resp::reply* reply) = 0;

 protected:
  ~request_sink() = default;
};

/// One request. Owned by its sender, which must keep it (and `payload`) alive until
/// its sink was called.
struct request {
  std::string_view payload;     ///< one encoded command
  const script* lua = nullptr;  ///< set when payload is an EVALSHA of this script
  boot_clock::time_point deadline{};
  request_sink* sink = nullptr;
  std::size_t index = 0;
  bool reloaded = false;  ///< already retried after NOSCRIPT
  /// Set by the node before its sink hears of a reply: the incarnation of the server that
  /// answered (node_status::incarnation), which fence markers in the reply must name to be
  /// trusted. Valid only during the sink's call.
  const std::string* answered_by = nullptr;
};

/// Whether a fence marker read in the reply to `r` (a bulk string, or nil for none) vouches
/// for the counters of the server that answered.
inline bool marker_trusted(const request& r, const resp::node& marker) {
  return marker.is_string() && r.answered_by && !r.answered_by->empty() &&
         marker.text == *r.answered_by;
}

/// One Redlock node as the quorum sees it: a single server (connection) or a Redis
/// Cluster (cluster_node, src/connection/cluster.hpp) that answers through the shard
/// owning each request's key. Every member runs on the client's strand.
class node {
 public:
  virtual ~node() = default;
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// Starts connecting (and reconnecting after failures) until close().
  virtual void start() = 0;
  /// Queues a request. On a non-empty error the request was not accepted and its sink
  /// will not be called: node_unavailable (not connected, or unresponsive), overloaded.
  virtual error_code submit(request& r) = 0;
  /// Queues a command whose reply nobody waits for (see connection::submit_detached).
  virtual void submit_detached(std::string payload) = 0;
  /// Fails everything with error::shut_down and closes for good.
  virtual void close() = 0;
  /// Sends what is queued and waits for the replies already due, at most `limit`, then
  /// closes as close() does and calls `done` (on the strand).
  virtual void close_gracefully(std::chrono::milliseconds limit, std::function<void()> done) = 0;
  /// Requests go out now (a cluster: its slot map is known and every shard is ready).
  virtual bool ready() const = 0;
  /// Connecting or handshaking: a request submitted now waits for the handshake.
  virtual bool connecting() const = 0;
  /// Whether submit() would queue a request now (ready, or connecting: it waits).
  virtual bool accepts() const = 0;
  /// Why the node is not usable right now, for diagnostics ("" when it is).
  virtual const std::string& last_problem() const = 0;
  /// The server facts the restart guard and the duplicate check read (a cluster: all
  /// its shards together, the most recent start counting).
  virtual const node_status& status() const = 0;
  /// The fence counters of this node were repaired and its marker set (by the client).
  virtual void set_fence_marked() = 0;
  /// A Redis Cluster rather than one server.
  virtual bool is_cluster() const { return false; }
  /// The hash tag that keeps other keys on the same server as `key` ({tag} in their
  /// names), for a node that spreads keys over servers by slot; none for one server.
  virtual std::optional<std::string_view> colocation_tag(std::string_view key) const {
    (void)key;
    return std::nullopt;
  }
  /// How many of `most` keys one call of a script that names each key may carry here:
  /// all on one server; one on a node that would split the call per slot.
  virtual std::size_t keys_per_call(std::size_t most) const { return most; }
  /// The TLS settings of a rediss:// node (null for redis://), to open another connection.
  virtual const std::shared_ptr<tls_settings>& tls() const = 0;

  std::size_t id() const { return id_; }
  const node_uri& uri() const { return uri_; }
  /// Called on the strand after each handshake, reconnect failure and clock jump.
  std::function<void(node&, node_event::kind, const std::string&)> on_event;

 protected:
  node(node_uri uri, std::size_t id) : uri_(std::move(uri)), id_(id) {}

  node_uri uri_;
  std::size_t id_;
};

class connection final : public node, public std::enable_shared_from_this<connection> {
 public:
  /// `preload`: scripts loaded at every handshake (SCRIPT LOAD), so that EVALSHA is
  /// answered NOSCRIPT only after a SCRIPT FLUSH. Must outlive the connection.
  /// `tls`: the client's shared TLS settings, used when uri.tls is set; when null they
  /// are made from cfg.tls (throws system_error(invalid_config) if they cannot be).
  connection(strand_type strand, node_uri uri, const config& cfg, std::size_t id,
             const std::vector<const script*>* preload = nullptr,
             std::shared_ptr<tls_settings> tls = nullptr);
  ~connection();

  void start() override;
  error_code submit(request& r) override;
  /// Queues a command whose reply nobody waits for (a release, the clean-up of a failed
  /// or cancelled attempt). Kept until the node answered it: across unresponsive periods
  /// and reconnects (bounded by max_queued_per_node while waiting), a command lost with a
  /// broken connection goes out again on the next one, so that a late SET on a thawed or
  /// reconnected node is still undone. Sent again at most once per broken connection, so
  /// it must be harmless to run twice (compare-and-delete is). Subscriber connections
  /// keep nothing: their subscriptions are renewed by their owner.
  void submit_detached(std::string payload) override;
  /// Fails everything with error::shut_down and closes the socket for good.
  void close() override;
  /// Sends what is queued and waits for the replies already due (releases, say), at
  /// most `limit`, then closes as close() does and calls `done` (on the strand).
  void close_gracefully(std::chrono::milliseconds limit, std::function<void()> done) override;
  /// Makes this a subscriber connection (call before start()): the handshake is AUTH (if
  /// any) and PING only, no clock probes, and every pub/sub message (["message", channel,
  /// payload]) and every SUBSCRIBE confirmation (["subscribe", channel, count]) goes to
  /// `on_message`. Commands are sent with submit_detached(), one channel per command, so
  /// that each has exactly one reply.
  void make_subscriber(std::function<void(const resp::reply&)> on_message) {
    on_message_ = std::move(on_message);
  }
  /// The TLS settings of a rediss:// connection (null for redis://), to open another one.
  const std::shared_ptr<tls_settings>& tls() const override { return tls_settings_; }
  /// Replaces reply_limits() for this connection (tests); call before start().
  void set_reply_limits(const resp::limits& limits) { reader_ = resp::reader{limits}; }

  bool ready() const override { return state_ == state::ready && !unresponsive_; }
  bool connecting() const override {
    return state_ == state::connecting || state_ == state::handshaking;
  }
  bool accepts() const override {
    return ready() || state_ == state::connecting || state_ == state::handshaking;
  }
  const std::string& last_problem() const override { return last_problem_; }
  const node_status& status() const override { return status_; }
  void set_fence_marked() override { status_.fence_marked = true; }
  /// Sends `r` right after ASKING (a cluster's ASK redirection), when ready; errors as
  /// submit().
  error_code submit_asking(request& r);
  /// Makes this connection a cluster shard's (call before start()): the handshake also
  /// reads INFO replication (was this primary ever promoted?), and the reply to a
  /// detached command that is a redirection (MOVED, ASK) goes to `on_redirect` with the
  /// command, instead of being dropped.
  void make_shard(std::function<void(std::string payload, std::string_view error)> on_redirect) {
    on_redirect_ = std::move(on_redirect);
  }

 private:
  enum class state : std::uint8_t { idle, connecting, handshaking, ready, backoff, closed };
  enum class kind : std::uint8_t { user, ignore, detached, handshake, probe, clock };
  enum class step : std::uint8_t { auth, select, info, role, marker, load, time, ping };
  struct inflight {
    request* req;  // null once completed by a timeout (the reply is then dropped)
    kind k;
  };
  struct waiting {
    request* req;       // null for a detached command
    std::string owned;  // payload of a detached command
  };

  void connect();
  void on_tcp_connected();
  void on_connected();
  void send_handshake();
  asio::ip::tcp::socket& tcp();
  std::string tls_problem(const error_code& ec);
  void on_handshake_reply(const resp::reply& r);
  static std::string_view step_command(step st);
  /// Why the handshake failed on an error reply to `st`, with what to do about it.
  std::string handshake_refusal(step st, std::string_view text) const;
  void on_time_reply(const resp::reply& r, boot_clock::time_point sent);
  void schedule_clock_probe();
  void become_ready();
  void fail_connection(error_code ec, std::string problem);
  void schedule_reconnect();

  void start_read();
  void on_read(error_code ec, std::size_t n);
  void dispatch_reply(const resp::reply& r);

  void append(std::string_view payload, request* req, kind k);
  void append_detached(std::string payload);
  void on_noscript(request& req, const resp::reply& r);
  void run_again(request& req);
  bool sent_as_eval(const script* lua) const;
  void schedule_flush();
  void flush();

  void arm_deadline(boot_clock::time_point t);
  void watch_unresponsive();
  void check_drained();
  void on_deadline();
  void complete(request* req, error_code ec, const resp::reply* reply);

  strand_type strand_;
  config cfg_;
  const std::vector<const script*>* preload_;

  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;  // plain connections
  struct tls_stream;              // rediss://: a TLS stream with its own socket,
  std::shared_ptr<tls_settings> tls_settings_;
  std::shared_ptr<tls_stream> tls_;  // made anew for every connection attempt
  boot_timer deadline_timer_;        // earliest request deadline
  boot_timer conn_timer_;            // connect/handshake deadline, reconnect back-off
  boot_clock::time_point armed_for_ = boot_clock::time_point::max();
  bool deadline_armed_ = false;

  state state_ = state::idle;
  bool unresponsive_ = false;
  bool outage_reported_ = false;  // since the last time it was ready (node events)
  bool draining_ = false;
  std::function<void()> on_drained_;
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool reading_ = false;
  bool tls_handshaking_ = false;
  std::uint64_t generation_ = 0;  // bumped per socket, so stale handlers know
  std::vector<step> handshake_steps_;
  std::size_t handshake_next_ = 0;
  node_status status_;
  node_status pending_status_;  // filled during a handshake, published when it succeeds
  // Clock samples: our send and receive times around the server's TIME.
  struct clock_sample {
    boot_clock::time_point sent, received;
    std::int64_t server_us = 0;
  };
  std::optional<clock_sample> last_sample_;
  std::deque<boot_clock::time_point> clock_sent_;  // send times of TIME probes in flight
  boot_timer probe_timer_;
  int backoff_attempt_ = 0;  // reconnects since the connection last proved itself
  boot_clock::time_point ready_at_{};
  std::string last_problem_;
  std::string handshake_payload_;

  std::string wbuf_;          // queued, to go out in the next write
  std::string wbuf_writing_;  // being written
  std::deque<inflight> inflight_;
  std::deque<waiting> waiting_;          // before the connection is ready
  std::deque<std::string> after_probe_;  // detached commands held while unresponsive
  // Detached commands written (or about to be) and not answered yet, in order: sent again
  // on the next connection if this one breaks first.
  std::deque<std::string> unanswered_;
  // Scripts this server answered NOSCRIPT to even right after SCRIPT LOAD (a proxy that
  // routes SCRIPT LOAD elsewhere, a server with SCRIPT disabled): sent as EVAL with the
  // script's text from then on.
  std::vector<const script*> eval_only_;
  bool any_eval_only_ = false;  // eval_only_ is not empty (checked per request)
  resp::reader reader_{reply_limits()};
  resp::reply reply_;
  std::minstd_rand rng_;
  std::function<void(const resp::reply&)> on_message_;              // set on subscriber connections
  std::function<void(std::string, std::string_view)> on_redirect_;  // set on cluster shards
};

}  // namespace redlock::detail
