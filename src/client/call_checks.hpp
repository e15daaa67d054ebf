// SPDX-License-Identifier: BSL-1.0
#pragma once
// What is wrong with a lock call's arguments, decided before any I/O: pure functions of
// the call and the client's config, tested in test_machines.

#include <string>
#include <string_view>
#include <vector>

#include "quorum/rules.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {

/// The first problem found with a call: its error (error{} when there is none) and a
/// sentence for the diagnostics.
struct call_problem {
  error code{};
  std::string why{};
  explicit operator bool() const { return code != error{}; }
};

/// The start of every name of a key a semaphore owns (its permits, its record: see
/// permit_sweep_fsm.hpp). A plain lock, set, claim or election named so is refused, so that no
/// plain call can take a permit or rewrite a semaphore's count.
inline constexpr std::string_view semaphore_names = "redlock:permit";

/// What is wrong with a resource name, or with a wait (call_checks.cpp).
call_problem name_problem(std::string_view resource);
call_problem wait_problem(const lock_options& opts, bool waiting);
/// What lock_options::shared cannot be combined with (fair mode).
call_problem shared_problem(const lock_options& opts);

/// A single lock call on `resource` (async_lock when `waiting`, else a try): the name,
/// the TTL and the wait. Inline: every lock call asks, and nearly every one passes.
/// `permit`: the call is a semaphore's permit try, whose name is a semaphore's own.
inline call_problem check_lock_call(std::string_view resource, const lock_options& opts,
                                    bool waiting, const config& cfg, bool permit = false) {
  if (resource.empty() || resource.size() > max_resource_bytes ||
      (!permit && resource.starts_with(semaphore_names)))
    return name_problem(resource);
  if (auto why = check_ttl(opts.ttl, cfg); !why.empty())
    return {error::invalid_ttl, std::move(why)};
  if (waiting && opts.wait < std::chrono::milliseconds::zero()) return wait_problem(opts, waiting);
  if (opts.shared && opts.fair) return shared_problem(opts);
  return {};
}

/// A lock set: sorts `resources` (the order every node sees), then checks fair mode,
/// the count, each name, names given twice, the TTL and the wait.
call_problem check_set_call(std::vector<std::string>& resources, const lock_options& opts,
                            bool waiting, const config& cfg);

/// A semaphore call (async_lock_permit when `waiting`, else a try) for one of `permits`
/// permits of `resource`: the count, fair and shared mode (a permit is one holder's), the
/// semaphore's name, then what the single lock of its last permit would refuse (the longest
/// name; the TTL and the wait are the same for all).
call_problem check_permit_call(std::string_view resource, std::size_t permits,
                               const lock_options& opts, bool waiting, const config& cfg);

/// A resource name as the diagnostics quote it: a name too long to use by its start.
std::string quoted_resource(std::string_view resource);

}  // namespace redlock::detail
