// SPDX-License-Identifier: BSL-1.0
#include "connection/connection.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <utility>

#include "redlock/error.hpp"
#include "util/keyspace.hpp"

namespace redlock::detail {
namespace {

constexpr std::string_view ping_command = "*1\r\n$4\r\nPING\r\n";
constexpr std::size_t read_chunk = 64u << 10;
// Bounds on what INFO and TIME may report, far beyond any real server, so that the
// nanosecond arithmetic on them cannot overflow.
constexpr std::int64_t max_uptime_s = 100LL * 365 * 24 * 3600;
constexpr std::int64_t max_time_s = 1LL << 40;
// A reply vector grown by one large reply is given back rather than kept.
constexpr std::size_t keep_reply_nodes = 4096;

bool is_noscript(const resp::reply& r) {
  return !r.empty() && r[0].is_error() && r[0].text.substr(0, 8) == "NOSCRIPT";
}

std::string ms_text(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

bool is_ssl_reason(const error_code& ec, int reason) {
  return ec.category() == asio::error::get_ssl_category() && ERR_GET_REASON(ec.value()) == reason;
}

}  // namespace

// ---- TLS ---------------------------------------------------------------------------

struct tls_settings {
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  bool verify = true;
  std::string server_name;
};

struct connection::tls_stream {
  tls_stream(strand_type& strand, asio::ssl::context& ctx) : stream(strand, ctx) {}
  asio::ssl::stream<asio::ip::tcp::socket> stream;
};

std::shared_ptr<tls_settings> make_tls_settings(const tls_options& o, std::string& why) {
  auto t = std::make_shared<tls_settings>();
  t->verify = o.verify;
  t->server_name = o.server_name;
  SSL_CTX_set_min_proto_version(t->ctx.native_handle(), TLS1_2_VERSION);
  error_code ec;
  if (!o.ca_file.empty()) {
    t->ctx.load_verify_file(o.ca_file, ec);
    if (ec) {
      why = "config.tls.ca_file: cannot load CA certificates from \"" + o.ca_file +
            "\": " + ec.message();
      return nullptr;
    }
  }
  if (!o.ca_dir.empty()) {
    if (!std::filesystem::is_directory(o.ca_dir, ec)) {
      why = "config.tls.ca_dir: \"" + o.ca_dir + "\" is not a directory";
      return nullptr;
    }
    t->ctx.add_verify_path(o.ca_dir, ec);
    if (ec) {
      why = "config.tls.ca_dir: cannot use \"" + o.ca_dir + "\": " + ec.message();
      return nullptr;
    }
  }
  if (o.verify && o.ca_file.empty() && o.ca_dir.empty()) {
    t->ctx.set_default_verify_paths(ec);
    if (ec) {
      why = "config.tls: cannot load the system's trusted CA certificates: " + ec.message();
      return nullptr;
    }
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    why =
        "config.tls.cert_file and config.tls.key_file go together: set both (mutual TLS) or "
        "neither";
    return nullptr;
  }
  if (!o.cert_file.empty()) {
    t->ctx.use_certificate_chain_file(o.cert_file, ec);
    if (ec) {
      why = "config.tls.cert_file: cannot load \"" + o.cert_file + "\": " + ec.message();
      return nullptr;
    }
    t->ctx.use_private_key_file(o.key_file, asio::ssl::context::pem, ec);
    if (ec || SSL_CTX_check_private_key(t->ctx.native_handle()) != 1) {
      why = "config.tls.key_file: cannot load \"" + o.key_file +
            "\" or it does not match the "
            "certificate" +
            (ec ? ": " + ec.message() : std::string{});
      return nullptr;
    }
  }
  t->ctx.set_verify_mode(o.verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return t;
}

namespace {

// For connections made without the client's shared settings (tools, the bench).
std::shared_ptr<tls_settings> tls_settings_or_throw(const tls_options& opts) {
  std::string why;
  auto t = make_tls_settings(opts, why);
  if (!t) throw boost::system::system_error(error::invalid_config, why);
  return t;
}

}  // namespace

connection::connection(strand_type strand, node_uri uri, const config& cfg, std::size_t id,
                       const std::vector<const script*>* preload, std::shared_ptr<tls_settings> tls)
    : node(std::move(uri), id),
      strand_(std::move(strand)),
      cfg_(cfg),
      preload_(preload),
      resolver_(strand_),
      socket_(strand_),
      tls_settings_(uri_.tls ? (tls ? std::move(tls) : tls_settings_or_throw(cfg.tls)) : nullptr),
      deadline_timer_(strand_),
      conn_timer_(strand_),
      probe_timer_(strand_),
      rng_(static_cast<std::uint_fast32_t>(std::random_device{}() ^ (id * 2654435761u))) {}

ssl_ctx_st* native_context(tls_settings& t) {
  return t.ctx.native_handle();
}

namespace {

const std::string& peer_name(const tls_settings& t, const node_uri& uri) {
  return t.server_name.empty() ? uri.host : t.server_name;
}

}  // namespace

void prepare_tls_peer(SSL* ssl, const tls_settings& t, const node_uri& uri) {
  // The certificate must name the host we asked for (or the configured name): OpenSSL
  // checks it with the chain. SNI carries host names only, never addresses.
  const std::string& name = peer_name(t, uri);
  error_code not_ip;
  asio::ip::make_address(name, not_ip);
  if (not_ip) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (!t.verify) return;
  if (not_ip)
    SSL_set1_host(ssl, name.c_str());
  else
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
}

std::string tls_failure_text(SSL* ssl, const tls_settings& t, const node_uri& uri,
                             std::string fallback) {
  const long verdict = SSL_get_verify_result(ssl);
  if (!t.verify || verdict == X509_V_OK) return fallback;
  std::string why = std::string{"TLS: the server's certificate was refused: "} +
                    X509_verify_cert_error_string(verdict);
  if (verdict == X509_V_ERR_HOSTNAME_MISMATCH || verdict == X509_V_ERR_IP_ADDRESS_MISMATCH)
    why += " (expected \"" + peer_name(t, uri) + "\")";
  return why;
}

connection::~connection() = default;

asio::ip::tcp::socket& connection::tcp() {
  return tls_ ? tls_->stream.next_layer() : socket_;
}

void connection::start() {
  if (state_ == state::idle) connect();
}

// ---- connect, handshake, reconnect -------------------------------------------------

void connection::connect() {
  state_ = state::connecting;
  const auto gen = ++generation_;
  auto self = shared_from_this();

  conn_timer_.expires_after(cfg_.connect_timeout);
  conn_timer_.async_wait([self, gen](error_code ec) {
    if (ec || gen != self->generation_) return;
    if (self->tls_handshaking_)
      self->fail_connection(error::tls_failed, "no TLS handshake within the connect timeout (" +
                                                   ms_text(self->cfg_.connect_timeout) +
                                                   "): is the port plain TCP? use redis://");
    else if (self->state_ == state::connecting || self->state_ == state::handshaking)
      self->fail_connection(error::connect_failed,
                            "no connection and handshake within the connect timeout (" +
                                ms_text(self->cfg_.connect_timeout) + ")");
  });

  if (tls_settings_) tls_ = std::make_shared<tls_stream>(strand_, tls_settings_->ctx);

  resolver_.async_resolve(
      uri_.host, std::to_string(uri_.port),
      [self, gen](error_code ec, asio::ip::tcp::resolver::results_type results) {
        if (gen != self->generation_) return;
        if (ec) return self->fail_connection(error::connect_failed, "resolve: " + ec.message());
        asio::async_connect(
            self->tcp(), results, [self, gen](error_code ec, const asio::ip::tcp::endpoint&) {
              if (gen != self->generation_) return;
              if (ec)
                return self->fail_connection(error::connect_failed, "connect: " + ec.message());
              self->on_tcp_connected();
            });
      });
}

void connection::on_tcp_connected() {
  error_code ignored;
  tcp().set_option(asio::ip::tcp::no_delay(true), ignored);
  tcp().set_option(asio::socket_base::keep_alive(true), ignored);
  if (!tls_) return on_connected();

  prepare_tls_peer(tls_->stream.native_handle(), *tls_settings_, uri_);
  const auto gen = generation_;
  tls_handshaking_ = true;
  tls_->stream.async_handshake(
      asio::ssl::stream_base::client, [self = shared_from_this(), gen, keep = tls_](error_code ec) {
        if (gen != self->generation_) return;
        self->tls_handshaking_ = false;
        if (ec) return self->fail_connection(error::tls_failed, self->tls_problem(ec));
        if (!self->tls_settings_->verify && self->on_event)
          self->on_event(*self, node_event::kind::tls_unverified,
                         "TLS without certificate verification (config.tls.verify is off): "
                         "the server was not authenticated");
        self->on_connected();
      });
}

std::string connection::tls_problem(const error_code& ec) {
  std::string why = "TLS handshake failed: " + ec.message();
  if (is_ssl_reason(ec, SSL_R_WRONG_VERSION_NUMBER) ||
      is_ssl_reason(ec, SSL_R_PACKET_LENGTH_TOO_LONG))
    why += " (is the port plain TCP? use redis://)";
  return tls_failure_text(tls_->stream.native_handle(), *tls_settings_, uri_, std::move(why));
}

void connection::on_connected() {
  state_ = state::handshaking;
  reader_.reset();

  // The handshake goes first and alone; queued requests wait in waiting_ until it is
  // done, so none runs unauthenticated or on the wrong database. Beyond AUTH/SELECT it
  // learns who the server is (run id, uptime: the restart guard), whether it is a
  // replica, whether its fence counters are marked trustworthy, and a first clock
  // sample. Any reply at all also proves a live Redis (a frozen server still completes
  // the TCP handshake from its kernel backlog).
  handshake_payload_.clear();
  handshake_steps_.clear();
  handshake_next_ = 0;
  if (!uri_.password.empty()) {
    if (uri_.user.empty())
      resp::append_command(handshake_payload_, "AUTH", uri_.password);
    else
      resp::append_command(handshake_payload_, "AUTH", uri_.user, uri_.password);
    handshake_steps_.push_back(step::auth);
  }
  if (on_message_) {
    // A subscriber needs no server facts (it never votes): a PING proves a live Redis
    // that accepted our credentials. Channels are the same in every database.
    resp::append_command(handshake_payload_, "PING");
    handshake_steps_.push_back(step::ping);
    return send_handshake();
  }
  if (uri_.db != 0) {
    resp::append_command(handshake_payload_, "SELECT", std::int64_t{uri_.db});
    handshake_steps_.push_back(step::select);
  }
  // The replication id names the incarnation with the run id: it changes when a replica
  // is promoted, which the run id does not.
  resp::append_command(handshake_payload_, "INFO", "server", "replication");
  handshake_steps_.push_back(step::info);
  resp::append_command(handshake_payload_, "ROLE");
  handshake_steps_.push_back(step::role);
  resp::append_command(handshake_payload_, "GET", keyspace{cfg_}.fence_marker());
  handshake_steps_.push_back(step::marker);
  if (preload_) {
    for (const script* lua : *preload_) {
      resp::append_command(handshake_payload_, "SCRIPT", "LOAD", lua->body);
      handshake_steps_.push_back(step::load);
    }
  }
  resp::append_command(handshake_payload_, "TIME");
  handshake_steps_.push_back(step::time);
  send_handshake();
}

void connection::send_handshake() {
  pending_status_ = node_status{};
  pending_status_.clock_jump_at = status_.clock_jump_at;
  last_sample_.reset();
  clock_sent_.clear();
  if (!on_message_) clock_sent_.push_back(boot_clock::now());  // the handshake's TIME
  wbuf_.append(handshake_payload_);
  for (std::size_t i = 0; i < handshake_steps_.size(); ++i)
    inflight_.push_back({nullptr, kind::handshake});
  start_read();
  flush();
}

std::string_view info_field(std::string_view info, std::string_view name) {
  for (std::size_t pos = 0; pos < info.size();) {
    auto end = info.find('\n', pos);
    if (end == std::string_view::npos) end = info.size();
    auto line = info.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':')
      return line.substr(name.size() + 1);
    pos = end + 1;
  }
  return {};
}

std::string_view connection::step_command(step st) {
  switch (st) {
    case step::auth:
      return "AUTH";
    case step::select:
      return "SELECT";
    case step::info:
      return "INFO";
    case step::role:
      return "ROLE";
    case step::marker:
      return "GET";
    case step::load:
      return "SCRIPT LOAD";
    case step::time:
      return "TIME";
    case step::ping:
      return "PING";
  }
  return "?";
}

namespace {

// A command as an ACL rule names it: "SCRIPT LOAD" is "script|load".
std::string acl_name(std::string_view command) {
  std::string out;
  for (char ch : command)
    out += ch == ' ' ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// A reply of the wrong kind, for a person: a simple string quoted (short, printable),
// anything else by its kind.
std::string describe_reply(const resp::node& n) {
  switch (n.kind) {
    case resp::type::simple_string: {
      std::string shown = "\"+";
      for (char ch : n.text.substr(0, 32)) shown += (ch >= ' ' && ch <= '~') ? ch : '?';
      return shown + (n.text.size() > 32 ? "...\"" : "\"");
    }
    case resp::type::integer:
      return "an integer";
    case resp::type::null:
      return "a null";
    case resp::type::array:
    case resp::type::map:
    case resp::type::set:
      return "an array";
    default:
      return "a reply of another type";
  }
}

}  // namespace

std::string connection::handshake_refusal(step st, std::string_view text) const {
  const std::string said{text};
  const std::string help = cfg_.password_help.empty()
                               ? std::string{"config::password, password_file or password_env"}
                               : cfg_.password_help;
  if (text.starts_with("NOAUTH"))
    return "the server requires a password (\"" + said +
           "\"): give it in the node URI (redis://:PASSWORD@host:port, or "
           "redis://USER:PASSWORD@host:port for an ACL user) or in " +
           help;
  if (text.starts_with("WRONGPASS"))
    return "the server refused the credentials (\"" + said +
           "\"): check the user name and password of the node URI or of " + help;
  if (text.starts_with("NOPERM"))
    return "the ACL user may not run " + std::string{step_command(st)} + ": " + said + " (add +" +
           acl_name(step_command(st)) +
           " to its ACL rules; docs/deployment.md lists every command the client needs)";
  return std::string{step_command(st)} + " refused in the handshake: " + said;
}

void connection::on_handshake_reply(const resp::reply& r) {
  const step st = handshake_steps_[handshake_next_++];
  const resp::node& top = r[0];
  // A refusal of our credentials or of a command (NOAUTH, WRONGPASS, NOPERM), or any error
  // to AUTH, SELECT or INFO, fails the connection with the server's words and what to do
  // about them: a node we are not allowed to read must not vote (its restarts, role or
  // clock would be guesses), and without SCRIPT LOAD no lock could be released. Without
  // INFO neither the restart guard nor the fence marker's incarnation can be told; the rest
  // (ROLE, the marker, SCRIPT LOAD on a proxy that lacks it, TIME) degrades as before when
  // it is only unsupported.
  if (top.is_error()) {
    const std::string_view text = top.text;
    const bool refused =
        text.starts_with("NOAUTH") || text.starts_with("WRONGPASS") || text.starts_with("NOPERM");
    const bool essential = st == step::auth || st == step::select || st == step::info;
    if (refused || essential)
      return fail_connection(error::auth_failed, handshake_refusal(st, text));
  }
  switch (st) {
    case step::auth:
    case step::select:
      break;
    case step::info: {
      const auto now = boot_clock::now();
      // Redis answers INFO with one bulk (RESP3: verbatim) string of "field:value" lines.
      // Anything else (+OK, a number, an array) is not a Redis server's report, and a
      // node that cannot tell its restarts must not vote: the connection fails, and
      // reconnects back off as after any failed handshake.
      if (top.kind != resp::type::bulk_string && top.kind != resp::type::verbatim_string)
        return fail_connection(
            error::unexpected_reply,
            fmt::format("INFO was answered with {} instead of the server's report: is this "
                        "port a Redis server?",
                        describe_reply(top)));
      pending_status_.run_id = info_field(top.text, "run_id");
      if (!pending_status_.run_id.empty())
        pending_status_.incarnation =
            pending_status_.run_id + ":" + std::string{info_field(top.text, "master_replid")};
      std::int64_t uptime = 0;
      auto up = info_field(top.text, "uptime_in_seconds");
      std::from_chars(up.data(), up.data() + up.size(), uptime);
      // Redis reports the difference of two whole wall-clock seconds (now and its start,
      // both truncated), which runs up to one second ahead of the time really elapsed:
      // a server started 0.2 s ago can already say 1. One second off takes the start as
      // late as it can have been, so the restart guard never ends early. A negative
      // uptime counts as a start now; an absurd one is capped, so that the time
      // arithmetic cannot overflow.
      uptime = std::clamp<std::int64_t>(uptime - 1, 0, max_uptime_s);
      pending_status_.started_at = now - std::chrono::seconds{uptime};
      // A primary that was a replica once keeps its old replication id as the second
      // one (-1 offset: never promoted).
      if (const auto second = info_field(top.text, "second_repl_offset"); !second.empty())
        std::from_chars(second.data(), second.data() + second.size(),
                        pending_status_.second_repl_offset);
      break;
    }
    case step::role:
      pending_status_.replica = top.kind == resp::type::array && r.size() > 1 && r[1].is_string() &&
                                r[1].text != "master";
      break;
    case step::marker:
      pending_status_.fence_marked = top.is_string() && !pending_status_.incarnation.empty() &&
                                     top.text == pending_status_.incarnation;
      break;
    case step::load:
      break;
    case step::ping:
      break;
    case step::time: {
      const auto sent = clock_sent_.empty() ? boot_clock::now() : clock_sent_.front();
      if (!clock_sent_.empty()) clock_sent_.pop_front();
      on_time_reply(r, sent);
      break;
    }
  }
  if (handshake_next_ == handshake_steps_.size()) {
    conn_timer_.cancel();
    const bool restarted = !status_.run_id.empty() && status_.run_id != pending_status_.run_id;
    pending_status_.session = status_.session + 1;
    status_ = pending_status_;
    become_ready();
    if (on_event) {
      on_event(*this, node_event::kind::connected, "connected");
      if (restarted)
        on_event(*this, node_event::kind::restarted, "the server restarted (new run id)");
      if (status_.replica) on_event(*this, node_event::kind::replica, "the server is a replica");
    }
    if (!on_message_) schedule_clock_probe();
  }
}

void connection::on_time_reply(const resp::reply& r, boot_clock::time_point sent) {
  const auto received = boot_clock::now();
  if (r[0].kind != resp::type::array || r.size() != 3 || !r[1].is_string() || !r[2].is_string())
    return;
  std::int64_t secs = 0, micros = 0;
  const auto s = std::from_chars(r[1].text.data(), r[1].text.data() + r[1].text.size(), secs);
  const auto u = std::from_chars(r[2].text.data(), r[2].text.data() + r[2].text.size(), micros);
  // A reading no Redis can give (before 1970, after year 33658, or not a number) is
  // no sample at all, rather than an overflow.
  if (s.ec != std::errc{} || u.ec != std::errc{} || secs < 0 || secs > max_time_s || micros < 0 ||
      micros >= 1'000'000)
    return;
  const clock_sample now_sample{sent, received, secs * 1'000'000 + micros};
  if (last_sample_) {
    // The server read its clock somewhere inside each round trip, so our elapsed time
    // between the two readings lies in [lo, hi]; a freeze widens the interval instead of
    // looking like a jump. Beyond it, the rate error the drift factor allows, plus 2 ms.
    using namespace std::chrono;
    const double lo =
        duration<double, std::micro>(now_sample.sent - last_sample_->received).count();
    const double hi =
        duration<double, std::micro>(now_sample.received - last_sample_->sent).count();
    const double rate = cfg_.drift_factor;
    const double server = static_cast<double>(now_sample.server_us - last_sample_->server_us);
    if (server < lo * (1.0 - rate) - 2000.0 || server > hi * (1.0 + rate) + 2000.0) {
      status_.clock_jump_at = received;
      pending_status_.clock_jump_at = received;
      if (on_event)
        on_event(*this, node_event::kind::clock_jump,
                 "the server's clock moved " +
                     std::to_string(static_cast<long long>(server / 1000)) +
                     " ms while ours moved " + std::to_string(static_cast<long long>(lo / 1000)) +
                     " to " + std::to_string(static_cast<long long>(hi / 1000)) + " ms");
    }
  }
  last_sample_ = now_sample;
}

void connection::schedule_clock_probe() {
  if (cfg_.clock_probe_interval.count() <= 0) return;
  probe_timer_.expires_after(cfg_.clock_probe_interval);
  const auto gen = generation_;
  probe_timer_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->generation_ || self->state_ != state::ready) return;
    if (!self->unresponsive_) {
      self->clock_sent_.push_back(boot_clock::now());
      self->append("*1\r\n$4\r\nTIME\r\n", nullptr, kind::clock);
      self->schedule_flush();
    }
    self->schedule_clock_probe();
  });
}

