#include "client/scripts.hpp"

#include <string>

namespace redlock::detail {

// Written one statement a line: Lua does not care, and the SHA1 is of the text as written
// here (each is checked against SCRIPT LOAD by a test, so a change here that forgets its
// SHA1 fails the suite).

// How a cluster node splits the multi-key scripts (their per-shard forms are at the end).
extern const split_form multi_acquire_split, multi_extend_split, multi_release_split,
    quiet_multi_release_split, claim_split, settle_split, slotted_multi_acquire_split,
    slotted_multi_raise_split;

// ---- single locks --------------------------------------------------------------------------

// compare-and-delete. KEYS: the lock key; ARGV: token. 1 deleted, 0 not ours. A release announces
// itself on the channel named like the key, with the token as the message (client_state::wakes),
// so that waiters in other clients try at once; pcall: an ACL user without PUBLISH still releases,
// and its waiters poll.
const script release_script{.body = R"lua(
if redis.call("get",KEYS[1]) == ARGV[1] then
  redis.call("del",KEYS[1])
  redis.pcall("publish",KEYS[1],ARGV[1])
  return 1
else
  return 0
end
)lua",
                            .sha = "80c1b6ab1a296627d331a9591c99181d1f331764"};

// The clean-up of a failed attempt: compare-and-delete that announces nothing (the lock was never
// taken: telling would wake this client's own waiter, whose next attempt could win the same
// minority and be undone again, at network speed).
const script quiet_release_script{.body = R"lua(
if redis.call("get",KEYS[1]) == ARGV[1] then
  return redis.call("del",KEYS[1])
else
  return 0
end
)lua",
                                  .sha = "d2e30fb3adbb8caebc46169aa5e8f67e181bbc53"};

// compare-and-pexpire. KEYS: the lock key; ARGV: token, TTL in ms. 1 extended, 0 not ours (never
// re-creates a key).
const script extend_script{.body = R"lua(
if redis.call("get",KEYS[1]) == ARGV[1] then
  return redis.call("pexpire",KEYS[1],ARGV[2])
else
  return 0
end
)lua",
                           .sha = "9c9b97c43c42104e3564b23ff1ccbfc29436285d"};

// The keepers' compare-and-pexpire over many locks (src/guard/renewal.cpp). KEYS: the lock keys;
// ARGV: their tokens, then the TTL. One code per key: 1 extended, 0 not ours.
const script batch_extend_script{.body = R"lua(
local n = #KEYS
local r = {}
for i = 1, n do
  if redis.call("get", KEYS[i]) == ARGV[i] then
    r[i] = redis.call("pexpire", KEYS[i], ARGV[n + 1])
  else
    r[i] = 0
  end
end
return r
)lua",
                                 .sha = "66a52991570628c7b641da41cdaf8089cd6b5202"};

// ---- fencing (src/client/fencing.cpp) -------------------------------------------------------

// SET NX PX GET, then the counter. KEYS: lock key, fence hash, fence marker; ARGV: token, TTL,
// counter field. {0, holder} held by another owner; {2, 0} set, but this node's counters are not
// trusted (no marker); {1, counter} set and counted.
const script fence_acquire_script{.body = R"lua(
local cur = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET")
if cur then
  return {0, cur}
end
if redis.call("EXISTS", KEYS[3]) == 0 then
  return {2, 0}
end
return {1, redis.call("HINCRBY", KEYS[2], ARGV[3], 1)}
)lua",
                                  .sha = "85a09cd270654f84c9e0ca1a5608e839519c118d"};

// The write-back: raises the counter to at least T, only where the lock key still holds our token
// and the marker exists. KEYS: lock key, fence hash, marker; ARGV: token, field, T. 1 raised (or
// already there), 0 not ours or unmarked.
const script fence_raise_script{.body = R"lua(
if redis.call("GET", KEYS[1]) ~= ARGV[1] or redis.call("EXISTS", KEYS[3]) == 0 then
  return 0
end
local cur = tonumber(redis.call("HGET", KEYS[2], ARGV[2]) or "0")
if cur < tonumber(ARGV[3]) then
  redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
end
return 1
)lua",
                                .sha = "49dcf8d6e662d58afdd9271ef0a28c4d59bd3911"};

