// SPDX-License-Identifier: BSL-1.0
#pragma once
// A fence repair as a state machine with no I/O. The repair reads every node's marker and
// counters, applies the read rule, and raises the unmarked nodes' counters to the maxima
// read; the driver (fence_repair_op in fencing.cpp) sends the reads and writes and feeds
// their answers here, and this machine says what comes next: nothing, the writes (to
// which nodes, with which maxima), a node whose counters are now trusted, or the end with
// the problem the client keeps. Why the rule is what it is: fencing.cpp's opening comment.
// test_repair_inspect feeds it events without a server.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "machines/action.hpp"
#include "machines/repair_decisions.hpp"
#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "resp/resp.hpp"

namespace redlock::detail {

/// A node's standing when the repair's reads are all in, as the driver sees it then.
struct repair_standing {
  /// No replica, no duplicate of another node (client_state::independent): only such a
  /// node's answer counts for the read rule and gives counters.
  bool independent = false;
  /// Connected now: a write queued behind a reconnect could reach a server that
  /// restarted after our read.
  bool ready = false;
  /// Past its restart guard when the repair started, judged on the server it is
  /// connected to now (a server that restarted after the start fails it).
  bool voted_at_start = false;
};

/// A repair's part of its action.
struct repair_detail {
  /// A node whose counters are trusted from now on (whatever the action's kind): its
  /// marker, read or just written, names the server that answered.
  std::optional<std::size_t> mark{};
  /// second_round: the maxima each node in `nodes` is raised to.
  std::map<std::string, std::int64_t> maxima{};
  /// complete: the repair's last node failure ("" if none) and whether its writes went
  /// out: what keep_repair_problem makes of the client's repair problem.
  std::string problem{};
  bool wrote = false;
};

/// What the driver of a repair does next: second_round (the repair writes, to the nodes
/// in `nodes`), complete (the repair is over, with `ec`), or none; `detail.mark` with any.
using repair_action = machine_action<repair_detail>;

class repair_fsm {
 public:
  enum class phase : std::uint8_t {
    idle,     ///< before the reads
    reading,  ///< reads out: answers and failures come in
    writing,  ///< the writes are out
    done,     ///< completed: events change nothing
  };

  /// A repair of a fleet of `n` nodes (at most max_nodes).
  explicit repair_fsm(std::size_t n) : reads_(n), read_failures_(n) {}

  phase state() const { return phase_; }
  /// Whether every read is in (answered or failed): the driver then reports reads_done.
  bool reads_in() const { return phase_ == phase::reading && pending_reads_ == 0; }
  /// Node i's read as it was answered.
  const fence_read& read(std::size_t i) const { return reads_[i]; }

  /// The reads go out to every node; one refused at once comes back as read_failed.
  void reads_sent();
  /// Node i's well-formed read (fence_read_well_formed), as the driver read it: marked if
  /// the marker names the server that answered.
  repair_action read_answered(std::size_t i, fence_read r);
  /// Node i's read gave nothing usable: a transport failure, refused, an error reply
  /// (`server_text` its text) or another shape.
  repair_action read_failed(std::size_t i, error_code ec, std::string_view server_text);
  /// Every read is in, and `standing` is each node's now: the read rule decides whether
  /// the maxima are written, and to which nodes. Nothing while reads are outstanding.
  repair_action reads_done(std::span<const repair_standing> standing);
  /// The writes in `sent` were taken by their connections (the rest were refused at once
  /// and mark nothing): with none out, the repair ends.
  repair_action writes_sent(node_mask sent);
  /// Node i's write answered (`r` when no `ec`), from the server `answered_by` names (null
  /// if unknown): it marks the node only if that is the server read.
  repair_action write_answered(std::size_t i, error_code ec, const resp::reply* r,
                               const std::string* answered_by);
  /// Stopped (cancelled, the client shut down): ends now with `why`; answers still to
  /// come are ignored, and a write not confirmed clears no problem.
  repair_action stop(error_code why);

 private:
  repair_action finish(bool wrote);
  // The read failures become the repair's problem, the last in node order kept.
  void keep_read_failures();
  bool answering(std::size_t i, phase p, node_mask pending) const {
    return phase_ == p && i < reads_.size() && (pending & bit(i)) != 0;
  }

  phase phase_ = phase::idle;
  std::vector<fence_read> reads_;
  // Each node's read failure, worded; the last in node order is the one kept.
  std::vector<std::string> read_failures_;
  node_mask pending_reads_ = 0, pending_writes_ = 0;
  bool wrote_ = false;  // the read rule let the maxima be written
  std::string failed_;  // the last node failure, for the client's diagnostics
};

}  // namespace redlock::detail
