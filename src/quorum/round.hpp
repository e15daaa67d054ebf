// SPDX-License-Identifier: BSL-1.0
#pragma once
// One round of a quorum operation, without sockets: what each node answered (or why it
// did not), the tally, and the text that describes it to a person. The operation that
// talks to the nodes (quorum/operation.hpp) records into a round and asks the rules
// (quorum/rules.hpp) what it means; tests drive a round directly (test/unit/test_rules.cpp).

#include <algorithm>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "quorum/fleet_array.hpp"
#include "quorum/rules.hpp"
#include "redlock/config.hpp"

namespace redlock::detail {

/// A node's answer in a round.
enum class vote : std::uint8_t {
  pending,  ///< no answer yet
  yes,      ///< granted (set, extended, released)
  no,       ///< refused: our token is not there
  held,     ///< held by another owner
  failed    ///< no usable answer: see the node's error
};

/// The per-node values exist for the nodes of the last reset() only (fleet_array): a round is
/// sized to its fleet.
struct round {
  fleet_array<vote> votes;
  fleet_array<error_code> errors;
  /// Per node, what the describing text adds: the server's error text, why the node may
  /// not vote, who holds the name, or a qualified yes ("" for the plain words).
  fleet_array<std::string> texts;
  /// Whether node i's request went out (it may have run, whatever came back).
  fleet_array<bool> sent_to;
  std::size_t yes = 0, no = 0, held = 0, failed = 0;

  /// Every one of n nodes pending, nothing counted. (Inline, as count(): both run on
  /// every lock call.)
  void reset(std::size_t n) {
    yes = no = held = failed = 0;
    // Values built before hold the last round's answers; new ones start pending.
    const std::size_t used = std::min(n, votes.size());
    for (std::size_t i = 0; i < used; ++i) {
      votes[i] = vote::pending;
      errors[i] = {};
      if (!texts[i].empty()) texts[i].clear();
      sent_to[i] = false;
    }
    votes.fit(n);
    errors.fit(n);
    texts.fit(n);
    sent_to.fit(n);
  }
  /// Node i gave no usable answer, for `why` (and `text`, when there is more to say).
  void fail(std::size_t i, error_code why, std::string_view text = {});
  /// Node i answered with an error: WRONGTYPE is a key of another type, anything else a
  /// server error; the server's text is kept.
  void error_reply(std::size_t i, std::string_view text);
  /// Node i answered `v` (yes, no or held; failed records unexpected_reply).
  void count(std::size_t i, vote v) {
    switch (v) {
      case vote::yes:
        ++yes;
        break;
      case vote::no:
        ++no;
        break;
      case vote::held:
        ++held;
        break;
      case vote::failed:
        return unreadable(i);
      case vote::pending:
        return;
    }
    votes[i] = v;
  }
  /// Node i's answer could not be read: unexpected_reply, unless a failure (and its text)
  /// was recorded while classifying it.
  void unreadable(std::size_t i);
  /// Nodes that definitely will not say yes: refusals, holders and failures.
  std::size_t against() const { return no + held + failed; }
};

/// For observer events: the time from `start` to a node's reply, or -1 us without one
/// (`replied` left at its zero value).
inline std::chrono::microseconds reply_latency(boot_clock::time_point replied,
                                               boot_clock::time_point start) {
  if (replied == boot_clock::time_point{}) return std::chrono::microseconds{-1};
  return std::chrono::duration_cast<std::chrono::microseconds>(replied - start);
}

/// What a describing text names: node i's address and, when its connection is not
/// usable, why (the connection's last problem).
struct node_label {
  std::string_view address;
  std::string_view problem;
};

/// How a round is described: "could not <verb> "<subject>": <outcome> (k of n nodes
/// agreed, q needed); node i (address): <answer>; ...". `no_text` words a refusal;
/// `counted_yes` is the yes votes that count towards the majority; `hint` adds to a
/// server error's text (which commands a refused script runs), may be null. With
/// `per_node` false (nothing was sent, or the call was refused before) only the first
/// part is written.
struct round_wording {
  std::string_view verb;
  std::string_view subject;
  std::string_view no_text = "refused";
  std::size_t counted_yes = 0;
  bool per_node = true;
  std::string (*hint)(std::string_view server_text) = nullptr;
};

/// "held by <who> (token <start>...)" for a holder's token: its owner label
/// (config::owner, after the digits and a "/"), or "another owner" for a token without one;
/// "this client, in another of its calls" when `ours` (the asking client holds it).
std::string held_by_text(std::string_view token, bool ours = false);

std::string describe(const round& r, std::span<const node_label> nodes, error_code outcome,
                     const round_wording& w);

}  // namespace redlock::detail
