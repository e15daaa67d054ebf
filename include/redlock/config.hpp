// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// Configuration of a lock client and of individual lock calls.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// Wait "forever" (until cancelled) in lock_options::wait.
inline constexpr std::chrono::milliseconds wait_forever = std::chrono::milliseconds::max();

class observer;

/// A change in a node's state, reported through config::on_event and observer::on_node_event.
struct node_event {
  /// tls_unverified: a rediss:// connection came up without certificate verification
  /// (tls_options::verify is off); reported at every such connection.
  /// connect_failed: a node that is not connected could not be connected to (refused,
  /// timed out, TLS, AUTH, ...; the message says which). Reported once per outage: for a
  /// node that never connected since the client started, or after a failure that was not
  /// a `disconnected`, not for every retry.
  enum class kind {
    connected,
    disconnected,
    restarted,
    clock_jump,
    replica,
    duplicate,
    tls_unverified,
    connect_failed
  };
  kind what{};
  std::size_t node{};     ///< index in config::nodes
  std::string address{};  ///< host:port, never credentials
  std::string message{};  ///< a sentence for people
};

/// TLS settings, used by the `rediss://` nodes of a client (plain `redis://` nodes ignore
/// them). The files are read once, when the client is constructed; a file that cannot be
/// read or parsed is an invalid_config error naming it.
struct tls_options {
  /// Trusted CA certificates: a PEM file, and/or a directory in OpenSSL's hashed layout
  /// (`openssl rehash`). Both empty: the system's default trust store.
  std::string ca_file{};
  std::string ca_dir{};
  /// Client certificate (PEM, may hold the chain) and its private key, for servers that
  /// require mutual TLS (`tls-auth-clients yes`). Both or neither.
  std::string cert_file{};
  std::string key_file{};
  /// The name the server's certificate must carry, also sent as SNI. Empty (default): the
  /// host of each node's URI (an IP address is then matched against the certificate's IP
  /// addresses).
  std::string server_name{};
  /// Verify the server's certificate chain, dates and name (default). Off, any certificate
  /// is accepted, which lets anyone on the path impersonate the node; every such
  /// connection is reported as node_event::kind::tls_unverified.
  bool verify = true;
};

/// Settings of a client. Validated once, before any I/O (client's constructor throws
/// boost::system::system_error with error::invalid_config and a message naming the field).
struct config {
  /// Independent Redis masters, as `redis://[user:password@]host:port[/db]`, or
  /// `rediss://...` for TLS (see `tls`).
  /// 1 to 15 nodes; a lock needs N/2+1 of them. An odd count is best.
  std::vector<std::string> nodes{};

  /// Credentials for nodes whose URI names none: AUTH with `user` (empty: the default
  /// user) and the password from exactly one of `password`, the first line of the file
  /// `password_file`, or the environment variable named by `password_env` (both read
  /// when the client is constructed). A URI's own credentials win. Passwords never appear
  /// in any message, event or diagnostic.
  std::string user{};
  std::string password{};
  std::string password_file{};
  std::string password_env{};
  /// How the people who run this program give it a password, for the messages that ask
  /// for one (a server that wants a password, or refused it): for example "--password-file
  /// or REDLOCK_PASSWORD". Empty: the messages name the fields above.
  std::string password_help{};
  /// TLS settings for `rediss://` nodes.
  tls_options tls{};

  /// Deadline for TCP connect plus handshake (TLS, AUTH, SELECT, ...). Default 1 s.
  std::chrono::milliseconds connect_timeout = std::chrono::milliseconds{1000};
  /// Longest wait for one node's reply to one request; the deadline of a lock request is
  /// the smaller of this and the time left in the lock's TTL. Keep it small compared with
  /// TTLs. Default 250 ms.
  std::chrono::milliseconds node_timeout = std::chrono::milliseconds{250};
  /// Reconnect back-off: starts here, doubles up to reconnect_max, with jitter. Default
  /// 50 ms to 2 s.
  std::chrono::milliseconds reconnect_min = std::chrono::milliseconds{50};
  std::chrono::milliseconds reconnect_max = std::chrono::milliseconds{2000};
  /// Most requests waiting for one node; beyond it requests fail with error::overloaded.
  std::size_t max_queued_per_node = 100000;

