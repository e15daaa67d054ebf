// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a single lock's attempt learns from the nodes about the other mode of a shared
// resource (lock_options::shared: readers hold a record, a writer a token), and what follows
// when the attempt fails: a writer refused by readers marks that it waits (so that readers do
// not starve it), and a call refused by this client's own holder of the other mode is refused
// outright, since waiting would wait on itself. No I/O: the driver (single_target) sends the marks
// and asks the client whether it holds the resource. Tested in test_machines.

#include <array>
#include <cstddef>
#include <string_view>

#include "machines/lock_answer.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

class mode_refusals {
 public:
  explicit mode_refusals(bool shared) : shared_(shared) {}

  /// A new attempt: the last one's answers are forgotten.
  void begin_attempt() {
    readers_ = {};
    other_mode_ = false;
  }

  /// Node i answered held as `a` says. Returns why the node refused when the answer is about
  /// the modes (a readers' record; for a reader, a waiting writer's mark), else empty: an
  /// ordinary holder, whom the driver judges as for any lock.
  std::string_view held(std::size_t i, const lock_answer& a) {
    if (a.what == lock_answer::kind::readers) {
      readers_[i] = true;
      other_mode_ = other_mode_ || !shared_;
      return "held shared by readers";
    }
    if (shared_ && a.what == lock_answer::kind::writer_waiting)
      return "a writer waits for it: new readers wait until it had its turn";
    // A reader refused by a writer's token: perhaps this client's own writer.
    other_mode_ = other_mode_ || (shared_ && a.named);
    return {};
  }

  /// Whether a failed attempt marks the nodes in readers() that a writer waits there: a
  /// writer's attempt that readers refused somewhere.
  bool mark_writer_waiting() const {
    if (shared_) return false;
    for (bool r : readers_)
      if (r) return true;
    return false;
  }
  /// The nodes whose readers' record refused this attempt.
  const std::array<bool, max_nodes>& readers() const { return readers_; }

  /// Why a failed attempt is refused rather than retried, given whether this client holds the
  /// resource in the other mode now (`holds_other_mode`); empty when it waits as usual. Only a
  /// holder of the other mode that refused this attempt can be this client's own.
  std::string_view waits_on_itself(bool holds_other_mode) const {
    if (!other_mode_ || !holds_other_mode) return {};
    return shared_ ? "this client holds it exclusively (a writer's lock)"
                   : "this client holds a reader's lease of it (lock_options::shared)";
  }

 private:
  bool shared_;
  std::array<bool, max_nodes> readers_{};
  bool other_mode_ = false;
};

}  // namespace redlock::detail
