#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds crawld and runs the whole test
# suite: unit, integration (webfarm + dnsmasq on loopback), seeded fuzz
# drivers under ASan/UBSan with warnings as errors; then every fuzz target
# under libFuzzer (clang) for a bounded time; then smoke-runs the benchmarks
# (built in the ASan tree). Exits non-zero on the first failure.
#
# Knobs: JOBS (parallel build/test jobs, default: nproc),
#        FUZZ_SECONDS (per libFuzzer target, default 10: a smoke run in
#        CI, whose 30 minutes it shares; real fuzzing runs longer, locally),
#        SKIP_FUZZ=1, SKIP_BENCH=1 to leave those stages out locally.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}

# Each stage says when it starts and how far into the run it is: the CI
# budget is 30 minutes on 2 cores, and the log shows where they go.
stage() { echo "== [$(date -u +%T), ${SECONDS}s] $*"; }

bash scripts/setup.sh

stage "build: ASan+UBSan, -Werror (build/test)"
# The benchmarks are built here too (the smoke run below): a separate
# Release tree took 5 of CI's 30 minutes to compile everything again.
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCRAWLD_SANITIZE=ON -DCRAWLD_WERROR=ON -DCRAWLD_BENCHMARKS=ON >/dev/null
cmake --build build/test -j "$JOBS"

stage "tests: unit, integration, fuzz drivers"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# ctest starts the tests it knows to be slow first when it has their
# times; a clean clone has none, and a two-minute test started last ran
# alone at the end. tests/ctest-costs.txt holds the times of a full run
# (scripts/ctest-costs.sh refreshes it); a tree that ran before keeps its own.
costs=build/test/Testing/Temporary/CTestCostData.txt
if [ ! -f "$costs" ] && [ -f tests/ctest-costs.txt ]; then
  mkdir -p "$(dirname "$costs")"
  cp tests/ctest-costs.txt "$costs"
fi
(cd build/test && ctest --output-on-failure -j "$JOBS" --timeout 900)

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  stage "fuzz: libFuzzer, ${FUZZ_SECONDS}s per target (build/fuzz)"
  # Line tables are all a finding's stack trace needs (inlined frames
  # included; OSS-Fuzz builds the same way); full debug info made the
  # stage's compile 30% longer.
  CC=clang-16 CXX=clang++-16 cmake -S . -B build/fuzz -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCRAWLD_FUZZ=ON -DCRAWLD_TESTS=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DCRAWLD_WERROR=ON >/dev/null
  fuzzers=$(cd tests/fuzz && ls ./*_fuzz.cc 2>/dev/null | sed 's|./||; s|\.cc$||')
  # shellcheck disable=SC2086
  cmake --build build/fuzz -j "$JOBS" --target $fuzzers
  # One target per core at a time: each libFuzzer run is single-threaded,
  # so JOBS of them take the wall time of one (the stage took 6 minutes of
  # a 30-minute CI budget one at a time). Each writes its own report; the
  # reports are printed in order once all are done.
  fuzz_one() {
    local f=$1 corpus log a
    corpus=$(mktemp -d)
    cp -r "tests/fuzz/corpus/$f/." "$corpus/" 2>/dev/null || true
    local dict=()
    for d in "tests/fuzz/${f%_fuzz}.dict" "tests/fuzz/$f.dict"; do
      [ -f "$d" ] && dict=(-dict="$d")
    done
    echo "-- $f"
    log="$corpus.log"
    # A finding prints the invariant, the stack and the input (base64); keep
    # all of it on failure so CI's log says what broke.
    # Leaks inside system libraries we cannot fix are suppressed by name
    # (tests/fuzz/lsan.supp says which and why); ours are still reported.
    if ! LSAN_OPTIONS="suppressions=$ROOT/tests/fuzz/lsan.supp" \
      "build/fuzz/tests/fuzz/$f" -max_total_time="$FUZZ_SECONDS" \
      -max_len=65536 -rss_limit_mb=2048 -print_final_stats=0 \
      -artifact_prefix="$corpus/" "${dict[@]}" "$corpus" >"$log" 2>&1; then
      grep -a -v '^#[0-9]' "$log" | tail -n 60
      # The input itself (libFuzzer prints base64 only for small ones), so
      # that the finding can be reproduced from the CI log alone.
      for a in "$corpus"/crash-* "$corpus"/leak-* "$corpus"/timeout-* \
               "$corpus"/oom-*; do
        [ -f "$a" ] || continue
        echo "-- $(basename "$a") ($(wc -c <"$a") bytes), base64:"
        head -c 65536 "$a" | base64 -w 76
      done
      echo "!! $f found a failing input; add it to tests/fuzz/corpus/$f/"
      rm -rf "$corpus" "$log"
      return 1
    fi
    tail -n 1 "$log"
    rm -rf "$corpus" "$log"
  }
  export -f fuzz_one
  export ROOT FUZZ_SECONDS
  reports=$(mktemp -d)
  fuzz_failed=0
  # shellcheck disable=SC2016,SC2086
  printf '%s\n' $fuzzers | xargs -P "$JOBS" -I{} \
    bash -c 'fuzz_one "$1" >"$2/$1.txt" 2>&1' _ {} "$reports" ||
    fuzz_failed=1
  for f in $fuzzers; do cat "$reports/$f.txt"; done
  rm -rf "$reports"
  [ "$fuzz_failed" = 0 ] || exit 1
fi

if [ "${SKIP_BENCH:-0}" != 1 ]; then
  stage "benchmarks: smoke run (build/test, ASan)"
  for b in build/test/bench/*_bench; do
    [ -x "$b" ] || continue
    echo "-- $(basename "$b")"
    # A smoke run proves each benchmark starts and runs, under the
    # sanitizers; figures come from Release builds (docs/BENCHMARKS.md).
    # Left to real runs: fixtures of 1M-10M entries (SpillSteady queues
    # 2M first: 32 s under ASan) and fixed iteration counts in the
    # millions, which take minutes under ASan. parser_bench's 24
    # worst-case shapes (4 MiB hostile pages, about 30 s in all) stay: the
    # sanitizers see each of them parsed.
    "$b" --benchmark_min_time=0.01 \
      --benchmark_filter='-(10M|1M|SpillSteady|StoreContains|StoreInsert|StoreReopen|StoreBloom|StoreFill|HalfHit|FalsePositiveRate|ClaimTableNewBody|Redis|HostRecords/100000|RestoreHosts/100000)' \
      >/dev/null
  done
fi

stage "all tests passed"
