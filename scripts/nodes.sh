# SPDX-License-Identifier: BSL-1.0
# Sourced by the demo and example scripts: start_nodes N starts N redis-server processes
# on free loopback ports, without persistence, and waits until each answers PING; it
# fills the array `nodes` with their URIs and `node_pids` with their pids. Everything is
# stopped (thawed first, in case a script froze a node) and removed when the script exits.

node_dir=$(mktemp -d /tmp/redlock-nodes.XXXXXX)
node_pids=()
nodes=()

stop_nodes() {
  for p in "${node_pids[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill "$p" 2>/dev/null || true
  done
  for p in "${node_pids[@]}"; do
    for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.02; done
  done
  rm -rf "$node_dir"
}
trap stop_nodes EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_nodes() {
  local count=$1 i port
  for ((i = 1; i <= count; i++)); do
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$node_dir" --logfile "$node_dir/redis-$i.log" --daemonize no &
    node_pids+=($!)
    disown $!  # killing a node on purpose must not make the shell report it
    nodes+=("redis://127.0.0.1:$port")
  done
  for n in "${nodes[@]}"; do
    port=${n##*:}
    for _ in $(seq 200); do
      redis-cli -p "$port" ping >/dev/null 2>&1 && break
      sleep 0.05
    done
  done
}

# The node URIs joined with commas.
node_list() { (IFS=,; echo "${nodes[*]}"); }
