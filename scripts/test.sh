#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs dependencies, builds, and runs the whole test suite (unit, integration and
# fault tests against redis-server processes the tests start themselves, the spin model
# checks, and a short fuzz run of the parsers when clang is installed); then builds the
# suite again with AddressSanitizer + UndefinedBehaviorSanitizer (CMake preset "asan", in
# build-asan) and runs it there too. REDLOCK_TEST_ASAN=0 skips the second pass. Arguments
# go to both ctest runs. Ends with the wall time of each phase.
#
# The tests run side by side (REDLOCK_TEST_JOBS, default 4 on two cores: most of them
# wait on servers and timers); each starts its own servers on free ports, and the few
# that cannot share the machine say so in test/CMakeLists.txt (RESOURCE_LOCK).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${REDLOCK_TEST_JOBS:-$(( $(nproc) * 2 ))}
phases=()
phase_start=0
begin() { phase_start=$EPOCHREALTIME; echo "== $1"; }
end() {
  phases+=("$(awk -v a="$phase_start" -v b="$EPOCHREALTIME" -v n="$1" \
    'BEGIN { printf "%-16s %7.1f s", n, b - a }')")
}
report() {
  echo
  echo "== wall time of each phase"
  printf '  %s\n' "${phases[@]}"
}
trap report EXIT

begin packages
bash scripts/deps.sh
end packages

begin build
bash scripts/build.sh
end build

begin suite
(cd build && ctest --output-on-failure --timeout 900 -j "$jobs" "$@")
end suite

if [[ ${REDLOCK_TEST_ASAN:-1} != 0 ]]; then
  begin "sanitizer build"
  cmake --preset asan >/dev/null
  cmake --build --preset asan --parallel "$(nproc)"
  end "sanitizer build"

  begin "sanitizer suite"
  ctest --preset asan -j "$jobs" "$@"
  end "sanitizer suite"
fi
