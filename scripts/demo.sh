#!/usr/bin/env bash
# Installs dependencies, builds, starts five local redis-server nodes on free ports, and
# runs the contention demo against them. The nodes are stopped by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh

dir=$(mktemp -d /tmp/redlock-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    shuf -i 20000-60000 -n 1
}

nodes=()
for i in 1 2 3 4 5; do
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$dir" --logfile "$dir/redis-$i.log" --daemonize no &
  pids+=($!)
  nodes+=("redis://127.0.0.1:$port")
done
for n in "${nodes[@]}"; do
  port=${n##*:}
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
done

./build/examples/contention_demo "$(IFS=,; echo "${nodes[*]}")"
