// SPDX-License-Identifier: BSL-1.0
#pragma once
// One typed builder per script: each writes a call of its script (EVALSHA with the SHA, or
// EVAL with the text for a call nobody reads the answer of) with the KEYS and ARGV the
// script's text in scripts.cpp expects, so that no call site encodes a layout by hand.
// Every key a script touches is a KEYS entry.

#include <chrono>
#include <cstdint>
#include <map>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "client/client_state.hpp"
#include "machines/permit_sweep_fsm.hpp"
#include "resp/resp.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {

/// How a call is sent: EVALSHA (the connection reloads a flushed script and retries),
/// or EVAL with the script's text, for a call whose answer nobody reads (a NOSCRIPT
/// there would be silent).
enum class send_as : std::uint8_t { sha, text };

/// A single lock's acquisition: what the call takes and with which script.
struct acquire_call {
  std::string_view key, token;
  std::chrono::milliseconds ttl{};
  /// Fenced: the counters' pair and this resource's field in it.
  const fence_key_pair* fence = nullptr;
  std::string_view field{};
  /// Fair: the nodes' line, this call's id and place, how long a place lasts, and
  /// whether to join (or renew) the line rather than only check it.
  std::string_view line_key{}, expiry_key{}, line_id{};
  std::int64_t ticket = 0;
  std::chrono::milliseconds place_ttl{};
  bool fair = false, join = false;
};
/// Writes the acquisition: plain SET NX PX GET, or the fenced, fair or fair-fenced
/// acquire script. Returns the script (null for the plain SET).
const script* write_acquire(std::string& out, const acquire_call& c);
/// The plain acquisition alone (not a script: the holder's token comes back with GET),
/// inline for the common lock path.
inline void write_plain_acquire(std::string& out, std::string_view key, std::string_view token,
                                std::chrono::milliseconds ttl) {
  resp::append_command(out, "SET", key, token, "NX", "PX", std::int64_t{ttl.count()}, "GET");
}

/// A permit's try (permit_acquire_script): the window's first permit key taken with `token`
/// for `ttl` where the nodes' record of the semaphore (`record_key`) says `permits` or nothing,
/// the record then living at least `keep`; the window: the `span` permit keys the try reads
/// from `keys` (every permit's key), starting at `first` and wrapping, from the
/// one it asks for (its first key). A waiting call names its `place` in the semaphore's line
/// (`line`), which lives `place_ttl`, at `ticket`; empty: the try waits nowhere. Fenced (`fence`
/// not null), also counting `field` in that pair.
struct permit_call {
  std::span<const std::string> keys;
  std::size_t first = 0, span = 1;
  std::string_view record_key, token;
  const permit_line_keys* line = nullptr;
  std::string_view place{};
  std::int64_t ticket = 0;  // the place's order in the line
  std::chrono::milliseconds ttl{}, keep{}, place_ttl{};
  std::size_t permits = 0;
  const fence_key_pair* fence = nullptr;
  std::string_view field{};
};
const script* write_permit_acquire(std::string& out, const permit_call& c);
/// permit_release_script: permit `key` released where it holds `token` (a holder's token, or
/// an offer "o|<place>" declined), handed to the head of the semaphore's `line` for an offer
/// of `offer_ttl`; `skip_unheard`: a head no subscriber of the node hears is passed over.
void write_permit_release(std::string& out, std::string_view key, const permit_line_keys& line,
                          std::string_view token, std::chrono::milliseconds offer_ttl,
                          bool skip_unheard, send_as how);
/// permit_claim_script: the `offer` of permit `key` taken over by its holder's `token`, the key
/// then living `ttl`. As text: nobody reads the reply.
void write_permit_claim(std::string& out, std::string_view key, std::string_view offer,
                        std::string_view token, std::chrono::milliseconds ttl);
/// The release of permit `key` held by `token` on `s`'s nodes: offers live a node timeout,
/// and heads nobody hears are skipped unless a node spreads keys by slot (a Redis Cluster,
/// whose subscribers may listen on another of its servers).
void write_permit_release(std::string& out, const client_state& s, std::string_view key,
                          std::string_view token, send_as how);
/// PEXPIRE `record_key` `keep` GT: a renewal of a permit keeps the semaphore's record alive
/// at least as long (a plain command, sent beside the renewal; never shortens the record).
void write_permit_record_refresh(std::string& out, std::string_view record_key,
                                 std::chrono::milliseconds keep);

