// SPDX-License-Identifier: BSL-1.0
// The names of every key: see keyspace.hpp.

#include "util/keyspace.hpp"

#include <fmt/format.h>

#include "redlock/config.hpp"

namespace redlock::detail {

keyspace::keyspace(const config& cfg) : prefix_(cfg.key_prefix) {}

std::string keyspace::key(std::string_view resource) const {
  std::string out;
  key_into(out, resource);
  return out;
}

std::string keyspace::fence_hash() const {
  return prefix_ + "redlock:fence";
}

std::string keyspace::fence_marker() const {
  return prefix_ + "redlock:fence:marker";
}

std::string keyspace::fence_hash(std::string_view tag) const {
  return fmt::format("{}redlock:fence:{{{}}}", prefix_, tag);
}

std::string keyspace::fence_marker(std::string_view tag) const {
  return fmt::format("{}redlock:fence:marker:{{{}}}", prefix_, tag);
}

std::string keyspace::fair_line(std::string_view tag, std::string_view resource) const {
  return fmt::format("{}redlock:line:{}{}", prefix_, tag, resource);
}

std::string keyspace::fair_expiry(std::string_view tag, std::string_view resource) const {
  return fmt::format("{}redlock:line-expiry:{}{}", prefix_, tag, resource);
}

std::string keyspace::election_record(std::string_view tag, std::string_view name) const {
  return fmt::format("{}redlock:election:{}{}", prefix_, tag, name);
}

std::string permit_key_name(std::string_view resource, std::size_t index) {
  return fmt::format("redlock:permit:{{{}}}:{}", resource, index);
}

std::string permit_record_name(std::string_view resource) {
  return fmt::format("redlock:permit:{{{}}}:count", resource);
}

permit_line_keys permit_line_of(std::string_view semaphore_key) {
  // "...:count" or "...:<i>" -> "...:line", "...:lapse": the same hash tag, so the same slot.
  const std::string_view stem = semaphore_key.substr(0, semaphore_key.rfind(':') + 1);
  return {fmt::format("{}line", stem), fmt::format("{}lapse", stem)};
}

std::string keyspace::permit_offers(std::string_view random) const {
  return fmt::format("{}redlock:permit:offers:{}", prefix_, random);
}

}  // namespace redlock::detail
