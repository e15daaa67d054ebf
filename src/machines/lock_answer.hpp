// SPDX-License-Identifier: BSL-1.0
#pragma once
// How a node answered a single lock's acquisition, read from its reply without a socket
// and without judging the node (whether its marker names the server that answered, and
// whether it may vote, are the operation's to ask). Tested in test_machines.

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "quorum/round.hpp"
#include "redlock/error.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

struct lock_answer {
  enum class kind : std::uint8_t {
    taken,           ///< the key is ours now
    held,            ///< someone else holds it (`holder` when `named`)
    readers,         ///< readers hold it shared: `holder` is their record ("R|...")
    writer_waiting,  ///< a reader's try: a waiting writer's mark keeps new readers out ("W")
    waiter_first,    ///< fair mode: an earlier waiter is first in the nodes' line
    other_count,     ///< a permit's try: the node records the semaphore with `count` permits
    malformed,       ///< not an answer the call's script gives
  };
  kind what = kind::malformed;
  bool named = false;                  ///< held: the holder's token was given
  std::string_view holder{};           ///< held: that token (into the reply)
  std::uint64_t counter = 0;           ///< taken, fenced: the resource's counter now
  const resp::node* marker = nullptr;  ///< taken, fenced: the fence marker to vet
  std::uint64_t count = 0;             ///< other_count: the count the node records
  std::size_t free_at = 0;  ///< held, a permit's try: a free permit that far after it (0: none)
};

/// Reads node's reply `r` to the acquisition a call sent: a plain `SET NX GET` when
/// neither `fenced` nor `fair`, else the fenced, fair or fair-fenced acquire script
/// ({0, holder} held; {1, counter, marker} fenced taken; {1, 0} taken; {3, id} a waiter
/// first).
namespace answer_detail {

// A value is a writer's token, a readers' record ("R|<mark> <expiry> <token> ...", scripts.cpp)
// or, only in a reader's answer, "W": no token starts with "R|" or is "W" (config::owner is
// checked, and tokens are hex digits before it).
inline lock_answer held(const resp::node& holder) {
  if (!holder.is_string()) return {.what = lock_answer::kind::held};
  lock_answer::kind what = lock_answer::kind::held;
  if (holder.text.starts_with("R|")) what = lock_answer::kind::readers;
  if (holder.text == "W") what = lock_answer::kind::writer_waiting;
  return {.what = what, .named = true, .holder = holder.text};
}

}  // namespace answer_detail

