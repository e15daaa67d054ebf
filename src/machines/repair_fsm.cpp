// SPDX-License-Identifier: BSL-1.0
// A fence repair as a state machine: see repair_fsm.hpp.

#include "machines/repair_fsm.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "quorum/rules.hpp"

namespace redlock::detail {

void repair_fsm::reads_sent() {
  if (phase_ != phase::idle) return;
  phase_ = phase::reading;
  pending_reads_ = fleet_mask(reads_.size());
}

repair_action repair_fsm::read_answered(std::size_t i, fence_read r) {
  if (!answering(i, phase::reading, pending_reads_)) return {};
  pending_reads_ &= static_cast<node_mask>(~bit(i));
  r.answered = true;
  reads_[i] = std::move(r);
  // Another client may have repaired it: its counters count from now on.
  if (reads_[i].marked) return {.detail = {.mark = i}};
  return {};
}

repair_action repair_fsm::read_failed(std::size_t i, error_code ec, std::string_view server_text) {
  if (!answering(i, phase::reading, pending_reads_)) return {};
  pending_reads_ &= static_cast<node_mask>(~bit(i));
  read_failures_[i] = repair_failure(i, ec, server_text);
  return {};
}

repair_action repair_fsm::reads_done(std::span<const repair_standing> standing) {
  if (!reads_in() || standing.size() != reads_.size()) return {};
  keep_read_failures();
  const std::size_t n = reads_.size();
  std::array<bool, max_nodes> independent{};
  for (std::size_t i = 0; i < n; ++i) independent[i] = standing[i].independent;
  const std::span<const bool> indep{independent.data(), n};
  // Requiring a read of every node also on a new fleet keeps a node that was marked, and
  // then lost its marker's majority, from being outvoted by empty ones.
  if (!repair_may_write(n, count_reads(reads_, indep))) return finish(false);
  wrote_ = true;
  repair_action a{.what = action_kind::second_round,
                  .detail = {.maxima = counter_maxima(reads_, indep)}};
  for (std::size_t i = 0; i < n; ++i)
    if (repair_target(reads_[i], standing[i].ready, standing[i].voted_at_start)) a.nodes |= bit(i);
  // Nothing to raise is still a repair that ran: it ends as one that wrote.
  if (a.nodes == 0) return finish(true);
  phase_ = phase::writing;
  return a;
}

repair_action repair_fsm::writes_sent(node_mask sent) {
  if (phase_ != phase::writing) return {};
  pending_writes_ = sent;
  if (pending_writes_ == 0) return finish(wrote_);
  return {};
}

repair_action repair_fsm::write_answered(std::size_t i, error_code ec, const resp::reply* r,
                                         const std::string* answered_by) {
  if (!answering(i, phase::writing, pending_writes_)) return {};
  pending_writes_ &= static_cast<node_mask>(~bit(i));
  repair_action a;
  switch (repair_write_answer(ec, r, answered_by, reads_[i].incarnation)) {
    case repair_write::lost:
      failed_ = repair_failure(i, ec, {});
      break;
    case repair_write::refused:
      failed_ = repair_failure(i, error::server_error, (*r)[0].text);
      break;
    case repair_write::marked:
      a.detail.mark = i;
      break;
    case repair_write::restarted:
      // Raised on a server that did not give the counters read: it vouches for nothing.
      failed_ = fmt::format("node {}: its server restarted or was promoted during the repair", i);
      break;
    case repair_write::ignored:
      break;
  }
  if (pending_writes_ == 0) {
    const auto mark = a.detail.mark;
    a = finish(wrote_);
    a.detail.mark = mark;
  }
  return a;
}

repair_action repair_fsm::stop(error_code why) {
  if (phase_ == phase::done) return {};
  if (phase_ == phase::reading) keep_read_failures();
  // Writes not confirmed prove nothing: the client's last problem stays unless one was seen.
  repair_action a = finish(false);
  a.ec = why;
  return a;
}

void repair_fsm::keep_read_failures() {
  for (std::string& f : read_failures_)
    if (!f.empty()) failed_ = std::move(f);
}

repair_action repair_fsm::finish(bool wrote) {
  phase_ = phase::done;
  pending_reads_ = pending_writes_ = 0;
  return {.what = action_kind::complete, .detail = {.problem = std::move(failed_), .wrote = wrote}};
}

}  // namespace redlock::detail