void connection::become_ready() {
  state_ = state::ready;
  outage_reported_ = false;
  unresponsive_ = false;
  // The back-off starts over only once the connection proves itself (fail_connection): a
  // server that passes the handshake and breaks the connection at once must not be
  // reconnected to at the shortest delay forever.
  ready_at_ = boot_clock::now();
  last_problem_.clear();
  auto queued = std::move(waiting_);
  waiting_.clear();
  for (auto& w : queued) {
    if (w.req)
      append(w.req->payload, w.req, kind::user);
    else
      append_detached(std::move(w.owned));
  }
  flush();
}

void connection::fail_connection(error_code ec, std::string problem) {
  if (state_ == state::closed) return;
  const bool was_ready = state_ == state::ready;
  if (was_ready && boot_clock::now() - ready_at_ >= cfg_.reconnect_max) backoff_attempt_ = 0;
  last_problem_ = std::move(problem);
  ++generation_;
  tls_handshaking_ = false;
  error_code ignored;
  tcp().close(ignored);
  resolver_.cancel();
  conn_timer_.cancel();
  probe_timer_.cancel();
  reader_.reset();
  wbuf_.clear();
  unresponsive_ = false;
  state_ = state::backoff;
  // One event per outage: `disconnected` when it was up, else `connect_failed` for the
  // first failed attempt (a node that never connects would otherwise go unnoticed).
  if (on_event && !outage_reported_)
    on_event(*this, was_ready ? node_event::kind::disconnected : node_event::kind::connect_failed,
             last_problem_);
  outage_reported_ = true;
  if (draining_) {
    // The connection broke while draining: nothing more can be sent; close for good.
    draining_ = false;
    auto done = std::move(on_drained_);
    close();
    if (done) done();
    return;
  }

  // Detached releases survive the reconnect, in the order they were queued: a SET that
  // was in flight may have run. Those sent and not answered may or may not have run: they
  // go out again (a compare-and-delete run twice deletes once).
  std::deque<waiting> keep;
  for (auto& p : unanswered_) keep.push_back({nullptr, std::move(p)});
  unanswered_.clear();
  for (auto& p : after_probe_) keep.push_back({nullptr, std::move(p)});
  after_probe_.clear();

  auto lost = std::move(inflight_);
  inflight_.clear();
  std::vector<request*> failed_waiting;
  for (auto& w : waiting_) {
    if (w.req)
      failed_waiting.push_back(w.req);
    else
      keep.push_back(std::move(w));
  }
  waiting_ = std::move(keep);

  schedule_reconnect();

  // Sinks may call back into submit(); the state above already says "backoff".
  const error_code lost_ec = was_ready ? error_code{error::connection_lost} : ec;
  for (auto& e : lost)
    if (e.k == kind::user && e.req) complete(e.req, lost_ec, nullptr);
  for (auto* r : failed_waiting) complete(r, ec, nullptr);
}

