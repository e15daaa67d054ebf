#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Starts three local redis-server nodes and runs examples/worker_pool against them: 8
# workers, each a client of its own, share 3 permits for 4 jobs each. Exits with the
# example's status (1 if a job failed or more than 3 ran at once). Build first
# (scripts/build.sh). The nodes are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/examples/worker_pool}
source scripts/nodes.sh
start_nodes 3
"$bin" "$(node_list)" 3 8 4
