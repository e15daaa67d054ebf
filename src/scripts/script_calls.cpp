// SPDX-License-Identifier: BSL-1.0
// The typed builders of script calls: see script_calls.hpp.

#include "scripts/script_calls.hpp"

#include "resp/resp.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {

namespace {

using call_detail::handle;
using call_detail::verb;

std::int64_t millis(std::chrono::milliseconds d) {
  return std::int64_t{d.count()};
}

// A set's KEYS: each key, followed by its counters' pair when fenced.
void write_set_keys(resp::command_writer& w, std::span<const std::string> keys,
                    std::span<const fence_key_pair> pairs) {
  for (std::size_t k = 0; k < keys.size(); ++k) {
    w.arg(keys[k]);
    if (!pairs.empty()) w.arg(pairs[k].hash).arg(pairs[k].marker);
  }
}

}  // namespace

const script* write_acquire(std::string& out, const acquire_call& c) {
  const std::string_view join = c.join ? "1" : "0";
  if (c.fair && c.fence) {
    resp::append_command(out, "EVALSHA", fair_fence_acquire_script.sha, "5", c.key, c.fence->hash,
                         c.fence->marker, c.line_key, c.expiry_key, c.token, millis(c.ttl), c.field,
                         c.line_id, c.ticket, millis(c.place_ttl), join);
    return &fair_fence_acquire_script;
  }
  if (c.fair) {
    resp::append_command(out, "EVALSHA", fair_acquire_script.sha, "3", c.key, c.line_key,
                         c.expiry_key, c.token, millis(c.ttl), c.line_id, c.ticket,
                         millis(c.place_ttl), join);
    return &fair_acquire_script;
  }
  if (c.fence) {
    resp::append_command(out, "EVALSHA", fence_acquire_script.sha, "3", c.key, c.fence->hash,
                         c.fence->marker, c.token, millis(c.ttl), c.field);
    return &fence_acquire_script;
  }
  write_plain_acquire(out, c.key, c.token, c.ttl);
  return nullptr;
}

const script* write_permit_acquire(std::string& out, const permit_call& c) {
  const std::size_t w = c.span;
  const std::size_t keys = w + 3 + (c.fence ? 2 : 0);
  resp::command_writer wr{out};
  wr.begin(3 + keys + 8 + (c.fence ? 1 : 0))
      .arg("EVALSHA")
      .arg(permit_acquire_script.sha)
      .arg(std::int64_t(keys));
  for (std::size_t k = 0; k < w; ++k) wr.arg(c.keys[(c.first + k) % c.keys.size()]);
  wr.arg(c.record_key).arg(c.line->line).arg(c.line->lapse);
  if (c.fence) wr.arg(c.fence->hash).arg(c.fence->marker);
  wr.arg(c.token)
      .arg(millis(c.ttl))
      .arg(static_cast<std::int64_t>(c.permits))
      .arg(millis(c.keep))
      .arg(std::int64_t(w))
      .arg(c.place)
      .arg(millis(c.place_ttl))
      .arg(c.ticket);
  if (c.fence) wr.arg(c.field);
  return &permit_acquire_script;
}

void write_permit_release(std::string& out, std::string_view key, const permit_line_keys& line,
                          std::string_view token, std::chrono::milliseconds offer_ttl,
                          bool skip_unheard, send_as how) {
  resp::append_command(out, verb(how), handle(permit_release_script, how), "3", key, line.line,
                       line.lapse, token, millis(offer_ttl), skip_unheard ? "1" : "0");
}

void write_permit_release(std::string& out, const client_state& s, std::string_view key,
                          std::string_view token, send_as how) {
  write_permit_release(out, key, permit_line_of(key), token, s.cfg.node_timeout,
                       !s.colocation_tag(key).has_value(), how);
}

void write_permit_claim(std::string& out, std::string_view key, std::string_view offer,
                        std::string_view token, std::chrono::milliseconds ttl) {
  resp::append_command(out, "EVAL", permit_claim_script.body, "1", key, offer, token, millis(ttl));
}

void write_permit_record_refresh(std::string& out, std::string_view record_key,
                                 std::chrono::milliseconds keep) {
  resp::append_command(out, "PEXPIRE", record_key, millis(keep), "GT");
}

void write_fence_raise(std::string& out, std::string_view key, const fence_key_pair& pair,
                       std::string_view token, std::string_view field, std::uint64_t fence) {
  resp::append_command(out, "EVALSHA", fence_raise_script.sha, "3", key, pair.hash, pair.marker,
                       token, field, static_cast<std::int64_t>(fence));
}

void write_election_record(std::string& out, std::string_view lock_key, std::string_view record_key,
                           std::string_view token, std::uint64_t term, std::string_view value,
                           std::chrono::milliseconds record_ttl) {
  resp::append_command(out, "EVALSHA", election_record_script.sha, "2", lock_key, record_key, token,
                       static_cast<std::int64_t>(term), value, millis(record_ttl));
}

