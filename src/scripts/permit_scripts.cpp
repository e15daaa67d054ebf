// SPDX-License-Identifier: BSL-1.0
// The semaphore's scripts (src/drivers/semaphore.cpp), beside the others of scripts.cpp: the
// permit's try, its release (the hand-off to the first in line), and the take-over of a late
// offer. Written and checked as scripts.cpp's are (each SHA1 against SCRIPT LOAD by a test).

#include "scripts/scripts.hpp"

namespace redlock::detail {

// ---- semaphores (src/drivers/semaphore.cpp) --------------------------------------------------

// A permit's try (semaphore.cpp): the semaphore's record of its count checked, then the permit
// taken, in one script, so that no permit is taken under another count. The try names a window
// of W permits (W >= 1), the first the one it asks for; the others are only read, to point the
// caller at a free one. A waiting call also names its place in the semaphore's line of waiters:
// a release hands its permit to the head of the line (permit_release_script), and only that
// waiter may take it then.
//
// KEYS: the W permit keys, the record, the line (a sorted set of places by their tickets) and the
// line's lapse times (a sorted set of the same members by when each lapses), all with the
// semaphore's hash tag, and when fenced the fence hash and marker. ARGV: token, TTL, the count N,
// how long the record lives at least (ms), W, the call's place ("<channel> <id>", or empty for a
// try that waits nowhere), how long a place lives (ms), the place's ticket (the call's), and when
// fenced the counter field.
//
// Answers: {4, n} the record says n permits (nothing written); {5, k} the permit asked for is
// held but the window's k-th after it is free or offered to this call; {0, holder} held by
// another owner or offered to another waiter, {0, nil} of another type; the WRONGTYPE error when
// every key of the window is of another type; taken: {1, 0}, or fenced {1, counter, marker} as
// fence_acquire_script. Where the permit asked for is offered to another waiter and one further
// on to this call (two releases that reached the nodes in different orders paired the same two
// waiters with the permits the other way round here), the two offers are traded and the call
// takes the one it asked for: offers hold nobody's permit, and the trade makes this node agree
// with the nodes that offered that permit to this call.
//
// With {0, ...} the call's place is taken or renewed, never moved back: its ticket is the same on
// every node, so that every node's line has one order. Not where the window holds a permit
// granted to that place ("g|" and the place: permit_release_script popped it for that grant, and
// a place put back would be granted a second permit). {5, k} changes no place: the call asks
// for that permit next. A permit offered to this call ("o|" and its place) is taken as a free one
// is, and the call leaves the line. A taken permit makes the record live at least `keep`
// (refreshed, never shortened), so that the record outlives every permit key of the node
// while their holders renew them (refresh_permit_record).
const script permit_acquire_script{.body = R"lua(
local w = tonumber(ARGV[5])
local rec, line, lapse = KEYS[w + 1], KEYS[w + 2], KEYS[w + 3]
local n = redis.call("GET", rec)
if n and n ~= ARGV[3] then
  return {4, n}
end
local me = ARGV[6]
local mine = "o|" .. me
local cur = redis.pcall("GET", KEYS[1])
local odd = type(cur) == "table"
if me ~= "" and cur and not odd and cur ~= mine and string.sub(cur, 1, 2) == "o|" then
  for k = 2, w do
    if redis.pcall("GET", KEYS[k]) == mine then
      local left = redis.call("PTTL", KEYS[1])
      if left < 1 then
        left = 1
      end
      redis.call("SET", KEYS[k], cur, "PX", left)
      cur = mine
      break
    end
  end
end
if odd or (cur and (me == "" or cur ~= mine)) then
  local all_odd = odd
  local granted = me ~= "" and cur == "g|" .. me
  for k = 2, w do
    local v = redis.pcall("GET", KEYS[k])
    if not v or (me ~= "" and v == mine) then
      return {5, k - 1}
    end
    if type(v) ~= "table" then
      all_odd = false
    end
    if me ~= "" and v == "g|" .. me then
      granted = true
    end
  end
  if all_odd then
    return cur
  end
  if me ~= "" and not granted then
    local t = redis.call("TIME")
    local ms = tonumber(ARGV[7])
    redis.call("ZADD", line, "NX", ARGV[8], me)
    redis.call("ZADD", lapse, t[1] * 1000 + math.floor(t[2] / 1000) + ms, me)
    if redis.call("PTTL", line) < ms then
      redis.call("PEXPIRE", line, ms)
    end
    if redis.call("PTTL", lapse) < ms then
      redis.call("PEXPIRE", lapse, ms)
    end
  end
  if odd then
    return {0, false}
  end
  return {0, cur}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if me ~= "" then
  redis.call("ZREM", line, me)
  redis.call("ZREM", lapse, me)
end
local keep = tonumber(ARGV[4])
if not n or redis.call("PTTL", rec) < keep then
  redis.call("SET", rec, ARGV[3], "PX", keep)
end
if #KEYS == w + 3 then
  return {1, 0}
end
return {1, redis.call("HINCRBY", KEYS[w + 4], ARGV[9], 1), redis.call("GET", KEYS[w + 5])}
)lua",
                                   .sha = "f445d7cabdd5277b3611f16ae353c194530fdf40"};

