#!/bin/sh
# End-to-end check of `crawlctl sitemap`: exact per-line output, the
# counters on stderr, the JSON object, and exit codes.
# Usage: crawlctl_sitemap_test.sh CRAWLCTL
set -u
crawlctl=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

if ! "$crawlctl" --help | grep -q '^  sitemap '; then
  echo "FAIL: $crawlctl was built without the sitemap command"
  exit 1
fi

check() {  # name, expected exit code, actual exit code
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
same() {  # name, want file, got file
  cmp -s "$2" "$3" || { echo "FAIL $1 output:"; cat "$3"; fail=1; }
}

cat > "$dir/sitemap.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://example.com/docs/a.html</loc><lastmod>2024-05-01</lastmod>
       <changefreq>daily</changefreq><priority>0.8</priority></url>
  <url><loc>http://example.com/docs/b?x=1&amp;y=2</loc></url>
  <url><loc>http://example.com/other/c.html</loc></url>
  <url><loc>http://cdn.example.net/docs/d.html</loc></url>
</urlset>
XML

# Scope from --url: /other/ is outside /docs/, cdn.example.net another host.
"$crawlctl" sitemap "$dir/sitemap.xml" --url http://example.com/docs/sitemap.xml \
  > "$dir/out" 2> "$dir/err"
check "scoped" 1 $?
printf 'http://example.com/docs/a.html\tpage\t2024-05-01T00:00:00Z\tdaily\t0.8\nhttp://example.com/docs/b?x=1&y=2\tpage\t-\t-\t0.5\n' > "$dir/want"
same "scoped" "$dir/want" "$dir/out"
grep -q '^crawlctl sitemap: 4 entries read, 2 admitted, 2 dropped$' "$dir/err" \
  || { echo "FAIL scoped counters:"; cat "$dir/err"; fail=1; }
grep -q '^crawlctl sitemap: other_origin=1 outside_path=1$' "$dir/err" \
  || { echo "FAIL scoped reasons:"; cat "$dir/err"; fail=1; }

# Cross-submitted: cdn.example.net's robots.txt names this sitemap.
"$crawlctl" sitemap "$dir/sitemap.xml" --url http://example.com/docs/sitemap.xml \
  --cross-submitted cdn.example.net > "$dir/out" 2>/dev/null
check "cross-submitted" 1 $?
grep -q '^http://cdn.example.net/docs/d.html	' "$dir/out" \
  || { echo "FAIL cross-submitted host not admitted"; fail=1; }

# No --url: no scope, every entry admitted, exit 0. gzip told by its bytes.
gzip -c "$dir/sitemap.xml" > "$dir/plain-name.xml"
"$crawlctl" sitemap "$dir/plain-name.xml" > "$dir/out" 2> "$dir/err"
check "gzip, no scope" 0 $?
[ "$(wc -l < "$dir/out")" = 4 ] || { echo "FAIL gzip entries:"; cat "$dir/out"; fail=1; }
grep -q '^crawlctl sitemap: format urlset (gzip)$' "$dir/err" \
  || { echo "FAIL gzip format line:"; cat "$dir/err"; fail=1; }

# JSON, on stdin.
"$crawlctl" sitemap - --url http://example.com/docs/sitemap.xml --json \
  < "$dir/sitemap.xml" > "$dir/json"
check "json" 1 $?
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "urlset" and d["gzip"] is False, d
assert [e["url"] for e in d["entries"]] == [
    "http://example.com/docs/a.html", "http://example.com/docs/b?x=1&y=2"], d
a = d["entries"][0]
assert a["lastmod"] == 1714521600 and a["changefreq"] == "daily", a
assert a["priority"] == 0.8 and a["kind"] == "page", a
assert d["entries"][1]["lastmod"] is None, d
c = d["counters"]
assert c["entries"] == 4 and c["admitted"] == 2 and c["dropped"] == 2, c
assert c["outside_path"] == 1 and c["other_origin"] == 1, c
assert d["error"] is None and d["truncated"] is False, d
PY

# Malformed XML: entries before the error, the error with line and column.
printf '<urlset>\n<url><loc>http://example.com/1</loc></url>\n<url><loc>http://example.com/2</loc></oops>\n' > "$dir/bad.xml"
"$crawlctl" sitemap "$dir/bad.xml" --json > "$dir/json"
check "malformed" 1 $?
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert [e["url"] for e in d["entries"]] == ["http://example.com/1"], d
e = d["error"]
assert e["code"] == "corruption" and e["line"] == 3 and e["column"] == 39, e
assert e["message"] == "line 3, column 39: mismatched tag", e
PY

# A gzip bomb (1 GiB of blanks: 16 members of 64 MiB, ~1 MB) is cut at
# --max-bytes; crawlctl stops reading the file there.
head -c 67108864 /dev/zero | tr '\0' ' ' | gzip -c > "$dir/member.gz"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do cat "$dir/member.gz"; done \
  > "$dir/bomb.gz"
"$crawlctl" sitemap "$dir/bomb.gz" --max-bytes 1048576 --json > "$dir/json"
check "bomb" 1 $?
python3 - "$dir/json" "$dir/bomb.gz" <<'PY' || fail=1
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["truncated"] is True and d["gzip"] is True, d
assert d["error"]["code"] == "resource_exhausted", d
assert d["counters"]["bytes_out"] == 1048576, d
assert d["counters"]["bytes_in"] < os.path.getsize(sys.argv[2]), d
PY

# Text sitemap and --max-urls.
printf 'http://example.com/a\nhttp://example.com/b\nhttp://example.com/c\n' > "$dir/s.txt"
"$crawlctl" sitemap "$dir/s.txt" --url http://example.com/s.txt --max-urls 2 \
  > "$dir/out" 2> "$dir/err"
check "text" 1 $?
[ "$(wc -l < "$dir/out")" = 2 ] || { echo "FAIL text entries"; fail=1; }
grep -q '^crawlctl sitemap: over_limit=1$' "$dir/err" \
  || { echo "FAIL text over_limit:"; cat "$dir/err"; fail=1; }

# Usage and I/O errors.
"$crawlctl" sitemap 2>/dev/null
check "no file" 2 $?
"$crawlctl" sitemap "$dir/missing.xml" 2>/dev/null
check "missing file" 2 $?
"$crawlctl" sitemap "$dir/s.txt" --url 'http://[' 2>/dev/null
check "bad --url" 2 $?
"$crawlctl" sitemap "$dir/s.txt" --max-urls x 2>/dev/null
check "bad --max-urls" 2 $?
"$crawlctl" sitemap "$dir/s.txt" --bogus 2>/dev/null
check "unknown option" 2 $?
"$crawlctl" sitemap --help > /dev/null
check "--help" 0 $?

[ $fail = 0 ] && echo "crawlctl sitemap: all checks passed"
exit $fail
