// SPDX-License-Identifier: BSL-1.0
// A fence repair as a state machine: see repair_fsm.hpp.

#include "machines/repair_fsm.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "quorum/rules.hpp"

namespace redlock::detail {

using kind = repair_action::kind;

void repair_fsm::reads_sent() {
  if (phase_ != phase::idle) return;
  phase_ = phase::reading;
  for (std::size_t i = 0; i < reads_.size(); ++i) pending_reads_.set(i);
}

repair_action repair_fsm::read_answered(std::size_t i, fence_read r) {
  if (!answering(i, phase::reading, pending_reads_)) return {};
  pending_reads_.reset(i);
  r.answered = true;
  reads_[i] = std::move(r);
  // Another client may have repaired it: its counters count from now on.
  if (reads_[i].marked) return {.mark = i};
  return {};
}

repair_action repair_fsm::read_failed(std::size_t i, error_code ec, std::string_view server_text) {
  if (!answering(i, phase::reading, pending_reads_)) return {};
  pending_reads_.reset(i);
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
  repair_action a{.what = kind::send_writes, .maxima = counter_maxima(reads_, indep)};
  for (std::size_t i = 0; i < n; ++i)
    a.targets[i] = repair_target(reads_[i], standing[i].ready, standing[i].voted_at_start);
  // Nothing to raise is still a repair that ran: it ends as one that wrote.
  if (a.targets.none()) return finish(true);
  phase_ = phase::writing;
  return a;
}

repair_action repair_fsm::writes_sent(node_set sent) {
  if (phase_ != phase::writing) return {};
  pending_writes_ = sent;
  if (pending_writes_.none()) return finish(wrote_);
  return {};
}

repair_action repair_fsm::write_answered(std::size_t i, error_code ec, const resp::reply* r,
                                         const std::string* answered_by) {
  if (!answering(i, phase::writing, pending_writes_)) return {};
  pending_writes_.reset(i);
  repair_action a;
  switch (repair_write_answer(ec, r, answered_by, reads_[i].incarnation)) {
    case repair_write::lost:
      failed_ = repair_failure(i, ec, {});
      break;
    case repair_write::refused:
      failed_ = repair_failure(i, error::server_error, (*r)[0].text);
      break;
    case repair_write::marked:
      a.mark = i;
      break;
    case repair_write::restarted:
      // Raised on a server that did not give the counters read: it vouches for nothing.
      failed_ = fmt::format("node {}: its server restarted or was promoted during the repair", i);
      break;
    case repair_write::ignored:
      break;
  }
  if (pending_writes_.none()) {
    const auto mark = a.mark;
    a = finish(wrote_);
    a.mark = mark;
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
  pending_reads_.reset();
  pending_writes_.reset();
  return {.what = kind::complete, .problem = std::move(failed_), .wrote = wrote};
}

}  // namespace redlock::detail
