// SPDX-License-Identifier: BSL-1.0
// redlock::lock, the value a lock call hands out: moves, validity, the release in the
// background of a lock dropped while held, and the per-thread pool of lock_data.

#include "redlock/lock.hpp"

#include <boost/asio/post.hpp>
#include <vector>

#include "client/client_state.hpp"

namespace redlock {

namespace detail {

namespace {

// Recycled lock_data, per thread: taken where a lock is made, given back where it ends
// (often another thread's pool, which is fine). Bounded, so that a burst of locks
// released at once does not stay allocated.
thread_local bool pool_gone = false;  // this thread's pool was destroyed (thread exit)

struct lock_pool {
  static constexpr std::size_t keep = 256;
  std::vector<lock_data*> free;
  ~lock_pool() {
    pool_gone = true;
    for (auto* d : free) delete d;
  }
};

lock_pool* pool() {
  if (pool_gone) return nullptr;
  thread_local lock_pool p;
  return &p;
}

}  // namespace

lock_ptr make_lock_data() {
  auto* p = pool();
  if (p == nullptr || p->free.empty()) return lock_ptr{new lock_data};
  lock_data* d = p->free.back();
  p->free.pop_back();
  return lock_ptr{d};
}

void lock_data_recycler::operator()(lock_data* d) const noexcept {
  auto* p = pool();
  if (p == nullptr || p->free.size() >= lock_pool::keep || d->text.capacity() > 256) {
    delete d;
    return;
  }
  try {
    p->free.reserve(lock_pool::keep);
  } catch (...) {
    delete d;
    return;
  }
  d->owner.reset();
  d->text.clear();  // keeps its buffer
  d->resource_at = d->key_size = 0;
  d->ttl = std::chrono::milliseconds{0};
  d->deadline = {};
  d->fence = 0;
  d->nodes = 0xffff;
  d->lost = false;
  d->extending = false;
  d->record_key.clear();
  d->prev = d->next = nullptr;
  d->linked = false;
  p->free.push_back(d);
}

void lock_data::assign(std::string_view key, std::size_t resource_at_, std::string_view token_) {
  text.reserve(key.size() + token_.size());
  text.assign(key);
  text.append(token_);
  resource_at = static_cast<std::uint32_t>(resource_at_);
  key_size = static_cast<std::uint32_t>(key.size());
}

// Whether the client that handed out a lock still stands behind it: not shut down or
// destroyed (both release everything the client holds).
bool owner_holds(const std::weak_ptr<client_state>& owner) noexcept {
  const auto s = owner.lock();
  return s && !s->shut.load(std::memory_order_acquire);
}

}  // namespace detail

lock::lock(lock&& other) noexcept = default;

lock& lock::operator=(lock&& other) noexcept {
  if (this != &other) {
    release_in_background();
    d_ = std::move(other.d_);
  }
  return *this;
}

lock::~lock() {
  release_in_background();
}

bool lock::owns() const noexcept {
  return d_ && detail::owner_holds(d_->owner);
}

std::chrono::milliseconds lock::validity() const noexcept {
  if (!valid()) return std::chrono::milliseconds{0};
  const auto left = d_->deadline - boot_clock::now();
  if (left <= boot_clock::duration::zero()) return std::chrono::milliseconds{0};
  return std::chrono::duration_cast<std::chrono::milliseconds>(left);
}

bool lock::valid() const noexcept {
  return d_ && !d_->lost && boot_clock::now() < d_->deadline && detail::owner_holds(d_->owner);
}

void lock::release_in_background() noexcept {
  if (!d_) return;
  if (auto s = d_->owner.lock()) {
    // The data goes to the strand, where the client's list of held locks is kept.
    struct release_job {
      std::shared_ptr<detail::client_state> s;
      detail::lock_ptr d;
      void operator()() {
        if (s->closed) return;
        s->unhold(*d);
        s->release_detached(d->key(), d->token(), nullptr, true, !d->record_key.empty());
        s->wake_waiter(d->key(), d->token());
      }
    };
    release_job job{std::move(s), std::move(d_)};
    try {
      boost::asio::post(job.s->strand, std::move(job));
    } catch (...) {
      // Best effort by contract: the keys expire with their TTL. The data may still be
      // on the client's list, which only its strand may change: it is left, not freed.
      (void)job.d.release();
    }
  }
  d_.reset();
}

}  // namespace redlock
