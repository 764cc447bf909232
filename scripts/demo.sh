#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds crawld (Release) and runs a real
# crawl of the bundled webfarm (50 hosts x 100 pages on loopback, names
# resolved by a local dnsmasq), then verifies the WARC files against the
# webfarm's manifest. Extra arguments go to scripts/demo.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCRAWLD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)"
exec python3 scripts/demo.py --build build/release "$@"
