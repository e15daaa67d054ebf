// SPDX-License-Identifier: BSL-1.0
#pragma once
// The one place where a machine's action becomes a driver's step. Every driver hands the
// actions its machine answers with to action_runner::carry_out, and says what each step
// means for it with a member named after the kind, taking the action:
//
//   do_send_round   do_second_round   do_wait   do_answer
//   do_won          do_lost           do_retry  do_complete
//
// A driver has only the steps its machine takes (each machine's header lists the kinds it
// answers with); a kind it has no step for is carried out as nothing. What a driver does
// before any step (call a timer off, mark a node) it does before handing the action over.
// The steps may be private: a driver befriends it (`friend action_runner;`, which names
// this class also from a class in an unnamed namespace).

#include "machines/action.hpp"

namespace redlock::detail {

struct action_runner {
  template <typename Driver, typename Detail>
  static void carry_out(Driver& d, const machine_action<Detail>& a) {
    static_assert(
        requires { d.do_complete(a); }, "every machine completes its call");
    switch (a.what) {
      case action_kind::none:
        return;
      case action_kind::send_round:
        if constexpr (requires { d.do_send_round(a); }) d.do_send_round(a);
        return;
      case action_kind::second_round:
        if constexpr (requires { d.do_second_round(a); }) d.do_second_round(a);
        return;
      case action_kind::wait:
        if constexpr (requires { d.do_wait(a); }) d.do_wait(a);
        return;
      case action_kind::answer:
        if constexpr (requires { d.do_answer(a); }) d.do_answer(a);
        return;
      case action_kind::won:
        if constexpr (requires { d.do_won(a); }) d.do_won(a);
        return;
      case action_kind::lost:
        if constexpr (requires { d.do_lost(a); }) d.do_lost(a);
        return;
      case action_kind::retry:
        if constexpr (requires { d.do_retry(a); }) d.do_retry(a);
        return;
      case action_kind::complete:
        if constexpr (requires { d.do_complete(a); }) d.do_complete(a);
        return;
    }
  }
};

}  // namespace redlock::detail
