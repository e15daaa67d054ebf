// SPDX-License-Identifier: BSL-1.0
#pragma once
// The lock kinds' merges of calls split per slot (split_form, on a node that is a Redis
// Cluster): each reads its script's per-part answers and gives the reply the whole call
// would have given, so that the kind that sent the call reads one reply whatever the
// node. Socket-free: test/unit/test_rules.cpp feeds them part replies.

#include <cstddef>
#include <memory>

#include "connection/connection.hpp"

namespace redlock::detail {

/// Claims and settles: an array with one integer per item, in the call's order; an item
/// whose part failed is -1 (may have run), one whose part was not sent or was refused
/// without running (TRYAGAIN while its slot migrates, any error reply) is -2 (not run).
std::unique_ptr<split_merge> merge_per_key(std::size_t items_in_call);
/// A set's extension: 1 when every part answered 1, else 0 (a token not found anywhere
/// outweighs a failure elsewhere).
std::unique_ptr<split_merge> merge_all_ones(std::size_t items_in_call);
/// A set's release: the sum of the parts' counts.
std::unique_ptr<split_merge> merge_sum(std::size_t items_in_call);
/// A set's acquisition: {0, k, holder} for the first refused item k of the call; else {1},
/// or {1, counter, marker, ...} with two elements per item, each marker vetted against the
/// server that answered its part (vetted_marker, or nil). A refused or failed call gives
/// back what its other parts took (give_back).
std::unique_ptr<split_merge> merge_set_acquire(std::size_t items_in_call);
/// A fenced set's write-back: 0 if any part answered 0; else {1, marker, ...}, one vetted
/// marker per item.
std::unique_ptr<split_merge> merge_set_raise(std::size_t items_in_call);

}  // namespace redlock::detail
