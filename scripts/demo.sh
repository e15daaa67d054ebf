#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The project's demo. Installs dependencies and builds the one program it runs (the
# `redlock` tool, CMake target redlock-cli; not the tests, bench or examples), starts five
# local Redis nodes, and has four workers take turns appending to a shared ledger under
# one distributed lock, with the `redlock` command-line tool. Midway one node is killed and
# another is frozen, then thawed. At the end it prints the evidence: every critical section
# with its fencing token, a check that none overlapped and that the tokens only increased,
# and the faults that happened. Nothing is left behind: the nodes are stopped by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh redlock-cli >/dev/null
source scripts/nodes.sh
start_nodes 5
export REDLOCK_NODES=$(node_list)
export REDLOCK_MAX_TTL=2000   # the fleet's longest TTL (restart guard): fresh nodes wait this long
redlock=$PWD/build/tools/redlock
ledger=$node_dir/ledger.log
faults=$node_dir/faults.log
: > "$ledger"
: > "$faults"
started=$EPOCHREALTIME
stamp() { python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):5.2f}s')" "$EPOCHREALTIME" "$started"; }

echo "== the nodes"
"$redlock" nodes 2>/dev/null
echo
echo "== 4 workers x 6 turns on \"demo:ledger\" (each turn holds the lock 150 ms)"

worker() {
  local name=$1
  for turn in 1 2 3 4 5 6; do
    "$redlock" run --ttl 2000 --wait 30000 demo:ledger -- sh -c '
      echo "enter $REDLOCK_FENCE '"$name"'" >> '"$ledger"'
      sleep 0.15
      echo "leave $REDLOCK_FENCE '"$name"'" >> '"$ledger"'
    ' || echo "$name: turn $turn failed with exit code $?" >> "$faults"
  done
}

workers=()
for w in alpha bravo charlie delta; do
  worker "$w" &
  workers+=($!)
done

# The faults, while the workers run.
sleep 3.5
kill -9 "${node_pids[1]}"
echo "$(stamp) killed node 1 (${nodes[1]#redis://}) with SIGKILL" >> "$faults"
sleep 1
kill -STOP "${node_pids[2]}"
echo "$(stamp) froze node 2 (${nodes[2]#redis://}) with SIGSTOP" >> "$faults"
sleep 2
kill -CONT "${node_pids[2]}"
echo "$(stamp) thawed node 2 with SIGCONT" >> "$faults"

failed=0
for p in "${workers[@]}"; do wait "$p" || failed=1; done

echo
echo "== the ledger: every critical section, in order"
python3 - "$ledger" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = True
inside = None
last_fence = 0
sections = 0
for kind, fence, who in lines:
    fence = int(fence)
    if kind == "enter":
        if inside is not None:
            print(f"  OVERLAP: {who} entered (fence {fence}) while {inside[1]} was inside")
            ok = False
        if fence <= last_fence:
            print(f"  FENCE WENT BACK: {fence} after {last_fence}")
            ok = False
        inside = (fence, who)
        last_fence = fence
    else:
        if inside != (fence, who):
            print(f"  UNMATCHED leave by {who} (fence {fence})")
            ok = False
        else:
            sections += 1
            print(f"  section {sections:2}: fence {fence:3}  {who}")
        inside = None
print()
print(f"  {sections} sections, no overlaps, fencing tokens strictly increasing" if ok and sections == 24
      else f"  {sections} complete sections: CHECK FAILED")
sys.exit(0 if ok and sections == 24 else 1)
PY
check=$?

echo
echo "== the faults"
sed 's/^/  /' "$faults"
echo
left=0
for i in 0 2 3 4; do
  port=${nodes[$i]##*:}
  n=$(redis-cli -p "$port" exists demo:ledger 2>/dev/null || echo 0)
  left=$((left + n))
done
echo "== lock keys left on the live nodes: $left (the nodes are stopped now; nothing persists)"
exit $(( check || failed || left ))
