// SPDX-License-Identifier: BSL-1.0
// The checks of a lock call's arguments: see call_checks.hpp.

#include "client/call_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "machines/permit_sweep_fsm.hpp"
#include "quorum/rules.hpp"
#include "redlock/multi_lock.hpp"
#include "util/keyspace.hpp"

namespace redlock::detail {

call_problem wait_problem(const lock_options& opts, bool waiting) {
  // async_try_lock ignores the wait; async_lock must not add a negative one to the clock
  // (milliseconds::min() overflows it).
  if (waiting && opts.wait < std::chrono::milliseconds::zero())
    return {error::invalid_wait, "the wait must not be negative (0 means one attempt)"};
  return {};
}

call_problem shared_problem(const lock_options& opts) {
  if (opts.fair)
    return {error::invalid_argument, "a shared lock cannot be fair (lock_options::fair)"};
  return {};
}

call_problem name_problem(std::string_view resource) {
  if (resource.empty()) return {error::invalid_resource, "the resource name is empty"};
  if (resource.size() > max_resource_bytes)
    return {error::invalid_resource,
            fmt::format("the resource name has {} bytes; at most {} bytes are allowed",
                        resource.size(), max_resource_bytes)};
  if (resource.starts_with(semaphore_names))
    return {error::invalid_resource,
            fmt::format("names starting with \"{}\" are a semaphore's own keys (its permits and "
                        "its count); no other lock may take them",
                        semaphore_names)};
  return {};
}

std::string quoted_resource(std::string_view resource) {
  if (resource.size() <= max_resource_bytes) return std::string{resource};
  return fmt::format("{}...", resource.substr(0, 32));
}

call_problem check_permit_call(std::string_view resource, std::size_t permits,
                               const lock_options& opts, bool waiting, const config& cfg) {
  if (permits == 0 || permits > max_permits)
    return {error::invalid_argument,
            fmt::format("{} permits: a semaphore has 1 to {}", permits, max_permits)};
  if (opts.fair) return {error::invalid_argument, "fair mode is for single locks"};
  if (opts.shared)
    return {error::invalid_argument, "a permit cannot be shared (lock_options::shared)"};
  if (auto why = semaphore_name_problem(resource); !why.empty())
    return {error::invalid_resource, std::move(why)};
  return check_lock_call(permit_key_name(resource, permits - 1), opts, waiting, cfg, true);
}

call_problem check_set_call(std::vector<std::string>& resources, const lock_options& opts,
                            bool waiting, const config& cfg) {
  if (opts.fair) return {error::invalid_argument, "fair mode applies to single locks, not to sets"};
  if (opts.shared)
    return {error::invalid_argument, "shared mode applies to single locks, not to sets"};
  if (resources.empty()) return {error::invalid_resource, "the set of resources is empty"};
  if (resources.size() > max_multi_lock)
    return {error::too_many_resources,
            fmt::format("the set has {} resources; at most {} are allowed", resources.size(),
                        max_multi_lock)};
  for (std::size_t j = 0; j < resources.size(); ++j) {
    if (resources[j].empty())
      return {error::invalid_resource, fmt::format("resource {} of the set is an empty name", j)};
    if (resources[j].starts_with(semaphore_names)) return name_problem(resources[j]);
    if (resources[j].size() > max_resource_bytes)
      return {error::invalid_resource,
              fmt::format("resource {} of the set has {} bytes; at most {} bytes are allowed", j,
                          resources[j].size(), max_resource_bytes)};
  }
  std::sort(resources.begin(), resources.end());
  if (auto d = std::adjacent_find(resources.begin(), resources.end()); d != resources.end())
    return {error::invalid_resource, fmt::format("resource \"{}\" is named twice in the set",
                                                 d->size() > 64 ? d->substr(0, 64) + "..." : *d)};
  if (auto why = check_ttl(opts.ttl, cfg); !why.empty()) return {error::invalid_ttl, why};
  return wait_problem(opts, waiting);
}

}  // namespace redlock::detail
