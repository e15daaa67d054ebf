#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Starts three local redis-server nodes and examples/http_server, fires concurrent
# payment requests with many copies of each order id (curl, in parallel), and checks that
# each order was paid exactly once: one 200 per id, 409 for every other copy, one journal
# line per id, and the server's /metrics agreeing. Then checks 404/405 and a graceful stop.
#
#   examples/http_server.sh [path/to/http_server]
#   ORDERS=150 COPIES=4 PARALLEL=64 examples/http_server.sh   # the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/examples/http_server}
orders=${ORDERS:-150} copies=${COPIES:-4} parallel=${PARALLEL:-64}
source scripts/nodes.sh
server=
# The server too goes when the script ends, whichever way (nodes.sh's trap is replaced).
cleanup() {
  if [[ -n $server ]]; then kill -KILL "$server" 2>/dev/null || true; fi
  stop_nodes
}
trap cleanup EXIT
start_nodes 3

fail() {
  echo "http_server.sh: FAIL: $*" >&2
  # What the server said where it did not answer 200 or 409 (a 503 names each node's vote).
  grep -hv '"result":"\(paid\|already paid\|payment in progress or done\)"' "$node_dir"/bodies/* 2>/dev/null |
    head -3 >&2 || true
  echo "--- server stderr:" >&2
  cat "$node_dir/server.err" >&2 || true
  exit 1
}

# The server prints "listening on http://ADDR:PORT" once it can take locks (it waits out
# the restart guard of the fresh nodes first); read that line from a pipe as it comes.
mkfifo "$node_dir/server.out"
"$bin" --nodes "$(node_list)" --port 0 --journal "$node_dir/payments.journal" \
  --ttl 1000 --max-ttl 1000 --pay-ms 20 >"$node_dir/server.out" 2>"$node_dir/server.err" &
server=$!
exec 3<"$node_dir/server.out"
read -r -t 30 first <&3 || fail "the server did not start"
base=${first#listening on }
[[ $base == http://* ]] || fail "unexpected first line: $first"

# Lock calls won so far (the server's start-up probes), from its metrics.
won_calls() { curl --silent --fail "$base/metrics" | sed -n 's/^redlock_lock_calls_total{outcome="ok"} //p'; }
won_before=$(won_calls) || fail "GET /metrics before the load"

# Every id `copies` times, in random order, in one curl process with `parallel`
# connections in flight.
requests=$node_dir/requests.curl
mkdir "$node_dir/bodies"
n=0
for ((c = 0; c < copies; c++)); do seq -f 'o%g' 1 "$orders"; done | shuf |
  while read -r id; do
    printf 'url = "%s/orders/%s/pay"\noutput = "%s/bodies/%d"\n' "$base" "$id" "$node_dir" $((n++))
  done >"$requests"
started=$(date +%s%N)
curl --silent --no-progress-meter --parallel --parallel-immediate --parallel-max "$parallel" --request POST \
  --write-out '%{http_code} %{url_effective}\n' --config "$requests" >"$node_dir/results" ||
  fail "curl failed"
ms=$((($(date +%s%N) - started) / 1000000))

total=$((orders * copies))
count() { grep -c "^$1 " "$node_dir/results" || true; }
ok=$(count 200) conflict=$(count 409) all=$(wc -l <"$node_dir/results")
echo "$all requests for $orders orders ($copies copies each, $parallel in flight) in $ms ms: $ok x 200, $conflict x 409"
echo "status codes: $(awk '{print $1}' "$node_dir/results" | sort | uniq -c | tr -s " \n" " ")"
((all == total)) || fail "$all responses for $total requests"
((ok == orders)) || fail "$ok payments (200) for $orders orders"
((conflict == total - orders)) || fail "$conflict duplicates refused (409), expected $((total - orders))"
# One 200 per id, and one journal line per id.
dup_ok=$(grep '^200 ' "$node_dir/results" | sed 's|.*/orders/||; s|/pay$||' | sort | uniq -d | wc -l)
((dup_ok == 0)) || fail "$dup_ok orders answered 200 more than once"
lines=$(wc -l <"$node_dir/payments.journal")
paid_twice=$(sort "$node_dir/payments.journal" | uniq -d | wc -l)
((lines == orders && paid_twice == 0)) || fail "journal: $lines lines, $paid_twice orders paid twice"

# The server's own account: metrics that parse as counters and match what curl saw.
metrics=$(curl --silent --fail "$base/metrics") || fail "GET /metrics"
grep -q '^# TYPE redlock_lock_calls_total counter$' <<<"$metrics" || fail "no lock_calls_total family"
# (one more 200: the GET /metrics before the load)
grep -qx "http_server_responses_total{code=\"200\"} $((orders + 1))" <<<"$metrics" || fail "metrics: 200 count"
grep -qx "http_server_responses_total{code=\"409\"} $conflict" <<<"$metrics" || fail "metrics: 409 count"
# Every lock call won during the load paid an order.
won=$(sed -n 's/^redlock_lock_calls_total{outcome="ok"} //p' <<<"$metrics")
((won - won_before == orders)) || fail "metrics: $((won - won_before)) lock calls won for $orders orders"

# Routes and methods.
code() { curl --silent --output /dev/null --write-out '%{http_code}' "$@"; }
[[ $(code "$base/nowhere") == 404 ]] || fail "unknown path is not 404"
[[ $(code --request POST "$base/orders/bad%20id/pay") == 404 ]] || fail "bad id is not 404"
[[ $(code "$base/orders/o1/pay") == 405 ]] || fail "GET of a payment is not 405"
[[ $(code --request POST "$base/metrics") == 405 ]] || fail "POST /metrics is not 405"
[[ $(code --request POST "$base/orders/o1/pay") == 409 ]] || fail "a late duplicate is not 409"

# Graceful stop: exit 0 and say so.
kill -TERM "$server"
status=0
wait "$server" || status=$?
server=
((status == 0)) || fail "the server exited with $status after SIGTERM"
grep -q '^stopped on signal' <&3 || fail "no 'stopped' line after SIGTERM"
echo "http_server.sh: ok"
