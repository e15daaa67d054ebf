#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Fails, naming the files and lines, when a C++ file tracked by git is not laid out as
# .clang-format says (clang-format 14, Debian's `clang-format`; scripts/deps.sh installs
# it). Run by CTest as `clang_format`; `git ls-files '*.cpp' '*.hpp' | xargs clang-format -i`
# fixes what it reports.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2
  exit 1
fi
git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run -Werror
echo "check-format: every C++ file is formatted"
