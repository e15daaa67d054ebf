#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs examples/leader_scheduler on three local nodes: two instances campaign, one leads
# for three jobs and resigns, the other takes over with a higher term; an observer prints
# each change. Fails unless both led, in turn, with rising terms, and the observer saw them.
# Usage: leader_scheduler.sh PATH/TO/leader_scheduler
set -euo pipefail
bin=${1:-./build/examples/leader_scheduler}
cd "$(dirname "$0")/.."
source scripts/nodes.sh
start_nodes 3
list=$(IFS=,; echo "${nodes[*]}")
out=$node_dir/out
"$bin" "$list" observe 4 >"$out.observer" &
observer=$!
"$bin" "$list" alpha 3 >"$out.alpha" &
alpha=$!
"$bin" "$list" beta 3 >"$out.beta" &
beta=$!
wait "$alpha"
wait "$beta"
wait "$observer"
cat "$out.alpha" "$out.beta" "$out.observer"
terms=$(grep -h "leading with term" "$out.alpha" "$out.beta" | awk '{print $NF}' | sort -n)
[[ $(echo "$terms" | wc -l) -eq 2 ]] || { echo "FAIL: expected two leaders"; exit 1; }
[[ $(echo "$terms" | head -1) -lt $(echo "$terms" | tail -1) ]] || { echo "FAIL: terms"; exit 1; }
[[ $(grep -c "^leader: " "$out.observer") -ge 2 ]] || { echo "FAIL: observer"; exit 1; }
echo "OK: two leaders in turn, terms $(echo $terms)"
