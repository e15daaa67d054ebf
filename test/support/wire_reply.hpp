// SPDX-License-Identifier: BSL-1.0
#pragma once
// A reply as a connection hands it to an operation, parsed from its RESP bytes, for unit
// tests that read answers without a server (test_kinds, test_release, test_repair_inspect).

#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>

#include "resp/resp.hpp"

namespace redlock::test {

/// A reply parsed from its wire bytes; the bytes stay here, since the reply's text points
/// into them (so it is neither copied nor moved).
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
