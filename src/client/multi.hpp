#pragma once
// Multi-resource locks (multi.cpp): the scripts that take, extend, fence and release a
// whole set of keys in one call per node.

#include "client/client_state.hpp"

namespace redlock::detail {

// KEYS: fence hash, fence marker, then the set's keys; ARGV: token, ttl[, fields].
// {1[, counters]} taken (marked node), {2} taken (unmarked node), {0, k, holder} key k
// held by another owner: nothing taken. A key of another type fails the script with
// WRONGTYPE in its check, before anything is set.
extern const script multi_acquire_script;
// KEYS as above; ARGV: token, then field, token pairs. Raises the counters only where
// the marker exists and every key still holds our token: 1, else 0.
extern const script multi_raise_script;
// KEYS: the set's keys; ARGV: token, ttl. PEXPIRE all if every key holds our token: 1, else 0.
extern const script multi_extend_script;
// KEYS: the set's keys; ARGV: token. Deletes the keys that hold our token: how many;
// each release is announced on the channel named like the key, as single releases are
// (pcall: a user without PUBLISH still releases).
extern const script multi_release_script;

}  // namespace redlock::detail