void connection::schedule_reconnect() {
  using std::chrono::milliseconds;
  const auto lo = std::max<milliseconds::rep>(1, cfg_.reconnect_min.count());
  const auto hi = std::max(lo, static_cast<milliseconds::rep>(cfg_.reconnect_max.count()));
  const int shift = std::min(backoff_attempt_, 20);
  const auto base = std::min<milliseconds::rep>(hi, lo << shift);
  ++backoff_attempt_;
  // Full-range jitter in [base/2, base], so that clients cut off together do not
  // reconnect together.
  std::uniform_int_distribution<milliseconds::rep> dist(base / 2, base);
  conn_timer_.expires_after(milliseconds{dist(rng_)});
  const auto gen = generation_;
  conn_timer_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->generation_ || self->state_ != state::backoff) return;
    self->connect();
  });
}

void connection::close() {
  if (state_ == state::closed) return;
  state_ = state::closed;
  ++generation_;
  error_code ignored;
  tcp().close(ignored);
  resolver_.cancel();
  conn_timer_.cancel();
  probe_timer_.cancel();
  deadline_timer_.cancel();
  wbuf_.clear();
  after_probe_.clear();
  unanswered_.clear();
  auto lost = std::move(inflight_);
  inflight_.clear();
  auto queued = std::move(waiting_);
  waiting_.clear();
  for (auto& e : lost)
    if (e.k == kind::user && e.req) complete(e.req, error::shut_down, nullptr);
  for (auto& w : queued)
    if (w.req) complete(w.req, error::shut_down, nullptr);
}

