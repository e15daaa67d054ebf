// SPDX-License-Identifier: BSL-1.0
// A single lock's acquisition answer: see lock_answer.hpp.

#include "machines/lock_answer.hpp"

namespace redlock::detail {

bool read_readers_record(std::string_view value, readers_record& out) {
  if (!value.starts_with("R|")) return false;
  value.remove_prefix(2);
  const auto space = value.find(' ');
  const std::string_view mark = value.substr(0, space);
  readers_record r;
  const auto [end, ec] = std::from_chars(mark.data(), mark.data() + mark.size(), r.mark);
  if (mark.empty() || ec != std::errc{} || end != mark.data() + mark.size()) return false;
  // " <expiry> <token>" per reader: two spaces each.
  std::size_t spaces = 0;
  for (char c : value) spaces += c == ' ' ? 1 : 0;
  if (spaces % 2 != 0) return false;
  r.entries = spaces / 2;
  out = r;
  return true;
}

bool may_have_taken(vote v, const error_code& ec, bool scripted) {
  if (v == vote::yes || v == vote::pending) return true;
  if (v != vote::failed) return false;
  return ec == error::node_timeout || ec == error::connection_lost || ec == error::node_held_back ||
         (scripted && ec == error::server_error);
}

}  // namespace redlock::detail