// A primary of a Redis Cluster node that was promoted from a replica may have lost counter
// increments while keeping its markers: every marker on it goes, so that each slot's
// counters are repaired before they count again. No KEYS: runs on the one primary it is
// sent to (a script without a shebang may touch its local keys of any slot). ARGV: the
// markers' glob pattern. How many were deleted.
const script forget_fence_markers_script{.body = R"lua(
local cursor, n = "0", 0
repeat
  local r = redis.call("SCAN", cursor, "MATCH", ARGV[1], "COUNT", 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    n = n + redis.call("DEL", k)
  end
until cursor == "0"
return n
)lua",
                                         .sha = "20632dcf020a65ea00a4249ab360f44ba06b8da6"};

// The repair's read. KEYS: fence hash, marker. {marker exists, {field, value, ...}}.
const script fence_read_script{.body = R"lua(
return {redis.call("EXISTS", KEYS[2]), redis.call("HGETALL", KEYS[1])}
)lua",
                               .sha = "3aa96d9ff4b7158054abffc8ae15b037d7263978"};

// The repair's write: raises each counter to at least the given value, then sets the marker. KEYS:
// fence hash, marker; ARGV: field, value pairs. 1.
const script fence_repair_script{.body = R"lua(
for i = 1, #ARGV, 2 do
  local cur = tonumber(redis.call("HGET", KEYS[1], ARGV[i]) or "0")
  if cur < tonumber(ARGV[i + 1]) then
    redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call("SET", KEYS[2], "1")
return 1
)lua",
                                 .sha = "9803d945fee34599355ed7f9141d69b99887d125"};

// ---- fair mode -----------------------------------------------------------------------------
//
// Fair mode (src/client/fair.cpp): a line of waiters per resource, two sorted sets (places by
// ticket, and when each place lapses by the node's clock). L, E: the two keys; id, tk (ticket), ms
// (place lifetime), join ("1": take or renew a place; "0": a single try that queues nowhere). The
// head of the line may take the lock; the winner leaves the line in the same call.

// The part both fair acquisitions share: purge lapsed places, join or renew (join "1"),
// refuse unless first in line, take the lock, and leave the line when it was taken.
const std::string fair_line = R"lua(
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, m in ipairs(redis.call("ZRANGEBYSCORE", E, "-inf", now)) do
  redis.call("ZREM", L, m)
  redis.call("ZREM", E, m)
end
if join == "1" then
  redis.call("ZADD", L, "NX", tk, id)
  redis.call("ZADD", E, now + ms, id)
  redis.call("PEXPIRE", L, ms)
  redis.call("PEXPIRE", E, ms)
end
local head = redis.call("ZRANGE", L, 0, 0)[1]
if head and head ~= id then
  return {3, head}
end
local cur = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET")
if cur then
  return {0, cur}
end
if head then
  redis.call("ZREM", L, head)
  redis.call("ZREM", E, head)
end
)lua";

// KEYS: lock key, line, line expiry; ARGV: token, TTL, id, ticket, place ms, join. {3, head}
// another waiter is first; {0, holder} held; {1, 0} taken.
const std::string fair_acquire_text = R"lua(
local L, E, id, tk, ms, join = KEYS[2], KEYS[3], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
)lua" + fair_line.substr(1) + R"lua(return {1, 0}
)lua";
const script fair_acquire_script{.body = fair_acquire_text,
                                 .sha = "30228dab096932317d672a7ec2c586c8dc2ee298"};

