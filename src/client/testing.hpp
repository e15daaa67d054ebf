// SPDX-License-Identifier: BSL-1.0
#pragma once
// Hooks for the library's own tests and benchmark: not part of the API, and not installed
// (they live beside the sources; the tests and the benchmark see them through
// redlock_internal).

#include <cstddef>
#include <functional>
#include <string_view>

namespace redlock {
class client;
}

namespace redlock::detail {

/// Calls `hook` on the client's strand between the two rounds of each fenced
/// acquisition of one resource, with the resource name. Not called when the second round
/// (the write-back) is skipped because a majority already reported the token. Set it
/// before the client's first call.
void set_fence_writeback_hook(client& c, std::function<void(std::string_view)> hook);

/// How many nodes have confirmed the client's subscription to its offers channel (as the
/// client has read it): a waiting permit call sent after it is n counts those nodes' grants.
/// On the client's strand (a test's single-threaded io_context).
std::size_t offers_subscriptions(client& c);

}  // namespace redlock::detail
