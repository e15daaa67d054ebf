#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Starts three local redis-server nodes and runs examples/fenced_sqlite against them.
# Build first (scripts/build.sh). The nodes are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/examples/fenced_sqlite}
source scripts/nodes.sh
start_nodes 3
"$bin" "$(node_list)" "$node_dir/accounts.db"
