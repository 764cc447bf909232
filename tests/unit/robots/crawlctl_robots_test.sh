#!/bin/sh
# End-to-end check of `crawlctl robots check` and `robots show`: exact
# per-line output and exit codes. Usage: crawlctl_robots_test.sh CRAWLCTL
set -u
crawlctl=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

if ! "$crawlctl" --help | grep -q '^  robots '; then
  echo "FAIL: $crawlctl was built without the robots command group"
  echo "      (cli/CMakeLists.txt did not compile in cmd_robots.cc)"
  exit 1
fi

cat > "$dir/robots.txt" <<'ROBOTS'
User-agent: *
Disallow: /

User-agent: crawld
Disallow: /private/
Allow: /private/ok
Disallow: *.gif$
bogus line
ROBOTS

printf '%s\n' 'https://example.com/private/x?q=1#frag' '/private/ok' \
  'http://example.com' '/robots.txt' 'https://e.com:8080/a.gif' '/a.gif?x' \
  > "$dir/in"
printf 'disallowed\tline 5: Disallow: /private/\nallowed\tline 6: Allow: /private/ok\nallowed\tdefault\nallowed\tdefault\ndisallowed\tline 7: Disallow: *.gif$\nallowed\tdefault\n' \
  > "$dir/want_why"

check() {  # name, expected exit code, actual exit code
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}

"$crawlctl" robots check --robots "$dir/robots.txt" --agent CrawlD --why \
  < "$dir/in" > "$dir/out" 2> "$dir/err"
check "check --why" 0 $?
cmp -s "$dir/out" "$dir/want_why" || { echo "FAIL check --why output:"; cat "$dir/out"; fail=1; }
grep -q 'line 8: no colon' "$dir/err" || { echo "FAIL diagnostics on stderr"; fail=1; }

"$crawlctl" robots check --robots "$dir/robots.txt" --agent other \
  < "$dir/in" > "$dir/out" 2>/dev/null
check "check other" 0 $?
# /robots.txt is not special (Google's parser): "Disallow: /" covers it.
printf 'disallowed\ndisallowed\ndisallowed\ndisallowed\ndisallowed\ndisallowed\n' > "$dir/want"
cmp -s "$dir/out" "$dir/want" || { echo "FAIL check other output:"; cat "$dir/out"; fail=1; }

"$crawlctl" robots check --robots "$dir/missing.txt" --agent crawld < /dev/null 2>/dev/null
check "missing file" 2 $?
"$crawlctl" robots check --agent crawld < /dev/null 2>/dev/null
check "missing --robots" 2 $?
"$crawlctl" robots check --help > /dev/null
check "check --help" 0 $?
"$crawlctl" robots show 2> "$dir/err"
check "show without URL" 2 $?
grep -q '^robots show: a URL is required$' "$dir/err" || { echo "FAIL show message"; fail=1; }
# Loopback is refused before any connection is made (no server needed).
out=$("$crawlctl" robots show http://127.0.0.1:9/x --timeout-ms 2000)
check "show private" 0 $?
[ "$(echo "$out" | sed -n 2p)" = "outcome: disallow all (unreachable: private address blocked: 127.0.0.1; see --allow-private)" ] || { echo "FAIL show private outcome: $out"; fail=1; }
"$crawlctl" robots show --help > /dev/null
check "show --help" 0 $?
"$crawlctl" robots bogus 2>/dev/null
check "unknown subcommand" 2 $?

[ $fail = 0 ] && echo "crawlctl robots: all checks passed"
exit $fail
