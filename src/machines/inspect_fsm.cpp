// SPDX-License-Identifier: BSL-1.0
// An inspection as a state machine: see inspect_fsm.hpp.

#include "machines/inspect_fsm.hpp"

#include <charconv>
#include <utility>

#include "connection/info.hpp"
#include "machines/lock_answer.hpp"

namespace redlock::detail {

namespace {

using kind = inspect_action::kind;

std::chrono::microseconds micros_between(boot_clock::time_point from, boot_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from);
}

void read_info(node_report& o, std::string_view info) {
  o.version = info_field(info, "redis_version");
  o.run_id = info_field(info, "run_id");
  o.role = info_field(info, "role");
  const auto up = info_field(info, "uptime_in_seconds");
  std::from_chars(up.data(), up.data() + up.size(), o.uptime_s);
}

// {info, type, value, pttl, fence}: elements 2..5 of the flattened reply.
void read_key(node_report& o, const resp::reply& r) {
  const std::string_view type = r[2].text;
  o.key = type == "none"     ? node_report::key_state::free
          : type == "string" ? node_report::key_state::held
                             : node_report::key_state::wrong_type;
  if (o.key == node_report::key_state::held) {
    o.holder = r[3].text;
    readers_record rec;
    if (read_readers_record(o.holder, rec)) {
      o.held_as = node_report::holding::readers;
      o.readers = rec.entries;
      o.writer_mark = rec.mark != 0;
    } else if (held_value_is_offer(o.holder)) {
      o.held_as = node_report::holding::offer;
    }
  }
  if (r[4].kind == resp::type::integer) o.ttl = std::chrono::milliseconds{r[4].integer};
  if (r[5].is_string()) {
    std::uint64_t f = 0;
    const std::string_view t = r[5].text;
    if (std::from_chars(t.data(), t.data() + t.size(), f).ec == std::errc{}) o.fence = f;
  }
}

// CONFIG GET's answer: name, value, name, value...
void read_persistence(node_report& o, const resp::reply& r) {
  const auto& top = r[0];
  if (top.is_error()) {
    o.appendonly = o.appendfsync = o.save = "denied";
    return;
  }
  if (top.kind != resp::type::array || r.size() != top.size + 1) return;
  for (std::size_t k = 1; k + 1 <= top.size; k += 2) {
    const std::string_view name = r[k].text;
    std::string value{r[k + 1].text};
    if (name == "appendonly")
      o.appendonly = std::move(value);
    else if (name == "appendfsync")
      o.appendfsync = std::move(value);
    else if (name == "save")
      o.save = std::move(value);
  }
}

}  // namespace

bool inspect_answer_well_formed(const resp::reply& r) {
  const auto& top = r[0];
  return top.kind == resp::type::array && top.size >= 1 && r.size() == top.size + 1;
}

inspect_fsm::inspect_fsm(std::span<const std::string> addresses)
    : out_(addresses.size()), left_(addresses.size()) {
  for (std::size_t i = 0; i < out_.size(); ++i) {
    out_[i].node = i;
    out_[i].address = addresses[i];
  }
}

inspect_action inspect_fsm::round_sent() {
  if (phase_ != phase::sending) return {};
  phase_ = phase::reading;
  return complete_if_all_in();
}

inspect_action inspect_fsm::first_answered(std::size_t i, const resp::reply& r,
                                           boot_clock::time_point now) {
  if (!in(i, node_state::first)) return {};
  node_report& o = out_[i];
  read_info(o, r[1].text);
  if (r[0].size >= 5) read_key(o, r);
  // The second request is timed on its own: the script's reply may have waited for the
  // connection's handshake, this one is a plain round trip.
  state_[i] = node_state::second;
  second_sent_[i] = now;
  return inspect_action::second_to(i);
}

inspect_action inspect_fsm::second_answered(std::size_t i, error_code ec, const resp::reply* r,
                                            boot_clock::time_point now) {
  if (!in(i, node_state::second)) return {};
  if (!ec) {
    out_[i].round_trip = micros_between(second_sent_[i], now);
    read_persistence(out_[i], *r);
  }
  return finished(i);
}

inspect_action inspect_fsm::node_failed(std::size_t i, error_code ec, std::string_view server_text,
                                        std::string_view connection_problem) {
  if (!in(i, node_state::first)) return {};
  node_report& o = out_[i];
  o.error = ec;
  o.problem = !server_text.empty() ? server_text : connection_problem;
  if (o.problem.empty()) o.problem = ec.message();
  return finished(i);
}

inspect_action inspect_fsm::cancel() {
  if (phase_ == phase::done) return {};
  phase_ = phase::done;
  return inspect_action::completed(error::cancelled);
}

inspect_action inspect_fsm::finished(std::size_t i) {
  if (phase_ == phase::done || i >= out_.size() || state_[i] == node_state::finished) return {};
  state_[i] = node_state::finished;
  --left_;
  return complete_if_all_in();
}

inspect_action inspect_fsm::complete_if_all_in() {
  // While the first round is still going out, a node refused at once leaves others unsent.
  if (phase_ != phase::reading || left_ != 0) return {};
  phase_ = phase::done;
  return inspect_action::completed();
}

}  // namespace redlock::detail
