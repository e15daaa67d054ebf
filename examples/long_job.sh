#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs examples/long_job against five local nodes and freezes three of them (SIGSTOP)
# two seconds in: the job is cancelled before its lock's validity runs out, and exits 76.
# Build first (scripts/build.sh). The nodes are thawed and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nodes.sh
start_nodes 5
./build/examples/long_job "$(node_list)" 60 &
job=$!
sleep 2
echo "--- freezing 3 of 5 nodes"
kill -STOP "${node_pids[0]}" "${node_pids[1]}" "${node_pids[2]}"
set +e
wait "$job"
rc=$?
set -e
echo "--- long_job exited with $rc"
