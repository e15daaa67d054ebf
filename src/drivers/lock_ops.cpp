// SPDX-License-Identifier: BSL-1.0
// A single lock's operations: acquire (acquisition_op over single_target, single_target.hpp),
// release (unlock_op) and extension (extend_op), each one operation
// object per call that sends one request to every node and counts votes as replies are
// parsed. No coroutine or timer per node: the connections' deadlines bound every request.

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "client/call_checks.hpp"
#include "client/client_state.hpp"
#include "drivers/acquisition.hpp"
#include "drivers/extend.hpp"
#include "drivers/release.hpp"
#include "drivers/single_lock.hpp"
#include "drivers/single_target.hpp"
#include "quorum/operation.hpp"
#include "redlock/client.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {

namespace {

// ---- release -----------------------------------------------------------------------

class unlock_op final : public lock_release_op {
 public:
  using lock_release_op::lock_release_op;

  void start(lock& lk) {
    if (!take(lk, "unlock")) return;
    if (permit()) {
      write_permit_release(payload_, *s_, key_, token_, send_as::sha);
      return release(payload_, permit_release_script);
    }
    write_release(payload_, key_, token_, send_as::sha);
    release(payload_, release_script);
  }

 private:
  // The release goes on in the background, kept across reconnects: a node that was
  // down, frozen or reconnecting still holds the key, and a renewal queued to it before
  // could otherwise keep it alive.
  void on_unsent(std::size_t i) override {
    std::array<bool, max_nodes> only{};
    only[i] = true;
    s_->release_detached(key_, token_, &only, true, permit());
  }

  buffer payload_;
};

// ---- extend ------------------------------------------------------------------------

class extend_op final : public extend_op_base<lock, lock_access> {
 public:
  using extend_op_base::extend_op_base;

  void start(lock& lk, std::chrono::milliseconds ttl) {
    verb_ = "extend";
    if (diag_) subject_ = lk.resource();
    if (!begin(lk, ttl)) return;
    write_extend(payload_, lk.key(), lk.token(), ttl);
    send(extend_script);
    refresh_permit_record(*s_, lock_access::data(lk).record_key, ttl);
  }

 private:
  void before_complete(error_code ec) override {
    if (s_->obs) report_extension(lk_->resource(), ec, started(), !was_lost_ && lk_->lost());
  }
};

}  // namespace

void start_lock(std::shared_ptr<client_state> s, buffer resource, lock_options opts, bool wait,
                diagnostics* diag, lock_handler h) {
  if (!s) return complete_without_client(std::move(h), lock{});
  launch_acquisition<lock, single_target>(std::move(s), diag, std::move(h), std::move(resource),
                                          opts, wait);
}

void start_unlock(std::shared_ptr<client_state> s, lock lk, diagnostics* diag, void_handler h) {
  if (!s) return complete_without_client(std::move(h));
  const auto& strand = s->strand;  // kept alive by the op
  // The operation owns the lock until it starts on the strand.
  launch_op(new unlock_op(std::move(s), diag, std::move(h)), strand,
            [lk = std::move(lk)](unlock_op& op) mutable { op.start(lk); });
}

void start_extend(std::shared_ptr<client_state> s, lock& lk, std::chrono::milliseconds ttl,
                  diagnostics* diag, void_handler h) {
  if (!s) return complete_without_client(std::move(h));
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new extend_op(std::move(s), diag, std::move(h)), strand,
            [&lk, ttl](extend_op& op) { op.start(lk, ttl); });
}

}  // namespace redlock::detail
