// SPDX-License-Identifier: BSL-1.0
#pragma once
// Every Lua script the client runs, in one place (their text and what each answers are in
// scripts.cpp). all_scripts() lists each once: the handshake loads them all (SCRIPT LOAD),
// and the ACL hint reads the commands a refused script calls from its text. The SHA1 of
// each text is checked against SCRIPT LOAD by a test.

#include <span>

#include "connection/connection.hpp"

namespace redlock::detail {

// Single locks
extern const script release_script;
extern const script quiet_release_script;
extern const script extend_script;
extern const script batch_extend_script;

// Shared locks (readers' leases)
extern const script reader_acquire_script;
extern const script writer_wait_script;

// Fencing
extern const script fence_acquire_script;
extern const script fence_raise_script;
extern const script fence_read_script;
extern const script fence_repair_script;

// Fair mode
extern const script fair_acquire_script;
extern const script fair_fence_acquire_script;
extern const script line_leave_script;

// Multi-resource sets
extern const script multi_acquire_script;
extern const script multi_raise_script;
extern const script multi_extend_script;
extern const script multi_release_script;
extern const script quiet_multi_release_script;

// Claims
extern const script claim_script;
extern const script settle_script;
/// The first byte of a claim_mode::own_marker claim's value while it is held (its token is this
/// byte, then the lowercase hex of any token), and of the done marker it becomes when settled
/// with a keep time. claim_script and settle_script test these bytes by value (67, 68).
inline constexpr char own_marker_held = 'C';
inline constexpr char own_marker_done = 'D';

// Inspection
extern const script inspect_script;

// Semaphores
extern const script permit_acquire_script;
extern const script permit_release_script;
extern const script permit_claim_script;

// Leader election
extern const script election_record_script;
extern const script election_read_script;
extern const script election_resign_script;

/// Every script above, once.
std::span<const script* const> all_scripts();

}  // namespace redlock::detail
