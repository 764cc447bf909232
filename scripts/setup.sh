#!/usr/bin/env bash
# Installs every Debian package that building, testing, the demo and the
# benchmarks need. Idempotent: when everything is present it installs nothing.
# Works as root on a fresh Debian 12 (bookworm); uses sudo otherwise.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-16 libclang-rt-16-dev
  clang-format python3
  # libraries crawld links against
  libcurl4-openssl-dev libc-ares-dev libgumbo-dev libleveldb-dev libssl-dev
  libxxhash-dev libuv1-dev libre2-dev libtomlplusplus-dev libpsl-dev
  libidn2-dev libdeflate-dev zlib1g-dev libhiredis-dev libhttp-parser-dev
  libbrotli-dev libzstd-dev libexpat1-dev
  # plumbing libraries in place of hand-written code: JSON, UTF-8, formatting
  nlohmann-json3-dev libutfcpp-dev libfmt-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev dnsmasq-base redis-server wrk
  openssl procps
  # a real HTTP/2 server over TLS for tests/integration/test_http2.py
  nghttp2-server
  # the web console's browser test (tests/console): Debian's Chromium,
  # driven by playwright-core from npm (tests/console/package-lock.json)
  # with the machine's Node.js
  chromium
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Node packages of the tests, exactly as locked, with the machine's
# Node.js and npm: tests/console (playwright-core; no browser download, the
# test points it at /usr/bin/chromium) and tests/warcio (warcio.js, the
# independent WARC reader of tests/integration). Each is skipped when its
# node_modules was installed from its lock.
for node_dir in console warcio; do
  dir="$(cd "$(dirname "$0")/../tests/$node_dir" && pwd)"
  stamp="$dir/node_modules/.crawld-lock"
  if ! cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null; then
    if ! command -v npm >/dev/null; then
      # A machine without Node.js: Debian's (18 on Debian 12) is enough.
      echo "setup: installing Debian's nodejs and npm for tests/$node_dir"
      export DEBIAN_FRONTEND=noninteractive
      $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
    fi
    echo "setup: npm ci in tests/$node_dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$dir/package-lock.json" "$stamp"
  fi
done