void connection::close_gracefully(std::chrono::milliseconds limit, std::function<void()> done) {
  if (state_ != state::ready || unresponsive_ ||
      (inflight_.empty() && wbuf_.empty() && !writing_)) {
    close();
    if (done) done();
    return;
  }
  draining_ = true;
  on_drained_ = std::move(done);
  flush();
  conn_timer_.expires_after(limit);
  conn_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || !self->draining_) return;
    self->draining_ = false;
    self->close();
    if (auto d = std::move(self->on_drained_)) d();
  });
}

void connection::check_drained() {
  if (!draining_ || !inflight_.empty() || !wbuf_.empty() || writing_) return;
  draining_ = false;
  conn_timer_.cancel();
  close();
  if (auto d = std::move(on_drained_)) d();
}

// ---- reading -----------------------------------------------------------------------

void connection::start_read() {
  auto space = reader_.prepare(read_chunk);
  const auto gen = generation_;
  auto done = [self = shared_from_this(), gen](error_code ec, std::size_t n) {
    if (gen != self->generation_) return;
    self->on_read(ec, n);
  };
  const auto buffer = asio::buffer(space.data(), space.size());
  if (!tls_) return socket_.async_read_some(buffer, std::move(done));
  // The stream is kept alive until its operation ends, even if a reconnect replaced it.
  tls_->stream.async_read_some(
      buffer, [done = std::move(done), keep = tls_](error_code ec, std::size_t n) { done(ec, n); });
}

