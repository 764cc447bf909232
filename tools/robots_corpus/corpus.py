"""Reading and writing tests/data/robots/google_verdicts.txt.

The file is plain ASCII so that it diffs and greps well, whatever bytes the
robots.txt files and URLs hold. One record per line, the first character says
which:

    # comment (ignored)
    R <family> <body>   a robots.txt body; the A and + / - lines below use it
    A <agent>           the --agent value; the + / - lines below use it
    +<url>              Google's robots_check says "allowed" for this URL
    -<url>              ... "disallowed"

<body>, <agent> and <url> are escaped: "\\\\" is a backslash, "\\n", "\\r" and
"\\t" are LF, CR and TAB, "\\xHH" is any other byte (upper-case hex), and
"\\{N}" repeats the byte before it N more times (long lines stay short here).
Every other byte is printable ASCII and stands for itself; a space at the end
of a field is written "\\x20". <family> is a word naming what the case probes
(see generate.py). The reader is tests/unit/robots/google_corpus_test.cc.
"""

import re

_RUN = 8  # runs longer than this are written with \{N}


def escape(data: bytes) -> str:
    out = []
    i = 0
    n = len(data)
    while i < n:
        b = data[i]
        j = i + 1
        while j < n and data[j] == b:
            j += 1
        run = j - i
        if b == 0x5C:
            tok = "\\\\"
        elif b == 0x0A:
            tok = "\\n"
        elif b == 0x0D:
            tok = "\\r"
        elif b == 0x09:
            tok = "\\t"
        elif 0x20 <= b < 0x7F:
            tok = chr(b)
        else:
            tok = "\\x%02X" % b
        if run > _RUN:
            out.append(tok + "\\{%d}" % (run - 1))
        else:
            out.append(tok * run)
        i = j
    s = "".join(out)
    if s.endswith(" "):
        k = len(s) - len(s.rstrip(" "))
        s = s[: len(s) - k] + "\\x20" * k
    return s


_TOKEN = re.compile(r"\\(\\|n|r|t|x[0-9A-F]{2}|\{\d+\})")


def unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(ord(c))
            i += 1
            continue
        m = _TOKEN.match(text, i)
        if not m:
            raise ValueError("bad escape at %d: %r" % (i, text[i : i + 8]))
        t = m.group(1)
        if t == "\\":
            out.append(0x5C)
        elif t == "n":
            out.append(0x0A)
        elif t == "r":
            out.append(0x0D)
        elif t == "t":
            out.append(0x09)
        elif t[0] == "x":
            out.append(int(t[1:], 16))
        else:
            out.extend(out[-1:] * int(t[1:-1]))
        i = m.end()
    return bytes(out)


class Case:
    """One robots.txt body, the agents asked about and their verdicts."""

    def __init__(self, family, body):
        self.family = family
        self.body = body
        self.queries = []  # [(agent bytes, [(url bytes, allowed bool)])]


def read(path):
    cases = []
    with open(path, "r", encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            tag = line[0]
            if tag == "R":
                family, _, body = line[2:].partition(" ")
                cases.append(Case(family, unescape(body)))
            elif tag == "A":
                cases[-1].queries.append((unescape(line[2:]), []))
            elif tag in "+-":
                cases[-1].queries[-1][1].append((unescape(line[1:]), tag == "+"))
            else:
                raise ValueError("unknown record %r" % line[:20])
    return cases


def write(path, cases, header):
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for h in header:
            f.write("# " + h + "\n" if h else "#\n")
        for case in cases:
            f.write("R %s %s\n" % (case.family, escape(case.body)))
            for agent, verdicts in case.queries:
                f.write("A %s\n" % escape(agent))
                for url, allowed in verdicts:
                    f.write("%s%s\n" % ("+" if allowed else "-", escape(url)))
