// SPDX-License-Identifier: BSL-1.0
#include "machines/election_decisions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "quorum/rules.hpp"

namespace redlock::detail {

std::string format_election_record(std::uint64_t term, std::string_view token,
                                   std::string_view value) {
  return fmt::format("{} {} {}", term, token, value);
}

bool parse_election_record(std::string_view text, election_record& out) {
  const auto sp1 = text.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return false;
  const auto sp2 = text.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
  std::uint64_t term = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + sp1, term);
  if (ec != std::errc{} || end != text.data() + sp1 || term == 0) return false;
  out.term = term;
  out.token.assign(text.substr(sp1 + 1, sp2 - sp1 - 1));
  out.value.assign(text.substr(sp2 + 1));
  return true;
}

bool read_election_answer(const resp::reply& r, election_node_view& out) {
  // {lock, record}: an array of two, each a string or nil.
  if (r.size() != 3 || r[0].kind != resp::type::array || r[0].size != 2) return false;
  const resp::node& lock = r[1];
  const resp::node& record = r[2];
  const auto nil = [](const resp::node& x) { return x.kind == resp::type::null; };
  if (!(lock.is_string() || nil(lock)) || !(record.is_string() || nil(record))) return false;
  out = {};
  out.answered = true;
  if (lock.is_string()) out.lock_token.assign(lock.text);
  if (record.is_string()) out.has_record = parse_election_record(record.text, out.record);
  return true;
}

leader_view decide_leader(std::span<const election_node_view> nodes, std::size_t n) {
  const std::size_t needed = quorum(n);
  // At most one token can reach a majority of n: count each candidate against the rest.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const election_node_view& c = nodes[i];
    if (!c.answered || !c.has_record || c.lock_token.empty() || c.record.token != c.lock_token)
      continue;
    std::size_t agree = 0;
    for (const election_node_view& v : nodes)
      if (v.answered && v.has_record && v.lock_token == c.lock_token &&
          v.record.token == c.lock_token && v.record.term == c.record.term &&
          v.record.value == c.record.value)
        ++agree;
    if (agree >= needed) return {true, c.record.term, c.lock_token, c.record.value};
  }
  return {};
}

std::size_t answered_without(std::span<const election_node_view> nodes, std::string_view token) {
  std::size_t without = 0;
  for (const election_node_view& v : nodes)
    if (v.answered && v.lock_token != token) ++without;
  return without;
}

bool leader_news(const observer_memory& m, const leader_view& seen,
                 std::span<const election_node_view> nodes, std::size_t n) {
  const std::size_t needed = quorum(n);
  if (seen.leading) return seen.term > m.highest;
  if (!m.reported) {
    const auto answered =
        std::count_if(nodes.begin(), nodes.end(), [](const auto& v) { return v.answered; });
    return static_cast<std::size_t>(answered) >= needed;
  }
  return m.last.leading && answered_without(nodes, m.last.token) >= needed;
}

std::chrono::milliseconds election_record_ttl(std::chrono::milliseconds ttl,
                                              std::chrono::milliseconds renew_ttl) {
  using namespace std::chrono_literals;
  return std::min<std::chrono::milliseconds>(2 * std::max(ttl, renew_ttl), 24h);
}

std::chrono::milliseconds election_refresh_delay(bool on_majority,
                                                 std::chrono::milliseconds record_ttl,
                                                 std::chrono::milliseconds retry_delay) {
  return on_majority ? record_ttl / 4 : retry_delay;
}

campaign_action after_first_record(error_code write_failed, bool lock_valid, std::size_t written,
                                   std::size_t nodes) {
  if (write_failed) return campaign_action::completed(write_failed);
  if (!lock_valid) return campaign_action::completed(error::leadership_lost);
  return {.what = action_kind::complete, .detail = {.on_majority = written >= quorum(nodes)}};
}

observer_action after_election_read(error_code read_failed, bool news, bool woken,
                                    std::chrono::milliseconds poll_interval) {
  if (read_failed || news) return observer_action::completed(read_failed);
  if (woken) return {.what = action_kind::send_round};
  return {.what = action_kind::wait, .delay = poll_interval};
}

leader_report report_of(const observer_memory& m) {
  if (m.last.leading) return {true, m.last.term, m.last.value};
  return {false, m.highest, {}};
}

void remember_report(observer_memory& m, leader_view seen) {
  m.reported = true;
  m.last = std::move(seen);
  if (m.last.leading) m.highest = std::max(m.highest, m.last.term);
}

election_problem campaign_problem(std::size_t value_size, std::chrono::milliseconds ttl,
                                  std::chrono::milliseconds renew_ttl, const config& cfg) {
  if (value_size > max_resource_bytes)
    return {error::invalid_argument, "campaign: the value is over 64 KiB"};
  const auto renew = renew_ttl.count() > 0 ? renew_ttl : ttl;
  if (auto why = check_renewal_ttl(renew, ttl, cfg); !why.empty())
    return {error::invalid_ttl, "campaign: renewal: " + why};
  return {};
}

election_problem observer_problem(std::string_view name, std::chrono::milliseconds poll_interval) {
  if (name.empty() || name.size() > max_resource_bytes)
    return {error::invalid_resource, "election_observer: the name is empty or over 64 KiB"};
  if (poll_interval < std::chrono::milliseconds{1})
    return {error::invalid_argument, "election_observer: poll_interval under 1 ms"};
  return {};
}

}  // namespace redlock::detail