void connection::on_read(error_code ec, std::size_t n) {
  if (ec) {
    // A TLS port drops a client that speaks plain RESP to it without a word.
    const bool tls_port_hint = state_ == state::handshaking && handshake_next_ == 0 && !uri_.tls;
    const std::string hint = tls_port_hint ? " (is it a TLS port? use rediss://)" : "";
    if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated)
      return fail_connection(error::connection_lost, "read: " + ec.message() + hint);
    return fail_connection(error::connection_lost, "the server closed the connection" + hint);
  }
  reader_.commit(n);
  const auto gen = generation_;
  for (;;) {
    const auto st = reader_.next(reply_);
    if (st == resp::parse_status::incomplete) break;
    if (st != resp::parse_status::complete)
      return fail_connection(
          error::protocol_error,
          std::string{"protocol error ("} + resp::to_string(st) + "); the connection was reset");
    dispatch_reply(reply_);
    if (gen != generation_) return;  // the connection failed or closed meanwhile
  }
  if (reply_.capacity() > keep_reply_nodes) resp::reply{}.swap(reply_);
  if (draining_) {
    check_drained();
    if (gen != generation_) return;
  }
  start_read();
}

namespace {

// ["message", channel, payload] or ["subscribe", channel, count] (RESP2 pub/sub).
bool is_pubsub(const resp::reply& r, std::string_view what) {
  return r.size() == 4 && r[0].kind == resp::type::array && r[0].size == 3 && r[1].is_string() &&
         r[1].text == what;
}

}  // namespace

