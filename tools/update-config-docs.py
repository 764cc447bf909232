#!/usr/bin/env python3
"""Regenerates conf/crawler.toml and the key tables of docs/CONFIG.md from
the schema (conf/conf.cc), via `crawld --print-config`.

Usage: tools/update-config-docs.py BUILD_DIR/daemon/crawld
conf_test fails until both files agree with the schema; run this after
adding or changing a key.
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
toml = subprocess.run([sys.argv[1], "--print-config"], check=True,
                      capture_output=True, text=True).stdout
body = toml.split("\n", 2)[2]  # drop the generated one-line header

cfg = root / "conf/crawler.toml"
old = cfg.read_text()
header = old[:old.index("\n[crawl]\n") + 1]
cfg.write_text(header + body)

# Parse the blocks: comment lines (doc, then "type: range."), then key = value.
tables = {}
table = None
comments = []
for line in body.splitlines():
    m = re.match(r"^\[(\w+)\]$", line)
    if m:
        table = m.group(1)
        tables[table] = []
        comments = []
        continue
    if line.startswith("# "):
        comments.append(line[2:])
        continue
    m = re.match(r"^(\w+) = (.*)$", line)
    if m:
        typ, _, rng = comments[-1].partition(": ")
        doc = " ".join(comments[:-1])
        tables[table].append((m.group(1), typ, m.group(2), rng.rstrip("."),
                              doc))
        comments = []

doc_path = root / "docs/CONFIG.md"
doc = doc_path.read_text()
out = []
for name, rows in tables.items():
    lines = [f"### [{name}]", "",
             "| key | type | default | accepted values | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for key, typ, default, rng, meaning in rows:
        lines.append(f"| `{name}.{key}` | {typ} | `{default}` | {rng} | "
                     f"{meaning} |")
    section = "\n".join(lines) + "\n"
    # A table may have a paragraph of prose between its heading and its
    # rows: kept as it is.
    pat = re.compile(r"### \[" + re.escape(name) +
                     r"\]\n\n((?:[^|#\n].*\n)+\n)?(\|.*\n)+")
    m = pat.search(doc)
    if m:
        prose = m.group(1) or ""
        head, _, rows_text = section.partition("\n\n")
        new = head + "\n\n" + prose + rows_text
        doc = doc[:m.start()] + new + doc[m.end():]
    else:
        # A new table goes before [workers], which stays last.
        doc = doc.replace("### [workers]", section + "\n### [workers]", 1)
doc_path.write_text(doc)
