#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# Runs a compiler command on a consumer of the public headers in a mode before C++20 (the
# arguments: the command): it must fail at once, with one error that says C++20 is needed
# (and the missing header that stops the compiler), not pages of errors from what C++17
# lacks.
set -uo pipefail
out=$("$@" -fsyntax-only 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "the headers compiled without C++20"
  exit 1
fi
if ! grep -q "redlock-asio needs C++20: compile with -std=c++20" <<<"$out"; then
  echo "no error says that C++20 is needed:"
  echo "$out" | head -40
  exit 1
fi
errors=$(grep -c "error:" <<<"$out")
if [ "$errors" -gt 2 ]; then
  echo "$errors errors instead of one:"
  echo "$out" | head -40
  exit 1
fi
echo "stopped at: $(grep -m1 'error:' <<<"$out")"
