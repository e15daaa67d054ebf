#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# w2 and w4 with the nodes a real network away: each redis-server in its own network
# namespace behind a veth pair (redlock-netns, test/support/netns_fleet.hpp), at a
# 10 ms round trip (docs/performance.md, "Over a network"). Needs root and ip.
#
#   bench/netns.sh [BUILD_DIR] [more redlock-bench flags]
#
# BUILD_DIR (default: build) holds test/redlock-netns and bench/redlock-bench. The link
# is set by the environment: RTT_MS (default 10), JITTER_MS (0), LOSS_PERCENT (0), and
# DELAY (auto: netem where the kernel has it, else the user-space proxy); WORKLOADS
# (default "w2 w4") picks the runs. JSON lines go to stdout, the bench's summary and the
# fleet's description to stderr.
#
# w2 runs on 3 nodes (its definition), w4 on 5 with 2 frozen; each gets a fresh fleet,
# and waits out the restart guard (one TTL) before it measures.
set -euo pipefail
build=${1:-build}
(($#)) && shift
netns=$build/test/redlock-netns
bench=$build/bench/redlock-bench
for f in "$netns" "$bench"; do
  [[ -x $f ]] || { echo "$0: $f not found (build it first: cmake --build $build)" >&2; exit 69; }
done
link=(--rtt-ms "${RTT_MS:-10}" --jitter-ms "${JITTER_MS:-0}" --loss-percent "${LOSS_PERCENT:-0}"
      --delay "${DELAY:-auto}")
# The bench's flags reach the inner shell as its positional parameters.
for w in ${WORKLOADS:-w2 w4}; do
  case $w in
    w2) "$netns" --nodes 3 "${link[@]}" -- \
          sh -c 'exec "$0" --nodes "$REDLOCK_NODES" --only w2 "$@"' "$bench" "$@" ;;
    w4) "$netns" --nodes 5 "${link[@]}" -- \
          sh -c 'exec "$0" --nodes "$REDLOCK_NODES" --node-pids "$REDLOCK_NODE_PIDS" --only w4 "$@"' \
          "$bench" "$@" ;;
    *) echo "$0: WORKLOADS: only w2 and w4" >&2; exit 64 ;;
  esac
done
