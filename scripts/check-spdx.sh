#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# Every source file of the tree names its licence in its first lines (an SPDX line), and
# the licence itself is at the root. Lists the files that do not and fails; with --add,
# adds the line to them instead, in each file's comment syntax (after a shebang).
set -euo pipefail
add=false
root="$(dirname "$0")/.."
for a in "$@"; do
  if [ "$a" = --add ]; then add=true; else root=$a; fi
done
cd "$root"

[ -f LICENSE_1_0.txt ] || { echo "LICENSE_1_0.txt is missing"; exit 1; }

files() {
  find . -path ./build -prune -o -path './build-*' -prune -o -path ./.git -prune \
    -o -path ./ci -prune -o -path ./test/fuzz/corpus -prune -o -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \
    -o -name '*.lua' -o -name '*.pml' -o -name '*.cmake' -o -name '*.in' \
    -o -name CMakeLists.txt -o -name .clang-format -o -name .gitignore -o -path ./.ci/run \) \
    -print | sort
}

# The comment that starts a line in `file`'s language.
comment_of() {
  case "$1" in
    *.cpp | *.hpp | *.h) echo "//" ;;
    *.lua) echo "--" ;;
    *.pml) echo "/*" ;;
    *) echo "#" ;;
  esac
}

missing=0
while read -r f; do
  if head -n 4 "$f" | grep -q 'SPDX-License-Identifier: BSL-1.0'; then continue; fi
  if ! $add; then
    echo "no SPDX licence line in the first lines of $f"
    missing=$((missing + 1))
    continue
  fi
  c=$(comment_of "$f")
  lines="$c SPDX-License-Identifier: BSL-1.0"
  [ "$c" = "/*" ] && lines="/* SPDX-License-Identifier: BSL-1.0 */"
  tmp=$(mktemp)
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; echo "$lines"; tail -n +2 "$f"; } > "$tmp"
  else
    { echo "$lines"; cat "$f"; } > "$tmp"
  fi
  cat "$tmp" > "$f"  # keeps the file's mode
  rm -f "$tmp"
done < <(files)
[ "$missing" -eq 0 ] || { echo "$missing files without a licence line (scripts/check-spdx.sh --add)"; exit 1; }
