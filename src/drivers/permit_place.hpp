// SPDX-License-Identifier: BSL-1.0
#pragma once
// A waiting semaphore call's place in the nodes' line, and what the releases granted it there
// (the driver's half of machines/permit_grant_decisions.hpp): the place's string, the grants
// heard for it with the rules' verdict, the lock a majority of them makes, and letting the
// others go. sweep_target (src/drivers/semaphore.cpp) owns one; on the client's strand.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "machines/permit_grant_decisions.hpp"
#include "redlock/config.hpp"
#include "redlock/lock.hpp"

namespace redlock::detail {

struct client_state;
struct permit_target;
class permit_waiter;

class permit_place {
 public:
  /// A place for `w` in its client's lines; grants for `ttl`, or offers when `fenced`.
  permit_place(client_state& s, permit_waiter& w, const lock_options& opts);
  permit_place(const permit_place&) = delete;
  permit_place& operator=(const permit_place&) = delete;

  /// "<channel> <id>" (offers) or "<channel> <id>+<ttl>" (grants); "" when no offer could be
  /// heard (config::wake_on_release off).
  const std::string& str() const { return place_; }

  /// A try carrying the place goes out now: a new place first when this one is stale, then
  /// the time and subscriptions that its grants are judged by.
  void sending(const permit_target& t);
  /// Node `node` granted permit `index`, heard on subscription `epoch`: the permit a majority
  /// of counted grants now gives the call, if any.
  std::optional<std::size_t> granted(std::size_t node, std::size_t index, std::uint64_t epoch);
  /// No permit won, and the grants can no longer make a majority or split between permits: give
  /// them back (permit_grants::give_back). Never once a permit is won, even while a try is out.
  bool give_back() const;
  bool has_grants() const { return !grants_.empty(); }

  /// The lock of permit `index` that the grants won (its token "g|" and the place); the other
  /// grants are dropped at leave().
  lock take(const permit_target& t, std::string_view resource, std::size_t index);
  /// Waits under a new place from the next try on: the grants are handed on, and any that come
  /// later too (client_state::grant_unclaimed).
  void renew(const permit_target& t);
  /// The call ends: its grants are let go, and its place leaves the client's list.
  void leave(const permit_target* t);

 private:
  void let_go(const permit_target& t);

  client_state& s_;
  permit_waiter& w_;
  std::chrono::milliseconds grant_ttl_;  // 0: offers (fenced)
  std::string place_;
  permit_grants grants_;
  std::optional<std::size_t> kept_;  // the permit won by grants, once taken
};

}  // namespace redlock::detail
