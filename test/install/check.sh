#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs the built library into a temporary prefix, then builds and runs a consumer
# program twice: as a project using find_package(redlock CONFIG), and compiled by hand
# with the flags `pkg-config --cflags --libs redlock` gives.
set -euo pipefail
# A second argument names the sanitizers the library was built with (REDLOCK_SANITIZE):
# the consumer must link their runtimes too. A third, "deb", takes the prefix from the
# Debian package (cpack -G DEB, unpacked with dpkg -x into a scratch root) instead of
# cmake --install.
build_dir=$1
sanitize=${2:-}
from=${3:-install}
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/redlock-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
flags=()
if [[ -n $sanitize ]]; then
  flags=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitize" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize")
fi
if [[ $from == deb ]]; then
  cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/deb" >/dev/null
  dev=("$work"/deb/libredlock-asio-dev_*.deb)
  tool=("$work"/deb/redlock_*.deb)
  [[ -f ${dev[0]} && -f ${tool[0]} ]] || { echo "cpack wrote no libredlock-asio-dev and redlock .deb" >&2; exit 1; }
  for deb in "${dev[0]}" "${tool[0]}"; do
    dpkg-deb --field "$deb" Package Depends
    dpkg -x "$deb" "$work/root"
  done
  # The -dev package lists the -dev packages its headers need; the tool's dependencies
  # are its runtime libraries (dpkg-shlibdeps), not a compiler's headers.
  dpkg-deb --field "${dev[0]}" Depends | grep -q "libboost1.81-dev"
  tool_depends=$(dpkg-deb --field "${tool[0]}" Depends)
  for lib in libc6 libstdc++6 libboost-program-options1.81.0; do
    [[ $tool_depends == *"$lib"* ]] || { echo "the tool package does not depend on $lib: $tool_depends" >&2; exit 1; }
  done
  [[ $tool_depends != *-dev* ]] || { echo "the tool package pulls -dev packages: $tool_depends" >&2; exit 1; }
  # No test hooks among the installed headers.
  if dpkg-deb --contents "${dev[0]}" | grep -q "testing.hpp"; then
    echo "the -dev package installs testing.hpp" >&2
    exit 1
  fi
  ln -s "$work/root/usr" "$work/prefix"
  # The licence is where Debian looks for each package's copyright.
  grep -q "^License: BSL-1.0" "$work/root/usr/share/doc/libredlock-asio-dev/copyright"
  grep -q "^License: BSL-1.0" "$work/root/usr/share/doc/redlock/copyright"
  # The tool is in its package and runs, with its manual page.
  "$work/prefix/bin/redlock" --help | grep -q "^usage: redlock"
  "$work/prefix/bin/redlock" --version | grep -q "^redlock [0-9]"
  MANWIDTH=80 man -l "$work/root/usr/share/man/man1/redlock.1.gz" | grep -q "EXIT STATUS"
else
  cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
fi
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${flags[@]}" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" | grep -q "locked by another owner"

# The same program again, built with nothing but what pkg-config says. The .pc file must
# point into this prefix (not where the build was configured to install), so the
# include directory it names is checked, and the program must link and run.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
includedir=$(pkg-config --variable=includedir redlock)
if [[ $(realpath "$includedir") != $(realpath "$work/prefix/include") ]]; then
  echo "pkg-config's includedir is $includedir, not in the prefix $work/prefix" >&2
  exit 1
fi
read -r -a pc_flags <<<"$(pkg-config --cflags --libs redlock)"
# The language standard is the consumer's to choose (C++20 or later): no -std from us, or
# it would override a -std=c++2b given before it.
if [[ " ${pc_flags[*]} " == *" -std="* ]]; then
  echo "pkg-config --cflags redlock names a language standard: ${pc_flags[*]}" >&2
  exit 1
fi
sanitize_flags=()
[[ -n $sanitize ]] && sanitize_flags=(-fsanitize="$sanitize")
"${CXX:-c++}" -std=c++20 "${sanitize_flags[@]}" "$source_dir/consumer.cpp" -o "$work/pc-consumer" "${pc_flags[@]}"
"$work/pc-consumer" | grep -q "locked by another owner"
echo "$from + find_package + pkg-config: ok"
