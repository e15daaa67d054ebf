// SPDX-License-Identifier: BSL-1.0
#include "quorum/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace redlock::detail {

std::string check_ttl(std::chrono::milliseconds ttl, const config& cfg) {
  if (ttl < std::chrono::milliseconds{1} || ttl > longest_ttl)
    return "the TTL must be from 1 ms to 24 h";
  if (cfg.max_ttl.count() > 0 && ttl > cfg.max_ttl)
    return fmt::format("the TTL ({} ms) exceeds the fleet's max_ttl ({} ms)", ttl.count(),
                       cfg.max_ttl.count());
  // Under 1 ms of validity before the round trip: the lock could be granted and be
  // invalid before its holder can use it (3 ms with the default factor leaves 0.97 ms).
  const auto left =
      validity_deadline(boot_clock::time_point{}, ttl, cfg.drift_factor) - boot_clock::time_point{};
  if (left < min_validity)
    return fmt::format(
        "the TTL ({} ms) leaves under 1 ms of validity after the clock drift allowance (2 ms "
        "+ drift_factor * ttl): a lock could never be used",
        ttl.count());
  return {};
}

std::string check_renewal_ttl(std::chrono::milliseconds renew, std::chrono::milliseconds lock_ttl,
                              const config& cfg) {
  if (auto why = check_ttl(renew, cfg); !why.empty()) return why;
  if (cfg.max_ttl.count() == 0 && renew > lock_ttl)
    return fmt::format(
        "the renewal TTL ({} ms) exceeds the lock's TTL ({} ms) while max_ttl is unset: the "
        "restart guard, which then lasts the lock's TTL, would not cover it (set max_ttl)",
        renew.count(), lock_ttl.count());
  return {};
}

