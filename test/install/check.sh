#!/usr/bin/env bash
# Installs the built library into a temporary prefix, then builds and runs a consumer
# project with find_package(redlock CONFIG), and checks the pkg-config file.
set -euo pipefail
# A second argument names the sanitizers the library was built with (REDLOCK_SANITIZE):
# the consumer must link their runtimes too.
build_dir=$1
sanitize=${2:-}
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/redlock-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
flags=()
if [[ -n $sanitize ]]; then
  flags=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitize" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize")
fi
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${flags[@]}" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" | grep -q "locked by another owner"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
  pkg-config --cflags --libs redlock | grep -q -- "-lredlock"
echo "install + find_package + pkg-config: ok"