  /// Clock drift allowance: drift = ttl * drift_factor + 2 ms is subtracted from validity.
  double drift_factor = 0.01;
  /// Base delay between lock attempts; each delay is drawn uniformly from
  /// [retry_delay / 2, retry_delay * 3 / 2]. Default 50 ms.
  std::chrono::milliseconds retry_delay = std::chrono::milliseconds{50};

  /// Wake waiters when another client releases: while a lock call waits for a resource,
  /// the client subscribes (one extra connection per node, opened when the first call
  /// waits, shared by all) to the channel named like the resource's key, on which every
  /// release publishes; the first waiter in line (and every multi-resource set waiting
  /// on that key) then tries at once instead of after its retry delay, which stays the
  /// fallback (messages can be lost). Needs SUBSCRIBE,
  /// UNSUBSCRIBE, PING and PUBLISH with channel access (`&PREFIX*`) for an ACL user; see
  /// docs/deployment.md. Default on.
  bool wake_on_release = true;

  /// Fair mode (lock_options::fair): how long a waiter's place in a resource's line on
  /// the nodes lasts unless renewed. Every attempt of a waiting call renews it, and a
  /// waiting call attempts at least every fair_entry_ttl / 3. A client that dies while
  /// queued holds the line up for at most this long once its place reaches the front.
  /// 30 ms to 1 h. Default 1 s.
  std::chrono::milliseconds fair_entry_ttl = std::chrono::milliseconds{1000};

  /// Every key the client writes is `key_prefix + resource`; the fencing keys are
  /// `key_prefix + "redlock:fence"` (a hash) and `key_prefix + "redlock:fence:marker"`,
  /// the only keys without a TTL. Default: empty.
  std::string key_prefix{};

  /// Names this client in every token it writes: a token is `40 random hex digits + "/" +
  /// owner` instead of the 40 digits alone, so that `redlock status`, diagnostics ("held
  /// by ...") and `redlock run --verbose` can say who holds a resource. Printable ASCII
  /// without spaces, at most 64 bytes; it costs that many bytes per key and per request.
  /// The redlock tool sets `<host>:<pid>`. Default: empty (tokens are the digits only).
  std::string owner{};

  /// The longest lock TTL any client of this fleet uses: the restart guard's period. A
  /// node that restarted less than this long ago (or whose clock jumped) does not vote,
  /// because it may have forgotten locks that are still valid elsewhere. Every client of
  /// a fleet must use the same value. Zero (the default) means "each lock's own TTL";
  /// when set, locks with a longer TTL are refused (invalid_ttl). Negative values
  /// are refused (invalid_config).
  std::chrono::milliseconds max_ttl{0};
  /// Enforce the restart guard (default). Turn it off only for nodes that cannot lose
  /// acknowledged writes (appendonly yes with appendfsync always): see docs/safety.md.
  bool restart_guard = true;
  /// How often each connection samples the node's clock (TIME) to detect jumps. A node
  /// whose clock moved by more than the drift budget relative to ours is held back like a
  /// restarted node. Zero disables the probe. Default 1 s.
  std::chrono::milliseconds clock_probe_interval = std::chrono::milliseconds{1000};
  /// Fencing counters: 0 (default) keeps one counter per resource; N > 0 stripes them into
  /// N buckets by FNV-1a hash of the resource name (bounded memory for millions of
  /// resources; tokens stay strictly increasing per resource, with larger gaps). Every
  /// client of a fleet must use the same value.
  std::size_t fence_stripes = 0;

  /// Receives node events (connected, disconnected, restarted, clock jump, replica,
  /// duplicate server), on the client's strand. Must not block. Default: none.
  std::function<void(const node_event&)> on_event{};
  /// Receives attempts, acquisitions, extensions, losses and node events (see
  /// redlock/observer.hpp; redlock::metrics_observer keeps Prometheus metrics), on the
  /// client's strand. Must not block. Default: none, and then no event is built at all.
  std::shared_ptr<redlock::observer> observer{};
};

