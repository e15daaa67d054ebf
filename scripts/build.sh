#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Configures and builds into ./build (CMake preset "default": optimised, with line tables
# for backtraces and profiles, warnings as errors). Without arguments it builds everything
# (the library, tests, bench, examples, tools); with target names only those and what
# they need: `bash scripts/build.sh redlock-cli` is the demo's build. The configuration is
# the same either way, so what one built the other reuses.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build --preset default --parallel "$(nproc)" "${targets[@]}"
