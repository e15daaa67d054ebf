#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs the build and test dependencies on Debian 12 (run as root). Idempotent: skips
# apt entirely when everything is already present.
set -euo pipefail
# clang and libclang-rt-14-dev (libFuzzer) build the fuzz targets; without them the fuzz
# tests are skipped, not failed. spin runs the model checks in verify/ (ctest -L verify).
# clang-format: the layout check (CTest clang_format, scripts/check-format.sh).
# libssl-dev and openssl: rediss:// (TLS) and the TLS tests' certificates; iproute2: the
# network-namespace tests (label netns); curl: the http_server example's test. dpkg-dev
# (dpkg-shlibdeps), man-db and groff-base: the Debian packages' check and the manual page.
# Boost.Program_options parses the redlock tool's command line; Boost.JSON writes the
# bench's lines (1.81 packages, as for the rest of Boost: never Debian's default 1.74).
pkgs=(g++ cmake ninja-build pkg-config libboost1.81-dev libboost-test1.81-dev
      libboost-program-options1.81-dev libboost-json1.81-dev libfmt-dev
      redis-server redis-tools libsqlite3-dev python3 clang libclang-rt-14-dev spin
      libssl-dev openssl iproute2 curl clang-format dpkg-dev man-db groff-base gzip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian starts a system redis-server on 6379 when the package is installed; our tests
# and demo start their own on free ports and never use it.
