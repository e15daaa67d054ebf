// SPDX-License-Identifier: BSL-1.0
#pragma once
// Every operation's lifetime, one rule: an op is made with new (from the pool) and deletes
// itself once it has completed, no connection holds one of its requests, and no pending
// handler (an inner call, a timer, a cancellation hop) holds it. The quorum ops
// (quorum/operation.hpp) live by it, and so do the ops composed of other calls
// (composed_op: an election's campaign and observer).
// Everything runs on the client's strand but cancellation, which hops onto it.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <utility>

#include "quorum/completion.hpp"
#include "util/pool.hpp"

namespace redlock::detail {

namespace asio = boost::asio;
/// The client's strand (connection/connection.hpp names it too), where every op runs.
using strand_type = asio::strand<asio::any_io_executor>;

/// The cancellation types an operation honours (docs/api.md, "Cancel"). Asio's meanings:
/// terminal, the operation may be left in any state; partial, it may have had side effects
/// but stops cleanly; total, it had none.
/// An operation whose commands may already run on the servers: terminal and partial.
inline constexpr asio::cancellation_type_t cancel_with_effects =
    asio::cancellation_type::terminal | asio::cancellation_type::partial;
/// An operation without side effects (reads, waits): all three.
inline constexpr asio::cancellation_type_t cancel_any =
    cancel_with_effects | asio::cancellation_type::total;

class op_lifetime : public pooled {
 public:
  virtual ~op_lifetime() = default;

  /// Runs f (the op's start, or a wake) on the strand: a completion decided inside it is
  /// posted, never run inline, and the op deletes itself afterwards if it is finished.
  template <typename F>
  void run_guarded(F&& f) {
    hold h{this};
    const bool outer = !initiating_;
    initiating_ = true;
    f();
    if (outer) initiating_ = false;
  }

  /// Keeps the op alive while owned by a handler; releasing it (also when the handler is
  /// destroyed without running, as when its io_context goes away) may free the op.
  class hold {
   public:
    explicit hold(op_lifetime* op) : op_(op) { ++op_->holds_; }
    hold(hold&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
    hold& operator=(hold&&) = delete;
    ~hold() {
      if (op_ && --op_->holds_ == 0) op_->maybe_destroy();
    }

   private:
    op_lifetime* op_;
  };

 protected:
  std::size_t outstanding_ = 0;  // requests a connection holds (late replies are still read)
  bool done_ = false;
  bool initiating_ = false;  // inside start() or a wake: completions must be posted

 private:
  /// Whether an op that nothing can resume any more is freed although it never completed:
  /// no request is out and no handler holds it, because its handlers were destroyed
  /// without running (its io_context went away). A quorum op is not: the client's lists of
  /// calls still name it. A composed op is (its destructor leaves what names it).
  virtual bool frees_when_abandoned() const noexcept { return false; }

  void maybe_destroy() {
    if (outstanding_ != 0 || holds_.load() != 0) return;
    if (done_ || frees_when_abandoned()) delete this;
  }

  // Calls in progress and handlers not yet run (retry timer, cancellation) that refer
  // to the op. Atomic: a cancellation may be emitted from another thread.
  std::atomic<int> holds_{0};
};

template <typename Signature>
class composed_op;

/// An op made of other calls (and waits) rather than of its own rounds: the caller's
/// handler, its cancellation and the op's lifetime, written once. The op supplies start()
/// and cancelled(); its steps' handlers come from step(), which keeps it alive.
template <typename... Args>
class composed_op<void(error_code, Args...)> : public op_lifetime {
 public:
  using completion_type = completion<void(error_code, Args...)>;

 protected:
  /// `strand` is the client state's, which the op keeps alive.
  composed_op(const strand_type& strand, completion_type handler)
      : strand_(&strand), handler_(std::move(handler)) {}

  /// The caller's cancellation of a type in `honoured` reaches cancelled() on the strand,
  /// until the op completes (the emitter may run on another thread; the slot is cleared on
  /// completion, so the op is alive whenever the hop is made).
  void watch_cancellation(asio::cancellation_type_t honoured) {
    auto slot = handler_.slot();
    if (!slot.is_connected()) return;
    slot.assign([op = this, honoured](asio::cancellation_type_t type) {
      if ((type & honoured) == asio::cancellation_type::none) return;
      asio::dispatch(*op->strand_, [op, h = hold{op}, type] {
        if (!op->done_) op->cancelled(type);
      });
    });
  }

  /// Cancelled by the caller (a type it honours), before completion.
  virtual void cancelled(asio::cancellation_type_t type) = 0;

  /// The handler of a step (an inner call, a timer): runs `f` with its arguments on the
  /// strand, the op kept alive until then.
  template <typename F>
  auto step(F f) {
    return asio::bind_executor(*strand_, [h = hold{this}, f = std::move(f)](auto&&... a) mutable {
      f(std::forward<decltype(a)>(a)...);
    });
  }

  /// Completes the caller's handler, once, on its executor; the op lives on while steps
  /// still hold it (their handlers then see done_).
  void finish(error_code ec, Args... args) {
    if (done_) return;
    done_ = true;
    handler_.slot().clear();
    handler_.dispatch(ec, std::move(args)...);
  }

  const strand_type& strand() const { return *strand_; }

 private:
  // Abandoned, the op goes with its handlers, as the caller's handler it owns does. Its
  // cancellation slot keeps a handler that names it: a caller whose operation was destroyed
  // unfinished must not emit to it any more (its io_context is gone).
  bool frees_when_abandoned() const noexcept override { return true; }

  const strand_type* strand_;
  completion_type handler_;
};

/// Starts `op` (made with new): op->start() posted on `strand`, so that a call refused at
/// once never completes inside its initiating function.
template <typename Op>
void post_start(Op* op, const strand_type& strand) {
  asio::post(strand, [op, h = op_lifetime::hold{op}] { op->start(); });
}

}  // namespace redlock::detail
