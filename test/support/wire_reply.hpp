#pragma once
// A reply parsed from its wire bytes, as a connection would hand it to a lock kind: the
// socket-free tests build their servers' answers with it.

#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>

#include "resp/resp.hpp"

namespace redlock::test {

// The bytes stay here, since the reply's text points into them (so it is neither copied
// nor moved).
struct wire_reply {
  explicit wire_reply(std::string wire) : bytes(std::move(wire)) {
    const auto res = resp::parse(bytes, r);
    BOOST_REQUIRE(res.status == resp::parse_status::complete);
  }
  wire_reply(const wire_reply&) = delete;
  wire_reply& operator=(const wire_reply&) = delete;
  std::string bytes;
  resp::reply r;
};

}  // namespace redlock::test
