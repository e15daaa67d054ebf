#!/usr/bin/env bash
# Configures and builds into ./build (Release with debug info, warnings as errors).
# Without arguments it builds everything (the library, tests, bench, examples, tools);
# with target names only those and what they need: `bash scripts/build.sh redlock-cli`
# is the demo's build. The configuration is the same either way, so what one built the
# other reuses, and a later full build still builds the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_WERROR=ON >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build --parallel "$(nproc)" "${targets[@]}"
