#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
#
# Checks the Debian packages as a user meets them. Builds them (cpack, in a build
# directory), makes a clean Debian 12 root (debootstrap, minbase), and there installs them
# with apt, which pulls exactly what they declare:
#   1. the tool alone (redlock_*.deb): `redlock --version` and `man redlock` work, and no
#      -dev package came with it;
#   2. the library (libredlock-asio-dev_*.deb) with a compiler: a program builds and runs
#      with find_package(redlock) and with pkg-config.
# Needs root and the Debian mirror; takes a few minutes (the base root is cached in
# /var/cache/redlock-deb). .ci/run keeps the quick check instead (CTest
# debian_package_builds_and_installs, which unpacks the packages without apt).
# Usage: bash scripts/check-deb.sh [BUILD_DIR]   (default: build)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$source_dir/build}")
mirror=${REDLOCK_DEB_MIRROR:-http://deb.debian.org/debian}
cache=/var/cache/redlock-deb
[[ $(id -u) == 0 ]] || { echo "check-deb.sh needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
}

work=$(mktemp -d /var/tmp/redlock-deb.XXXXXX)
root=$work/root
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "== $*"; }

step "packages (cpack)"
cmake --build "$build" --target redlock redlock-cli redlock_manual >/dev/null
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/debs" >/dev/null
dev=$(ls "$work"/debs/libredlock-asio-dev_*.deb)
tool=$(ls "$work"/debs/redlock_*.deb)
for deb in "$dev" "$tool"; do
  echo "$(basename "$deb"): $(dpkg-deb --field "$deb" Depends)"
done

step "a clean Debian 12 root"
mkdir -p "$cache"
if [[ ! -f $cache/bookworm-minbase.tar ]]; then
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >/dev/null
  tar -C "$work/base" -cf "$cache/bookworm-minbase.tar" .
  rm -rf "$work/base"
fi
mkdir "$root"
tar -C "$root" -xf "$cache/bookworm-minbase.tar"
for fs in proc dev dev/pts sys; do
  mount --bind "/$fs" "$root/$fs"
  mounted+=("$root/$fs")
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The man pages are wanted here (a container's dpkg may be told to leave them out).
rm -f "$root"/etc/dpkg/dpkg.cfg.d/excludes "$root"/etc/dpkg/dpkg.cfg.d/docker
cp "$dev" "$tool" "$root/tmp/"
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
in_root apt-get update -qq

step "the tool alone, with apt"
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$tool")" man-db >/dev/null
in_root redlock --version
in_root man -P cat redlock | grep -q "EXIT STATUS" || { echo "man redlock shows no page" >&2; exit 1; }
echo "man redlock: $(in_root man -P cat redlock | sed -n 4p | sed 's/^ *//')"
in_root test -f /usr/share/doc/redlock/copyright
if in_root dpkg -l | grep -q -- "-dev "; then
  echo "installing the tool pulled -dev packages:" >&2
  in_root dpkg -l | grep -- "-dev " >&2
  exit 1
fi

step "the library, with apt, and a program built against it"
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$dev")" g++ cmake \
  ninja-build pkg-config >/dev/null
in_root test -f /usr/share/doc/libredlock-asio-dev/copyright
mkdir -p "$root/tmp/consumer"
cp "$source_dir/test/install/CMakeLists.txt" "$source_dir/test/install/consumer.cpp" "$root/tmp/consumer/"
in_root cmake -S /tmp/consumer -B /tmp/consumer/build -G Ninja >/dev/null
in_root cmake --build /tmp/consumer/build >/dev/null
in_root /tmp/consumer/build/consumer | grep -q "locked by another owner"
in_root sh -c 'c++ -std=c++20 /tmp/consumer/consumer.cpp -o /tmp/pc-consumer $(pkg-config --cflags --libs redlock)'
in_root /tmp/pc-consumer | grep -q "locked by another owner"
echo "check-deb: both packages install with apt in a clean Debian 12 root and work"