/// reader_acquire_script: a reader's lease of `key` for `ttl` (lock_options::shared); fenced
/// (`fence` not null), also reading this resource's counter (`field`) in that pair.
const script* write_reader_acquire(std::string& out, std::string_view key, std::string_view token,
                                   std::chrono::milliseconds ttl, const fence_key_pair* fence,
                                   std::string_view field);
/// writer_wait_script, as text (nobody reads its answer): new readers of `key` are refused
/// for `lasts`.
void write_writer_wait(std::string& out, std::string_view key, std::chrono::milliseconds lasts);

/// fence_raise_script: raise `key`'s counter to `fence` where the key still holds `token`.
void write_fence_raise(std::string& out, std::string_view key, const fence_key_pair& pair,
                       std::string_view token, std::string_view field, std::uint64_t fence);
/// release_script (announcing the release) or quiet_release_script. Inline: every
/// lock's release writes one.
inline void write_release(std::string& out, std::string_view key, std::string_view token,
                          send_as how, bool announce = true) {
  if (how == send_as::sha && announce)  // the common path: a lock's own release
    return resp::append_command(out, "EVALSHA", release_script.sha, "1", key, token);
  const script& s = announce ? release_script : quiet_release_script;
  if (how == send_as::sha)
    resp::append_command(out, "EVALSHA", s.sha, "1", key, token);
  else
    resp::append_command(out, "EVAL", s.body, "1", key, token);
}
/// extend_script: `key`'s TTL set to `ttl` where it holds `token`.
void write_extend(std::string& out, std::string_view key, std::string_view token,
                  std::chrono::milliseconds ttl);
/// line_leave_script: id `id` leaves a resource's line on the nodes (sent as text).
void write_line_leave(std::string& out, std::string_view line_key, std::string_view expiry_key,
                      std::string_view id);
/// inspect_script: the node's view of `key` and its counter (or of nothing: `key` empty).
void write_inspect(std::string& out, std::string_view key, std::string_view fence_hash,
                   std::string_view field);

/// election_record_script: the leader's record ("<term> <token> <value>", living
/// `record_ttl`) written where `lock_key` still holds `token`. KEYS: the lock key, the record
/// key; ARGV: token, term, value, TTL in ms.
void write_election_record(std::string& out, std::string_view lock_key, std::string_view record_key,
                           std::string_view token, std::uint64_t term, std::string_view value,
                           std::chrono::milliseconds record_ttl);
/// election_read_script: a node's lock key and record. KEYS: the lock key, the record key.
void write_election_read(std::string& out, std::string_view lock_key, std::string_view record_key);
/// election_resign_script: `lock_key` deleted where it holds `token`, and the record beside it
/// where the record names `token`. KEYS: the lock key, the record key; ARGV: token.
void write_election_resign(std::string& out, std::string_view lock_key, std::string_view record_key,
                           std::string_view token, send_as how);

/// multi_acquire_script: every key of a set, or none. Fenced (`pairs` and `fields` not
/// empty): each key followed by its counters' pair in KEYS, each field after the TTL.
void write_set_acquire(std::string& out, std::span<const std::string> keys,
                       std::span<const fence_key_pair> pairs, std::span<const std::string> fields,
                       std::string_view token, std::chrono::milliseconds ttl);
/// multi_raise_script: each key's counter raised to its token where the whole set is ours.
void write_set_raise(std::string& out, std::span<const std::string> keys,
                     std::span<const fence_key_pair> pairs, std::span<const std::string> fields,
                     std::span<const std::uint64_t> fences, std::string_view token);
/// multi_extend_script: every key's TTL set where the whole set holds `token`.
void write_set_extend(std::string& out, std::span<const std::string> keys, std::string_view token,
                      std::chrono::milliseconds ttl);
/// multi_release_script (announcing) or quiet_multi_release_script.
void write_set_release(std::string& out, std::span<const std::string> keys, std::string_view token,
                       send_as how, bool announce = true);

/// fence_read_script: the repair's read of a counters' pair. KEYS: fence hash, marker; no ARGV.
void write_fence_read(std::string& out, std::string_view hash, std::string_view marker);
/// fence_repair_script: each counter of the pair raised to its maximum, then the marker set
/// to `incarnation`. KEYS: fence hash, marker; ARGV: the incarnation, then field, value pairs.
void write_fence_repair(std::string& out, std::string_view hash, std::string_view marker,
                        std::string_view incarnation,
                        const std::map<std::string, std::int64_t>& maxima);

