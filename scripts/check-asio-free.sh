#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Fails, naming the header and the Asio file it reached, when a machine, rule or reader
# header of src/ (*_fsm.hpp, *_decisions.hpp, *_answer.hpp, rules.hpp, and the machines'
# action vocabulary, action.hpp) does not compile on its own or sees Boost.Asio, directly
# or through another header: those parts decide and read, and the drivers alone do I/O. Run by CTest as `machines_without_asio`, with the
# C++ compiler as its argument (default g++).
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${1:-g++}
status=0
count=0
while IFS= read -r header; do
  count=$((count + 1))
  # -H lists every header the translation unit opens, one per line, on stderr.
  if ! trace=$("$cxx" -std=c++20 -fsyntax-only -H -x c++ -I src -I include "$header" 2>&1); then
    echo "check-asio-free: $header does not compile on its own:" >&2
    echo "$trace" | grep -v '^\.' >&2 || true
    status=1
    continue
  fi
  if asio=$(echo "$trace" | grep -m1 'boost/asio'); then
    echo "check-asio-free: $header sees Boost.Asio (${asio##* })" >&2
    status=1
  fi
done < <(find src -name '*_fsm.hpp' -o -name '*_decisions.hpp' -o -name '*_answer.hpp' \
           -o -name 'rules.hpp' -o -name 'action.hpp' | sort)
if [ "$count" -eq 0 ]; then
  echo "check-asio-free: no machine, rule or reader header found under src/" >&2
  exit 1
fi
[ "$status" -eq 0 ] && echo "check-asio-free: $count headers compile on their own without Asio"
exit "$status"