void connection::dispatch_reply(const resp::reply& r) {
  if (r[0].kind == resp::type::push) return;  // out-of-band: not an answer to a request
  if (on_message_ && is_pubsub(r, "message")) return on_message_(r);  // not a reply either
  if (inflight_.empty())
    return fail_connection(error::protocol_error, "the server sent a reply nobody asked for");
  const inflight e = inflight_.front();
  inflight_.pop_front();
  switch (e.k) {
    case kind::handshake:
      return on_handshake_reply(r);
    case kind::probe: {
      unresponsive_ = false;
      conn_timer_.cancel();
      last_problem_.clear();
      auto held = std::move(after_probe_);
      after_probe_.clear();
      for (auto& p : held) append_detached(std::move(p));
      if (!held.empty()) schedule_flush();
      return;
    }
    case kind::clock: {
      const auto sent = clock_sent_.empty() ? boot_clock::now() : clock_sent_.front();
      if (!clock_sent_.empty()) clock_sent_.pop_front();
      return on_time_reply(r, sent);
    }
    case kind::detached:
      if (!on_message_) {
        // A cluster shard's redirection: the command did not run here; its owner sends it
        // where the key lives now.
        if (on_redirect_ && r[0].is_error() &&
            (r[0].text.substr(0, 6) == "MOVED " || r[0].text.substr(0, 4) == "ASK ")) {
          std::string payload = std::move(unanswered_.front());
          unanswered_.pop_front();
          return on_redirect_(std::move(payload), r[0].text);
        }
        unanswered_.pop_front();
        return;
      }
      if (is_pubsub(r, "subscribe")) on_message_(r);
      return;
    case kind::ignore:
      return;
    case kind::user:
      break;
  }
  if (!e.req) return;  // completed by its deadline; the late reply is dropped
  if (e.req->lua && is_noscript(r)) [[unlikely]]
    return on_noscript(*e.req, r);
  complete(e.req, {}, &r);
}

