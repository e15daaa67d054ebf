#!/usr/bin/env bash
# Configures and builds into ./build (Release with debug info, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_WERROR=ON >/dev/null
cmake --build build --parallel "$(nproc)"
