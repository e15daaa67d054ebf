// SPDX-License-Identifier: BSL-1.0
#include "scripts/scripts.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "drivers/split_merge.hpp"

namespace redlock::detail {

// Written one statement a line: Lua does not care, and the SHA1 is of the text as written
// here (each is checked against SCRIPT LOAD by a test, so a change here that forgets its
// SHA1 fails the suite).

// How a cluster node splits the multi-key scripts per slot (at the end).
extern const split_form multi_acquire_split, multi_raise_split, multi_extend_split,
    multi_release_split, quiet_multi_release_split, claim_split, settle_split;

// ---- single locks --------------------------------------------------------------------------

// A resource taken shared (lock_options::shared) holds a readers' record instead of a token:
// "R|<mark> <expiry> <token> <expiry> <token> ...", expiries and the mark in the node's own
// milliseconds (TIME), the key's PX the latest expiry. A mark in the future is a waiting writer's:
// new readers are refused until it passes. Tokens have no spaces (config::owner is checked), and
// no token starts with "R|". The scripts that release or extend a single lock take either form,
// so that a reader's lease is released, renewed (one keeper batch for both kinds) and cleaned up
// after a failed attempt by the same calls as a writer's lock.
//
// readers(i, value, token, ttl): where `value`, KEYS[i]'s value, is a record holding `token` with a
// live expiry, that entry's expiry becomes now + ttl (an extension) or, with ttl nil, it leaves (a
// release); expired entries are dropped and the key deleted once none is left. 1 if the entry was
// there.
constexpr char readers_lua[] = R"lua(
local function readers(i, v, tok, ttl)
  if not v or string.sub(v, 1, 2) ~= "R|" then return 0 end
  local t = redis.call("time")
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local kept, last, found = {}, 0, 0
  for e, k in string.gmatch(v, " (%d+) (%S+)") do
    e = tonumber(e)
    if e > now then
      if k == tok then
        found = 1
        if ttl then e = now + ttl end
      end
      if k ~= tok or ttl then
        kept[#kept + 1] = e .. " " .. k
        if e > last then last = e end
      end
    end
  end
  if found == 0 then return 0 end
  if #kept == 0 then
    redis.call("del", KEYS[i])
  else
    redis.call("set", KEYS[i], string.match(v, "^R|%d*") .. " " .. table.concat(kept, " "), "px", last - now)
  end
  return 1
end
)lua";

// The text of a script that calls readers(): readers_lua, then `body`, as one array.
template <std::size_t N>
constexpr auto with_readers(const char (&body)[N]) {
  std::array<char, sizeof readers_lua - 1 + N> out{};
  std::copy(readers_lua, readers_lua + sizeof readers_lua - 1, out.begin());
  std::copy(body, body + N, out.begin() + sizeof readers_lua - 1);
  return out;
}
// The script text in such an array, without its terminating null.
template <std::size_t N>
constexpr std::string_view text_of(const std::array<char, N>& a) {
  return {a.data(), N - 1};
}

// compare-and-delete. KEYS: the lock key; ARGV: token. 1 deleted, 0 not ours. A release announces
// itself on the channel named like the key, with the token as the message (client_state::wakes),
// so that waiters in other clients try at once; pcall: an ACL user without PUBLISH still releases,
// and its waiters poll. A reader's lease leaves its record (and announces it too: a writer waits).
constexpr auto release_text = with_readers(R"lua(
local v = redis.call("get",KEYS[1])
if v == ARGV[1] then
  redis.call("del",KEYS[1])
elseif readers(1, v, ARGV[1]) == 0 then
  return 0
end
redis.pcall("publish",KEYS[1],ARGV[1])
return 1
)lua");
const script release_script{.body = text_of(release_text),
                            .sha = "3d264884f93616c885d7d0e5d6fbf94947dfe76a"};

// The clean-up of a failed attempt: compare-and-delete that announces nothing (the lock was never
// taken: telling would wake this client's own waiter, whose next attempt could win the same
// minority and be undone again, at network speed).
constexpr auto quiet_release_text = with_readers(R"lua(
local v = redis.call("get",KEYS[1])
if v == ARGV[1] then
  return redis.call("del",KEYS[1])
end
return readers(1, v, ARGV[1])
)lua");
const script quiet_release_script{.body = text_of(quiet_release_text),
                                  .sha = "9d6d73b001faa93d3efb4e4cce3ad87b7e0c129b"};

// compare-and-pexpire. KEYS: the lock key; ARGV: token, TTL in ms. 1 extended, 0 not ours (never
// re-creates a key, nor a reader's entry that expired).
constexpr auto extend_text = with_readers(R"lua(
local v = redis.call("get",KEYS[1])
if v == ARGV[1] then
  return redis.call("pexpire",KEYS[1],ARGV[2])
end
return readers(1, v, ARGV[1], tonumber(ARGV[2]))
)lua");
const script extend_script{.body = text_of(extend_text),
                           .sha = "a4bb3a9db95c88dd8ab2ffb3a8546a3c90007f30"};

// The keepers' compare-and-pexpire over many locks (src/guard/renewal.cpp). KEYS: the lock keys;
// ARGV: their tokens, then the TTL. One code per key: 1 extended, 0 not ours.
constexpr auto batch_extend_text = with_readers(R"lua(
local n = #KEYS
local ttl = tonumber(ARGV[n + 1])
local r = {}
for i = 1, n do
  local v = redis.call("get", KEYS[i])
  if v == ARGV[i] then
    r[i] = redis.call("pexpire", KEYS[i], ttl)
  else
    r[i] = readers(i, v, ARGV[i], ttl)
  end
end
return r
)lua");
const script batch_extend_script{.body = text_of(batch_extend_text),
                                 .sha = "9effbbbff7399727cbc3a303cc3136c55d9de460"};

// A reader joins (lock_options::shared). KEYS: the lock key, and when fenced the fence hash and
// marker; ARGV: token, lease in ms, and when fenced the counter field. Answers as the writer's
// acquisition of the same kind does, so that a reader's round is read as a writer's. Unfenced as
// SET NX GET: nil (false) joined, else who holds it: a writer's token, or "W" while a waiting
// writer's mark keeps new readers out. Fenced as fence_acquire_script: {1, counter, marker}
// joined, {0, holder} not; the counter is read, not raised (a reader mints no token: it is
// handed one between the last granted writer's and the next's, docs/safety.md).
const script reader_acquire_script{.body = R"lua(
local fenced = #KEYS == 3
local function refused(holder)
  if fenced then return {0, holder} end
  return holder
end
local function joined()
  if fenced then
    return {1, tonumber(redis.call("hget",KEYS[2],ARGV[3]) or "0"), redis.call("get",KEYS[3])}
  end
  return false
end
local v = redis.call("get",KEYS[1])
if v and string.sub(v,1,2) ~= "R|" then return refused(v) end
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local til = now + tonumber(ARGV[2])
if not v then
  redis.call("set",KEYS[1],"R|0 " .. til .. " " .. ARGV[1],"px",ARGV[2])
  return joined()
end
if tonumber(string.match(v,"^R|(%d*)")) > now then return refused("W") end
local kept, last = {til .. " " .. ARGV[1]}, til
for e, k in string.gmatch(v," (%d+) (%S+)") do
  e = tonumber(e)
  if e > now then
    kept[#kept + 1] = e .. " " .. k
    if e > last then last = e end
  end
end
redis.call("set",KEYS[1],"R|0 " .. table.concat(kept," "),"px",last - now)
return joined()
)lua",
                                   .sha = "504decc0c8f081cd98a5793b988e662090004f01"};

// A writer refused by readers marks that it waits, so that new readers are refused (writers do
// not starve). KEYS: the lock key; ARGV: how long the mark lasts, in ms. Never moves a later mark
// back; nothing where the key is not a record. Sent as text after a failed attempt; 1 marked.
const script writer_wait_script{.body = R"lua(
local v = redis.call("get",KEYS[1])
if not v or string.sub(v,1,2) ~= "R|" then return 0 end
local t = redis.call("time")
local mark = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local old, rest = string.match(v,"^R|(%d*)(.*)")
if tonumber(old) >= mark then return 1 end
redis.call("set",KEYS[1],"R|" .. mark .. rest,"keepttl")
return 1
)lua",
                                .sha = "7e5d5f9db6d0f54001762c45bd6ab5431602d4a4"};

