// SPDX-License-Identifier: BSL-1.0
// A release as a state machine: see release_fsm.hpp.

#include "machines/release_fsm.hpp"

namespace redlock::detail {

error_code release_refusal(bool closed, bool has_token, bool owns) {
  if (closed) return error::shut_down;
  if (!has_token) return error::no_lock;
  if (!owns) return error::not_held;
  return {};
}

release_action release_fsm::cancel() {
  if (phase_ == phase::done) return {};
  phase_ = phase::done;
  return release_action::completed(error::cancelled);
}

}  // namespace redlock::detail
