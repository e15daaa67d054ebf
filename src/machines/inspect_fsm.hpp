// SPDX-License-Identifier: BSL-1.0
#pragma once
// An inspection as a state machine with no I/O. Every node is read twice: the inspect
// script (the server's INFO and, for a resource, its key and counter), then, once that is
// answered, CONFIG GET for the persistence settings, timed on its own. Nothing is counted
// towards a majority: each node is read to its end or its failure, and the inspection
// completes with what every node said. The driver (inspect_op in inspect.cpp) sends the
// requests and feeds their answers here; test_repair_inspect feeds them without a server.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "machines/action.hpp"
#include "quorum/rules.hpp"  // error_code
#include "redlock/clock.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "redlock/inspect.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// What the driver of an inspection does next: nothing yet, a second round (the
/// persistence request, CONFIG GET) to one node, or complete with `ec` and the reports
/// (take_reports).
using inspect_action = machine_action<>;

/// Whether `r` can be the inspect script's answer: a flat array (every element a scalar;
/// a hostile server could nest).
bool inspect_answer_well_formed(const resp::reply& r);

class inspect_fsm {
 public:
  enum class phase : std::uint8_t {
    sending,  ///< the first round is going out: refusals come in, nothing completes
    reading,  ///< answers and failures come in
    done,     ///< completed: events change nothing
  };

  /// An inspection of the nodes at `addresses` (host:port, in config order).
  explicit inspect_fsm(std::span<const std::string> addresses);

  phase state() const { return phase_; }
  /// The reports so far (node i's is element i).
  const std::vector<node_report>& reports() const { return out_; }
  /// The reports, handed over once the machine completed.
  std::vector<node_report> take_reports() { return std::move(out_); }

  /// The first round is out (a node refused at once came in as node_failed): completes if
  /// no node is left to hear from.
  inspect_action round_sent();
  /// Node i answered the first round with `r` (inspect_answer_well_formed) at `now`: its
  /// second request goes out, timed from `now`.
  inspect_action first_answered(std::size_t i, const resp::reply& r, boot_clock::time_point now);
  /// Node i's second request was refused at once: what its first answer said is all.
  inspect_action second_refused(std::size_t i) {
    return in(i, node_state::second) ? finished(i) : inspect_action{};
  }
  /// Node i's second answer: `r` when no `ec`; an error reply reads "denied", a failure
  /// leaves the settings unknown.
  inspect_action second_answered(std::size_t i, error_code ec, const resp::reply* r,
                                 boot_clock::time_point now);
  /// Node i gave no usable first answer: `ec` why, with the server's text or else the
  /// connection's last problem to say it for a person. Its deadline passing is one.
  inspect_action node_failed(std::size_t i, error_code ec, std::string_view server_text,
                             std::string_view connection_problem);
  /// Cancelled: complete now with what is known; later answers are ignored.
  inspect_action cancel();

 private:
  enum class node_state : std::uint8_t { first, second, finished };
  inspect_action finished(std::size_t i);
  inspect_action complete_if_all_in();
  bool in(std::size_t i, node_state s) const {
    return phase_ != phase::done && i < out_.size() && state_[i] == s;
  }

  phase phase_ = phase::sending;
  std::vector<node_report> out_;
  std::array<node_state, max_nodes> state_{};
  std::size_t left_ = 0;  // nodes not finished
  std::array<boot_clock::time_point, max_nodes> second_sent_{};
};

}  // namespace redlock::detail
