#!/bin/sh
# `crawlctl links` prints the hyperlinks the oracle (tools/links_oracle)
# recorded for tests/data/links/cli_page.html, line for line; --all adds the
# other outlinks by kind. Usage: crawlctl_links_test.sh CRAWLCTL DATA_DIR
set -u
crawlctl=$1
data=$2
base=http://example.com/dir/page.html
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$crawlctl" links --base "$base" < "$data/cli_page.html" > "$out"; then
  echo "FAIL: crawlctl links exited non-zero"; exit 1
fi
if ! diff -u "$data/cli_page.links" "$out"; then
  echo "FAIL: crawlctl links differs from the oracle's list"; exit 1
fi
"$crawlctl" links --all --base "$base" < "$data/cli_page.html" > "$out"
grep -q '^svg-anchor	http://example.com/svg$' "$out" ||
  { echo "FAIL: --all lacks the SVG anchor"; cat "$out"; exit 1; }
grep -q '^canonical	http://example.com/canonical$' "$out" ||
  { echo "FAIL: --all lacks the canonical link"; cat "$out"; exit 1; }
echo "crawlctl links: ok"
