#!/usr/bin/env bash
# Runs examples/long_job against five local nodes and freezes three of them (SIGSTOP)
# two seconds in: the job is cancelled before its lock's validity runs out, and exits 76.
# Build first (scripts/build.sh). The nodes are thawed and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/redlock-longjob.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
nodes=()
for i in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/redis-$i.log" --daemonize no &
  pids+=($!)
  nodes+=("redis://127.0.0.1:$port")
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
done
./build/examples/long_job "$(IFS=,; echo "${nodes[*]}")" 60 &
job=$!
sleep 2
echo "--- freezing 3 of 5 nodes"
kill -STOP "${pids[0]}" "${pids[1]}" "${pids[2]}"
set +e
wait "$job"
rc=$?
set -e
echo "--- long_job exited with $rc"
