#!/usr/bin/env python3
"""Splits callgrind profiles' self cost (instructions, or any event) by
library and by function: where a crawl's instructions go (issue 16).

callgrind_annotate lists functions but does not sum by shared object; this
reads the callgrind.out format directly (positions, name compression, the
cost line after each `calls=` is inclusive and is skipped) and adds several
files (one per process: the supervisor and each worker) together.

usage: bench/callgrind_split.py [--event Ir] [--pages N] [--top 40]
                                [--group] callgrind.out.*
  --pages N  also print each figure per page (N pages crawled)
  --group    also sum crawld's functions by source folder / component
"""
import argparse
import collections
import os
import re
import sys

# Libraries (by shared-object name) folded under one name; everything in
# the crawld executable is "crawld" and split further by function.
LIBS = [
    ("gumbo", "Gumbo"), ("deflate", "libdeflate"), ("libz.", "zlib"),
    ("libcrypto", "OpenSSL (SHA-1)"), ("libssl", "OpenSSL (TLS)"),
    ("libcurl", "libcurl"), ("libnghttp", "libcurl"), ("libcares", "c-ares"),
    ("libuv", "libuv"), ("libleveldb", "LevelDB"), ("libxxhash", "xxHash"),
    ("libstdc++", "libstdc++"), ("libc.so", "libc"), ("libc-", "libc"),
    ("ld-linux", "ld.so"), ("libre2", "RE2"), ("libidn2", "libidn2"),
    ("libunistring", "libidn2"), ("libsnappy", "LevelDB"),
    ("libgcc", "libgcc"), ("libm.so", "libm"), ("libfmt", "fmt"),
    ("vgpreload", "valgrind preload (malloc)"),
]


def lib_name(ob):
    base = os.path.basename(ob)
    for key, name in LIBS:
        if key in base:
            return name
    if base.startswith("crawld"):
        return "crawld"
    return base or "?"


def parse(path, event, totals_fn, totals_ob, arcs=None, callee_re=None):
    """Adds the self cost of every function of `path` to totals_fn
    ((library, function) -> cost) and totals_ob (library -> cost); with
    `arcs`, also the inclusive cost of every call into a function whose
    name matches callee_re, by (caller, callee)."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    events, idx = None, 0
    ob = fn = cfn = ""
    skip_next = False

    def name(kind, rest):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), "?")

    with open(path, errors="replace") as f:
        for line in f:
            if not line or line[0] == "\n":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    if arcs is not None and callee_re.search(cfn):
                        parts = line.split()
                        if idx + 1 < len(parts):
                            arcs[(fn, cfn)] += int(parts[idx + 1])
                    continue
                parts = line.split()
                # Positions (one: line) first, then the events.
                if idx + 1 < len(parts):
                    v = int(parts[idx + 1])
                    totals_fn[(lib_name(ob), fn)] += v
                    totals_ob[lib_name(ob)] += v
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                if event not in events:
                    sys.exit(f"{path}: no event {event} (has {events})")
                idx = events.index(event)
            elif line.startswith("ob="):
                ob = name("ob", line[3:].strip())
            elif line.startswith("fn="):
                fn = name("fn", line[3:].strip())
            elif line.startswith(("fl=", "fi=", "fe=")):
                name("fl", line[3:].strip())
            elif line.startswith("cob="):
                name("ob", line[4:].strip())
            elif line.startswith("cfn="):
                cfn = name("fn", line[4:].strip())
            elif line.startswith(("cfi=", "cfl=")):
                name("fl", line[4:].strip())
            elif line.startswith("calls="):
                skip_next = True


# crawld's own functions, grouped by what they belong to (demangled names).
GROUPS = [
    (r"crawld::parser::|GumboArena|gumbo_arena", "parser (tree walk, text, "
     "arena)"),
    (r"crawld::dedupe::SimHash|simhash", "dedupe: SimHash"),
    (r"crawld::dedupe::", "dedupe: other (seen set, tables)"),
    (r"crawld::url::", "url: parse, canonicalize"),
    (r"crawld::store::", "store: WARC, CDXJ, feed"),
    (r"crawld::fetcher::", "fetcher"),
    (r"crawld::frontier::", "frontier"),
    (r"crawld::conf::", "conf: rules"),
    (r"crawld::cluster::", "cluster: exchange, ring"),
    (r"crawld::dns::", "dns"),
    (r"crawld::checkpoint::", "checkpoint"),
    (r"crawld::daemon::|Worker::Impl", "daemon: worker"),
    (r"crawld::robots::", "robots"),
    (r"std::|__gnu_cxx|operator new|operator delete", "C++ library inlined"),
]


def group_of(fn):
    for pat, g in GROUPS:
        if re.search(pat, fn):
            return g
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--event", default="Ir")
    ap.add_argument("--pages", type=int, default=0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--group", action="store_true")
    ap.add_argument("--callers", metavar="REGEX",
                    help="also list the callers of the functions matching "
                         "REGEX, by the inclusive cost of their calls")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    by_fn = collections.Counter()
    by_ob = collections.Counter()
    arcs = collections.Counter() if args.callers else None
    callee_re = re.compile(args.callers) if args.callers else None
    for p in args.files:
        parse(p, args.event, by_fn, by_ob, arcs, callee_re)
    total = sum(by_ob.values())

    def row(label, v):
        per = f"  {v / args.pages / 1e3:10.1f} k/page" if args.pages else ""
        print(f"  {v / total * 100:6.2f}%  {v:16,d}{per}  {label}")

    print(f"{args.event} total {total:,d}"
          + (f", {total / args.pages / 1e3:.1f} k per page" if args.pages
             else "") + f", {len(args.files)} file(s)")
    print("by library:")
    for ob, v in by_ob.most_common():
        if v / total >= 0.0005:
            row(ob, v)
    print(f"top {args.top} functions (self):")
    for (ob, fn), v in by_fn.most_common(args.top):
        row(f"{fn} [{ob}]", v)
    if arcs is not None:
        print(f"callers of /{args.callers}/ (inclusive cost of the calls):")
        for (caller, callee), v in arcs.most_common(args.top):
            row(f"{caller[:90]} -> {callee[:60]}", v)
    if args.group:
        groups = collections.Counter()
        for (ob, fn), v in by_fn.items():
            if ob == "crawld":
                groups[group_of(fn)] += v
        print("crawld's own code by component (self):")
        for g, v in groups.most_common():
            row(g, v)


if __name__ == "__main__":
    main()
