#!/usr/bin/env bash
# Builds the Debian package crawld_<version>-1_<arch>.deb: a Release build
# with Debian's hardening flags (dpkg-buildflags, hardening=+all), then
# `cpack -G DEB` (cmake/crawld-package.cmake). Needs the packages of
# scripts/setup.sh (dpkg-dev comes with build-essential).
#
# Usage: packaging/build-deb.sh [BUILD_DIR]     (default: build/deb)
# The last line of stdout is the path of the .deb. JOBS sets the build's
# parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/deb}
JOBS=${JOBS:-$(nproc)}

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
# Debian's flags without -g and -O2: Release sets -O3 and cpack strips the
# binaries anyway.
flags() {
  dpkg-buildflags --get "$1" | tr ' ' '\n' | grep -vxE -- '-g|-O2' |
    tr '\n' ' '
}
CPPFLAGS=$(flags CPPFLAGS)

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCRAWLD_TESTS=OFF -DCRAWLD_BENCHMARKS=OFF -DCRAWLD_SANITIZE=OFF \
  -DCRAWLD_FUZZ=OFF \
  -DCMAKE_C_FLAGS="$CPPFLAGS $(flags CFLAGS)" \
  -DCMAKE_CXX_FLAGS="$CPPFLAGS $(flags CXXFLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(flags LDFLAGS)" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
rm -f "$BUILD"/crawld_*.deb
(cd "$BUILD" && cpack -G DEB >/dev/null)
ls "$BUILD"/crawld_*.deb
