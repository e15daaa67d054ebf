// SPDX-License-Identifier: BSL-1.0
#pragma once
// Heap accounting for the memory workload. The bench binary replaces the global
// operator new and delete (alloc_counter.cpp) so that every allocation the library makes
// through them is counted; malloc called directly is not.

#include <cstdint>

namespace redlock::bench::alloc {

struct counts {
  std::uint64_t allocations = 0;  ///< calls to any operator new
  std::uint64_t frees = 0;        ///< calls to any operator delete with a non-null pointer
  std::uint64_t bytes = 0;        ///< bytes requested, summed
  std::int64_t live_bytes = 0;    ///< usable bytes allocated and not yet freed
};

/// The counters now (relaxed reads: take snapshots from the thread that ran the work).
counts snapshot() noexcept;

}  // namespace redlock::bench::alloc
