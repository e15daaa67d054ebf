#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Draws docs/perf/*.png from redlock-bench output with gnuplot (Debian: gnuplot-nox).
#
#   bench/plot.sh SUITE.jsonl SWEEP.jsonl OUTDIR
#
# SUITE.jsonl: the default suite (`redlock-bench > SUITE.jsonl`): latency percentiles.
# SWEEP.jsonl: w1 and raw at several concurrencies, e.g.
#   redlock-bench --only w1,raw --concurrency 1,2,4,8,16,32,64,128,256 --duration 3
# It gives throughput, and w1's latency, against concurrency.
set -euo pipefail
if (($# != 3)); then
  echo "usage: $0 SUITE.jsonl SWEEP.jsonl OUTDIR" >&2
  exit 64
fi
suite=$1 sweep=$2 out=$3
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 69; }
mkdir -p "$out"
data=$(mktemp -d /tmp/redlock-plot.XXXXXX)
trap 'rm -rf "$data"' EXIT

# field LINE KEY: a value from one flat JSON line as the bench prints it; NaN if null or absent.
field() {
  local rest=${1#*\"$2\":}
  if [[ $rest == "$1" ]]; then echo NaN; return; fi
  rest=${rest%%[,\}]*}
  [[ $rest == null ]] && rest=NaN
  echo "${rest//\"/}"
}
# line FILE WORKLOAD [CONCURRENCY]: the first line of that workload.
line() {
  local pattern="\"workload\":\"$2\""
  if (($# > 2)); then pattern+=",[^}]*\"concurrency\":$3,"; fi
  grep -m1 -E "$pattern" "$1" || true
}

# ---- latency percentiles per workload and phase --------------------------------------
row() {  # row LABEL LINE PHASE
  [[ -n $2 ]] || return 0
  printf '"%s" %s %s %s %s\n' "$1" "$(field "$2" "$3_p50_us")" "$(field "$2" "$3_p90_us")" \
    "$(field "$2" "$3_p99_us")" "$(field "$2" "$3_p999_us")"
}
w1=$(line "$suite" w1 64)
w2=$(line "$suite" w2)
fw1=$(line "$suite" fenced_w1 64)
fw2=$(line "$suite" fenced_w2)
extend=$(line "$suite" extend)
w3=$(line "$suite" w3)
w4=$(line "$suite" w4)
raw=$(line "$suite" raw 64)
{
  row "w1 acquire" "$w1" acquire
  row "w1 release" "$w1" release
  row "raw SET" "$raw" acquire
  row "raw release" "$raw" release
  row "w2 acquire" "$w2" acquire
  row "w2 release" "$w2" release
  row "fenced w1 acquire" "$fw1" acquire
  row "fenced w2 acquire" "$fw2" acquire
  row "fenced w2 write-back" "$fw2" write_back
  row "w4 healthy acquire" "$w4" healthy_acquire
  row "w4 2 frozen acquire" "$w4" acquire
  row "w4 2 frozen release" "$w4" release
  row "w3 hand-off gap" "$w3" handoff
  row "extend renewal" "$extend" renew
} >"$data/latency.dat"

gnuplot <<EOF
set terminal pngcairo size 1300,600 font "sans,10"
set output "$out/latency.png"
set title "Latency percentiles (microseconds, log scale): w1 at 64 in flight, w2/w4 one at a time, extend 10,000 locks"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [1:*]
set ylabel "microseconds"
set grid ytics
set xtics rotate by -25 scale 0
set key top left
plot "$data/latency.dat" using 2:xtic(1) title "p50", '' using 3 title "p90", \
     '' using 4 title "p99", '' using 5 title "p99.9"
EOF

# ---- throughput and w1 latency against concurrency ------------------------------------
ceiling=NaN
grep -E '"workload":"(w1|raw)"' "$sweep" | while IFS= read -r l; do
  printf '%s %s %s %s %s\n' "$(field "$l" workload)" "$(field "$l" concurrency)" \
    "$(field "$l" ops_per_s)" "$(field "$l" acquire_p50_us)" "$(field "$l" acquire_p99_us)"
done >"$data/sweep.dat"
first_raw=$(line "$sweep" raw)
[[ -n $first_raw ]] && ceiling=$(field "$first_raw" ceiling_cycles_per_s)
awk '$1 == "w1"' "$data/sweep.dat" | sort -n -k2 >"$data/w1.dat"
awk '$1 == "raw"' "$data/sweep.dat" | sort -n -k2 >"$data/raw.dat"

gnuplot <<EOF
set terminal pngcairo size 900,520 font "sans,10"
set output "$out/throughput.png"
set title "Acquire+release cycles per second against operations in flight (3 nodes)"
set logscale x 2
set xlabel "operations in flight"
set ylabel "cycles per second"
set yrange [0:*]
set grid
set key bottom right
ceiling = $ceiling
plot "$data/w1.dat" using 2:3 with linespoints lw 2 title "w1 (the lock)", \
     "$data/raw.dat" using 2:3 with linespoints lw 2 title "raw (connection layer, no lock logic)", \
     (ceiling == ceiling ? ceiling : 1/0) with lines dt 2 lw 2 title "server ceiling (redis-benchmark)"
EOF

gnuplot <<EOF
set terminal pngcairo size 900,520 font "sans,10"
set output "$out/w1_latency.png"
set title "w1 acquire latency against operations in flight (3 nodes)"
set logscale xy 2
set xlabel "operations in flight"
set ylabel "microseconds"
set grid
set key top left
plot "$data/w1.dat" using 2:4 with linespoints lw 2 title "acquire p50", \
     "$data/w1.dat" using 2:5 with linespoints lw 2 title "acquire p99"
EOF
echo "wrote $out/latency.png $out/throughput.png $out/w1_latency.png"
