#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# w1 and w2 over TLS beside plain TCP, on the same three redis-servers (each listens on a
# plain port and a TLS port), with certificates made by test/support/make_certs.sh.
#   REPEAT=3 bash bench/tls.sh [BUILD_DIR] [extra redlock-bench options]
# Runs plain and TLS alternately REPEAT times (default 3: a shared machine is noisy),
# prints every JSON line, then the medians and the TLS/plain ratios of the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
bench=$build/bench/redlock-bench
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
bash "$root/test/support/make_certs.sh" "$work" >/dev/null 2>&1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
plain=() tls=()
for i in 1 2 3; do
  p=$(free_port) t=$(free_port)
  redis-server --port "$p" --tls-port "$t" --bind 127.0.0.1 --save "" --appendonly no \
    --tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" \
    --tls-ca-cert-file "$work/ca.crt" --tls-auth-clients no --logfile "$work/redis-$i.log" &
  pids+=($!)
  plain+=("redis://127.0.0.1:$p") tls+=("rediss://127.0.0.1:$t")
done
for u in "${plain[@]}"; do
  port=${u##*:}
  for _ in $(seq 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
done
join() { local IFS=,; echo "$*"; }

for _ in $(seq "${REPEAT:-3}"); do
  "$bench" --only w1,w2 --no-ceiling --nodes "$(join "${plain[@]}")" "$@" | tee -a "$work/plain.json"
  "$bench" --only w1,w2 --no-ceiling --nodes "$(join "${tls[@]}")" --tls-ca "$work/ca.crt" "$@" |
    tee -a "$work/tls.json"
done
python3 - "$work/plain.json" "$work/tls.json" <<'PY'
import json, statistics, sys
def load(path):
    out = {}
    for j in map(json.loads, open(path)):
        if "workload" in j:
            out.setdefault(j["workload"], []).append(j)
    return out
plain, tls = load(sys.argv[1]), load(sys.argv[2])
def med(runs, w, k):
    return statistics.median(r[k] for r in runs[w])
rows = [("w1", "ops_per_s", "w1 cycles/s"), ("w2", "acquire_p50_us", "w2 acquire p50 us"),
        ("w2", "acquire_p99_us", "w2 acquire p99 us"),
        ("w2", "rtt_set_p50_us", "one SET round trip p50 us (redis-benchmark)"),
        ("w1", "client_cpu_us_per_cycle", "w1 client CPU us/cycle"),
        ("w1", "server_cpu_us_per_cycle", "w1 server CPU us/cycle")]
print(f"medians of {len(plain['w1'])} alternating runs each")
for w, k, label in rows:
    a, b = med(plain, w, k), med(tls, w, k)
    print(f"{label}: plain {a:,.1f}  tls {b:,.1f}  tls/plain {b / a:.2f}")
PY
