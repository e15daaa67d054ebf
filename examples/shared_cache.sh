#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Starts three local redis-server nodes and runs examples/shared_cache against them:
# readers serve from a cache under readers' leases while a writer rebuilds it under the
# exclusive lock. Exits with the example's status (1 if a reader saw the cache
# mid-rebuild, or the readers never shared). Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/examples/shared_cache}
source scripts/nodes.sh
start_nodes 3
"$bin" "$(node_list)" 3