namespace {

using rule = node_report::hold_back::rule;

std::chrono::milliseconds whole_ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

node_report::hold_back hold_of(const voter_facts& node, bool restart_guard,
                               std::chrono::nanoseconds guard, boot_clock::time_point now) {
  if (node.replica) return {.by = rule::replica};
  if (node.duplicate) return {.by = rule::duplicate, .duplicate_of = node.duplicate_of};
  const auto since = now - guard;
  constexpr auto never = boot_clock::time_point::min();
  auto held = [&](rule by, boot_clock::time_point at) {
    return node_report::hold_back{
        .by = by, .since = whole_ms(now - at), .left = whole_ms(at - since)};
  };
  if (restart_guard && node.started_at != never && node.started_at > since)
    return held(rule::restart, node.started_at);
  if (node.promoted_at != never && node.promoted_at > since)
    return held(rule::failover, node.promoted_at);
  if (node.clock_jump_at != never && node.clock_jump_at > since)
    return held(rule::clock_jump, node.clock_jump_at);
  return {};
}

std::string describe_hold(const node_report::hold_back& hold, std::chrono::nanoseconds guard) {
  const auto since = hold.since.count(), left = hold.left.count(), period = whole_ms(guard).count();
  switch (hold.by) {
    case rule::none:
      return {};
    case rule::replica:
      return "is a replica (ROLE says slave): only independent masters vote";
    case rule::duplicate:
      return fmt::format("is the same server as node {} (same run id)", hold.duplicate_of);
    case rule::restart:
      return fmt::format(
          "restarted about {} ms ago; held back {} ms more by the restart guard (max_ttl {} ms)",
          since, left, period);
    case rule::failover:
      return fmt::format(
          "a replica was promoted in it about {} ms ago (a failover); held back {} ms more "
          "(max_ttl {} ms)",
          since, left, period);
    case rule::clock_jump:
      return fmt::format("its clock jumped {} ms ago; held back {} ms more (max_ttl {} ms)", since,
                         left, period);
  }
  return {};
}

bool independent_master(const voter_facts& node, std::string* why) {
  if (!node.replica && !node.duplicate) return true;
  if (why) *why = describe_hold(hold_of(node, false, {}, {}), {});
  return false;
}

bool may_vote(const voter_facts& node, bool restart_guard, std::chrono::nanoseconds guard,
              boot_clock::time_point now, std::string* why) {
  if (votes_now(node, restart_guard, guard, now)) return true;
  const auto hold = hold_of(node, restart_guard, guard, now);
  if (hold.by == rule::none) return true;
  if (why) *why = describe_hold(hold, guard);
  return false;
}

error_code acquire_failure(std::size_t n, std::size_t held, std::size_t wrong_type,
                           std::size_t other_count) {
  const std::size_t spare = n - quorum(n);
  // The nodes' count stays while any permit of the other count lives: no wait mends it.
  if (other_count > spare) return error::permit_count_mismatch;
  held += other_count;
  // A key of another type stops the lock for good only when such keys sit on so many
  // nodes that a majority is out of reach while they stay; on a minority it is one more
  // "no", and a waiting lock goes on trying the others.
  if (wrong_type > spare) return error::wrong_type;
  // "Contended" only when the holders (and foreign keys) alone deny us a majority;
  // otherwise the missing votes of unavailable nodes are the reason.
  if (held + wrong_type > spare) return error::contended;
  return error::no_quorum;
}

error_code failure_reason(std::span<const error_code> errors, std::size_t held) {
  std::size_t wrong = 0, other_count = 0;
  for (const error_code& e : errors) {
    if (e == error::wrong_type) ++wrong;
    if (e == error::permit_count_mismatch) ++other_count;
  }
  return acquire_failure(errors.size(), held, wrong, other_count);
}

fenced_tally tally_fenced(std::size_t n, std::size_t counted_yes, std::size_t unmarked_yes,
                          std::size_t refused) {
  fenced_tally t;
  t.state = decide(n, counted_yes, refused + unmarked_yes);
  t.lost_to_repair = t.state == vote_state::lost && unmarked_yes > 0 &&
                     decide(n, counted_yes + unmarked_yes, refused) == vote_state::won;
  return t;
}

bool decide_fences(std::size_t n, std::span<const bool> counted, std::size_t keys,
                   std::span<const std::uint64_t> counters, std::span<std::uint64_t> tokens) {
  std::array<fence_report, max_nodes> reports;
  bool write_back = false;
  for (std::size_t k = 0; k < keys; ++k) {
    for (std::size_t i = 0; i < n; ++i) reports[i] = {counted[i], counters[i * keys + k]};
    const fence_decision d = decide_fence(n, {reports.data(), n});
    tokens[k] = d.token;
    write_back = write_back || d.write_back;
  }
  return write_back;
}

fence_decision decide_fence(std::size_t n, std::span<const fence_report> reports) {
  fence_decision d;
  std::size_t at_token = 0;
  for (const fence_report& r : reports) {
    if (!r.counted) continue;
    if (r.counter > d.token) {
      d.token = r.counter;
      at_token = 1;
    } else if (r.counter == d.token) {
      ++at_token;
    }
  }
  // A counter is at least 1 once incremented: 0 is no token, and is never skipped to.
  d.write_back = d.token == 0 || at_token < quorum(n);
  return d;
}

namespace {

extension_verdict shortened(error_code why, boot_clock::time_point now,
                            boot_clock::time_point start, std::chrono::milliseconds ttl,
                            boot_clock::time_point old_deadline, double factor) {
  const auto deadline = std::min(old_deadline, validity_deadline(start, ttl, factor));
  return {true, why, deadline, now >= deadline};
}

}  // namespace

extension_verdict decide_extension(std::size_t n, std::size_t yes, std::size_t refused,
                                   std::size_t failed, boot_clock::time_point now,
                                   boot_clock::time_point start, std::chrono::milliseconds ttl,
                                   boot_clock::time_point old_deadline, double factor) {
  switch (decide(n, yes, refused + failed)) {
    case vote_state::undecided:
      return {false, {}, old_deadline, false};
    case vote_state::won: {
      const auto new_deadline = validity_deadline(start, ttl, factor);
      if (now < old_deadline && now < new_deadline) return {true, {}, new_deadline, false};
      // Confirmed too late: past the old deadline another owner may exist, and past the
      // new one the keys may be gone.
      auto v = shortened(error::validity_exhausted, now, start, ttl, old_deadline, factor);
      if (now >= old_deadline) v.lost = true;
      return v;
    }
    case vote_state::lost:
      break;
  }
  // A majority no longer holds our token: the lock is gone for good.
  if (refused > n - quorum(n)) return {true, error::not_held, old_deadline, true};
  return shortened(error::no_quorum, now, start, ttl, old_deadline, factor);
}

std::chrono::nanoseconds loss_margin(std::chrono::milliseconds ttl,
                                     std::chrono::milliseconds configured) {
  if (configured.count() > 0) return configured;
  return std::clamp<std::chrono::milliseconds>(ttl / 50, std::chrono::milliseconds{1},
                                               std::chrono::milliseconds{100});
}

extension_verdict keeper_verdict(extension_verdict v, boot_clock::time_point now,
                                 std::chrono::nanoseconds margin) {
  if (!v.outcome && now >= v.deadline - margin) {
    v.outcome = error::validity_exhausted;
    v.lost = true;
  }
  return v;
}

extension_verdict abandoned_extension(error_code why, boot_clock::time_point now,
                                      boot_clock::time_point start, std::chrono::milliseconds ttl,
                                      boot_clock::time_point old_deadline, double factor) {
  return shortened(why, now, start, ttl, old_deadline, factor);
}

claim_verdict decide_claim(std::size_t n, const claim_tally& t, bool in_time) {
  const std::size_t q = quorum(n);
  const std::size_t spare = n - q;
  if (t.yes >= q && in_time) return {claim_status::won};
  if (std::size_t{t.held} + t.done > spare)
    return {t.done > 0 ? claim_status::done : claim_status::held};
  if (t.wrong > spare) return {claim_status::failed, error::wrong_type};
  if (t.yes >= q) return {claim_status::failed, error::validity_exhausted};
  return {claim_status::failed, error::no_quorum};
}

error_code decide_settle(std::size_t n, bool marks_done, std::size_t yes, std::size_t no,
                         std::size_t failed) {
  if (marks_done) {
    if (yes >= quorum(n)) return {};
    return yes == 0 && failed == 0 ? error::not_held : error::no_quorum;
  }
  return decide_release(n, yes, no, 0).outcome;
}

bool repair_may_write(std::size_t n, const repair_census& c) {
  return c.marked >= quorum(n) || c.answered >= c.independent;
}

}  // namespace redlock::detail
