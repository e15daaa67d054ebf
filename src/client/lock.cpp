// redlock::lock, the value a lock call hands out: moves, validity, and the release in
// the background of a lock dropped while held. Its own translation unit, away from the
// operations: a lock is moved many times per acquisition, and these small functions
// stay fully inlined here.

#include "redlock/lock.hpp"

#include <boost/asio/post.hpp>

#include "client/client_state.hpp"

namespace redlock {

lock::lock(lock&& other) noexcept
    : owner_(std::move(other.owner_)),
      resource_(std::move(other.resource_)),
      key_(std::move(other.key_)),
      token_(std::move(other.token_)),
      ttl_(other.ttl_),
      deadline_(other.deadline_),
      fence_(other.fence_),
      nodes_(other.nodes_),
      lost_(other.lost_) {
  other.token_.clear();
}

lock& lock::operator=(lock&& other) noexcept {
  if (this != &other) {
    release_in_background();
    owner_ = std::move(other.owner_);
    resource_ = std::move(other.resource_);
    key_ = std::move(other.key_);
    token_ = std::move(other.token_);
    ttl_ = other.ttl_;
    deadline_ = other.deadline_;
    fence_ = other.fence_;
    nodes_ = other.nodes_;
    lost_ = other.lost_;
    other.token_.clear();
  }
  return *this;
}

lock::~lock() {
  release_in_background();
}

namespace detail {
// Whether the client that handed out a lock still stands behind it: not shut down or
// destroyed (both release everything the client holds).
bool owner_holds(const std::weak_ptr<client_state>& owner) noexcept {
  const auto s = owner.lock();
  return s && !s->shut.load(std::memory_order_acquire);
}
}  // namespace detail

bool lock::owns() const noexcept {
  return !token_.empty() && detail::owner_holds(owner_);
}

std::chrono::milliseconds lock::validity() const noexcept {
  if (!valid()) return std::chrono::milliseconds{0};
  const auto left = deadline_ - boot_clock::now();
  if (left <= boot_clock::duration::zero()) return std::chrono::milliseconds{0};
  return std::chrono::duration_cast<std::chrono::milliseconds>(left);
}

bool lock::valid() const noexcept {
  return !token_.empty() && !lost_ && boot_clock::now() < deadline_ && detail::owner_holds(owner_);
}

void lock::release_in_background() noexcept {
  if (token_.empty()) return;
  if (auto s = owner_.lock()) {
    try {
      boost::asio::post(s->strand, [s, key = std::move(key_), token = std::move(token_)] {
        if (s->closed) return;
        s->held.erase(token);
        s->release_detached(key, token);
        s->wake_waiter(key, token);
      });
    } catch (...) {
      // Best effort by contract: the keys expire with their TTL.
    }
  }
  token_.clear();
  owner_.reset();
}

}  // namespace redlock