// ---- fencing (src/drivers/fencing.cpp) -------------------------------------------------------

// A fence marker's value names the incarnation of the server whose counters it vouches for
// (its run id and replication id, as the handshake reads them: node_status::incarnation).
// The scripts answer the marker's value and the client compares it with the incarnation of
// the server that answered (request::answered_by): a server restarted from disk, or a
// replica promoted, keeps the marker but is a new incarnation, so its counters are not
// trusted until the repair raised them and wrote its own name.

// SET NX PX GET, then the counter. KEYS: lock key, fence hash, fence marker; ARGV: token, TTL,
// counter field. {0, holder} held by another owner; {1, counter, marker} set (the counter
// counts only if the marker names the server that answered).
const script fence_acquire_script{.body = R"lua(
local cur = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET")
if cur then
  return {0, cur}
end
return {1, redis.call("HINCRBY", KEYS[2], ARGV[3], 1), redis.call("GET", KEYS[3])}
)lua",
                                  .sha = "5b25a5f5d0e2b5d3402e17fb4bd8ee21cadc08fa"};

// The write-back: raises the counter to at least T, only where the lock key still holds our
// token (a writer's), or a readers' record with our token in it (a reader's: T is then a value
// a writer minted, which raising cannot make repeat). KEYS: lock key, fence hash, marker; ARGV:
// token, field, T. {1, marker} raised (or already there: an acknowledgement if the marker names
// the server that answered), 0 not ours.
const script fence_raise_script{.body = R"lua(
local v = redis.call("GET", KEYS[1])
if v ~= ARGV[1] and not (v and string.sub(v, 1, 2) == "R|" and
                         string.find(v .. " ", " " .. ARGV[1] .. " ", 1, true)) then
  return 0
end
local cur = tonumber(redis.call("HGET", KEYS[2], ARGV[2]) or "0")
if cur < tonumber(ARGV[3]) then
  redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
end
return {1, redis.call("GET", KEYS[3])}
)lua",
                                .sha = "fc63069919de117788cf2e8f8bd66dd8d5bc33f7"};

