#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Starts three local redis-server nodes and runs examples/save_once against them; extra
# arguments go to save_once (defaults: 4 producers x 50,000 events over 20,000 keys).
# Build first (scripts/build.sh). The nodes are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/examples/save_once}
shift || true
source scripts/nodes.sh
start_nodes 3
"$bin" "$(node_list)" --db "$node_dir/save_once.db" "$@"
