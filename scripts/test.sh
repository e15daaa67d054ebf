#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (unit, integration and
# fault tests against redis-server processes the tests start themselves, and a short fuzz
# run of the parsers when clang is installed); then builds the suite again with
# AddressSanitizer + UndefinedBehaviorSanitizer (CMake preset "asan", in build-asan) and
# runs it there too. REDLOCK_TEST_ASAN=0 skips the second pass. Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure --timeout 900 "$@")
if [[ ${REDLOCK_TEST_ASAN:-1} != 0 ]]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan --parallel "$(nproc)"
  ctest --preset asan "$@"
fi