// The repair's read. KEYS: fence hash, marker. {marker (nil if none), {field, value, ...}}.
const script fence_read_script{.body = R"lua(
return {redis.call("GET", KEYS[2]), redis.call("HGETALL", KEYS[1])}
)lua",
                               .sha = "2844f16582c8d38c34b059c7485de726e2d7a44a"};

// The repair's write: raises each counter to at least the given value, then names the
// incarnation whose counters the read saw in the marker. KEYS: fence hash, marker; ARGV: that
// incarnation, then field, value pairs. 1. (Written onto a server that restarted since the
// read, the marker names the old incarnation and vouches for nothing.)
const script fence_repair_script{.body = R"lua(
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call("HGET", KEYS[1], ARGV[i]) or "0")
  if cur < tonumber(ARGV[i + 1]) then
    redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call("SET", KEYS[2], ARGV[1])
return 1
)lua",
                                 .sha = "73c4316ada2301a6d2c949fc5134f1b851b0b9e6"};

// ---- fair mode -----------------------------------------------------------------------------
//
// Fair mode (src/waiting/fair.cpp): a line of waiters per resource, two sorted sets (places by
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
// holder} or {1, counter, marker}.
const std::string fair_fence_acquire_text =
    R"lua(
local L, E, id, tk, ms, join = KEYS[4], KEYS[5], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
)lua" +
    fair_line.substr(1) +
    R"lua(return {1, redis.call("HINCRBY", KEYS[2], ARGV[3], 1), redis.call("GET", KEYS[3])}
)lua";
const script fair_fence_acquire_script{.body = fair_fence_acquire_text,
                                       .sha = "9b8ac5f8fd7585f1d6d5c9f96564c465bf0f8bb1"};

