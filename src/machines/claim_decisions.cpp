// SPDX-License-Identifier: BSL-1.0
// A claim or settle batch's decisions: see claim_decisions.hpp.

#include "machines/claim_decisions.hpp"

#include <algorithm>

#include "scripts/scripts.hpp"

namespace redlock::detail {

namespace {
constexpr auto longest_keep = std::chrono::milliseconds{std::chrono::hours{24 * 30}};
}  // namespace

bool own_marker(std::string_view token) {
  return !token.empty() && token.front() == own_marker_held;
}

bool bad_keep(std::chrono::milliseconds keep) {
  return keep < std::chrono::milliseconds{0} || keep > longest_keep;
}

claim_first_round plan_claim_round(std::span<const claim_candidate> nodes, std::size_t rotor) {
  const std::size_t n = nodes.size();
  std::array<std::uint8_t, max_nodes> able{};
  std::size_t count = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (rotor + k) % n;
      const auto& c = nodes[i];
      if ((pass == 0 ? c.ready : c.accepts && !c.ready) && c.votes)
        able[count++] = static_cast<std::uint8_t>(i);
    }
  }
  claim_first_round r;
  r.asks = std::min(count, quorum(n));
  for (std::size_t k = 0; k < r.asks; ++k) r.ask[k] = able[k];
  for (std::size_t k = r.asks; k < count; ++k) r.later |= bit(able[k]);
  return r;
}

bool count_claim_answer(claim_tally& t, std::int64_t code) {
  switch (code) {
    case 1:
      ++t.yes;
      return true;
    case 0:
      ++t.held;
      return false;
    case 2:
      ++t.done;
      return false;
    case 3:
      ++t.wrong;
      return false;
    case -2:  // never sent
      ++t.failed;
      return false;
    default:  // it may have landed
      ++t.failed;
      return true;
  }
}

claim_ending end_claim(std::size_t n, const claim_tally& t, node_mask maybe, bool duplicate,
                       bool in_time, bool cancelled) {
  if (duplicate) return {.status = claim_status::duplicate};
  const claim_verdict v = decide_claim(n, t, in_time);
  claim_ending e{.status = v.status, .error = v.error};
  e.keep = v.status == claim_status::won && !cancelled;
  if (!e.keep) e.undo = maybe;
  return e;
}

void count_settle_answer(settle_tally& t, std::int64_t code) {
  if (code == 1)
    ++t.yes;
  else if (code == 0)
    ++t.no;
  else
    ++t.failed;
}

error_code settle_outcome(std::size_t n, bool closed, bool marks_done, const settle_tally& t) {
  if (closed) return error::shut_down;
  return decide_settle(n, marks_done, t.yes, t.no, t.failed);
}

node_mask marker_spread(std::size_t n, node_mask asked, std::string_view token,
                        error_code outcome) {
  if (own_marker(token) || outcome) return 0;
  return static_cast<node_mask>(fleet_mask(n) & ~asked);
}

}  // namespace redlock::detail