// As fair_acquire_script, then counted as fence_acquire_script. KEYS: lock key, fence hash,
// marker, line, line expiry; ARGV: token, TTL, field, id, ticket, place ms, join. {3, head}, {0,
// holder}, {2, 0} or {1, counter}.
const std::string fair_fence_acquire_text = R"lua(
local L, E, id, tk, ms, join = KEYS[4], KEYS[5], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
)lua" + fair_line.substr(1) + R"lua(if redis.call("EXISTS", KEYS[3]) == 0 then
  return {2, 0}
end
return {1, redis.call("HINCRBY", KEYS[2], ARGV[3], 1)}
)lua";
const script fair_fence_acquire_script{.body = fair_fence_acquire_text,
                                       .sha = "378d78714fcbae72f35645f3fa3c121e67b172b0"};

// Leaves the line. KEYS: line, line expiry; ARGV: id. 1.
const script line_leave_script{.body = R"lua(
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
return 1
)lua",
                               .sha = "1346703dfc2ef0903e1c6d3c93f1b8c7cbf2fa8a"};

// ---- multi-resource sets -------------------------------------------------------------------
//
// Multi-resource sets (src/client/multi.cpp): every key checked before any is set, so that a node
// never keeps part of a set.

// KEYS: fence hash, marker, then the set's keys; ARGV: token, TTL[, counter fields]. {0, k,
// holder} key k held by another owner, nothing taken; {1} taken (unfenced); {2} taken, node
// unmarked; {1, counters...} taken and counted. A key of another type fails the script with
// WRONGTYPE in its check, before anything is set.
constexpr std::string_view multi_acquire_text = R"lua(
for i = 3, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if v then
    return {0, i - 2, v}
  end
end
for i = 3, #KEYS do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
if #ARGV == 2 then
  return {1}
end
if redis.call("EXISTS", KEYS[2]) == 0 then
  return {2}
end
local r = {1}
for i = 3, #ARGV do
  r[i - 1] = redis.call("HINCRBY", KEYS[1], ARGV[i], 1)
end
return r
)lua";
const script multi_acquire_script{.body = multi_acquire_text,
                                  .sha = "75096bbba10cf025eeb16743cf203bcf17d24849",
                                  .split = &multi_acquire_split};

// KEYS as above; ARGV: token, then field, T pairs. Raises the counters only where the marker
// exists and every key still holds our token: 1, else 0.
const script multi_raise_script{.body = R"lua(
if redis.call("EXISTS", KEYS[2]) == 0 then
  return 0
end
for i = 3, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call("HGET", KEYS[1], ARGV[i]) or "0")
  if cur < tonumber(ARGV[i + 1]) then
    redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
)lua",
                                .sha = "adb543345f9dedcab9b5cbd85da15d570949079c"};

// Fenced sets on a fleet with a cluster node, where each key's counters live in its slot's
// pair (fence_key_pair). KEYS: the set's keys; ARGV: token, TTL, then per key its pair's hash,
// its marker and its counter field. {0, k, holder} as multi_acquire; {2, k...} taken, the keys
// k (1-based) with an unmarked pair, nothing counted; {1, counters...} taken and counted.
constexpr std::string_view slotted_multi_acquire_text = R"lua(
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if v then
    return {0, i, v}
  end
end
for i = 1, #KEYS do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
local r = {2}
for i = 1, #KEYS do
  if redis.call("EXISTS", ARGV[3 * i + 1]) == 0 then
    r[#r + 1] = i
  end
end
if #r > 1 then
  return r
end
r = {1}
for i = 1, #KEYS do
  r[i + 1] = redis.call("HINCRBY", ARGV[3 * i], ARGV[3 * i + 2], 1)
end
return r
)lua";
const script slotted_multi_acquire_script{.body = slotted_multi_acquire_text,
                                          .sha = "2e13aa13d7b0a5b6800fae13af43215c187a56c8",
                                          .split = &slotted_multi_acquire_split};

