// SPDX-License-Identifier: BSL-1.0
// An extension's decisions: see extend_decisions.hpp.

#include "machines/extend_decisions.hpp"

namespace redlock::detail {

extension_check check_extension(const extension_facts& f, std::chrono::milliseconds ttl,
                                const config& cfg, boot_clock::time_point now) {
  if (f.closed) return {.refusal = error::shut_down};
  if (!f.has_token) return {.refusal = error::no_lock};
  if (!f.owns) return {.refusal = error::not_held};
  if (f.extending) return {.refusal = error::extension_in_flight};
  if (auto why = check_ttl(ttl, cfg); !why.empty())
    return {.refusal = error::invalid_ttl, .detail = ": " + why};
  if (f.lost || now >= f.deadline)
    return {.refusal = error::lock_lost,
            .detail = ": the lock had already passed its validity deadline",
            .mark_lost = true};
  return {};
}

}  // namespace redlock::detail
