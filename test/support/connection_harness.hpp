// SPDX-License-Identifier: BSL-1.0
#pragma once
// Driving one connection of the connection layer directly: a sink that records each
// request's outcome, and a fixture that runs the io_context until a condition holds or
// fails the test.

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "connection/connection.hpp"
#include "redlock/error.hpp"

namespace redlock::test {

/// Records every outcome, as text, by request index: the reply's integer or text, "nil",
/// or "error:<message>".
struct recorder final : redlock::detail::request_sink {
  std::vector<std::string> results;
  std::size_t count = 0;
  explicit recorder(std::size_t n) : results(n) {}
  void on_reply(std::size_t i, boost::system::error_code ec, const resp::reply* r) override {
    ++count;
    if (ec) {
      results[i] = "error:" + ec.message();
    } else {
      const auto& top = (*r)[0];
      results[i] = top.kind == resp::type::integer ? std::to_string(top.integer)
                   : top.kind == resp::type::null  ? std::string{"nil"}
                                                   : std::string{top.text};
    }
  }
};

/// "error:<message of e>", as recorder writes it.
inline std::string error_text(redlock::error e) {
  return "error:" + boost::system::error_code{e}.message();
}

/// One command in RESP form.
inline std::string command(std::initializer_list<std::string_view> args) {
  std::string out;
  resp::command_writer w{out};
  w.begin(args.size());
  for (auto a : args) w.arg(a);
  return out;
}

/// An io_context and a config with short timeouts, for one connection at a time.
struct one_node {
  boost::asio::io_context io;
  redlock::config cfg{.connect_timeout = std::chrono::milliseconds{500},
                      .node_timeout = std::chrono::milliseconds{200},
                      .reconnect_min = std::chrono::milliseconds{10},
                      .reconnect_max = std::chrono::milliseconds{50}};

  /// Starts a connection to `uri` and runs until it is ready or has a problem.
  std::shared_ptr<detail::connection> connect(const std::string& uri,
                                              resp::limits limits = detail::reply_limits()) {
    node_uri u;
    std::string why;
    BOOST_TEST_REQUIRE(parse_node_uri(uri, u, why), why);
    auto c = std::make_shared<detail::connection>(boost::asio::make_strand(io), u, cfg, 0);
    c->set_reply_limits(limits);
    c->start();
    run_until([&] { return c->ready() || !c->last_problem().empty(); });
    return c;
  }
  /// Runs the io_context until `done` holds; fails the test after `limit`.
  void run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::seconds{10}) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < end), "timed out waiting");
      io.run_for(std::chrono::milliseconds{2});
    }
  }
};

}  // namespace redlock::test