// KEYS: the set's keys; ARGV: token, then per key its pair's hash, marker, field and T. As
// multi_raise, with each key's own pair: 1 raised, 0 (nothing written) if a key no longer
// holds our token or a pair is unmarked.
constexpr std::string_view slotted_multi_raise_text = R"lua(
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  if redis.call("EXISTS", ARGV[4 * i - 1]) == 0 then
    return 0
  end
end
for i = 1, #KEYS do
  local cur = tonumber(redis.call("HGET", ARGV[4 * i - 2], ARGV[4 * i]) or "0")
  if cur < tonumber(ARGV[4 * i + 1]) then
    redis.call("HSET", ARGV[4 * i - 2], ARGV[4 * i], ARGV[4 * i + 1])
  end
end
return 1
)lua";
const script slotted_multi_raise_script{.body = slotted_multi_raise_text,
                                        .sha = "053abe3421fac85433432ad66f46379be6ec4577",
                                        .split = &slotted_multi_raise_split};

// KEYS: the set's keys; ARGV: token, TTL. PEXPIRE on all if every key holds our token: 1, else 0.
constexpr std::string_view multi_extend_text = R"lua(
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
)lua";
const script multi_extend_script{.body = multi_extend_text,
                                 .sha = "684e617ceb429a34e833c2b012464935bd7e70b0",
                                 .split = &multi_extend_split};

// KEYS: the set's keys; ARGV: token. Deletes the keys that hold our token and announces each
// release as single releases do: how many were deleted.
constexpr std::string_view multi_release_text = R"lua(
local n = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    n = n + redis.call("DEL", KEYS[i])
    redis.pcall("PUBLISH", KEYS[i], ARGV[1])
  end
end
return n
)lua";
const script multi_release_script{.body = multi_release_text,
                                  .sha = "f10cf0a373ffb0415173183e67dec495aa88175d",
                                  .split = &multi_release_split};

// The clean-up of a failed set attempt: as multi_release_script, announcing nothing (see
// quiet_release_script).
constexpr std::string_view quiet_multi_release_text = R"lua(
local n = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    n = n + redis.call("DEL", KEYS[i])
  end
end
return n
)lua";
const script quiet_multi_release_script{.body = quiet_multi_release_text,
                                        .sha = "1c28f29383d24a7545d47876901629ac149443cf",
                                        .split = &quiet_multi_release_split};

// ---- claims (src/client/claims.cpp) ---------------------------------------------------------

// KEYS: names; ARGV: TTL, then one token per name. Per name: 1 set by us, 0 held by another owner,
// 2 a done marker, 3 a key of another type. SET NX GET answers "who is there" in the same command;
// pcall keeps one odd key from failing the whole batch. A done marker is the value "done" (a
// spread marker) or a value starting with "D" (an own marker: a settled claim_mode::own_marker
// claim, see own_marker_done); tokens are lowercase hex, so no holder's token looks done. 68 is
// "D".
constexpr std::string_view claim_text = R"lua(
local r = {}
for i = 1, #KEYS do
  local v = redis.pcall("set", KEYS[i], ARGV[i + 1], "NX", "PX", ARGV[1], "GET")
  if v == false then
    r[i] = 1
  elseif type(v) == "table" then
    if string.find(v.err, "WRONGTYPE", 1, true) then
      r[i] = 3
    else
      r[i] = -2
    end
  elseif v == "done" or string.byte(v) == 68 then
    r[i] = 2
  else
    r[i] = 0
  end
end
return r
)lua";
const script claim_script{
    .body = claim_text, .sha = "3151d78a66feaf4f21e14488dc5c167e8e1ce3ca", .split = &claim_split};