// Leaves the line. KEYS: line, line expiry; ARGV: id. 1.
const script line_leave_script{.body = R"lua(
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
return 1
)lua",
                               .sha = "1346703dfc2ef0903e1c6d3c93f1b8c7cbf2fa8a"};

// ---- multi-resource sets -------------------------------------------------------------------
//
// Multi-resource sets (src/drivers/multi.cpp): every key checked before any is set, so that a node
// never keeps part of a set.

// Every key a set script touches is in KEYS. An unfenced set's KEYS are its keys; a fenced set's
// are one triple per key: the lock key, then the hash and marker of its counter's pair (the
// fleet's one pair, repeated, or on a fleet with a cluster node the pair in the key's own
// slot), so that the triples of one slot form a call of their own on a cluster node.

// KEYS: the set's keys, or its triples; ARGV: token, TTL[, one counter field per key]. {0, k,
// holder} key k (1-based) held by another owner, nothing taken; {1} taken (unfenced); {1,
// counter, marker, counter, marker, ...} taken, with each key's counter and its pair's marker.
// A key of another type fails the script with WRONGTYPE in its check, before anything is set.
constexpr std::string_view multi_acquire_text = R"lua(
local step = 1
if #ARGV > 2 then
  step = 3
end
for i = 1, #KEYS, step do
  local v = redis.call("GET", KEYS[i])
  if v then
    return {0, (i - 1) / step + 1, v}
  end
end
for i = 1, #KEYS, step do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
if step == 1 then
  return {1}
end
local r = {1}
for j = 3, #ARGV do
  local i = 3 * j - 8
  r[#r + 1] = redis.call("HINCRBY", KEYS[i + 1], ARGV[j], 1)
  r[#r + 1] = redis.call("GET", KEYS[i + 2])
end
return r
)lua";
const script multi_acquire_script{.body = multi_acquire_text,
                                  .sha = "ff07f5f527771550ad70e7a78a1c1b8def6fe846",
                                  .split = &multi_acquire_split};

// KEYS: the set's triples; ARGV: token, then per key its field and T. Where every key still
// holds our token, raises each counter to at least its T: {1, marker, marker, ...} (each key's
// pair's marker); else 0, nothing written.
constexpr std::string_view multi_raise_text = R"lua(
for i = 1, #KEYS, 3 do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local r = {1}
for j = 2, #ARGV, 2 do
  local i = 3 * (j / 2) - 2
  local cur = tonumber(redis.call("HGET", KEYS[i + 1], ARGV[j]) or "0")
  if cur < tonumber(ARGV[j + 1]) then
    redis.call("HSET", KEYS[i + 1], ARGV[j], ARGV[j + 1])
  end
  r[#r + 1] = redis.call("GET", KEYS[i + 2])
end
return r
)lua";
const script multi_raise_script{.body = multi_raise_text,
                                .sha = "b824ccd1c977ee1ee4a6df62ff482e068ee34fc8",
                                .split = &multi_raise_split};

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

// ---- claims (src/drivers/claims.cpp) ---------------------------------------------------------

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

// ---- calls split per slot (a node that is a Redis Cluster) -----------------------------------
//
// A call whose keys span slots goes to a cluster node as one call of the same script per slot,
// each with that slot's keys (and their ARGV entries), so that every key a part touches is
// declared and Redis's own migration rules hold: a part whose keys are not all on the server
// that got it is answered TRYAGAIN (or ASK first) and does not run. The node only routes the
// parts; each script's merge (split_merge.cpp) reads their answers and gives the one the whole
// call would have given.

// {shared ARGV entries, KEYS per item, ARGV entries per item, merge, undo}. A call with no ARGV
// beyond the shared ones has one key per item (an unfenced set).
const split_form multi_acquire_split{2, 3, 1, merge_set_acquire, &quiet_multi_release_script};
const split_form multi_raise_split{1, 3, 2, merge_set_raise};
const split_form multi_extend_split{2, 1, 0, merge_all_ones};
const split_form multi_release_split{1, 1, 0, merge_sum};
const split_form quiet_multi_release_split{1, 1, 0, merge_sum};
const split_form claim_split{1, 1, 1, merge_per_key};
const split_form settle_split{1, 1, 1, merge_per_key};

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

// ---- leader election (src/client/election.cpp) -------------------------------------------

// The leader's record, written by the leader beside its lock key (in the key's slot) so that
// observers can read who leads: "<term> <token> <value>". KEYS: the lock key, the record key;
// ARGV: token, term, value, the record's TTL in ms. Writes only where the lock key still holds
// the leader's token (a deposed leader cannot overwrite its successor's record), and never a
// term below the record's own. 1 written, 0 not ours (or an older term). A new record is
// announced on the channel named like the record key (the token as the message), so that
// observers read at once (wake.hpp); pcall: an ACL user without PUBLISH still leads, and its
// observers poll. A refresh that changes nothing announces nothing.
const script election_record_script{.body = R"lua(
if redis.call("GET",KEYS[1]) ~= ARGV[1] then
  return 0
end
local cur = redis.call("GET",KEYS[2])
if cur then
  local t = tonumber(string.match(cur,"^(%d+) "))
  if t and t > tonumber(ARGV[2]) then
    return 0
  end
end
local rec = ARGV[2].." "..ARGV[1].." "..ARGV[3]
redis.call("SET",KEYS[2],rec,"PX",ARGV[4])
if cur ~= rec then
  redis.pcall("PUBLISH",KEYS[2],ARGV[1])
end
return 1
)lua",
                                    .sha = "0c1e68b75a5bd9246f7ad80d3fb606258e4e3dd4"};

