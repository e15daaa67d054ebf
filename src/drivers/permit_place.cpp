// SPDX-License-Identifier: BSL-1.0
#include "drivers/permit_place.hpp"

#include <array>

#include "client/client_state.hpp"
#include "drivers/single_lock.hpp"
#include "redlock/observer.hpp"
#include "util/keyspace.hpp"
#include "waiting/permit_line.hpp"
#include "waiting/wake.hpp"

namespace redlock::detail {

// A fenced call's try counts its fence in the try's script: it is offered its permit, and
// tries. Every other call is granted it for its TTL.
permit_place::permit_place(client_state& s, permit_waiter& w, const lock_options& opts)
    : s_(s),
      w_(w),
      grant_ttl_(opts.fenced ? std::chrono::milliseconds{} : opts.ttl),
      place_(s.join_permit_line(w, grant_ttl_)),
      grants_(opts.ttl, s.cfg.drift_factor) {}

void permit_place::sending(const permit_target& t) {
  const auto now = boot_clock::now();
  if (grants_.stale(now)) renew(t);
  std::array<std::uint64_t, max_nodes> epochs{};
  for (std::size_t i = 0; i < s_.size() && s_.wakes; ++i) epochs[i] = s_.wakes->offers_epoch(i);
  grants_.place_sent(now, epochs);
}

std::optional<std::size_t> permit_place::granted(std::size_t node, std::size_t index,
                                                 std::uint64_t epoch) {
  const auto now = boot_clock::now();
  const bool votes = node < s_.size() && s_.votes(node, grants_.ttl(), now);
  return grants_.granted(node, index, epoch, votes, now, s_.size());
}

bool permit_place::give_back() const {
  return grants_.give_back(s_.size());
}

lock permit_place::take(const permit_target& t, std::string_view resource, std::size_t index) {
  lock lk;
  lock_data& d = lock_access::make(lk);
  d.owner = s_.shared_from_this();
  const std::string name = permit_key_name(resource, index);
  const std::string& key = t.keys[index];
  d.assign(key, key.size() - name.size(), "g|" + place_);
  d.ttl = grants_.ttl();
  d.deadline = grants_.deadline();
  d.record_key = t.record_key;
  s_.hold(d);
  kept_ = index;
  // Observers see a granted permit as a won try of it, one that sent no round of its own.
  if (s_.obs)
    s_.obs->on_acquire({.resource = name,
                        .outcome = {},
                        .elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
                            boot_clock::now() - grants_.first_sent())});
  return lk;
}

void permit_place::renew(const permit_target& t) {
  let_go(t);
  s_.leave_permit_line(place_);
  place_ = s_.join_permit_line(w_, grant_ttl_);
}

void permit_place::leave(const permit_target* t) {
  if (t && has_grants()) let_go(*t);  // also at shutdown, beside the held locks
  s_.leave_permit_line(std::exchange(place_, {}));
}

// A call that lost or gave up hands each grant on to the next in line. A call that won by
// grants drops the others without handing them on: such a grant is a node's release of another
// permit that reached it in another order than it reached the rest, so that the node paired the
// permits and the waiters the other way round. Dropped, the permit is free there, and its
// holder's release hands it to the head of that node's line (permit_release_script), whose
// line then keeps pace with the others' (handing it on would pop a waiter the other nodes have
// not reached).
void permit_place::let_go(const permit_target& t) {
  const std::string value = "g|" + place_;
  for (const auto& g : grants_.stray(kept_)) {
    std::array<bool, max_nodes> only{};
    only[g.node] = true;
    s_.release_detached(t.keys[g.index], value, &only, !kept_, !kept_);
  }
  grants_.renewed();
}

}  // namespace redlock::detail