// KEYS: names; ARGV: keep (ms, "0" to delete), then one token per name. Where our token is still
// there: delete it, or turn it into a done marker living `keep` ms (kept a string: a Lua number
// would be formatted anew for every key); 1 settled, 0 not ours. The marker is "done", or, for an
// own-marker claim (a token starting with "C", 67), the claim's own value with its first byte
// made "D": one SET, which also sets the TTL (SETRANGE and PEXPIRE would be two commands, and
// SETRANGE copies a short string anyway). An empty token marks a node the claim never went to:
// the marker is written there only onto a free or already-done name, never over another owner's
// claim, and answers 2 (not a vote), so that a done marker is on every node that answers and
// survives the restart of one of them.
constexpr std::string_view settle_text = R"lua(
local keep = ARGV[1]
local r = {}
for i = 1, #KEYS do
  local v = redis.pcall("get", KEYS[i])
  if type(v) == "table" and not string.find(v.err, "WRONGTYPE", 1, true) then
    r[i] = -2
  elseif ARGV[i + 1] == "" then
    if keep ~= "0" and (v == false or v == "done") then
      redis.call("set", KEYS[i], "done", "PX", keep)
      r[i] = 2
    else
      r[i] = 0
    end
  elseif v == ARGV[i + 1] then
    if keep == "0" then
      redis.call("del", KEYS[i])
    elseif string.byte(v) == 67 then
      redis.call("set", KEYS[i], "D" .. string.sub(v, 2), "PX", keep)
    else
      redis.call("set", KEYS[i], "done", "PX", keep)
    end
    r[i] = 1
  else
    r[i] = 0
  end
end
return r
)lua";
const script settle_script{
    .body = settle_text, .sha = "c818c10db26171793d8ec468f44d227d65009957", .split = &settle_split};

// ---- per-shard forms (a node that is a Redis Cluster) ---------------------------------------
//
// A call whose keys span slots goes to each shard as its per-shard form: the script's own text
// after a prelude that reads the keys from ARGV (KEYS: the part's first key, so that the call is
// routed and redirected by it; ARGV: the number of keys, the keys, then the script's ARGV), with
// the flag that lets it touch keys of other slots on its shard. A key whose slot is not on the
// shard (a stale map, a migration) fails its command: the claim and settle scripts answer -2 for
// it (not done there), the set scripts check every key before they write.

constexpr std::string_view shard_prelude = R"lua(#!lua flags=allow-cross-slot-keys
local n = tonumber(ARGV[1])
local K, A = {}, {}
for i = 1, n do
  K[i] = ARGV[i + 1]
end
for i = n + 2, #ARGV do
  A[i - n - 1] = ARGV[i]
end
local KEYS, ARGV = K, A)lua";

std::string shard_text(std::string_view body) {
  return std::string{shard_prelude} + std::string{body};
}

const std::string multi_acquire_shard_text = shard_text(multi_acquire_text);
const std::string multi_extend_shard_text = shard_text(multi_extend_text);
const std::string multi_release_shard_text = shard_text(multi_release_text);
const std::string quiet_multi_release_shard_text = shard_text(quiet_multi_release_text);
const std::string claim_shard_text = shard_text(claim_text);
const std::string settle_shard_text = shard_text(settle_text);
const std::string slotted_multi_acquire_shard_text = shard_text(slotted_multi_acquire_text);
const std::string slotted_multi_raise_shard_text = shard_text(slotted_multi_raise_text);

const script multi_acquire_shard_script{.body = multi_acquire_shard_text,
                                        .sha = "e2d5ea8c759d7dc6c04684ea0dfcb9e59a26fd15"};
const script multi_extend_shard_script{.body = multi_extend_shard_text,
                                       .sha = "60288624e856d27c760b1a953239e2f1400465de"};
const script multi_release_shard_script{.body = multi_release_shard_text,
                                        .sha = "e512fd02183a5fa3e4fd9940ea08e776bedfac81"};
const script quiet_multi_release_shard_script{.body = quiet_multi_release_shard_text,
                                              .sha = "2da49a145660021070415aa201767c50e5dce1cf"};
const script claim_shard_script{.body = claim_shard_text,
                                .sha = "aae7f88d1d279afcfa418ee30699c7d28b2653fa"};
