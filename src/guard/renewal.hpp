// SPDX-License-Identifier: BSL-1.0
#pragma once
// Background renewal of held locks. One scheduler per client, on the client's strand,
// with one timer for all its keepers: renewals that fall due close together go out as
// one batch-extend script call per node.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "client/client_state.hpp"
#include "machines/renewal_decisions.hpp"
#include "redlock/client.hpp"
#include "redlock/keeper.hpp"
#include "redlock/lock.hpp"

namespace redlock::detail {

inline constexpr std::size_t max_batch = 256;  // Lua unpack fails near 8,000 arguments

// Its times (renewal_times) are what the scheduler's decisions read.
struct renewal_entry : renewal_times {
  std::shared_ptr<client_state> state;
  lock lk;  // touched on the strand only
  std::chrono::milliseconds ttl{};
  bool in_flight = false;
  boot_clock::time_point renew_start{};  // when the renewal in flight was enqueued
  bool stopped = false;
  bool lost = false;
  /// An async_wait_lost in progress, and the code its loss is reported with.
  struct loss_waiter {
    std::uint64_t id = 0;
    void_completion h;
    error lost_as = error::lock_lost;
  };
  std::vector<loss_waiter> waiters;
  std::uint64_t next_waiter_id = 0;
  std::size_t slot = static_cast<std::size_t>(-1);  // index in the scheduler's entries

  // Mirrors for readers on other threads.
  std::atomic<boot_clock::rep> deadline_ns{0};
  std::atomic<bool> lost_flag{false};
  std::atomic<int> lost_why{0};  // the redlock::error of the loss (keeper::loss_reason)

  void publish_deadline();
};

/// The renewal entry of a keeper, for the kinds built on one (a leadership).
struct keeper_access {
  static const std::shared_ptr<renewal_entry>& entry(const keeper& k) noexcept { return k.entry_; }
};

class renewal_scheduler {
 public:
  explicit renewal_scheduler(client_state& s);
  void add(std::shared_ptr<renewal_entry> e);
  void remove(const renewal_entry* e);
  /// Marks `e` lost for good (`why`: not_held or lock_lost) and completes its waiters.
  void lose(renewal_entry& e, error_code why);
  /// Re-arms the timer for the earliest due renewal or loss.
  void reschedule();
  void shutdown();

 private:
  void on_timer();
  void start_batches(std::vector<std::shared_ptr<renewal_entry>>& due);

  client_state& s_;
  boot_timer timer_;
  boot_clock::time_point armed_for_ = boot_clock::time_point::max();
  bool armed_ = false;
  std::vector<std::shared_ptr<renewal_entry>> entries_;
};

/// The client's scheduler, created on first use. On the strand.
renewal_scheduler& scheduler_of(client_state& s);

}  // namespace redlock::detail
