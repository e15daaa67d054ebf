#!/usr/bin/env bash
# Configures and builds into ./build (CMake preset "default": optimised, with line tables
# for backtraces and profiles, warnings as errors). Arguments go to the build, so
# `scripts/build.sh --target redlock-cli` builds only the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default --parallel "$(nproc)" "$@"
