#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (unit, integration and
# fault tests against redis-server processes the tests start themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 900 "$@"
