#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# The exit codes `redlock` can return are the codes of cli.md's EXIT STATUS table and of
# the manual page's (docs/redlock.1), no more and no fewer. The tool returns only its
# exit_* constants (tools/redlock/options.hpp) or COMMAND's own status: a bare number
# returned, passed to exit() or added to anywhere in the tool fails this check too, so the
# constants are the whole list. A row "128+N" is the constant 128 plus a signal's number.
# The manual page must also render without warnings and name the project's version.
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
constants=$root/tools/redlock/options.hpp
table=$root/docs/cli.md

binary=$(grep -oE '\bexit_[a-z_]+ = [0-9]+' "$constants" | awk '{print $3}' | sort -n -u)
documented=$(awk '/^## EXIT STATUS/ { inside = 1; next }
                  /^## / { inside = 0 }
                  inside && /^\| [0-9]+(\+N)? \|/ { sub(/\+N/, "", $2); print $2 }' "$table" |
  sort -n -u)
manual=$root/docs/redlock.1
in_manual=$(awk '/^\.SH/ { inside = ($0 == ".SH EXIT STATUS"); next }
                 inside && previous == ".TP" && /^\.B [0-9]/ { sub(/\+N/, "", $2); print $2 }
                 { previous = $0 }' "$manual" | sort -n -u)
status=0
[ -n "$binary" ] || { echo "no exit_* constants found in $constants"; exit 1; }
[ -n "$documented" ] || { echo "no EXIT STATUS table found in $table"; exit 1; }
# The codes a document lists ($2, named $1) against the binary's, both ways.
compare() {
  local code
  for code in $binary; do
    grep -qx "$code" <<<"$2" || { echo "exit $code: returned by redlock, missing from $1"; status=1; }
  done
  for code in $2; do
    grep -qx "$code" <<<"$binary" || { echo "exit $code: in $1, but redlock never returns it"; status=1; }
  done
}
compare "cli.md's table" "$documented"
compare redlock.1 "$in_manual"
# A bare number as an exit status (the watchdog child's _exit(0) is its own process's
# status, read by redlock only, and says so on its line).
bare=$(grep -nE 'return [0-9]|exit\([0-9]+\)|\b[0-9]+ \+ ' "$root"/tools/redlock/*.cpp |
  grep -v 'watchdog' || true)
if [ -n "$bare" ]; then
  echo "a bare exit status in the tool (use an exit_* constant):"
  echo "$bare"
  status=1
fi
# The manual page renders without a warning and names the project's version.
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$manual" 2>&1)
  [ -z "$warnings" ] || { echo "redlock.1: $warnings"; status=1; }
fi
version=$(grep -oE 'project\(redlock VERSION [0-9.]+' "$root/CMakeLists.txt" | awk '{print $3}')
grep -q "^\.TH REDLOCK 1 .* \"redlock-asio $version\"" "$manual" ||
  { echo "redlock.1 does not name version $version in its .TH line"; status=1; }
[ $status = 0 ] && echo "exit codes: $(echo $binary) match cli.md's table and redlock.1"
exit $status
