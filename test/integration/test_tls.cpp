// SPDX-License-Identifier: BSL-1.0
// rediss:// against real redis-servers listening with TLS, with certificates made by the
// openssl command for each run (support/make_certs.sh): locks work end to end over TLS,
// and a server certificate from an untrusted CA, an expired one, one for another host, a
// missing client certificate where the server demands one, or a port that speaks the
// other protocol each end in a clear error and no lock. Every server also listens on a
// plain port, used only by the test's own checks.

#include <sys/wait.h>

#include <boost/asio.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

#include "async_helpers.hpp"
#include "fast_config.hpp"
#include "loopback.hpp"
#include "redis_fleet.hpp"
#include "redlock/redlock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using redlock::test::fast_config;
using redlock::test::run_bounded;

namespace {

// The certificates of one test run, in a directory removed afterwards.
class certs {
 public:
  certs() {
    const std::string cmd =
        "bash " REDLOCK_MAKE_CERTS " '" + dir_.path() + "' >'" + dir_.path() + "/log' 2>&1";
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0, "make_certs.sh failed: see " << dir_.path());
  }
  std::string operator()(const std::string& name) const { return dir_.path() + "/" + name; }

 private:
  redlock::test::detail::temp_dir dir_;
};

std::uint16_t free_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a{io};
  return redlock::test::listen_on_loopback(a);  // closed on return: free for the server
}

struct tls_options_for_servers {
  std::string cert = "server";  // server.crt / server.key
  bool auth_clients = false;    // demand a client certificate
  std::string password;         // requirepass, if not empty
};

// Three redis-servers with a TLS port each (beside the plain one).
class tls_fleet {
 public:
  tls_fleet(const certs& c, tls_options_for_servers o = {}) {
    for (int i = 0; i < 3; ++i) {
      const auto port = free_port();
      std::vector<std::string> args{"--tls-port",         std::to_string(port),
                                    "--tls-cert-file",    c(o.cert + ".crt"),
                                    "--tls-key-file",     c(o.cert + ".key"),
                                    "--tls-ca-cert-file", c("ca.crt"),
                                    "--tls-auth-clients", o.auth_clients ? "yes" : "no"};
      if (!o.password.empty()) args.insert(args.end(), {"--requirepass", o.password});
      servers_.push_back(std::make_unique<redlock::test::redis_server>(args));
      tls_ports_.push_back(port);
    }
  }
  // rediss:// URIs of the TLS ports, by `host` (an address or "localhost").
  std::vector<std::string> uris(const std::string& host = "127.0.0.1") const {
    std::vector<std::string> out;
    for (auto p : tls_ports_) out.push_back("rediss://" + host + ":" + std::to_string(p));
    return out;
  }
  std::vector<std::string> plain_uris() const {
    std::vector<std::string> out;
    for (const auto& s : servers_) out.push_back(s->uri());
    return out;
  }
  std::int64_t total_keys() const {
    std::int64_t n = 0;
    for (const auto& s : servers_) n += s->command({"DBSIZE"}).integer;
    return n;
  }
  redlock::test::redis_server& operator[](std::size_t i) { return *servers_.at(i); }

 private:
  std::vector<std::unique_ptr<redlock::test::redis_server>> servers_;
  std::vector<std::uint16_t> tls_ports_;
};

redlock::config tls_config(const std::vector<std::string>& uris, const certs& c) {
  auto cfg = fast_config(uris);
  cfg.tls.ca_file = c("ca.crt");
  return cfg;
}

// One lock call that must fail (a single attempt unless `wait`): returns its error and
// the per-node diagnostics.
std::pair<error_code, std::string> failed_lock(const redlock::config& cfg,
                                               std::chrono::milliseconds wait = 0ms) {
  asio::io_context io;
  redlock::client c{io.get_executor(), cfg};
  std::pair<error_code, std::string> out;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_lock("tls", {.ttl = 5s, .wait = wait}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!lk.owns());
    out = {ec, diag.message};
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  return out;
}

// Takes, extends and releases a fenced lock; returns whether all of it worked.
bool lock_round_trip(const redlock::config& cfg) {
  asio::io_context io;
  redlock::client c{io.get_executor(), cfg};
  bool ok = false;
  run_bounded(io, [&]() -> asio::awaitable<void> {
    redlock::diagnostics diag;
    auto [ec, lk] = co_await c.async_lock("tls", {.ttl = 5s, .wait = 2s, .fenced = true}, diag,
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, ec.message() << ": " << diag.message);
    if (!ec) {
      BOOST_TEST(lk.fence() > 0u);
      co_await c.async_extend(lk, 10s, asio::use_awaitable);
      co_await c.async_unlock(std::move(lk), asio::use_awaitable);
      ok = true;
    }
    co_await c.async_shutdown(asio::use_awaitable);
  }());
  return ok;
}

