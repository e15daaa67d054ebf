// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a fence repair reads without I/O: what a node's read says, the census of the
// reads and their counters' maxima, to which nodes the maxima are written, and what a
// write's answer means. Whether they may be written (the repair's read rule) is
// repair_may_write in quorum/rules.hpp. The repair's machine (repair_fsm.hpp) asks these;
// the rule's reasons are in fencing.cpp's opening comment and verify/redlock.pml.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "quorum/rules.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// One node's answer to the repair's read.
struct fence_read {
  bool answered = false;
  bool marked = false;      ///< its marker names the server that answered
  std::string incarnation;  ///< of the server that answered ("" if unknown)
  std::map<std::string, std::int64_t> counters;
};

/// Whether `r` is the read script's answer: {marker or nil, {field, value, ...}}.
bool fence_read_well_formed(const resp::reply& r);

/// The counters of a well-formed read answer (a value that is no number reads as 0).
void read_fence_counters(const resp::reply& r, std::map<std::string, std::int64_t>& out);

/// The reads as the read rule (rules.hpp, repair_may_write) counts them.
repair_census count_reads(std::span<const fence_read> reads, std::span<const bool> independent);

/// Each counter's maximum over the answers of independent nodes (whether they vote now
/// or not: their counters are real, and raising a counter is always safe).
std::map<std::string, std::int64_t> counter_maxima(std::span<const fence_read> reads,
                                                   std::span<const bool> independent);

/// Whether a node gets the repair write: it answered unmarked from a known incarnation,
/// it was past its restart guard when the repair started (`voted_at_start`), and it is
/// connected now (`ready`: a write queued behind a reconnect could reach a server that
/// restarted after our read).
bool repair_target(const fence_read& r, bool ready, bool voted_at_start);

/// What a repair write's answer means.
enum class repair_write : std::uint8_t {
  marked,     ///< done, by the server that was read: the node is marked
  lost,       ///< no reply: a transport failure (`ec`)
  refused,    ///< an error reply: the server's text says why
  restarted,  ///< done, but by another incarnation: it vouches for nothing
  ignored,    ///< any other answer
};
/// `ec` the transport's outcome, `r` the reply (when no `ec`), `answered_by` the
/// incarnation that answered the write (null if unknown), `read_from` the one read.
repair_write repair_write_answer(error_code ec, const resp::reply* r,
                                 const std::string* answered_by, std::string_view read_from);

/// The diagnostic text of a node's failure in a repair; a server's own text is quoted,
/// with what to grant when it is an ACL refusal (acl_hint).
std::string repair_failure(std::size_t node, error_code ec, std::string_view server_text);

/// The client's repair problem after a repair: its last failure if it had one, cleared
/// if it wrote without one, else the last repair's (one with nothing to write proves
/// nothing).
void keep_repair_problem(std::string& problem, std::string&& failed, bool wrote);

}  // namespace redlock::detail
