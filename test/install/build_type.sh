#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Configures the project in a scratch directory the way a user who names no build type
# would, and checks that the library is then built optimised (Release): that archive is
# what `cmake --install` ships. A build type given on the command line must be kept.
set -euo pipefail
source_dir=$1
work=$(mktemp -d /tmp/redlock-build-type.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset CMAKE_BUILD_TYPE  # CMake reads a default from the environment
only_library=(-G Ninja -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF
              -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_TOOLS=OFF)

cmake -S "$source_dir" -B "$work/default" "${only_library[@]}" >"$work/default.log"
grep -qx "CMAKE_BUILD_TYPE:STRING=Release" "$work/default/CMakeCache.txt" ||
  { echo "no build type given: expected Release, got:"; grep "^CMAKE_BUILD_TYPE:" "$work/default/CMakeCache.txt"; exit 1; }
grep -q "building Release" "$work/default.log" ||
  { echo "no status message about the chosen build type"; exit 1; }
# Captured first: `grep -q` closing the pipe early would fail ninja under pipefail.
commands=$(ninja -C "$work/default" -t commands redlock)
grep -q -- "-O3" <<<"$commands" || { echo "the library is not compiled with -O3"; exit 1; }

cmake -S "$source_dir" -B "$work/debug" "${only_library[@]}" -DCMAKE_BUILD_TYPE=Debug >/dev/null
grep -qx "CMAKE_BUILD_TYPE:STRING=Debug" "$work/debug/CMakeCache.txt" ||
  { echo "an explicit build type was overridden"; exit 1; }
echo "default build type: ok"