/// Per-call settings of async_lock / async_try_lock.
struct lock_options {
  /// Lock time-to-live on each node. 1 ms to 24 h. Default 10 s.
  std::chrono::milliseconds ttl = std::chrono::milliseconds{10000};
  /// How long async_lock keeps trying while the resource is contended or nodes are
  /// unavailable; wait_forever (the default) waits until cancelled, 0 makes one attempt,
  /// and a negative wait is refused (invalid_wait). Ignored by async_try_lock (one
  /// attempt), whatever its value.
  std::chrono::milliseconds wait = wait_forever;
  /// Also mint a fencing token (lock::fence()): strictly increasing per resource across
  /// successive holders. Costs a second round trip only when the nodes' counters
  /// disagree (after a fault or a contended attempt); otherwise one, as without it.
  /// Default off.
  bool fenced = false;
  /// Fair mode: async_lock waits in a line kept on the nodes and acquires in the order
  /// of its calls' start (wall clock, so across clients as far as their clocks agree);
  /// async_try_lock in fair mode refuses (contended) while anyone waits in the line.
  /// Only fair calls respect the line: a call without it takes a free lock at once.
  /// Single locks only (async_lock_all refuses it). Costs a few more key operations
  /// per attempt on each node and keys `key_prefix + "redlock:line:" + resource` and
  /// `key_prefix + "redlock:line-expiry:" + resource` while anyone waits (with a TTL).
  /// See docs/api.md, "Fair mode", and config::fair_entry_ttl. Default off.
  bool fair = false;
  /// Shared mode: take a reader's lease (docs/api.md, "Readers and writers"). Any number of
  /// shared holders may hold a resource at once, and none while a lock without it (a
  /// writer's) holds it; a writer refused by readers keeps new readers out while it waits,
  /// so writers do not starve. The lease expires, extends, renews (keeper, with_lock) and is
  /// lost as a lock is. A client holding a resource in one mode that asks for it in the
  /// other is refused (error::upgrade_refused): it would wait on itself. With `fenced`, a
  /// reader's lock::fence() is at least every earlier writer's token and below every later
  /// writer's (docs/safety.md, "The promise of a reader's fence"). Not with `fair`, nor
  /// in async_lock_all (invalid_argument). Default off.
  bool shared = false;
};

/// A Redis node address parsed from a URI.
struct node_uri {
  std::string host{};
  std::uint16_t port = 6379;
  std::string user{};      ///< empty: AUTH with password only (or no AUTH)
  std::string password{};  ///< empty: no AUTH
  int db = 0;
  bool tls = false;  ///< rediss://
  /// redis+cluster:// or rediss+cluster://: the node is a Redis Cluster, reached through
  /// `seeds` (host and port above are the first seed).
  bool cluster = false;
  struct endpoint {
    std::string host;
    std::uint16_t port = 6379;
  };
  std::vector<endpoint> seeds{};  ///< a cluster's seed addresses, in the URI's order

  /// "host:port" (a cluster: "cluster host:port,host:port"), never the credentials: safe
  /// to print.
  std::string display() const;
};

/// Parses `redis://[user:password@]host:port[/db]` or the same with `rediss://` (TLS);
/// host may be `[v6addr]`. A node that is a Redis Cluster:
/// `redis+cluster://[user:password@]host:port,host:port,...` (or `rediss+cluster://`), the
/// addresses of some of its servers (any of them gives the slot map); database 0 only.
/// Returns false and sets `why` to a message (without the password) on error.
bool parse_node_uri(std::string_view uri, node_uri& out, std::string& why);

/// Values every client of a fleet, and every tool that reads what clients wrote, must
/// share. Defined here once; the library and the `redlock` CLI both use them.

/// Most nodes in config::nodes.
inline constexpr std::size_t max_nodes = 15;

/// Longest resource name a call accepts, in bytes (config::key_prefix not counted): a
/// name is a key that every node stores and every lock, extend and release sends again,
/// so a longer one (a whole document passed as the name) is refused with
/// invalid_resource before it costs the nodes memory and traffic. 64 KiB leaves room for
/// any name built from ids, paths or URLs.
inline constexpr std::size_t max_resource_bytes = 64u << 10;

/// Most permits of one semaphore (async_lock_permit, `redlock run --permits`). An
/// acquirer tries the permits one after the other, so a full sweep costs one round trip
/// per permit; 64 keeps a sweep short.
inline constexpr std::size_t max_permits = 64;

/// The field of the fencing counter hash (key_prefix + "redlock:fence") that counts for
/// `resource` when counters are striped into `stripes` buckets (config::fence_stripes;
/// 0: one field per resource, the resource itself). The stripe is FNV-1a (64 bit) of the
/// name modulo `stripes`: stable across clients, versions and platforms.
std::string fence_field(std::string_view resource, std::size_t stripes);

}  // namespace redlock
