#!/bin/sh
# Regenerates tests/data/robots/google_verdicts.txt, the verdicts of Google's
# robots.txt parser that tests/unit/robots/google_corpus_test.cc replays, and
# the fuzzer seeds taken from it (tests/fuzz/corpus/robots_fuzz/google_*).
#
#   tools/robots_corpus/refresh.sh [ROBOTS_CHECK]
#
# ROBOTS_CHECK is Google's parser (github.com/google/robotstxt at 22b355f)
# behind the contract of `crawlctl robots check`: `robots_check --robots FILE
# --agent NAME < urls` prints "allowed" or "disallowed" per URL line. Without
# it, $ROBOTS_ORACLE_DIR/build.sh (default /work/shared/oracles/robotstxt)
# builds one into build/robots-oracle. SEED=N picks another corpus (default
# 1). Python 3 standard library only; takes a few minutes (one oracle run
# per file and agent). Then check both sides, which must say 100%:
#   tools/robots_corpus/compare.py --check ROBOTS_CHECK
#   tools/robots_corpus/compare.py --check "build/.../crawlctl robots check"
# See docs/ROBOTS.md.
set -eu
cd "$(dirname "$0")/../.."
oracle=${1:-}
if [ -z "$oracle" ]; then
  src=${ROBOTS_ORACLE_DIR:-/work/shared/oracles/robotstxt}
  oracle=$("$src/build.sh" "$PWD/build/robots-oracle" | tail -n 1)
fi
seeds=tests/fuzz/corpus/robots_fuzz
rm -f "$seeds"/google_*.txt
python3 tools/robots_corpus/generate.py --oracle "$oracle" \
  --seed "${SEED:-1}" --seeds "$seeds"
