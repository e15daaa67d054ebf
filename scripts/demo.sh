#!/usr/bin/env bash
# Installs dependencies, builds, starts five local redis-server nodes on free ports, and
# runs the contention demo against them. The nodes are stopped by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
source scripts/nodes.sh
start_nodes 5
./build/examples/contention_demo "$(node_list)"
