// SPDX-License-Identifier: BSL-1.0
// A round as observers read it: see observed.hpp.

#include "quorum/observed.hpp"

namespace redlock::detail {

namespace {

node_answer answer_of(const round& r, std::size_t i) {
  switch (r.votes[i]) {
    case vote::pending:
      return node_answer::no_answer;
    case vote::yes:
      return node_answer::yes;
    case vote::no:
      return node_answer::refused;
    case vote::held:
      return node_answer::held;
    case vote::failed:
      break;
  }
  return r.errors[i] == error::node_held_back ? node_answer::held_back : node_answer::failed;
}

}  // namespace

node_reply observed_reply(const round& r, std::size_t i, std::string_view address,
                          boot_clock::time_point round_start, boot_clock::time_point replied) {
  return {.node = i,
          .address = address,
          .answer = answer_of(r, i),
          .error = r.errors[i],
          .latency = reply_latency(replied, round_start)};
}

node_diagnostic diagnosed_node(const round& r, std::size_t i, std::string_view address,
                               std::string_view problem) {
  const node_reply o = observed_reply(r, i, address, {}, {});
  node_diagnostic d{.node = i,
                    .address = std::string{address},
                    .answer = o.answer,
                    .error = o.error,
                    .detail = r.texts[i]};
  if (d.detail.empty() && r.votes[i] == vote::failed) d.detail = problem;
  return d;
}

std::span<const node_reply> observed_replies(const round& r, const reply_times& times,
                                             std::span<const std::string> addresses,
                                             std::array<node_reply, max_nodes>& out,
                                             boot_clock::time_point round_start) {
  for (std::size_t i = 0; i < addresses.size(); ++i)
    out[i] = observed_reply(r, i, addresses[i], round_start, times.at(i));
  return {out.data(), addresses.size()};
}

void report_extension_to(observer& obs, std::string_view resource, error_code ec,
                         std::chrono::microseconds elapsed, std::span<const node_reply> nodes,
                         bool lost_now) {
  const extend_event e{
      .resource = resource, .by_keeper = false, .outcome = ec, .elapsed = elapsed, .nodes = nodes};
  obs.on_extend(e);
  if (!lost_now) return;
  const loss_event l{
      .resource = resource,
      .by_keeper = false,
      .reason = ec == error::not_held ? error_code{error::not_held} : error_code{error::lock_lost}};
  obs.on_loss(l);
}

}  // namespace redlock::detail
