// SPDX-License-Identifier: BSL-1.0
// Pure parts of the lock manager: URIs, error messages, and the Redlock arithmetic
// (quorum, drift, validity, early decision) for N = 1..7, with explicit time points.
#include <boost/test/unit_test.hpp>

#include "quorum/rules.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"

using namespace redlock;
using namespace std::chrono_literals;

namespace {
node_uri parse_ok(std::string_view s) {
  node_uri u;
  std::string why;
  BOOST_TEST_REQUIRE(parse_node_uri(s, u, why), s << ": " << why);
  return u;
}
std::string parse_bad(std::string_view s) {
  node_uri u;
  std::string why;
  BOOST_TEST_REQUIRE(!parse_node_uri(s, u, why), s);
  BOOST_TEST(!why.empty());
  return why;
}
}  // namespace

BOOST_AUTO_TEST_CASE(good_uris_parse_into_their_parts) {
  auto u = parse_ok("redis://127.0.0.1:7001");
  BOOST_TEST((u.host == "127.0.0.1" && u.port == 7001 && u.db == 0 && u.password.empty()));
  u = parse_ok("redis://localhost");
  BOOST_TEST((u.host == "localhost" && u.port == 6379));
  u = parse_ok("redis://alice:s3cr@t@h:1/3");
  BOOST_TEST(
      (u.user == "alice" && u.password == "s3cr@t" && u.host == "h" && u.port == 1 && u.db == 3));
  u = parse_ok("redis://onlypass@h:2");
  BOOST_TEST((u.user.empty() && u.password == "onlypass"));
  u = parse_ok("redis://[::1]:6380/0");
  BOOST_TEST((u.host == "::1" && u.port == 6380));
  BOOST_TEST(u.display() == "[::1]:6380");
}

// User and password are percent-decoded, as URIs encode them: a password with ':', '@',
// '%' or '/' written the way a URI tool writes it is sent as the server knows it.
BOOST_AUTO_TEST_CASE(percent_encoded_credentials_are_decoded_and_a_stray_percent_is_refused) {
  auto u = parse_ok("redis://al%69ce:p%40ss%3Aw%2Fo%25rd@h:1");
  BOOST_TEST(u.user == "alice");
  BOOST_TEST(u.password == "p@ss:w/o%rd");
  BOOST_TEST(parse_ok("redis://%2a%2A@h:1").password == "**");
  for (const char* bad :
       {"redis://alice:50%@h:1", "redis://alice:5%zz@h:1", "redis://a%4:pw@h:1"}) {
    const auto why = parse_bad(bad);
    BOOST_TEST(why.find("does not start a percent-encoded byte") != std::string::npos, why);
    BOOST_TEST(why.find("50%") == std::string::npos, why);  // the password stays hidden
  }
}

BOOST_AUTO_TEST_CASE(a_cluster_uri_lists_its_seeds_and_keeps_credentials_and_tls) {
  auto u = parse_ok("redis+cluster://alice:pw@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002");
  BOOST_TEST(u.cluster);
  BOOST_TEST(!u.tls);
  BOOST_TEST((u.user == "alice" && u.password == "pw"));
  BOOST_TEST_REQUIRE(u.seeds.size() == 3u);
  BOOST_TEST((u.seeds[1].host == "10.0.0.2" && u.seeds[1].port == 7001));
  BOOST_TEST(u.seeds[2].host == "::1");
  BOOST_TEST((u.host == "10.0.0.1" && u.port == 7000));
  BOOST_TEST(u.display() == "cluster 10.0.0.1:7000,10.0.0.2:7001,[::1]:7002");
  u = parse_ok("rediss+cluster://h:1/0");
  BOOST_TEST((u.cluster && u.tls && u.seeds.size() == 1u));
  BOOST_TEST(parse_ok("redis://h:1").seeds.empty());
  BOOST_TEST(parse_bad("redis+cluster://h:1/2").find("database 0") != std::string::npos);
  BOOST_TEST(parse_bad("redis+cluster://h:1,,h:2").find("stray comma") != std::string::npos);
  BOOST_TEST(parse_bad("redis+cluster://h:1,redis://h:2").find("several URIs") !=
             std::string::npos);
  parse_bad("redis+cluster://h:1,h:0");
}

