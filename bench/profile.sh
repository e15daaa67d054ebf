#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Profiles w1 under callgrind: instructions per acquire+release cycle and where they go
# (docs/performance.md, "Profile"). Only the measured loop (run_cycles) is collected, so
# node start-up and the client's connects before it are left out.
#
#   bench/profile.sh path/to/redlock-bench OUTDIR [more redlock-bench flags]
#
# Build with -g for file names (cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g).
# The per-node timeout is raised because valgrind slows the client some 30 times.
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 path/to/redlock-bench OUTDIR [redlock-bench flags]" >&2
  exit 64
fi
bench=$1 out=$2
shift 2
mkdir -p "$out"
valgrind --tool=callgrind --collect-atstart=no --toggle-collect='redlock::bench::run_cycles*' \
  --callgrind-out-file="$out/w1.callgrind" \
  "$bench" --only w1 --duration 3 --warmup 0 --node-timeout 5000 "$@" >"$out/w1.jsonl" 2>"$out/w1.log"
# With no warm-up every cycle the loop ran is one of the measured ones.
ops=$(grep -o '"ops":[0-9]*' "$out/w1.jsonl" | head -1 | cut -d: -f2)
callgrind_annotate --auto=no "$out/w1.callgrind" >"$out/w1.self.txt"
callgrind_annotate --auto=no --inclusive=yes "$out/w1.callgrind" >"$out/w1.inclusive.txt"
python3 "$(dirname "$0")/callgrind_sites.py" "$out/w1.callgrind" "$ops" >"$out/w1.sites.txt"
head -3 "$out/w1.sites.txt"
echo "details: $out/w1.sites.txt, $out/w1.self.txt, $out/w1.inclusive.txt"
