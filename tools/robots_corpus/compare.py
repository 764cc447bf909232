#!/usr/bin/env python3
"""Replays the recorded Google verdicts through a robots checker; reports
agreement overall and per family.

    tools/robots_corpus/compare.py --check "build/test/cli/crawlctl robots check" \\
        [--data tests/data/robots/google_verdicts.txt] [--family F]... [--show 5]

--check is the command (split on spaces) that takes `--robots FILE --agent
NAME`, reads URLs on stdin and prints allowed/disallowed per line: crawlctl,
or the oracle's robots_check itself (which must agree 100%). The unit test
tests/unit/robots/google_corpus_test.cc replays the same file through the
library; this script measures the command-line contract end to end.
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", required=True)
    ap.add_argument("--data", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
        "data", "robots", "google_verdicts.txt"))
    ap.add_argument("--family", action="append",
                    help="replay only this family (repeatable)")
    ap.add_argument("--show", type=int, default=3,
                    help="disagreements to print per family")
    args = ap.parse_args()
    check = args.check.split()

    per_family = {}  # name -> [agree, total, [examples]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "robots.txt")
        for case in corpus.read(args.data):
            if args.family and case.family not in args.family:
                continue
            with open(path, "wb") as f:
                f.write(case.body)
            stats = per_family.setdefault(case.family, [0, 0, []])
            for agent, verdicts in case.queries:
                urls = b"".join(u + b"\n" for u, _ in verdicts)
                out = subprocess.run(
                    check + ["--robots", path, "--agent", agent], input=urls,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
                got = out.decode("ascii", "replace").split("\n")[:-1]
                for i, (url, allowed) in enumerate(verdicts):
                    want = "allowed" if allowed else "disallowed"
                    ok = i < len(got) and got[i] == want
                    stats[0] += ok
                    stats[1] += 1
                    if not ok and len(stats[2]) < args.show:
                        stats[2].append((case.body, agent, url, want))
    agree = sum(s[0] for s in per_family.values())
    total = sum(s[1] for s in per_family.values())
    for name, (a, t, examples) in sorted(per_family.items()):
        print("%-18s %6d/%-6d %7.3f%%" % (name, a, t, 100.0 * a / t))
        for body, agent, url, want in examples:
            print("    want %s: agent %s url %s robots %s" % (
                want, corpus.escape(agent), corpus.escape(url),
                corpus.escape(body)[:200]))
    print("%-18s %6d/%-6d %7.3f%%" % ("total", agree, total,
                                      100.0 * agree / total))
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
