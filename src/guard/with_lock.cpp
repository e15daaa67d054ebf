// SPDX-License-Identifier: BSL-1.0
// The compiled parts of with_lock: the keeper it starts, and its words for a hold that
// ended after the lock was taken.

#include "redlock/with_lock.hpp"

#include <fmt/format.h>

namespace redlock::detail {

namespace {

std::string why_lost(const keeper& k) {
  const auto reason = k.loss_reason();
  if (reason == error::not_held)
    return "a majority of nodes refused a renewal (our token is gone there: it expired or was "
           "deleted or taken)";
  if (reason == error::lock_lost)
    return "its deadline came without a confirmed renewal (a majority of nodes unreachable or "
           "too slow, or this process was paused)";
  return "it was found lost when renewal stopped";
}

}  // namespace

keeper keep_for_work(client& c, lock&& lk, const renew_options& opts, diagnostics& diag) {
  try {
    return keeper{c, std::move(lk), opts};
  } catch (const boost::system::system_error& e) {
    diag.nodes.clear();
    // e.what() ends with the code ("... [redlock:23]"), which error_with_diagnostics adds
    // again: only the words go into the message.
    std::string_view what = e.what();
    const auto code = fmt::format(" [{}:{}]", e.code().category().name(), e.code().value());
    if (what.ends_with(code)) what.remove_suffix(code.size());
    diag.message = fmt::format("with_lock on \"{}\": {}", lk.resource(), what);
    lk = lock{};  // released in the background: the work never runs
    throw error_with_diagnostics(e.code(), diag);
  }
}

void describe_hold_failure(const keeper& k, std::string_view resource, boost::system::error_code ec,
                           diagnostics& diag) {
  diag.nodes.clear();
  if (ec == error::lock_lost)
    diag.message = fmt::format(
        "lost the lock on \"{}\" while the work ran: {}; the work was "
        "cancelled",
        resource, why_lost(k));
  else if (ec == error::shut_down)
    diag.message = fmt::format(
        "the client was shut down while the work ran under \"{}\" (which released the lock); "
        "the work was cancelled",
        resource);
  else
    diag.message = fmt::format(
        "with_lock on \"{}\" was cancelled; the work was cancelled and the lock released",
        resource);
}

void describe_nodes_after_loss(const std::vector<node_report>& nodes, std::string_view token,
                               diagnostics& diag) {
  diag.nodes.clear();
  if (nodes.empty()) return;
  diag.message += "; each node now:";
  for (const auto& n : nodes) {
    node_diagnostic d{.node = n.node, .address = n.address};
    if (n.error) {
      d.answer = node_answer::failed;
      d.error = n.error;
      d.detail = n.problem.empty() ? "no answer" : n.problem;
    } else if (n.key == node_report::key_state::held) {
      d.answer = n.holder == token ? node_answer::yes : node_answer::held;
      d.detail = n.holder == token ? "still holds our token" : "held by another owner";
    } else if (n.key == node_report::key_state::free) {
      d.answer = node_answer::refused;
      d.detail = "the key is gone";
    } else if (n.key == node_report::key_state::wrong_type) {
      d.answer = node_answer::failed;
      d.error = error::wrong_type;
      d.detail = "a key of another type is in the way";
    } else {
      d.detail = "no answer about the key";  // node_answer::no_answer
    }
    diag.message += fmt::format(" node {} ({}): {};", d.node, d.address, d.detail);
    diag.nodes.push_back(std::move(d));
  }
  diag.message.pop_back();  // the last ';'
}

}  // namespace redlock::detail