void write_election_read(std::string& out, std::string_view lock_key, std::string_view record_key) {
  resp::append_command(out, "EVALSHA", election_read_script.sha, "2", lock_key, record_key);
}

void write_election_resign(std::string& out, std::string_view lock_key, std::string_view record_key,
                           std::string_view token, send_as how) {
  if (how == send_as::sha)
    resp::append_command(out, "EVALSHA", election_resign_script.sha, "2", lock_key, record_key,
                         token);
  else
    resp::append_command(out, "EVAL", election_resign_script.body, "2", lock_key, record_key,
                         token);
}

void write_extend(std::string& out, std::string_view key, std::string_view token,
                  std::chrono::milliseconds ttl) {
  resp::append_command(out, "EVALSHA", extend_script.sha, "1", key, token, millis(ttl));
}

const script* write_reader_acquire(std::string& out, std::string_view key, std::string_view token,
                                   std::chrono::milliseconds ttl, const fence_key_pair* fence,
                                   std::string_view field) {
  if (fence)
    resp::append_command(out, "EVALSHA", reader_acquire_script.sha, "3", key, fence->hash,
                         fence->marker, token, millis(ttl), field);
  else
    resp::append_command(out, "EVALSHA", reader_acquire_script.sha, "1", key, token, millis(ttl));
  return &reader_acquire_script;
}

void write_writer_wait(std::string& out, std::string_view key, std::chrono::milliseconds lasts) {
  resp::append_command(out, "EVAL", writer_wait_script.body, "1", key, millis(lasts));
}

void write_line_leave(std::string& out, std::string_view line_key, std::string_view expiry_key,
                      std::string_view id) {
  resp::append_command(out, "EVAL", line_leave_script.body, "2", line_key, expiry_key, id);
}

void write_inspect(std::string& out, std::string_view key, std::string_view fence_hash,
                   std::string_view field) {
  if (key.empty()) return resp::append_command(out, "EVALSHA", inspect_script.sha, "0");
  resp::append_command(out, "EVALSHA", inspect_script.sha, "2", key, fence_hash, field);
}

void write_set_acquire(std::string& out, std::span<const std::string> keys,
                       std::span<const fence_key_pair> pairs, std::span<const std::string> fields,
                       std::string_view token, std::chrono::milliseconds ttl) {
  const std::size_t per_key = pairs.empty() ? 1 : 3;
  resp::command_writer w{out};
  w.begin(5 + per_key * keys.size() + fields.size())
      .arg("EVALSHA")
      .arg(multi_acquire_script.sha)
      .arg(std::int64_t(per_key * keys.size()));
  write_set_keys(w, keys, pairs);
  w.arg(token).arg(millis(ttl));
  for (const auto& f : fields) w.arg(f);
}

void write_set_raise(std::string& out, std::span<const std::string> keys,
                     std::span<const fence_key_pair> pairs, std::span<const std::string> fields,
                     std::span<const std::uint64_t> fences, std::string_view token) {
  const std::size_t n = keys.size();
  resp::command_writer w{out};
  w.begin(4 + 5 * n).arg("EVALSHA").arg(multi_raise_script.sha).arg(std::int64_t(3 * n));
  write_set_keys(w, keys, pairs);
  w.arg(token);
  for (std::size_t k = 0; k < n; ++k) w.arg(fields[k]).arg(static_cast<std::int64_t>(fences[k]));
}

void write_set_extend(std::string& out, std::span<const std::string> keys, std::string_view token,
                      std::chrono::milliseconds ttl) {
  resp::command_writer w{out};
  w.begin(5 + keys.size())
      .arg("EVALSHA")
      .arg(multi_extend_script.sha)
      .arg(std::int64_t(keys.size()));
  for (const auto& k : keys) w.arg(k);
  w.arg(token).arg(millis(ttl));
}

void write_set_release(std::string& out, std::span<const std::string> keys, std::string_view token,
                       send_as how, bool announce) {
  const script& s = announce ? multi_release_script : quiet_multi_release_script;
  resp::command_writer w{out};
  w.begin(4 + keys.size()).arg(verb(how)).arg(handle(s, how)).arg(std::int64_t(keys.size()));
  for (const auto& k : keys) w.arg(k);
  w.arg(token);
}

void write_fence_read(std::string& out, std::string_view hash, std::string_view marker) {
  resp::append_command(out, "EVALSHA", fence_read_script.sha, "2", hash, marker);
}

void write_fence_repair(std::string& out, std::string_view hash, std::string_view marker,
                        std::string_view incarnation,
                        const std::map<std::string, std::int64_t>& maxima) {
  resp::command_writer w{out};
  w.begin(6 + 2 * maxima.size()).arg("EVALSHA").arg(fence_repair_script.sha).arg(std::int64_t{2});
  w.arg(hash).arg(marker).arg(incarnation);
  for (const auto& [field, v] : maxima) w.arg(field).arg(v);
}

}  // namespace redlock::detail