std::string config_error(const redlock::config& cfg) {
  asio::io_context io;
  try {
    redlock::client c{io.get_executor(), cfg};
  } catch (const boost::system::system_error& e) {
    BOOST_TEST(e.code() == redlock::error::invalid_config);
    return e.what();
  }
  BOOST_FAIL("the client accepted the configuration");
  return {};
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

struct cli_run {
  int code = -1;
  std::string output;  // stdout and stderr
};

// `env redlock args...` through the shell, output captured in a file of `c`'s directory.
cli_run run_cli(const certs& c, const std::string& env, const std::vector<std::string>& args) {
  std::string cmd = env + " " REDLOCK_CLI_PATH;
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >'" + c("cli.out") + "' 2>&1";
  const int status = std::system(cmd.c_str());
  cli_run out{WIFEXITED(status) ? WEXITSTATUS(status) : -1, {}};
  std::ifstream in{c("cli.out")};
  out.output.assign(std::istreambuf_iterator<char>{in}, {});
  return out;
}

std::string joined(const std::vector<std::string>& uris) {
  std::string out;
  for (const auto& u : uris) out += (out.empty() ? "" : ",") + u;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(locks_are_taken_extended_fenced_and_released_over_tls) {
  certs c;
  tls_fleet fleet{c};
  auto uris = fleet.uris();
  uris[0] = fleet.uris("localhost")[0];  // matched against the certificate's DNS name
  asio::io_context io;
  redlock::client client{io.get_executor(), tls_config(uris, c)};
  run_bounded(io, [&]() -> asio::awaitable<void> {
    auto lk = co_await client.async_lock("tls", {.ttl = 5s, .wait = 2s, .fenced = true},
                                         asio::use_awaitable);
    // The TLS ports speak nothing but TLS: the key got there through it.
    for (std::size_t i = 0; i < 3; ++i) {
      const auto v = fleet[i].command({"GET", "tls"});
      BOOST_TEST((v.is_nil() || v.text == lk.token()), "node " << i);
    }
    co_await client.async_extend(lk, 10s, asio::use_awaitable);
    BOOST_TEST(fleet[0].command({"PTTL", "tls"}).integer > 5000);
    co_await client.async_unlock(std::move(lk), asio::use_awaitable);
    BOOST_TEST(co_await redlock::test::eventually(
        [&] {
          return fleet[0].command({"EXISTS", "tls"}).integer == 0;
        },
        2s));
    co_await client.async_shutdown(asio::use_awaitable);
  }());
}

BOOST_AUTO_TEST_CASE(a_server_certificate_from_an_untrusted_ca_is_refused_with_no_lock) {
  certs c;
  tls_fleet fleet{c};
  auto cfg = tls_config(fleet.uris(), c);
  cfg.tls.ca_file = c("other-ca.crt");
  const auto [ec, diag] = failed_lock(cfg);
  BOOST_TEST(ec == redlock::error::no_quorum);
  // OpenSSL says "self-signed certificate in certificate chain" or "unable to get local
  // issuer certificate", depending on whether the server sends its CA along.
  BOOST_TEST(contains(diag, "certificate was refused: "), diag);
  BOOST_TEST((contains(diag, "self-signed") || contains(diag, "local issuer")), diag);
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(an_expired_server_certificate_is_refused_with_no_lock) {
  certs c;
  tls_fleet fleet{c, {.cert = "expired"}};
  const auto [ec, diag] = failed_lock(tls_config(fleet.uris(), c));
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(contains(diag, "certificate has expired"), diag);
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(a_certificate_for_another_host_is_refused_unless_that_name_is_configured) {
  certs c;
  tls_fleet fleet{c, {.cert = "wronghost"}};  // for other.example only
  {
    const auto [ec, diag] = failed_lock(tls_config(fleet.uris(), c));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(contains(diag, "IP address mismatch (expected \"127.0.0.1\")"), diag);
  }
  {
    const auto [ec, diag] = failed_lock(tls_config(fleet.uris("localhost"), c));
    BOOST_TEST(contains(diag, "hostname mismatch (expected \"localhost\")"), diag);
  }
  BOOST_TEST(fleet.total_keys() == 0);
  auto cfg = tls_config(fleet.uris(), c);
  cfg.tls.server_name = "other.example";
  BOOST_TEST(lock_round_trip(cfg));
}

BOOST_AUTO_TEST_CASE(verification_off_accepts_any_certificate_and_reports_every_connection) {
  certs c;
  tls_fleet fleet{c};
  auto cfg = tls_config(fleet.uris(), c);
  cfg.tls.ca_file = c("other-ca.crt");
  cfg.tls.verify = false;
  std::vector<std::size_t> unverified;
  cfg.on_event = [&](const redlock::node_event& e) {
    if (e.what == redlock::node_event::kind::tls_unverified) {
      unverified.push_back(e.node);
      BOOST_TEST(contains(e.message, "not authenticated"), e.message);
    }
  };
  BOOST_TEST(lock_round_trip(cfg));
  std::sort(unverified.begin(), unverified.end());
  BOOST_TEST((unverified == std::vector<std::size_t>{0, 1, 2}));
}

BOOST_AUTO_TEST_CASE(mutual_tls_needs_the_client_certificate) {
  certs c;
  tls_fleet fleet{c, {.auth_clients = true}};
  auto cfg = tls_config(fleet.uris(), c);
  const auto [ec, diag] = failed_lock(cfg);
  BOOST_TEST(ec == redlock::error::no_quorum);
  BOOST_TEST(contains(diag, "certificate required"), diag);
  BOOST_TEST(fleet.total_keys() == 0);
  cfg.tls.cert_file = c("client.crt");
  cfg.tls.key_file = c("client.key");
  BOOST_TEST(lock_round_trip(cfg));
}

BOOST_AUTO_TEST_CASE(a_port_of_the_other_protocol_is_named_in_the_error) {
  certs c;
  tls_fleet fleet{c};
  {
    // TLS to the plain ports.
    std::vector<std::string> uris;
    for (const auto& u : fleet.plain_uris()) uris.push_back("rediss://" + u.substr(8));
    const auto [ec, diag] = failed_lock(tls_config(uris, c), 1500ms);
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(contains(diag, "is the port plain TCP? use redis://"), diag);
  }
  {
    // Plain RESP to the TLS ports.
    std::vector<std::string> uris;
    for (const auto& u : fleet.uris()) uris.push_back("redis://" + u.substr(9));
    const auto [ec, diag] = failed_lock(fast_config(uris));
    BOOST_TEST(ec == redlock::error::no_quorum);
    BOOST_TEST(contains(diag, "is it a TLS port? use rediss://"), diag);
  }
  BOOST_TEST(fleet.total_keys() == 0);
}

BOOST_AUTO_TEST_CASE(unreadable_tls_files_are_configuration_errors_that_name_them) {
  certs c;
  const std::vector<std::string> uris{"rediss://127.0.0.1:1"};
  auto cfg = tls_config(uris, c);
  cfg.tls.ca_file = c("missing.crt");
  BOOST_TEST(contains(config_error(cfg), "config.tls.ca_file: cannot load CA certificates from \"" +
                                             c("missing.crt") + "\""));
  cfg = tls_config(uris, c);
  cfg.tls.ca_dir = c("missing-dir");
  BOOST_TEST(contains(config_error(cfg), "is not a directory"));
  cfg = tls_config(uris, c);
  cfg.tls.cert_file = c("client.crt");
  BOOST_TEST(contains(config_error(cfg), "go together"));
  cfg.tls.key_file = c("server.key");  // another certificate's key
  BOOST_TEST(contains(config_error(cfg), "does not match the certificate"));
  // Plain nodes never read the TLS files.
  cfg.nodes = {"redis://127.0.0.1:1"};
  asio::io_context io;
  BOOST_CHECK_NO_THROW((redlock::client{io.get_executor(), cfg}));
}

BOOST_AUTO_TEST_CASE(the_cli_speaks_tls_and_reads_passwords_from_a_file_or_the_environment) {
  certs c;
  const std::string secret = "Cli-S3cret";
  tls_fleet fleet{c, {.password = secret}};
  const std::string nodes = joined(fleet.uris());
  // The servers just started: `run` waits (--wait) until the restart guard of its 1 s
  // TTL lets them vote.
  { std::ofstream{c("pw")} << secret << "\n"; }
  auto run = run_cli(c, "",
                     {"run", "--nodes", nodes, "--tls-ca", c("ca.crt"), "--password-file", c("pw"),
                      "--ttl", "1000", "--wait", "10000", "cli-tls", "--", "true"});
  BOOST_TEST(run.code == 0, run.output);
  auto nodes_ok = run_cli(c, "REDLOCK_PASSWORD=" + secret,
                          {"nodes", "--nodes", nodes, "--tls-ca", c("ca.crt")});
  BOOST_TEST(nodes_ok.code == 0, nodes_ok.output);
  BOOST_TEST(!contains(nodes_ok.output, secret), nodes_ok.output);
  // A wrong password shows as the server's refusal, never as the password itself.
  auto wrong = run_cli(c, "REDLOCK_PASSWORD=Wr0ng-cli-pw",
                       {"nodes", "--nodes", nodes, "--tls-ca", c("ca.crt")});
  BOOST_TEST(wrong.code == 69, wrong.output);
  BOOST_TEST(contains(wrong.output, "WRONGPASS"), wrong.output);
  BOOST_TEST(!contains(wrong.output, "Wr0ng-cli-pw"), wrong.output);
  // An untrusted CA: every node is down with the reason; --tls-insecure connects, warned.
  auto refused = run_cli(c, "REDLOCK_PASSWORD=" + secret,
                         {"status", "--nodes", nodes, "--tls-ca", c("other-ca.crt"), "cli-tls"});
  BOOST_TEST(refused.code == 69, refused.output);
  BOOST_TEST(contains(refused.output, "certificate was refused"), refused.output);
  auto insecure = run_cli(c, "REDLOCK_PASSWORD=" + secret,
                          {"run", "--nodes", nodes, "--tls-ca", c("other-ca.crt"), "--tls-insecure",
                           "--ttl", "1000", "--wait", "10000", "cli-tls", "--", "true"});
  BOOST_TEST(insecure.code == 0, insecure.output);
  BOOST_TEST(contains(insecure.output, "warning"), insecure.output);
}