// Inline: it runs for every answer of every acquisition, beside classify.
inline lock_answer read_lock_answer(const resp::reply& r, bool fenced, bool fair) {
  const resp::node& top = r[0];
  if (!fenced && !fair) {
    // SET ... NX GET: nil when we set it, the holder's token when someone holds it.
    if (top.kind == resp::type::null) return {.what = lock_answer::kind::taken};
    if (top.is_string()) return answer_detail::held(top);
    return {};
  }
  const std::size_t size = fenced && r.size() > 1 && r[1].integer == 1 ? 4 : 3;
  if (top.kind != resp::type::array || r.size() != size || r[1].kind != resp::type::integer)
    return {};
  switch (r[1].integer) {
    case 0:
      return answer_detail::held(r[2]);
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

/// How a node answered a set's acquisition (multi_acquire_script). A key of another type fails
/// the script with WRONGTYPE before anything is set: an error reply, not read here.
struct set_answer {
  enum class kind : std::uint8_t {
    taken,      ///< every key of the set is ours now on that node
    held,       ///< the script stopped at the first key held (`blocker`)
    malformed,  ///< not an answer the script gives
  };
  kind what = kind::malformed;
  std::size_t blocker =
      0;               ///< held: the 1-based index of that key (0: not given, or not in the set)
  bool named = false;  ///< held: its value was given
  std::string_view holder{};  ///< held: that value, a token or a readers' record (into the reply)
  bool readers = false;       ///< held: a readers' record holds `blocker` (a writer may mark it)
};

/// Reads node's reply `r` to the acquisition of a set of `keys` keys: {1} taken, fenced {1,
/// counter, marker, ...} a counter and a marker per key in the set's order (set_counter,
/// set_marker); {0, k, holder} held, key k (1-based) the first the script found held.
inline set_answer read_set_answer(const resp::reply& r, std::size_t keys, bool fenced) {
  if (r[0].kind != resp::type::array || r.size() < 2 || r[1].kind != resp::type::integer) return {};
  if (r[1].integer == 1) {
    if (r.size() != (fenced ? 2 * keys + 2 : 2)) return {};
    for (std::size_t k = 0; fenced && k < keys; ++k)
      if (r[2 * k + 2].kind != resp::type::integer) return {};
    return {.what = set_answer::kind::taken};
  }
  if (r[1].integer != 0) return {};
  set_answer a{.what = set_answer::kind::held};
  if (r.size() >= 3 && r[2].kind == resp::type::integer && r[2].integer >= 1 &&
      static_cast<std::uint64_t>(r[2].integer) <= keys)
    a.blocker = static_cast<std::size_t>(r[2].integer);
  if (r.size() >= 4 && r[3].is_string()) {
    a.named = true;
    a.holder = r[3].text;
    a.readers = a.blocker != 0 && a.holder.starts_with("R|");
  }
  return a;
}

/// A fenced, taken set answer's counter of key k (0-based), checked by read_set_answer.
inline std::uint64_t set_counter(const resp::reply& r, std::size_t k) {
  return static_cast<std::uint64_t>(r[2 * k + 2].integer);
}

/// The same answer's fence marker for key k, for the operation to vet.
inline const resp::node& set_marker(const resp::reply& r, std::size_t k) {
  return r[2 * k + 3];
}

/// Whether node's reply `r` to a fenced acquisition's write-back (fence_raise_script,
/// multi_raise_script) says the counters were raised: {1, marker, ...}, a marker per key from
/// r[2] on, each for the operation to vet. Anything else (0: the keys are no longer ours there)
/// raised nothing.
inline bool write_back_raised(const resp::reply& r) {
  return r[0].kind == resp::type::array && r.size() >= 3 && r.size() == r[0].size + 1 &&
         r[1].kind == resp::type::integer && r[1].integer == 1;
}

/// A readers' record ("R|<mark> <expiry> <token> ...", scripts.cpp), read without the node's
/// clock: the mark and the expiries are the node's milliseconds.
struct readers_record {
  std::uint64_t mark = 0;   ///< a waiting writer's mark (0: none was set since readers joined)
  std::size_t entries = 0;  ///< the readers listed
};

/// Reads a lock key's value as a readers' record: false (and `out` untouched) for anything
/// else, an owner's token or an offer ("o|...", held_value_is_offer).
bool read_readers_record(std::string_view value, readers_record& out);

/// Whether a permit key's value is an offer to the call first in its semaphore's line ("o|"
/// and that call's place, permit_release_script), not a holder's token.
inline bool held_value_is_offer(std::string_view value) {
  return value.starts_with("o|");
}

/// How long a waiting writer's mark keeps new readers out (writer_wait_script): until its
/// next attempt, with room for the retry's jitter and a slow node, so that a writer that
/// gave up keeps readers out no longer than that.
template <typename Config>
std::chrono::milliseconds writer_mark_lasts(const Config& cfg) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(4 * cfg.retry_delay +
                                                               cfg.node_timeout);
}

/// Reads node's reply `r` to a permit's try (permit_acquire_script): {4, n} the node records
/// another count n; {5, k} held, with a free permit (or one offered to the call) k after it in
/// the try's window; otherwise as the fenced acquire script answers (fenced), or as the fair
/// one does without its waiter answer ({0, holder}, {1, 0}).
inline lock_answer read_permit_answer(const resp::reply& r, bool fenced) {
  if (r[0].kind == resp::type::array && r.size() == 3 && r[1].kind == resp::type::integer &&
      r[1].integer == 5) {
    if (r[2].kind != resp::type::integer || r[2].integer < 1) return {};
    return {.what = lock_answer::kind::held, .free_at = static_cast<std::size_t>(r[2].integer)};
  }
  if (r[0].kind == resp::type::array && r.size() == 3 && r[1].kind == resp::type::integer &&
      r[1].integer == 4) {
    std::uint64_t n = 0;
    const std::string_view text = r[2].is_string() ? r[2].text : std::string_view{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return {};
    return {.what = lock_answer::kind::other_count, .count = n};
  }
  const lock_answer a = read_lock_answer(r, fenced, !fenced);
  if (a.what == lock_answer::kind::waiter_first) return {};
  return a;
}

/// Whether a node that was sent an acquisition may hold our token now, so that a failed
/// attempt must release it there: it said yes, has not answered, or its answer was lost
/// (timeout, connection lost, held back after sending). "Held" took nothing, nor did a
/// plain SET answered with an error; a script (`scripted`: fenced or fair) may have failed
/// after its SET (an ACL user without EXISTS, HINCRBY or ZREM), so its error counts too.
bool may_have_taken(vote v, const error_code& ec, bool scripted);

}  // namespace redlock::detail