// An observer's read of one node (writes nothing). KEYS: the lock key, the record key. Answers
// {the lock key's token, the record} (each nil when absent).
const script election_read_script{.body = R"lua(
return {redis.call("GET",KEYS[1]),redis.call("GET",KEYS[2])}
)lua",
                                  .sha = "b95186925b1ac298aaac0f74dadce1e666a200f7"};

// A leader's resignation: compare-and-delete of the lock key, and of the record beside it
// where the record names the leader's token (a successor's record stays), so that the record
// does not outlive the leadership. KEYS: the lock key, the record key; ARGV: token. 1 the lock
// was ours and is deleted, 0 not ours (its record, if still there, goes all the same). The
// release is announced as release_script's is (channel named like the lock key, pcall).
const script election_resign_script{.body = R"lua(
local rec = redis.call("GET",KEYS[2])
if rec and string.match(rec,"^%d+ (%S+)") == ARGV[1] then
  redis.call("DEL",KEYS[2])
end
if redis.call("GET",KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("DEL",KEYS[1])
redis.pcall("PUBLISH",KEYS[1],ARGV[1])
return 1
)lua",
                                    .sha = "b455edbdd32fa1b08e2791e57eefadcbe4099137"};

std::span<const script* const> all_scripts() {
  static const script* const all[] = {
      &release_script,         &quiet_release_script,  &reader_acquire_script,
      &writer_wait_script,     &extend_script,         &batch_extend_script,
      &fence_acquire_script,   &fence_raise_script,    &fence_read_script,
      &fence_repair_script,    &fair_acquire_script,   &fair_fence_acquire_script,
      &line_leave_script,      &multi_acquire_script,  &multi_raise_script,
      &multi_extend_script,    &multi_release_script,  &quiet_multi_release_script,
      &claim_script,           &settle_script,         &inspect_script,
      &election_record_script, &election_read_script,  &election_resign_script,
      &permit_acquire_script,  &permit_release_script, &permit_claim_script,
  };
  return all;
}

}  // namespace redlock::detail
