// SPDX-License-Identifier: BSL-1.0
// A semaphore's sweep over its permits (permit_sweep), fed try outcomes without a server:
// the order of the tries, and what a sweep with no winner fails with.

#include <boost/test/unit_test.hpp>
#include <vector>

#include "async_helpers.hpp"  // prints redlock::error in failed checks
#include "client/permit_sweep.hpp"

using namespace redlock;
using boost::system::error_code;
using detail::permit_sweep;
using detail::sweep_step;
using kind = sweep_step::kind;

namespace {

// The indices a sweep of `permits` starting at `first` tries when every try is contended.
std::vector<std::size_t> order(std::size_t permits, std::size_t first) {
  permit_sweep s{permits};
  std::vector<std::size_t> tried;
  for (sweep_step step = s.start(first); step.what == kind::try_permit;
       step = s.tried(error::contended))
    tried.push_back(step.index);
  return tried;
}

// The outcome of a sweep of `outcomes.size()` permits whose tries end as given.
sweep_step sweep(const std::vector<error_code>& outcomes) {
  permit_sweep s{outcomes.size()};
  sweep_step step = s.start(0);
  for (const error_code& ec : outcomes) {
    BOOST_TEST_REQUIRE((step.what == kind::try_permit));
    step = s.tried(ec);
  }
  return step;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(permit_sweeps)

BOOST_AUTO_TEST_CASE(each_permit_is_tried_once_from_the_first_wrapping_around) {
  BOOST_TEST(order(4, 2) == (std::vector<std::size_t>{2, 3, 0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(order(1, 0) == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
  BOOST_TEST(order(3, 7) == (std::vector<std::size_t>{1, 2, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_won_try_hands_out_that_permit_and_ends_the_sweep) {
  permit_sweep s{5};
  BOOST_TEST(s.start(3).index == 3u);
  const sweep_step next = s.tried(error::contended);
  BOOST_TEST(next.index == 4u);
  const sweep_step won = s.tried({});
  BOOST_TEST((won.what == kind::won));
  BOOST_TEST(won.index == 4u);
}

BOOST_AUTO_TEST_CASE(every_permit_held_is_contended) {
  const sweep_step s = sweep({error::contended, error::contended, error::contended});
  BOOST_TEST((s.what == kind::failed));
  BOOST_TEST(s.ec == error::contended);
}

BOOST_AUTO_TEST_CASE(a_permit_that_could_not_be_asked_wins_over_held_ones) {
  // The unasked permit may be free: "all held" would be a guess (and exit 75 for 69).
  const sweep_step s = sweep({error::contended, error::no_quorum, error::validity_exhausted});
  BOOST_TEST((s.what == kind::failed));
  BOOST_TEST(s.ec == error::no_quorum);
}

BOOST_AUTO_TEST_CASE(wrong_type_fails_the_sweep_only_at_every_permit) {
  const sweep_step some = sweep({error::wrong_type, error::contended});
  BOOST_TEST(some.ec == error::contended);
  const sweep_step all = sweep({error::wrong_type, error::wrong_type});
  BOOST_TEST(all.ec == error::wrong_type);
}

BOOST_AUTO_TEST_CASE(shutdown_cancellation_and_argument_errors_end_the_call_at_once) {
  for (const error e : {error::shut_down, error::cancelled, error::invalid_ttl}) {
    permit_sweep s{3};
    s.start(0);
    const sweep_step step = s.tried(e);
    BOOST_TEST((step.what == kind::end));
    BOOST_TEST(step.ec == e);
  }
}

BOOST_AUTO_TEST_CASE(a_new_sweep_forgets_the_last_ones_failures) {
  permit_sweep s{2};
  s.start(0);
  s.tried(error::no_quorum);
  BOOST_TEST(s.tried(error::contended).ec == error::no_quorum);
  s.start(1);
  s.tried(error::contended);
  BOOST_TEST(s.tried(error::contended).ec == error::contended);
}

BOOST_AUTO_TEST_SUITE_END()
