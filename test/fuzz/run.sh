#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Builds one libFuzzer target with clang and runs it from its seed corpus for a while.
#   run.sh SOURCE_DIR BUILD_DIR TARGET SECONDS
# TARGET is resp or uri. Exits 77 (CTest: skipped) when clang or libFuzzer is missing, and
# non-zero when the fuzzer finds a crash, a leak or undefined behaviour (the input that
# did it is saved as BUILD_DIR/crash-*, and printed).
set -euo pipefail
cxx=${REDLOCK_FUZZ_CXX:-$(command -v clang++ || true)}
if [[ -z $cxx ]]; then
  echo "SKIPPED: clang++ not found (install clang and libclang-rt-14-dev: scripts/deps.sh)"
  exit 77
fi
src=$(realpath "$1") build=$(realpath -m "$2") target=$3 seconds=$4

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "SKIPPED: $cxx cannot link libFuzzer (install libclang-rt-14-dev): $(head -1 "$probe/err")"
  exit 77
fi

cmake -S "$src/test/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=None >/dev/null
cmake --build "$build" --target "fuzz_$target" >/dev/null

# New inputs go to a scratch corpus; the seeds in the tree are read only.
work="$build/corpus-$target"
mkdir -p "$work"
cd "$build"
log="$build/fuzz-$target.log"
status=0
# libFuzzer's own failure code is 77, which CTest takes for "skipped": ask for 1.
"./fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=4096 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
  "$work" "$src/test/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
if ((status != 0)); then
  tail -n 60 "$log"
  exit 1
fi
grep -E '^(#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$log"