// The batch builders below read each item's name and token where the caller keeps them (a
// claim, settle or renewal batch is on the hot path: no list of strings is made first).

/// Reads one string of a batch's item: `f(item)` is its name or its token.
template <typename F, typename Item>
concept item_reader = std::is_invocable_r_v<std::string_view, const F&, Item>;

template <typename Items>
using item_of = std::ranges::range_reference_t<const Items>;

namespace call_detail {
// The command and its first argument: EVALSHA and the SHA, or EVAL and the text.
inline std::string_view verb(send_as how) {
  return how == send_as::sha ? "EVALSHA" : "EVAL";
}
inline std::string_view handle(const script& s, send_as how) {
  return how == send_as::sha ? s.sha : s.body;
}

// A call whose KEYS are one name per item and whose ARGV are one shared value, then one
// token per name (claim_script and settle_script).
template <typename Items, typename Name, typename Token>
void write_names_then_tokens(std::string& out, const script& s, send_as how, const Items& items,
                             const Name& name, std::int64_t shared, const Token& token) {
  const auto n = static_cast<std::size_t>(std::ranges::size(items));
  resp::command_writer w{out};
  w.begin(3 + 2 * n + 1).arg(verb(how)).arg(handle(s, how)).arg(static_cast<std::int64_t>(n));
  for (const auto& it : items) w.arg(name(it));
  w.arg(shared);
  for (const auto& it : items) w.arg(token(it));
}
}  // namespace call_detail

/// claim_script: each item's name taken with its token for `ttl`, where free. KEYS: the
/// names; ARGV: the TTL, then one token per name.
template <std::ranges::sized_range Items, item_reader<item_of<Items>> Name,
          item_reader<item_of<Items>> Token>
void write_claim(std::string& out, const Items& items, const Name& name, const Token& token,
                 std::chrono::milliseconds ttl) {
  call_detail::write_names_then_tokens(out, claim_script, send_as::sha, items, name,
                                       std::int64_t{ttl.count()}, token);
}

/// settle_script: each item's name, where it still holds its token, deleted (`keep` zero,
/// the undo of a claim) or made a done marker living `keep`. KEYS: the names; ARGV: keep in
/// ms, then one token per name.
template <std::ranges::sized_range Items, item_reader<item_of<Items>> Name,
          item_reader<item_of<Items>> Token>
void write_settle(std::string& out, const Items& items, const Name& name, const Token& token,
                  std::chrono::milliseconds keep, send_as how) {
  call_detail::write_names_then_tokens(out, settle_script, how, items, name,
                                       std::int64_t{keep.count()}, token);
}

/// settle_script with an empty token per name: a done marker living `keep` written onto
/// each name that is free or done already, on a node the claims never went to (sent as
/// text: nobody reads the answer). KEYS: the names; ARGV: keep in ms, then "" per name.
template <std::ranges::sized_range Items, item_reader<item_of<Items>> Name>
void write_marker_spread(std::string& out, const Items& items, const Name& name,
                         std::chrono::milliseconds keep) {
  const auto no_token = [](const auto&) { return std::string_view{}; };
  call_detail::write_names_then_tokens(out, settle_script, send_as::text, items, name,
                                       std::int64_t{keep.count()}, no_token);
}

/// batch_extend_script: each item's lock TTL set to `ttl` where it holds its token. KEYS:
/// the lock keys; ARGV: one token per key, then the TTL.
template <std::ranges::sized_range Items, item_reader<item_of<Items>> Key,
          item_reader<item_of<Items>> Token>
void write_batch_extend(std::string& out, const Items& items, const Key& key, const Token& token,
                        std::chrono::milliseconds ttl) {
  const auto n = static_cast<std::size_t>(std::ranges::size(items));
  resp::command_writer w{out};
  w.begin(3 + 2 * n + 1)
      .arg("EVALSHA")
      .arg(batch_extend_script.sha)
      .arg(static_cast<std::int64_t>(n));
  for (const auto& it : items) w.arg(key(it));
  for (const auto& it : items) w.arg(token(it));
  w.arg(std::int64_t{ttl.count()});
}

}  // namespace redlock::detail
