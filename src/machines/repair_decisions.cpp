// SPDX-License-Identifier: BSL-1.0
// A fence repair's decisions: see repair_decisions.hpp.

#include "machines/repair_decisions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "client/client_state.hpp"  // acl_hint

namespace redlock::detail {

bool fence_read_well_formed(const resp::reply& r) {
  return !r.empty() && r[0].kind == resp::type::array && r.size() >= 3 &&
         (r[1].is_string() || r[1].kind == resp::type::null) && r[2].kind == resp::type::array;
}

void read_fence_counters(const resp::reply& r, std::map<std::string, std::int64_t>& out) {
  for (std::size_t k = 3; k + 1 < r.size(); k += 2) {
    std::int64_t v = 0;
    std::from_chars(r[k + 1].text.data(), r[k + 1].text.data() + r[k + 1].text.size(), v);
    out[std::string{r[k].text}] = v;
  }
}

repair_census count_reads(std::span<const fence_read> reads, std::span<const bool> independent) {
  repair_census c;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (!independent[i]) continue;
    ++c.independent;
    if (!reads[i].answered) continue;
    ++c.answered;
    if (reads[i].marked) ++c.marked;
  }
  return c;
}

std::map<std::string, std::int64_t> counter_maxima(std::span<const fence_read> reads,
                                                   std::span<const bool> independent) {
  std::map<std::string, std::int64_t> maxima;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (!reads[i].answered || !independent[i]) continue;
    for (auto& [field, v] : reads[i].counters) maxima[field] = std::max(maxima[field], v);
  }
  return maxima;
}

bool repair_target(const fence_read& r, bool ready, bool voted_at_start) {
  return r.answered && !r.marked && !r.incarnation.empty() && ready && voted_at_start;
}

repair_write repair_write_answer(error_code ec, const resp::reply* r,
                                 const std::string* answered_by, std::string_view read_from) {
  if (ec) return repair_write::lost;
  if ((*r)[0].is_error()) return repair_write::refused;
  if ((*r)[0].kind != resp::type::integer || (*r)[0].integer != 1) return repair_write::ignored;
  if (answered_by && *answered_by == read_from) return repair_write::marked;
  return repair_write::restarted;
}

std::string repair_failure(std::size_t node, error_code ec, std::string_view server_text) {
  if (ec == error::server_error)
    return fmt::format("node {}: \"{}\"{}", node, server_text, acl_hint(server_text));
  return fmt::format("node {}: {}", node, ec.message());
}

void keep_repair_problem(std::string& problem, std::string&& failed, bool wrote) {
  if (!failed.empty())
    problem = std::move(failed);
  else if (wrote)
    problem.clear();
}

}  // namespace redlock::detail
