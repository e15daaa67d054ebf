#pragma once
// Multi-resource locks (multi.cpp): the scripts that take, extend, fence and release a
// whole set of keys in one call per node.

#include "client/client_state.hpp"

namespace redlock::detail {

// KEYS: fence hash, fence marker, then the set's keys; ARGV: token, ttl[, fields].
// {1[, counters]} taken (marked node), {2} taken (unmarked node), {0, k, holder} key k
// held by another owner, {3, k} key k of another type: nothing taken.
extern const script multi_acquire_script;
// KEYS as above; ARGV: token, then field, token pairs. Raises the counters only where
// the marker exists and every key still holds our token: 1, else 0.
extern const script multi_raise_script;
// KEYS: the set's keys; ARGV: token, ttl. PEXPIRE all if every key holds our token: 1, else 0.
extern const script multi_extend_script;
// KEYS: the set's keys; ARGV: token. Deletes the keys that hold our token: how many.
extern const script multi_release_script;

}  // namespace redlock::detail