// A permit's release (every release of a permit: unlock, a dropped permit, shutdown, the undo of
// a lost try, and a client declining an offer for a call it no longer has). Where the permit
// holds ARGV[1] (the holder's token, or the offer being declined), the line's lapsed places are
// dropped and the permit goes to the head of the line: the key then holds "o|" and that place
// for as long as an offer lives, and the place's channel is told "<id> <permit key>". A place
// "<channel> <n>+<ttl>" (a call that takes a grant: unfenced) is granted the permit instead:
// the key holds "g|" and the place for <ttl> ms, a lock the call holds once a majority of the
// nodes told it "<n>+<ttl> <permit key>" (the grant's rules: machines/permit_grant_decisions.hpp).
// A head nobody hears (ARGV[3] "1": a node whose subscribers are the clients' own, not a cluster's)
// is skipped. With no one in line (or no PUBLISH for this ACL user) the permit is deleted. KEYS:
// the permit key, the line, the lapse times; ARGV: token or offer, how long an offer lives (ms),
// whether to skip the unheard. 1 released, 0 not held by ARGV[1]. A permit that is free on
// the node is handed on too (answer 0): a node that missed a grant (it gave the permit to
// another waiter, who dropped it) joins the holder's release of the permit again, and its
// line keeps pace with the others'. A place splits at its last
// space (the id is digits): the channel carries the key prefix, which may hold spaces.
const script permit_release_script{.body = R"lua(
local cur = redis.call("GET", KEYS[1])
if cur and cur ~= ARGV[1] then
  return 0
end
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, m in ipairs(redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now)) do
  redis.call("ZREM", KEYS[2], m)
  redis.call("ZREM", KEYS[3], m)
end
while true do
  local head = redis.call("ZPOPMIN", KEYS[2])[1]
  if not head then
    break
  end
  redis.call("ZREM", KEYS[3], head)
  local channel, id = string.match(head, "^(.+) (%d+)$")
  local ttl
  if not channel then
    channel, id, ttl = string.match(head, "^(.+) (%d+%+(%d+))$")
  end
  if channel then
    local heard = redis.pcall("PUBLISH", channel, id .. " " .. KEYS[1])
    if type(heard) ~= "number" then
      break
    end
    if heard > 0 or ARGV[3] ~= "1" then
      if ttl then
        redis.call("SET", KEYS[1], "g|" .. head, "PX", ttl)
      else
        redis.call("SET", KEYS[1], "o|" .. head, "PX", ARGV[2])
      end
      if cur then
        return 1
      end
      return 0
    end
  end
end
redis.call("DEL", KEYS[1])
if cur then
  return 1
end
return 0
)lua",
                                   .sha = "57e08e0e4eda795578bb1a3a806b741b2178c597"};

// A node's late offer of a permit this client holds already (it won the permit on other
// nodes while this one still had it in line): the offer becomes the holder's token there, so
// that the node counts it as the holder's again and its release hands the permit on. KEYS: the
// permit key; ARGV: the offer, the token, how long the key lives (ms). 1 taken, 0 no offer.
const script permit_claim_script{.body = R"lua(
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
return 1
)lua",
                                 .sha = "84b2e9e9233dd0f299d8659c9032b8736721915a"};

}  // namespace redlock::detail
