#!/usr/bin/env bash
# Refreshes tests/ctest-costs.txt from the last full ctest run of build/test
# (scripts/test.sh seeds a clean tree with it, so that ctest -j starts the
# slow tests first). Only the times are kept, not the list of failures.
set -euo pipefail
cd "$(dirname "$0")/.."
src=build/test/Testing/Temporary/CTestCostData.txt
[ -f "$src" ] || { echo "no $src: run the suite first" >&2; exit 1; }
sed '/^---$/,$d' "$src" | sort > tests/ctest-costs.txt
echo "tests/ctest-costs.txt: $(wc -l < tests/ctest-costs.txt) tests"