const script settle_shard_script{.body = settle_shard_text,
                                 .sha = "6214c6d4ebfd0c4dff4a5becd19e3fb0ce1125e9"};
const script slotted_multi_acquire_shard_script{.body = slotted_multi_acquire_shard_text,
                                                .sha = "aede3db011fa9e1b5ade7798c86631d41220804b"};
const script slotted_multi_raise_shard_script{.body = slotted_multi_raise_shard_text,
                                              .sha = "6948c6395c9a599e9593599b9083ffeef5f3d226"};

using merge = split_form::merge;
// Lead keys (the fence hash and marker of a set) go to every part unused. A fenced set on a
// fleet with a cluster node runs the slotted scripts (each key's pair in its own slot); a call
// whose ARGV does not fit the form is sent whole.
const split_form multi_acquire_split{&multi_acquire_shard_script,      2, 2, 0, merge::set_acquire,
                                     &quiet_multi_release_shard_script};
const split_form multi_extend_split{&multi_extend_shard_script, 0, 2, 0, merge::all_ones};
const split_form multi_release_split{&multi_release_shard_script, 0, 1, 0, merge::sum};
const split_form quiet_multi_release_split{&quiet_multi_release_shard_script, 0, 1, 0, merge::sum};
const split_form claim_split{&claim_shard_script, 0, 1, 1, merge::per_key};
const split_form settle_split{&settle_shard_script, 0, 1, 1, merge::per_key};
// A part of a fenced set's write-back that did not raise (a key lost, a pair unmarked) makes
// the node's answer 0: its vote for the tokens does not count (raising elsewhere is safe).
const split_form slotted_multi_acquire_split{
    &slotted_multi_acquire_shard_script, 0, 2, 3, merge::set_acquire,
    &quiet_multi_release_shard_script};
const split_form slotted_multi_raise_split{&slotted_multi_raise_shard_script, 0, 1, 4,
                                           merge::all_ones};

// ---- inspection ----------------------------------------------------------------------------

// client::async_inspect's read of one node (writes nothing). KEYS: the lock key and the fencing
// counter hash, or none for the server only; ARGV: the counter's field. Answers {INFO server and
// replication}, or {that, the lock key's type, its value (nil unless a string), its PTTL, the
// counter (nil if none)}.
const script inspect_script{.body = R"lua(
local info = redis.call("info","server","replication")
if #KEYS == 0 then
  return {info}
end
local t = redis.call("type",KEYS[1])["ok"]
local v = false
if t == "string" then
  v = redis.call("get",KEYS[1])
end
local f = false
if #KEYS > 1 then
  f = redis.call("hget",KEYS[2],ARGV[1])
end
return {info,t,v,redis.call("pttl",KEYS[1]),f}
)lua",
                            .sha = "1af8f658bf709ec9c3dbf19caee855f020755f85"};

std::span<const script* const> shard_scripts() {
  static const script* const all[] = {
      &multi_acquire_shard_script,
      &multi_extend_shard_script,
      &multi_release_shard_script,
      &quiet_multi_release_shard_script,
      &claim_shard_script,
      &settle_shard_script,
      &slotted_multi_acquire_shard_script,
      &slotted_multi_raise_shard_script,
  };
  return all;
}

std::span<const script* const> all_scripts() {
  static const script* const all[] = {
      &release_script,
      &quiet_release_script,
      &extend_script,
      &batch_extend_script,
      &fence_acquire_script,
      &fence_raise_script,
      &fence_read_script,
      &fence_repair_script,
      &forget_fence_markers_script,
      &fair_acquire_script,
      &fair_fence_acquire_script,
      &line_leave_script,
      &multi_acquire_script,
      &multi_raise_script,
      &multi_extend_script,
      &multi_release_script,
      &quiet_multi_release_script,
      &slotted_multi_acquire_script,
      &slotted_multi_raise_script,
      &claim_script,
      &settle_script,
      &inspect_script,
  };
  return all;
}

}  // namespace redlock::detail