void connection::on_noscript(request& req, const resp::reply& r) {
  if (!req.reloaded) {
    // The script cache was flushed (SCRIPT FLUSH, restart): load it and run the same
    // EVALSHA again.
    req.reloaded = true;
    std::string load;
    resp::append_command(load, "SCRIPT", "LOAD", req.lua->body);
    append(load, nullptr, kind::ignore);
    return run_again(req);
  }
  if (!sent_as_eval(req.lua)) {
    // Unknown again right after SCRIPT LOAD: the load went elsewhere (a proxy) or was
    // refused. From now on this node gets the script's text (EVAL), as every Redlock
    // client does without a script cache.
    eval_only_.push_back(req.lua);
    any_eval_only_ = true;
    return run_again(req);
  }
  complete(&req, {}, &r);  // sent as EVAL: this NOSCRIPT is not about our script
}

void connection::run_again(request& req) {
  append(req.payload, &req, kind::user);
  // The request now runs behind what was queued after it. Detached commands among those
  // (the clean-up release of the very attempt that sent it, say) go out once more behind
  // it, so that they still run after it: each is harmless to run twice.
  for (std::size_t k = 0, n = unanswered_.size(); k < n; ++k) {
    std::string again = unanswered_[k];
    wbuf_.append(again);
    inflight_.push_back({nullptr, kind::detached});
    unanswered_.push_back(std::move(again));
  }
  schedule_flush();
}

// ---- writing -----------------------------------------------------------------------

error_code connection::submit(request& r) {
  switch (state_) {
    case state::closed:
      return error::shut_down;
    case state::idle:
    case state::backoff:
      return error::node_unavailable;
    case state::connecting:
    case state::handshaking:
      if (waiting_.size() >= cfg_.max_queued_per_node) return error::overloaded;
      waiting_.push_back({&r, {}});
      arm_deadline(r.deadline);
      return {};
    case state::ready:
      if (unresponsive_) return error::node_unavailable;
      if (inflight_.size() >= cfg_.max_queued_per_node) return error::overloaded;
      append(r.payload, &r, kind::user);
      arm_deadline(r.deadline);
      schedule_flush();
      return {};
  }
  return error::node_unavailable;
}

error_code connection::submit_asking(request& r) {
  if (state_ == state::closed) return error::shut_down;
  if (!ready()) return error::node_unavailable;
  if (inflight_.size() >= cfg_.max_queued_per_node) return error::overloaded;
  static const std::string asking = [] {
    std::string p;
    resp::append_command(p, "ASKING");
    return p;
  }();
  append(asking, nullptr, kind::ignore);
  append(r.payload, &r, kind::user);
  arm_deadline(r.deadline);
  schedule_flush();
  return {};
}

void connection::submit_detached(std::string payload) {
  switch (state_) {
    case state::closed:
      return;
    case state::ready:
      if (!unresponsive_) {
        append_detached(std::move(payload));
        schedule_flush();
      } else if (after_probe_.size() < cfg_.max_queued_per_node) {
        after_probe_.push_back(std::move(payload));
      }
      return;
    default:
      if (waiting_.size() < cfg_.max_queued_per_node)
        waiting_.push_back({nullptr, std::move(payload)});
      return;
  }
}

namespace {

// `evalsha` (EVALSHA <sha> <args...>, as resp::append_command writes it) as EVAL <body>
// <args...>, appended to `out`; false if it is not in that form. Kept out of line: only
// nodes that never keep a script take this path.
[[gnu::noinline]] bool append_as_eval(std::string& out, std::string_view evalsha,
                                      std::string_view body) {
  const auto header_end = evalsha.find("\r\n");
  if (header_end == std::string_view::npos) return false;
  const std::string_view header = evalsha.substr(0, header_end + 2);  // *N\r\n
  std::string_view rest = evalsha.substr(header_end + 2);
  constexpr std::string_view name = "$7\r\nEVALSHA\r\n$40\r\n";
  constexpr std::size_t sha_field = 40 + 2;
  if (rest.size() < name.size() + sha_field || rest.substr(0, name.size()) != name) return false;
  rest.remove_prefix(name.size() + sha_field);
  out.append(header);
  out.append("$4\r\nEVAL\r\n$");
  out.append(std::to_string(body.size()));
  out.append("\r\n");
  out.append(body);
  out.append("\r\n");
  out.append(rest);
  return true;
}

}  // namespace

bool connection::sent_as_eval(const script* lua) const {
  return std::find(eval_only_.begin(), eval_only_.end(), lua) != eval_only_.end();
}

