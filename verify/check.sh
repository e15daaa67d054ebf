#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# One bounded spin check of verify/redlock.pml (or of the model named by MODEL, a file in
# verify/: shared.pml).
#
#   check.sh NAME ok|fail [-DSWITCH[=VALUE] ...]
#
# ok:   passes when pan explored the whole bounded state space and found no error.
# fail: passes when pan found an assertion violation and wrote a trail; the trail is
#       replayed and its printed lines (the story of the counterexample) are shown.
# Anything else fails the check: a search cut short (memory, depth, time), an error
# where none was expected, or none where one was.
#
# Environment: MODEL (default redlock.pml), SPIN (default spin), CC (default cc), VERIFY_WORK (where the pan of
# each check is built; default ./verify-work), PAN_CFLAGS (default -O2), PAN_DEPTH
# (pan -m; default 100000), PAN_MEMLIM (MB; default 4096), PAN_HASH (pan -w, log2 of the
# hash table's slots; default 24, pan's own: the 42-million-state shared_restart ran about
# 20% faster in the suite with 26, for 512 MB of table).
set -uo pipefail

if (($# < 2)); then
  echo "usage: $0 NAME ok|fail [-DSWITCH ...]" >&2
  exit 2
fi
name=$1
expect=$2
shift 2
case $expect in ok | fail) ;; *) echo "expectation must be ok or fail, not '$expect'" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")" && pwd)
spin=${SPIN:-spin}
cc=${CC:-cc}
work=${VERIFY_WORK:-$PWD/verify-work}/$name
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 2
model=${MODEL:-redlock.pml}
cp "$here/$model" .

echo "check $name: expect $expect; switches: ${*:-none}"
if ! "$spin" -a "$@" "$model" > spin.log 2>&1; then
  cat spin.log
  echo "FAIL $name: spin -a refused the model"
  exit 1
fi
# -DSAFETY: safety properties only (assertions, invalid end states); -DNOREDUCE is not
# needed: partial order reduction is sound for these.
if ! "$cc" ${PAN_CFLAGS:--O2} -DSAFETY -DMEMLIM="${PAN_MEMLIM:-4096}" -DVECTORSZ=2048 -o pan pan.c > cc.log 2>&1; then
  cat cc.log
  echo "FAIL $name: pan did not compile"
  exit 1
fi
start=$(date +%s%N)
./pan -m"${PAN_DEPTH:-100000}" -w"${PAN_HASH:-24}" -c1 > pan.log 2>&1
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
grep -E 'errors:|states, stored|transitions|pan: elapsed|assertion violated|Search not completed|MEMLIM|max search depth|invalid end state' pan.log
printf 'wall time %d.%03d s\n' $((ms / 1000)) $((ms % 1000))

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | tail -n 1)
if [[ -z $errors ]]; then
  tail -n 20 pan.log
  echo "FAIL $name: pan did not finish (exit status $status)"
  exit 1
fi

if [[ $expect == ok ]]; then
  if ((errors != 0)); then
    "$spin" -t "$@" "$model" 2>&1 | grep -E '^ *t=|assert' | sed 's/^ *//' | tail -n 40
    echo "FAIL $name: spin found an error where none was expected"
    exit 1
  fi
  if grep -qE 'Search not completed|MEMLIM|max search depth too small' pan.log; then
    echo "FAIL $name: the search was cut short, so it proves nothing"
    exit 1
  fi
  echo "PASS $name: the whole bounded state space holds no violation"
  exit 0
fi

if ((errors == 0)) || [[ ! -s $model.trail ]]; then
  echo "FAIL $name: no counterexample was found, but this switch removes a safeguard"
  exit 1
fi
echo "counterexample (spin -t):"
"$spin" -t "$@" "$model" 2>&1 | grep -E '^ *t=|^ *->|assert' | sed 's/^ *//'
echo "PASS $name: spin found the expected counterexample"
exit 0
