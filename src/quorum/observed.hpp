// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a round leaves for its readers after the vote: when each node replied, and each
// node's answer as an observer event or the caller's diagnostics word it. Only the
// quorum op's reading of a round lives here; the vote itself is round.hpp's.

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "quorum/round.hpp"
#include "redlock/clock.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/observer.hpp"

namespace redlock::detail {

/// For observer events: a duration in whole microseconds.
inline std::chrono::microseconds micros(boot_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d);
}

/// When each node replied in the current round. Kept only for a round someone will
/// report (an observer is installed): without one, nothing is allocated and a reply
/// costs one test of a null pointer.
class reply_times {
 public:
  /// A new round; `keep`: record its reply times (allocated once, on the first such round).
  void begin(bool keep) {
    if (!keep) return;
    if (!at_) at_ = std::make_unique<std::array<boot_clock::time_point, max_nodes>>();
    at_->fill(boot_clock::time_point{});
  }
  /// Node i replied now.
  void stamp(std::size_t i) {
    if (at_) (*at_)[i] = boot_clock::now();
  }
  /// When node i replied (the zero time point: no reply, or times not kept).
  boot_clock::time_point at(std::size_t i) const {
    return at_ ? (*at_)[i] : boot_clock::time_point{};
  }

 private:
  std::unique_ptr<std::array<boot_clock::time_point, max_nodes>> at_;
};

/// Node i's part in round `r`, at `address`, with its latency from `round_start` to
/// `replied` (the zero time point: no reply).
node_reply observed_reply(const round& r, std::size_t i, std::string_view address,
                          boot_clock::time_point round_start, boot_clock::time_point replied);

/// Node i's part in round `r` as the caller's diagnostics keep it: `problem` (why its
/// connection is not usable) says more of a failure the round has no text for.
node_diagnostic diagnosed_node(const round& r, std::size_t i, std::string_view address,
                               std::string_view problem);

/// Every node's part in round `r`, written into `out`: one per address, latency from
/// `round_start`.
std::span<const node_reply> observed_replies(const round& r, const reply_times& times,
                                             std::span<const std::string> addresses,
                                             std::array<node_reply, max_nodes>& out,
                                             boot_clock::time_point round_start);

/// Tells `obs` of an async_extend of `resource` that ended with `ec`, after `elapsed`
/// with the answers `nodes` (empty when nothing was sent), and of the loss it found when
/// `lost_now`.
void report_extension_to(observer& obs, std::string_view resource, error_code ec,
                         std::chrono::microseconds elapsed, std::span<const node_reply> nodes,
                         bool lost_now);

}  // namespace redlock::detail
