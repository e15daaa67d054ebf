// SPDX-License-Identifier: BSL-1.0
// The one Boost.Test main of every test executable (linked from redlock_test_support;
// compiled without the precompiled header, which would hide BOOST_TEST_MODULE).
#define BOOST_TEST_MODULE redlock
#include <boost/test/unit_test.hpp>