BOOST_AUTO_TEST_CASE(bad_uris_are_refused_with_a_reason_that_hides_the_password) {
  parse_bad("http://h:1");
  parse_bad("h:1");
  parse_bad("redis://");
  parse_bad("redis://h:");
  parse_bad("redis://h:0");
  parse_bad("redis://h:65536");
  parse_bad("redis://h:12x");
  parse_bad("redis://h:1/db");
  parse_bad("redis://h:1/-1");
  parse_bad("redis://[::1");
  parse_bad("redis://user:@h:1");
  auto why = parse_bad("redis://user:hunter2@:1");
  BOOST_TEST(why.find("hunter2") == std::string::npos);
  // A comma-joined list: with credentials, the last '@' would otherwise swallow the
  // first nodes into the password and accept the last node alone.
  why = parse_bad("redis://alice:hunter2@h:1,redis://alice:hunter2@h:2");
  BOOST_TEST(why.find("several URIs") != std::string::npos, why);
  BOOST_TEST(why.find("hunter2") == std::string::npos);
  BOOST_TEST(parse_bad("redis://h:1,rediss://h:2").find("several URIs") != std::string::npos);
  BOOST_TEST(parse_bad("redis://h:1,h:2").find("several URIs") != std::string::npos);
  // A comma alone in a password is still a password.
  BOOST_TEST(parse_ok("redis://alice:a,b@h:1").password == "a,b");
  BOOST_TEST(parse_bad("rediss:/h:1").find("rediss://") != std::string::npos);
  BOOST_TEST(parse_bad("rediss://").find("no host") != std::string::npos);
  node_uri tls;
  std::string tls_why;
  BOOST_TEST(parse_node_uri("rediss://u:pw@h:7/2", tls, tls_why));
  BOOST_TEST(tls.tls);
  BOOST_TEST(tls.host == "h");
  BOOST_TEST(tls.port == 7);
  BOOST_TEST(tls.db == 2);
  BOOST_TEST(tls.display() == "h:7");
}

BOOST_AUTO_TEST_CASE(errors_have_a_category_and_readable_messages) {
  boost::system::error_code ec = error::contended;
  BOOST_TEST(std::string{ec.category().name()} == "redlock");
  for (int e = static_cast<int>(error::contended); e <= static_cast<int>(error::shut_down); ++e) {
    auto m = boost::system::error_code{e, category()}.message();
    BOOST_TEST(m.size() > 10u);
    BOOST_TEST(m.find("unknown") == std::string::npos);
  }
  BOOST_TEST(
      (boost::system::error_code{error::cancelled} == boost::system::errc::operation_canceled));
  const auto last = static_cast<int>(error::leadership_lost);
  for (int e = static_cast<int>(error::tls_failed); e <= last; ++e)
    BOOST_TEST(boost::system::error_code(e, category()).message().find("unknown") ==
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_lost_leadership_compares_equal_to_the_lock_lost_condition) {
  const boost::system::error_code leadership = error::leadership_lost;
  const boost::system::error_code lock = error::lock_lost;
  BOOST_TEST((leadership == condition::lock_lost));
  BOOST_TEST((lock == condition::lock_lost));
  // Its own code all the same: an exact comparison tells them apart.
  BOOST_TEST((leadership != lock));
  BOOST_TEST((leadership != error::lock_lost));
  // No other code is a lost lock.
  BOOST_TEST((boost::system::error_code{error::not_held} != condition::lock_lost));
  BOOST_TEST((boost::system::error_code{error::cancelled} != condition::lock_lost));
  BOOST_TEST(leadership.message() != lock.message());
}

BOOST_AUTO_TEST_CASE(quorum_is_a_strict_majority_for_1_to_7_nodes) {
  const std::size_t expected[] = {0, 1, 2, 2, 3, 3, 4, 4};
  for (std::size_t n = 1; n <= 7; ++n) {
    BOOST_TEST(detail::quorum(n) == expected[n]);
    BOOST_TEST(2 * detail::quorum(n) > n);  // two majorities always share a node
  }
}

BOOST_AUTO_TEST_CASE(a_vote_is_decided_as_soon_as_the_outcome_is_certain) {
  using detail::decide;
  using detail::vote_state;
  for (std::size_t n = 1; n <= 7; ++n) {
    const std::size_t q = detail::quorum(n);
    for (std::size_t yes = 0; yes <= n; ++yes) {
      for (std::size_t no = 0; yes + no <= n; ++no) {
        const std::size_t pending = n - yes - no;
        const auto d = decide(n, yes, no);
        if (yes >= q) {
          BOOST_TEST((d == vote_state::won));
        } else if (yes + pending < q) {
          BOOST_TEST((d == vote_state::lost), "n=" << n << " yes=" << yes << " no=" << no);
        } else {
          BOOST_TEST((d == vote_state::undecided));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(validity_subtracts_elapsed_time_and_drift) {
  const boot_clock::time_point t0{std::chrono::seconds{1000}};
  // 10 s TTL, factor 0.01: drift = 100 ms + 2 ms.
  BOOST_TEST(detail::drift(10s, 0.01).count() == std::chrono::nanoseconds{102ms}.count());
  const auto deadline = detail::validity_deadline(t0, 10s, 0.01);
  BOOST_TEST((deadline - t0 == std::chrono::nanoseconds{9898ms}));
  // An attempt that took 9.9 s has no validity left.
  BOOST_TEST((t0 + 9900ms >= deadline));
  BOOST_TEST((t0 + 9800ms < deadline));
  // Factor 0: only the fixed 2 ms.
  BOOST_TEST((detail::validity_deadline(t0, 100ms, 0.0) - t0 == std::chrono::nanoseconds{98ms}));
  // A 1 ms TTL can never be valid.
  BOOST_TEST((detail::validity_deadline(t0, 1ms, 0.01) <= t0));
}

BOOST_AUTO_TEST_CASE(boot_clock_is_monotonic) {
  auto a = boot_clock::now();
  auto b = boot_clock::now();
  BOOST_TEST((b >= a));
}
