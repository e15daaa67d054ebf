// Fair mode: a line of waiters kept on each node, per resource.
//
// The line is two sorted sets: `redlock:line:R` orders waiters by their ticket (the wall
// clock, in ms, at the start of their call; equal tickets by the waiter's random id, so
// every node orders the same waiters the same way), and `redlock:line-expiry:R` holds
// when each place lapses (the node's own clock). Every attempt of a waiting call joins
// (ZADD NX: the ticket chosen once) and renews its place, purges lapsed places, and may
// set the lock key only if it is first in line; the winner leaves the line in the same
// script. Both keys expire with the newest place, so a line nobody renews disappears.

#include "client/client_state.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

// Variables the shared part uses: L, E (the two keys), id, tk (ticket), ms (place
// lifetime), join ("1": take or renew a place; "0": a single try that queues nowhere).
#define REDLOCK_FAIR_LINE \
  R"(local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000) for _, m in ipairs(redis.call("ZRANGEBYSCORE", E, "-inf", now)) do redis.call("ZREM", L, m) redis.call("ZREM", E, m) end if join == "1" then redis.call("ZADD", L, "NX", tk, id) redis.call("ZADD", E, now + ms, id) redis.call("PEXPIRE", L, ms) redis.call("PEXPIRE", E, ms) end local head = redis.call("ZRANGE", L, 0, 0)[1] if head and head ~= id then return {3, head} end local cur = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET") if cur then return {0, cur} end if head then redis.call("ZREM", L, head) redis.call("ZREM", E, head) end )"

const script fair_acquire_script{
    R"(local L, E, id, tk, ms, join = KEYS[2], KEYS[3], ARGV[3], ARGV[4], ARGV[5], ARGV[6] )" REDLOCK_FAIR_LINE
    R"(return {1, 0})",
    "38ec3ec37524f3db4b35cc0cd26909ecaa32163b"};
const script fair_fence_acquire_script{
    R"(local L, E, id, tk, ms, join = KEYS[4], KEYS[5], ARGV[4], ARGV[5], ARGV[6], ARGV[7] )" REDLOCK_FAIR_LINE
    R"(if redis.call("EXISTS", KEYS[3]) == 0 then return {2, 0} end return {1, redis.call("HINCRBY", KEYS[2], ARGV[3], 1)})",
    "3566cc44faf2a799d10e6f528d9e3e79c7a744e7"};
const script line_leave_script{
    R"(redis.call("ZREM", KEYS[1], ARGV[1]) redis.call("ZREM", KEYS[2], ARGV[1]) return 1)",
    "dccc46b228d9a8b4b943a8838527e34cbec412ec"};

#undef REDLOCK_FAIR_LINE

void client_state::leave_line_detached(std::string_view line_key, std::string_view expiry_key,
                                       std::string_view id,
                                       const std::array<bool, max_nodes>& only) {
  // EVAL: nobody reads the reply, so a flushed script cache must not make it a NOSCRIPT.
  std::string payload;
  resp::append_command(payload, "EVAL", line_leave_script.body, "2", line_key, expiry_key, id);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (only[i]) nodes[i]->submit_detached(payload);
}

}  // namespace redlock::detail