void connection::append(std::string_view payload, request* req, kind k) {
  if (any_eval_only_) [[unlikely]] {
    if (req && req->lua && sent_as_eval(req->lua) &&
        append_as_eval(wbuf_, payload, req->lua->body)) {
      inflight_.push_back({req, k});
      return;
    }
  }
  wbuf_.append(payload);
  inflight_.push_back({req, k});
}

void connection::append_detached(std::string payload) {
  wbuf_.append(payload);
  inflight_.push_back({nullptr, kind::detached});
  if (!on_message_) unanswered_.push_back(std::move(payload));
}

void connection::schedule_flush() {
  if (flush_scheduled_ || writing_) return;
  flush_scheduled_ = true;
  // Deferred to the end of the current handler, so that every request queued in this
  // turn (one lock call queues one per node; many calls may run in one turn) goes out
  // in one write.
  asio::post(strand_, [self = shared_from_this()] {
    self->flush_scheduled_ = false;
    self->flush();
  });
}

void connection::flush() {
  if (writing_ || wbuf_.empty()) return;
  if (state_ != state::ready && state_ != state::handshaking) return;
  writing_ = true;
  std::swap(wbuf_, wbuf_writing_);
  const auto gen = generation_;
  auto done = [self = shared_from_this(), gen](error_code ec, std::size_t) {
    self->writing_ = false;
    self->wbuf_writing_.clear();
    if (self->state_ == state::closed) return;
    if (gen != self->generation_) return self->flush();
    if (ec) return self->fail_connection(error::connection_lost, "write: " + ec.message());
    self->flush();
  };
  if (!tls_) return asio::async_write(socket_, asio::buffer(wbuf_writing_), std::move(done));
  asio::async_write(
      tls_->stream, asio::buffer(wbuf_writing_),
      [done = std::move(done), keep = tls_](error_code ec, std::size_t n) { done(ec, n); });
}

// ---- deadlines ---------------------------------------------------------------------

void connection::arm_deadline(boot_clock::time_point t) {
  if (deadline_armed_ && t >= armed_for_) return;
  deadline_armed_ = true;
  armed_for_ = t;
  deadline_timer_.expires_at(t);  // cancels an earlier wait, whose handler then returns
  deadline_timer_.async_wait([self = shared_from_this(), t](error_code ec) {
    if (ec || self->state_ == state::closed || t != self->armed_for_) return;
    self->deadline_armed_ = false;
    self->on_deadline();
  });
}

void connection::on_deadline() {
  const auto now = boot_clock::now();
  auto next = boot_clock::time_point::max();
  std::vector<request*> expired;
  bool inflight_expired = false;

  for (auto& e : inflight_) {
    if (e.k != kind::user || !e.req) continue;
    if (e.req->deadline <= now) {
      expired.push_back(e.req);
      e.req = nullptr;  // its reply, when it comes, is dropped
      inflight_expired = true;
    } else {
      next = std::min(next, e.req->deadline);
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->req && it->req->deadline <= now) {
      expired.push_back(it->req);
      it = waiting_.erase(it);
    } else {
      if (it->req) next = std::min(next, it->req->deadline);
      ++it;
    }
  }

  if (inflight_expired && state_ == state::ready && !unresponsive_) {
    // Stop adding to the backlog of a node that may be frozen; a PING queued behind the
    // stalled requests tells us when it has caught up.
    unresponsive_ = true;
    last_problem_ = "a request timed out; no new requests until the node answers a PING";
    append(ping_command, nullptr, kind::probe);
    schedule_flush();
    watch_unresponsive();
  }
  if (next != boot_clock::time_point::max()) arm_deadline(next);
  for (auto* r : expired) complete(r, error::node_timeout, nullptr);
}

void connection::watch_unresponsive() {
  // Closing gracefully: conn_timer_ already holds the drain's deadline, which ends it
  // sooner (shutdown must not wait out this much longer watch).
  if (draining_) return;
  // A frozen server answers once thawed, but a vanished host (no RST) never does: give
  // up on the socket after a while and reconnect, which the handshake deadline bounds.
  const auto limit = std::max(cfg_.connect_timeout, cfg_.node_timeout) * 10;
  conn_timer_.expires_after(limit);
  const auto gen = generation_;
  conn_timer_.async_wait([self = shared_from_this(), gen, limit](error_code ec) {
    if (ec || gen != self->generation_ || !self->unresponsive_) return;
    self->fail_connection(error::connection_lost,
                          "no answer to PING for " + ms_text(limit) + "; reconnecting");
  });
}

void connection::complete(request* req, error_code ec, const resp::reply* reply) {
  req->answered_by = &status_.incarnation;
  req->sink->on_reply(req->index, ec, reply);
}

resp::limits reply_limits() {
  // Our replies nest at most three deep ({exists, {field, value, ...}}); a bulk string is
  // a token, a foreign value at a resource name or INFO's text.
  return resp::limits{.max_bulk = 16u << 20,
                      .max_line = 64u << 10,
                      .max_elements = 1u << 20,
                      .max_nodes = (1u << 20) + 16,
                      .max_depth = 16,
                      .max_reply = 64u << 20};
}

}  // namespace redlock::detail
