// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// redlock-asio: the Redlock distributed lock for Boost.Asio. Include this header.

#include "redlock/claim.hpp"
#include "redlock/client.hpp"
#include "redlock/clock.hpp"
#include "redlock/config.hpp"
#include "redlock/election.hpp"
#include "redlock/error.hpp"
#include "redlock/keeper.hpp"
#include "redlock/lock.hpp"
#include "redlock/multi_lock.hpp"
#include "redlock/observer.hpp"
#include "redlock/semaphore.hpp"
#include "redlock/with_lock.hpp"
