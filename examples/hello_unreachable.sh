#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The README's example, pointed at a node that does not exist, must fail cleanly: say
# why on stderr, exit non-zero, and return once its 5 s wait is over (it shuts its
# client down on failure too) instead of hanging in io.run().
set -uo pipefail
hello=$1
err=$(mktemp /tmp/redlock-hello.XXXXXX)
trap 'rm -f "$err"' EXIT
# Port 1 on loopback: privileged and unused, so connecting is refused at once.
timeout 30 "$hello" redis://127.0.0.1:1 2>"$err"
status=$?
cat "$err"
if [[ $status -eq 124 ]]; then
  echo "hello did not return within 30 s" >&2
  exit 1
fi
if [[ $status -eq 0 ]]; then
  echo "hello exited 0 without a reachable node" >&2
  exit 1
fi
grep -q '^hello: ' "$err" || { echo "hello gave no reason for failing" >&2; exit 1; }
grep -q '127.0.0.1:1' "$err" || { echo "the reason does not name the node" >&2; exit 1; }
echo "hello fails cleanly (exit $status)"
# A configuration typo (one comma-joined list as one argument) is refused by the client's
# constructor: the example says so and exits 1, it does not abort.
timeout 30 "$hello" "redis://127.0.0.1:1,redis://127.0.0.1:2" 2>"$err"
status=$?
cat "$err"
if [[ $status -ne 1 ]]; then
  echo "hello exited $status on a malformed node list, not 1" >&2
  exit 1
fi
grep -q '^hello: ' "$err" || { echo "hello gave no reason for refusing the node list" >&2; exit 1; }
echo "hello refuses a malformed node list cleanly"
