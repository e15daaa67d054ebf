// A single lock's acquisition answer: see lock_answer.hpp.

#include "client/lock_answer.hpp"

namespace redlock::detail {

namespace {

lock_answer held(const resp::node& holder) {
  if (!holder.is_string()) return {.what = lock_answer::kind::held};
  return {.what = lock_answer::kind::held, .named = true, .holder = holder.text};
}

}  // namespace

lock_answer read_lock_answer(const resp::reply& r, bool fenced, bool fair) {
  const resp::node& top = r[0];
  if (!fenced && !fair) {
    // SET ... NX GET: nil when we set it, the holder's token when someone holds it.
    if (top.kind == resp::type::null) return {.what = lock_answer::kind::taken};
    if (top.is_string()) return held(top);
    return {};
  }
  const std::size_t size = fenced && r.size() > 1 && r[1].integer == 1 ? 4 : 3;
  if (top.kind != resp::type::array || r.size() != size || r[1].kind != resp::type::integer)
    return {};
  switch (r[1].integer) {
    case 0:
      return held(r[2]);
    case 3:
      return fair ? lock_answer{.what = lock_answer::kind::waiter_first} : lock_answer{};
    case 1:
      if (!fenced) return {.what = lock_answer::kind::taken};
      if (r[2].kind != resp::type::integer) return {};
      return {.what = lock_answer::kind::taken,
              .counter = static_cast<std::uint64_t>(r[2].integer),
              .marker = &r[3]};
    default:
      return {};
  }
}

bool may_have_taken(vote v, const error_code& ec, bool scripted) {
  if (v == vote::yes || v == vote::pending) return true;
  if (v != vote::failed) return false;
  return ec == error::node_timeout || ec == error::connection_lost || ec == error::node_held_back ||
         (scripted && ec == error::server_error);
}

}  // namespace redlock::detail
