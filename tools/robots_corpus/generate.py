#!/usr/bin/env python3
"""Generates robots.txt cases and records Google's verdicts for them.

    tools/robots_corpus/generate.py --oracle PATH/robots_check \\
        [--seed 1] [--out tests/data/robots/google_verdicts.txt]

PATH/robots_check is Google's robots.txt parser (github.com/google/robotstxt,
the reference implementation of RFC 9309) behind the contract of
`crawlctl robots check`: `robots_check --robots FILE --agent NAME < urls`
prints one line, "allowed" or "disallowed", per URL line. refresh.sh builds it
and runs this script; see docs/ROBOTS.md.

The cases are random and adversarial: every family below aims at one way in
which a parser can read robots.txt differently from Google's (key spellings,
group boundaries, percent-escapes, wildcards, "$", line ends, BOMs, long
lines, bytes that are not UTF-8, URL forms, ...). Everything is drawn from
one random.Random(seed), so the output is a function of the seed and of this
file: the same command writes the same bytes. Python 3 standard library only.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

# --- vocabulary -------------------------------------------------------------

UA_KEYS = [
    b"User-agent", b"user-agent", b"USER-AGENT", b"User-Agent", b"uSeR-aGeNt",
    b"useragent", b"UserAgent", b"USERAGENT", b"user agent", b"User Agent",
    b"User-agents", b"user-agentx", b"User-agent-foo", b"Useragents",
    b"user agents", b"user_agent", b"User-Agnet", b"user-agen", b"agent",
    b"user  agent", b"User\tagent", b"Usr-agent", b"u", b"user-agent foo",
]
ALLOW_KEYS = [
    b"Allow", b"allow", b"ALLOW", b"AlLoW", b"Allowed", b"Allows",
    b"allowance", b"Alloww", b"Allow-this", b"Alow", b"allo", b"Alllow",
    b"Allow me",
]
DISALLOW_KEYS = [
    b"Disallow", b"disallow", b"DISALLOW", b"dIsAlLoW", b"Disallowed",
    b"Disallows", b"Dissallow", b"dissalow", b"Disalow", b"DISALOW",
    b"Diasllow", b"disallaw", b"Dissallowed", b"Disalowed", b"Disallawed",
    b"Dis-allow", b"Disalloww", b"disallo", b"Disallw", b"Dissalow-x",
    b"Disallow this", b"Diaslow", b"Dissallaw", b"Disallowing",
]
OTHER_KEYS = [
    b"Sitemap", b"sitemap", b"Site-map", b"Sitemaps", b"Crawl-delay",
    b"crawl-delay", b"Crawl-Delay", b"Host", b"Request-rate", b"Noindex",
    b"Clean-param", b"Visit-time", b"X-Robots", b"Comment", b"Foo",
    b"Allow-", b"#Disallow",
]
OTHER_VALUES = [
    b"https://example.com/sitemap.xml", b"10", b"0.5", b"example.com",
    b"1/5", b"/", b"/private", b"", b"abc def",
]
SEPS = [b": ", b": ", b": ", b":", b" : ", b"\t:\t", b" :", b":  ", b" ",
        b"\t", b"  ", b":\x0b", b"\x0c:", b"::", b": :"]
AGENT_VALUES = [
    b"FooBot", b"foobot", b"FOOBOT", b"FooBot/2.1", b"FooBot (compatible)",
    b"Foo Bot", b"foo bar", b"*", b"* ", b"*FooBot", b"*\tFooBot", b"* FooBot",
    b"*foo", b"**", b"Foo*", b"FooBot*", b"", b"googlebot", b"Googlebot",
    b"Googlebot-News", b"googlebot-image/1.0", b"foo_bar", b"FOO_BAR",
    b'"FooBot"', b"\xe3\x83\x84", b"FooBot,BarBot", b"FooBot;", b"1FooBot",
    b"-FooBot", b"Foo-Bot", b"BarBot", b"barbot", b"Bar", b"crawld",
    b"CrawlD/0.1", b"x", b"*\x0bfoo", b"*\x0cfoo", b"foobot\x0b", b"Foo\xffBot",
]
AGENTS = [
    b"FooBot", b"foobot", b"FOOBOT", b"Googlebot", b"googlebot-news",
    b"Googlebot-News", b"foo_bar", b"Foo-Bot", b"BarBot", b"Bar", b"x",
    b"crawld", b"*", b"FooBot/2.1", b"Foo Bot", b"foobot1", b" FooBot",
    b"FooBot ", b"-", b"_", b"Foo", b"\xe3\x83\x84",
]
WORDS = [b"a", b"b", b"ab", b"fish", b"page", b"x", b"dir", b"private",
         b"public", b"img", b"index", b"p", b"q", b"foo", b"bar", b"~user",
         b"A", b"Fish", b"shop", b"cart"]
EXTS = [b".html", b".htm", b".php", b".gif", b".pdf", b"", b"", b""]
HOSTS = [b"http://example.com", b"https://example.com", b"http://foo.bar",
         b"https://user:pw@example.com:8080", b"HTTP://EXAMPLE.COM",
         b"http://example.com:80"]
ESCAPES = [b"%2F", b"%2f", b"%7E", b"%7e", b"%20", b"%41", b"%61", b"%C3%A9",
           b"%c3%a9", b"%E3%83%84", b"%e3%83%84", b"%3F", b"%3f", b"%23",
           b"%24", b"%2A", b"%2a", b"%25", b"%", b"%4", b"%zz", b"%g1",
           b"%*", b"%*1", b"%1*", b"%a*", b"%*a", b"%%41", b"%Aa", b"%aA"]
NON_UTF8 = [b"\xe9", b"\xc3\xa9", b"\xe3\x83\x84", b"\xff", b"\xfe\xff",
            b"\x80", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\x7f",
            b"\x01", b"\x00"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def chance(self, p):
        return self.r.random() < p

    # --- pieces ---

    def segment(self):
        w = self.pick(WORDS)
        if self.chance(0.15):
            w += self.pick(ESCAPES)
        if self.chance(0.05):
            w += self.pick(NON_UTF8).replace(b"\x00", b"")
        return w

    def path(self, depth=None):
        depth = self.r.randint(0, 3) if depth is None else depth
        p = b"/" + b"/".join(self.segment() for _ in range(depth))
        if depth and self.chance(0.3):
            p += self.pick(EXTS)
        if self.chance(0.2):
            p += b"/"
        if self.chance(0.15):
            p += b";" + self.pick(WORDS)
        if self.chance(0.25):
            p += b"?" + self.pick(WORDS) + b"=" + self.pick(WORDS)
        return p

    def pattern(self):
        """A pattern, mostly sensible, sometimes hostile."""
        k = self.r.random()
        if k < 0.45:
            p = self.path()
        elif k < 0.6:
            p = self.path()
            at = self.r.randint(0, len(p))
            p = p[:at] + b"*" + p[at:]
        elif k < 0.68:
            p = b"*" + self.pick(EXTS[:5]) + (b"$" if self.chance(0.6) else b"")
        elif k < 0.75:
            p = self.path() + b"$"
        elif k < 0.8:
            p = self.pick([b"", b"/", b"*", b"$", b"/$", b"*$", b"**", b"/*",
                           b"/**$", b"$$", b"/$$", b"/a$b", b"/a$$"])
        elif k < 0.85:
            p = self.path()[1:]  # no leading slash
        elif k < 0.9:
            p = self.pick(HOSTS) + self.path()
        elif k < 0.95:
            p = self.path() + self.pick(ESCAPES)
        else:
            p = self.path() + self.pick(NON_UTF8).replace(b"\x00", b"")
        return p

    def url_for(self, pattern):
        """A URL that might match `pattern`, or nearly."""
        p = pattern
        if p.startswith(b"http"):
            return p if self.chance(0.5) else self.pick(HOSTS) + p
        anchored = p.endswith(b"$")
        if anchored:
            p = p[:-1]
        parts = p.split(b"*")
        filled = []
        for i, part in enumerate(parts):
            filled.append(part)
            if i + 1 < len(parts):
                filled.append(self.pick([b"", b"x", b"/a/", b"ab.", b"%2A"]))
        p = b"".join(filled)
        k = self.r.random()
        if k < 0.2 and not anchored:
            p += self.pick([b"x", b"/", b"/y", b"?q", b".html", b"$"])
        elif k < 0.3:
            p += self.pick([b"x", b"/", b"?"])
        elif k < 0.4 and len(p) > 1:
            p = p[:-1]
        elif k < 0.5:
            p = p.swapcase()
        elif k < 0.6:
            p = p.replace(b"%", b"%25") if b"%" in p else p.lower()
        elif k < 0.65:
            p = p.upper()
        if not p.startswith(b"/"):
            p = b"/" + p if self.chance(0.7) else p
        return self.host() + p

    def host(self):
        return self.pick(HOSTS) if self.chance(0.85) else self.pick(
            [b"", b"//example.com", b"example.com", b"http:", b"ftp://x"])

    def url(self):
        return self.host() + self.path()

    def line_end(self):
        return self.pick([b"\n"] * 6 + [b"\r\n"] * 3 + [b"\r"])

    def key_line(self, key, value, sep=None):
        if sep is None:
            sep = b": " if self.chance(0.8) else self.pick(SEPS)
        lead = b"" if self.chance(0.85) else self.pick([b" ", b"\t", b"  "])
        trail = b"" if self.chance(0.85) else self.pick([b" ", b"\t", b" \x0b"])
        comment = b"" if self.chance(0.9) else self.pick(
            [b" # note", b"#", b"# Disallow: /"])
        return lead + key + sep + value + trail + comment

    def group(self, agents, nrules, typos=0.1, interleave=0.1):
        lines = []
        for a in agents:
            key = self.pick(UA_KEYS) if self.chance(typos) else b"User-agent"
            lines.append(self.key_line(key, a))
            if self.chance(interleave):
                lines.append(self.other_line())
        for _ in range(nrules):
            if self.chance(0.5):
                key = self.pick(ALLOW_KEYS) if self.chance(typos) else b"Allow"
            else:
                key = (self.pick(DISALLOW_KEYS) if self.chance(typos)
                       else b"Disallow")
            lines.append(self.key_line(key, self.pattern()))
            if self.chance(interleave):
                lines.append(self.other_line())
        return lines

    def other_line(self):
        k = self.r.random()
        if k < 0.6:
            return self.key_line(self.pick(OTHER_KEYS), self.pick(OTHER_VALUES))
        if k < 0.75:
            return b""
        if k < 0.9:
            return self.pick([b"# comment", b"#", b"   ", b"\t"])
        return self.pick([b"junk", b"no colon here", b":", b": /x",
                          b"<html>", b"Disallow /a /b"])

    def join(self, lines, final=None):
        out = b""
        for i, line in enumerate(lines):
            out += line
            if i + 1 < len(lines) or (final if final is not None
                                      else self.chance(0.8)):
                out += self.line_end()
        return out

    def body(self, groups=None, typos=0.1, interleave=0.1):
        lines = []
        if self.chance(0.1):
            lines.append(self.key_line(b"Disallow", self.pattern()))
        for _ in range(self.r.randint(1, 4) if groups is None else groups):
            n_agents = self.r.choice([1, 1, 1, 2, 3])
            agents = [self.pick(AGENT_VALUES) for _ in range(n_agents)]
            lines += self.group(agents, self.r.randint(0, 5), typos, interleave)
            if self.chance(0.3):
                lines.append(b"")
        return lines

    def urls_for(self, body, n):
        """URLs aimed at the patterns in `body`, plus a few generic ones."""
        patterns = []
        for line in body.replace(b"\r", b"\n").split(b"\n"):
            for sep in (b":", b" ", b"\t"):
                if sep in line:
                    v = line.split(sep, 1)[1].split(b"#")[0].strip()
                    if v:
                        patterns.append(v)
                    break
        urls = []
        for _ in range(n):
            if patterns and self.chance(0.75):
                urls.append(self.url_for(self.pick(patterns)))
            else:
                urls.append(self.url())
        return [sanitize_url(u) for u in urls]


def sanitize_url(u):
    # robots_check reads URLs line by line and drops one trailing CR.
    u = u.replace(b"\n", b"%0A")
    while u.endswith(b"\r"):
        u = u[:-1]
    return u


# --- families ----------------------------------------------------------------
# Each returns (body, agents, urls). Agents mostly match the groups' values.

def agents_for(g, body, k=2):
    # The agent named by the first user-agent value most of the time, so that
    # specific groups are exercised; otherwise any agent.
    out = []
    for _ in range(k):
        if g.chance(0.6):
            out.append(g.pick([b"FooBot", b"foobot", b"Googlebot", b"BarBot",
                               b"crawld", b"foo_bar", b"Foo-Bot"]))
        else:
            out.append(g.pick(AGENTS))
    seen = []
    for a in out:
        if a not in seen:
            seen.append(a)
    return seen


def fam_typo_keys(g):
    lines = g.body(typos=0.7, interleave=0.05)
    body = g.join(lines)
    return body, agents_for(g, body), g.urls_for(body, 8)


def fam_missing_colon(g):
    lines = []
    for _ in range(g.r.randint(1, 3)):
        lines.append(g.key_line(g.pick(UA_KEYS[:12]),
                                g.pick(AGENT_VALUES), sep=g.pick(SEPS)))
        for _ in range(g.r.randint(1, 4)):
            key = g.pick([b"Allow", b"Disallow", b"disallow", b"Dissallow",
                          b"Allowed"])
            value = g.pattern()
            if g.chance(0.2):
                value += b" " + g.pattern()
            lines.append(g.key_line(key, value, sep=g.pick(SEPS)))
    body = g.join(lines)
    return body, agents_for(g, body), g.urls_for(body, 8)


def fam_interleaved(g):
    lines = g.body(groups=g.r.randint(2, 5), typos=0.05, interleave=0.5)
    body = g.join(lines)
    return body, agents_for(g, body, 3), g.urls_for(body, 8)


def fam_group_order(g):
    # Many agents and groups, merged groups, "*" fallback, empty groups,
    # rules before any group.
    names = [b"FooBot", b"BarBot", b"*", b"foobot", b"Foo-Bot", b"Googlebot",
             b"crawld", b"* x", b"FooBot/1.0", b"baz"]
    lines = []
    if g.chance(0.3):
        lines.append(b"Disallow: " + g.pattern())
    for _ in range(g.r.randint(2, 7)):
        for _ in range(g.r.choice([1, 1, 2, 3])):
            lines.append(b"User-agent: " + g.pick(names))
            if g.chance(0.15):
                lines.append(g.other_line())
        for _ in range(g.r.choice([0, 1, 2, 3])):
            lines.append(g.pick([b"Allow: ", b"Disallow: "]) + g.pattern())
    body = g.join(lines)
    agents = agents_for(g, body, 3)
    return body, agents, g.urls_for(body, 8)


def fam_pattern_noslash(g):
    lines = [b"User-agent: " + g.pick([b"*", b"FooBot"])]
    lines.append(b"Disallow: /" if g.chance(0.3) else b"Allow: /")
    for _ in range(g.r.randint(1, 4)):
        p = g.pick([g.path()[1:], g.segment(), b"?" + g.pick(WORDS),
                    b"." + g.pick(WORDS), b"a*", b"~x", b";p", b"%2F" +
                    g.pick(WORDS), b"$", b"$/", b"x$"])
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    body = g.join(lines)
    urls = g.urls_for(body, 6) + [b"http://example.com/" + g.segment(),
                                  b"http://example.com/?" + g.pick(WORDS)]
    return body, [b"FooBot", b"other"], urls


def fam_dollar(g):
    lines = [b"User-agent: FooBot"]
    for _ in range(g.r.randint(1, 4)):
        p = g.pick([b"$", b"/$", b"*$", b"/a$", b"/a$b", b"/a$$", b"$$",
                    b"/$a", b"/*$", b"/a*$", b"*.php$", b"/fish$",
                    g.path() + b"$", g.path() + b"$$", b"/$/$", b"/a$*",
                    b"/%24", b"/a%24"])
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    if g.chance(0.5):
        lines.append(b"Disallow: /")
    body = g.join(lines)
    urls = g.urls_for(body, 6) + [b"http://example.com/", b"http://example.com",
                                  b"http://example.com/a$b",
                                  b"http://example.com/a$"]
    return body, [b"FooBot"], urls


def fam_percent_case(g):
    lines = [b"User-agent: *"]
    for _ in range(g.r.randint(1, 5)):
        w = g.pick(WORDS) + g.pick(ESCAPES) + g.pick([b"", g.pick(WORDS)])
        lines.append(g.pick([b"Allow: /", b"Disallow: /"]) + w)
    if g.chance(0.5):
        lines.append(b"Disallow: /")
    body = g.join(lines)
    urls = g.urls_for(body, 8)
    return body, [b"FooBot"], urls


def fam_percent_wildcard(g):
    lines = [b"User-agent: FooBot"]
    for _ in range(g.r.randint(1, 4)):
        p = b"/" + g.pick(WORDS) + g.pick([b"%*", b"%*1", b"%1*", b"%a*",
                                           b"%*a", b"%2*", b"%*F", b"*%2F",
                                           b"%2A", b"%2a", b"*%", b"%%*"])
        p += g.pick([b"", g.pick(WORDS), b"$"])
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    body = g.join(lines)
    return body, [b"FooBot"], g.urls_for(body, 8)


def fam_full_url(g):
    lines = [b"User-agent: *"]
    for _ in range(g.r.randint(1, 4)):
        p = g.pick(HOSTS + [b"//example.com", b"example.com", b"*://x"]) + \
            g.path()
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    if g.chance(0.4):
        lines.append(b"Disallow: /")
    body = g.join(lines)
    return body, [b"FooBot"], g.urls_for(body, 8)


def fam_robots_txt(g):
    lines = [b"User-agent: " + g.pick([b"*", b"FooBot"])]
    for p in g.r.sample([b"/", b"/robots.txt", b"/robots", b"/*.txt$",
                         b"/robots.txt$", b"*", b"/r"], g.r.randint(1, 3)):
        lines.append(g.pick([b"Disallow: ", b"Allow: "]) + p)
    body = g.join(lines)
    urls = [h + t for h, t in [
        (g.pick(HOSTS), b"/robots.txt"), (g.pick(HOSTS), b"/robots.txt?x=1"),
        (g.pick(HOSTS), b"/robots.txt#f"), (g.pick(HOSTS), b"/ROBOTS.TXT"),
        (b"", b"/robots.txt"), (g.pick(HOSTS), b"/robots.txt/x"),
        (g.pick(HOSTS), b"/a/robots.txt")]]
    return body, [b"FooBot"], urls


def fam_agents(g):
    lines = []
    for _ in range(g.r.randint(1, 4)):
        for _ in range(g.r.choice([1, 1, 2])):
            lines.append(g.key_line(b"User-agent", g.pick(AGENT_VALUES)))
        lines.append(b"Disallow: /" + g.pick(WORDS))
        if g.chance(0.5):
            lines.append(b"Allow: /" + g.pick(WORDS) + b"/" + g.pick(WORDS))
    body = g.join(lines)
    agents = g.r.sample(AGENTS, 3)
    return body, agents, g.urls_for(body, 6)


def fam_bom(g):
    lines = g.body(groups=g.r.randint(1, 2), typos=0.0, interleave=0.0)
    body = g.join(lines)
    prefix = g.pick([b"\xef\xbb\xbf", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef",
                     b"\xef\xbb\xbf\xef\xbb\xbf", b"\xbb\xbf", b"\xfe\xff",
                     b"\xff\xfe", b"\xef\xbf\xbf", b"\xef\xbb\xbf\n",
                     b"\xef\xbb\xbf ", b"\xefU", b"\xef\xbbU"])
    if prefix.endswith(b"U"):
        body = prefix[:-1] + body
    else:
        body = prefix + body
    if g.chance(0.2):
        body = body.replace(b"Disallow", b"\xef\xbb\xbfDisallow", 1)
    return body, agents_for(g, body), g.urls_for(body, 6)


def fam_line_ends(g):
    lines = g.body(groups=g.r.randint(1, 3), typos=0.0, interleave=0.2)
    out = b""
    for line in lines:
        out += line + g.pick([b"\n", b"\r", b"\r\n", b"\r\r\n", b"\n\r",
                              b"\n\n", b"\r\r", b"\x0b", b"\x0c", b"\x85",
                              b"\r\n\r\n"])
    if g.chance(0.5):
        out = out.rstrip(b"\r\n")
    return out, agents_for(g, out), g.urls_for(out, 6)


def fam_long_lines(g):
    limit = 2083 * 8 - 1  # the bytes of a line Google reads
    lines = [b"User-agent: FooBot"]
    key = g.pick([b"Disallow: ", b"Allow: ", b"Disallow:", b"disallow:  "])
    room = limit - len(key)
    off = g.pick([-2, -1, 0, 1, 2, 50, 3000])
    stem = b"/x/" + bytes([g.pick(b"ab")]) * (room + off - 3)
    tail = g.pick([b"/qux", b"$", b"*", b"/q$", b"#c"])
    lines.append(key + stem + tail)
    if g.chance(0.5):
        lines.insert(1, b"Disallow: /")
    if g.chance(0.3):
        lines.append(b"# " + b"c" * (limit + g.pick([-5, 0, 5])))
        lines.append(b"Disallow: /after")
    if g.chance(0.3):
        lines[0] = b"User-agent: " + b"F" * (limit + g.pick([-12, -11, 0, 9]))
    body = g.join(lines)
    urls = [b"http://example.com" + stem + t for t in
            [b"", b"/qux", b"/fux", b"x", b"/q"]]
    urls += [b"http://example.com" + stem[:-1], b"http://example.com/after",
             b"http://example.com/x/"]
    return body, [b"FooBot", b"F" * (limit - 12)], urls


def fam_comments(g):
    lines = [b"# start", g.key_line(b"User-agent", g.pick(
        [b"FooBot # me", b"FooBot#me", b"*#", b"# FooBot", b"FooBot"]))]
    for _ in range(g.r.randint(1, 4)):
        p = g.path()
        cut = g.r.randint(0, len(p))
        p = p[:cut] + g.pick([b"#", b" #", b"# ", b"##"]) + p[cut:]
        lines.append(g.pick([b"Allow: ", b"Disallow: ", b"#Disallow: "]) + p)
    lines.append(g.pick([b"#", b"# User-agent: BarBot", b"Disallow: /#x"]))
    body = g.join(lines)
    urls = g.urls_for(body, 6) + [b"http://example.com/a#b",
                                  b"http://example.com#/private"]
    return body, [b"FooBot", b"BarBot"], urls


def fam_non_utf8(g):
    lines = [b"User-agent: " + g.pick([b"*", b"FooBot", b"Foo\xe9Bot",
                                       b"\xff*", b"FooBot\x00x"])]
    for _ in range(g.r.randint(1, 4)):
        p = b"/" + g.pick(WORDS) + g.pick(NON_UTF8) + g.pick([b"", b"x", b"*"])
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    if g.chance(0.4):
        lines.append(g.pick([b"Disallow: /\x00", b"\x00Disallow: /",
                             b"Disallow\x00: /", b"Disallow: /a\x00b"]))
    body = g.join(lines)
    urls = g.urls_for(body, 6)
    urls.append(b"http://example.com/" + g.pick(WORDS) + g.pick(NON_UTF8))
    return body, [b"FooBot"], [sanitize_url(u) for u in urls]


URL_FORMS = [
    b"", b"/", b"http://example.com", b"http://example.com/",
    b"http://example.com?a=1", b"http://example.com;p", b"http://example.com#x",
    b"http://example.com#/a", b"//example.com/a", b"//example.com", b"///a",
    b"////a/b", b"example.com/a", b"example.com", b"/a", b"a", b"?x", b";x",
    b"#x", b"http://example.com//a", b"http://example.com/a//b",
    b"http://example.com/a;p?q#f", b"http://example.com/a?b://c",
    b"/a?b://c", b"a://b", b"://a/b", b"http:/a/b", b"http:a/b",
    b"ftp://example.com/a", b"mailto:x@example.com",
    b"http://user@example.com/a", b"http://example.com:8080/a",
    b"http://[::1]/a", b"http://example.com/a#b?c", b"http://example.com/?",
    b"http://example.com/a?", b"http://example.com/%", b"http://ex;ample.com/a",
    b"http://ex?ample.com/a", b"http://example.com\\a", b"/a b",
    b"http://example.com/a b", b"  http://example.com/a", b"\thttp://x/a",
    b"http://example.com/a\x00b", b"http://example.com/\x00",
    b"HTTP://example.com/A", b"http://example.com/index.html",
    b"http://example.com/a/index.html", b"http://example.com/a/",
    b"//a", b"//", b"/?", b"http://", b"http://x", b"https://x/a/b/c.html",
]


def fam_url_forms(g):
    lines = [b"User-agent: *"]
    for _ in range(g.r.randint(1, 5)):
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + g.pick(
            [b"/", b"/a", b"/$", b"/?", b"/;", b"/a/", b"//", b"/*?", b"/*;",
             b"/a$", b"/x", b"/%00", b"/a b", b"/index.html", b"/a/index.htm",
             b"/*b", b"/a/$"]))
    body = g.join(lines)
    urls = g.r.sample(URL_FORMS, 10)
    return body, [b"FooBot"], [sanitize_url(u) for u in urls]


def fam_longest_match(g):
    lines = [b"User-agent: FooBot"]
    base = g.path(g.r.randint(1, 2))
    for _ in range(g.r.randint(2, 6)):
        k = g.r.random()
        if k < 0.3:
            p = base[: g.r.randint(1, len(base))]
        elif k < 0.5:
            p = base[: g.r.randint(1, len(base))] + b"*"
        elif k < 0.6:
            p = b"/*" + base[g.r.randint(1, len(base)):]
        elif k < 0.7:
            p = base + b"$"
        elif k < 0.85:
            p = g.pick([b"/", b"/*", b"*", b"", b"/index.html",
                        base + b"/index.html", base + b"/index.htm",
                        b"/*/index.html", base + b"/index.html$"])
        else:
            p = g.pattern()
        lines.append(g.pick([b"Allow: ", b"Disallow: "]) + p)
    body = g.join(lines)
    urls = g.urls_for(body, 8) + [b"http://example.com" + base,
                                  b"http://example.com" + base + b"/"]
    return body, [b"FooBot"], urls


def fam_whitespace(g):
    ws = [b" ", b"\t", b"\x0b", b"\x0c", b"  ", b" \t ", b"\xa0"]
    lines = []
    for _ in range(g.r.randint(1, 3)):
        lines.append(g.pick(ws + [b""]) + b"User-agent" + g.pick(ws + [b""]) +
                     b":" + g.pick(ws + [b""]) + g.pick(AGENT_VALUES[:12]) +
                     g.pick(ws + [b""]))
        for _ in range(g.r.randint(1, 3)):
            lines.append(g.pick(ws + [b""]) + g.pick([b"Allow", b"Disallow"]) +
                         g.pick(ws + [b"", b" :"]) + g.pick([b":", b""]) +
                         g.pick(ws + [b""]) + g.pattern() + g.pick(ws + [b""]))
    body = g.join(lines)
    return body, agents_for(g, body), g.urls_for(body, 6)


def fam_empty(g):
    body = g.pick([b"", b"\n", b"\r\n", b"\r", b"   ", b"#", b"# only\n",
                   b"\xef\xbb\xbf", b"\x00", b"User-agent: *", b"User-agent:",
                   b"User-agent: FooBot\n", b"Disallow: /", b"Allow: /\n",
                   b"User-agent: *\nDisallow:", b"User-agent: *\nAllow:",
                   b"User-agent: *\nDisallow:\nAllow:", b"\n\n\n\n",
                   b"User-agent: FooBot\nDisallow: /\nUser-agent:"])
    return body, [g.pick([b"FooBot", b"foobot", b"x"])], [
        g.url() for _ in range(4)] + [b"http://example.com/", b""]


def fam_random(g):
    lines = g.body(typos=0.3, interleave=0.3)
    if g.chance(0.3):
        i = g.r.randint(0, len(lines))
        junk = bytes(g.r.randrange(256) for _ in range(g.r.randint(1, 40)))
        lines.insert(i, junk)
    body = g.join(lines)
    return body, agents_for(g, body, 3), g.urls_for(body, 10)


def fam_big_files(g):
    # Bodies past 500 KiB, which Google's parser reads whole (and so does
    # `crawlctl robots check`); written compactly thanks to runs.
    limit = 500 * 1024
    k = g.r.randrange(4)
    if k == 0:
        body = (b"User-agent: *\n#" + b"#" * (limit + g.r.randint(0, 9000)) +
                b"\nDisallow: /x\n")
    elif k == 1:
        body = (b"User-agent: *\nDisallow: /" + b"a" * (limit + 100) +
                b"\nDisallow: /y\n")
    elif k == 2:
        head = b"User-agent: *\nDisallow: /\n"
        pad = limit - len(head) - g.pick([8, 4, 11, 1])
        body = head + b"#" * (pad - 1) + b"\n" + g.pick(
            [b"Allow: /abc\n", b"Disallow: /private\n"])
    else:
        body = b"\xef\xbb\xbf" + b" " * (limit + 7) + b"User-agent: *\n" + \
            b"\n" * 100 + b"Disallow: /" + b"z" * 20000 + b"\n"
    urls = [b"http://example.com/x", b"http://example.com/y",
            b"http://example.com/abc", b"http://example.com/private",
            b"http://example.com/a", b"http://example.com/" + b"a" * 17000,
            b"http://example.com/" + b"z" * 16700, b"http://example.com/"]
    return body, [b"FooBot"], urls


FAMILIES = [
    # (name, count)
    ("typo_keys", 300), ("missing_colon", 150), ("interleaved", 250),
    ("group_order", 250), ("pattern_noslash", 150), ("dollar", 150),
    ("percent_case", 200), ("percent_wildcard", 120), ("full_url", 120),
    ("robots_txt", 80), ("agents", 200), ("bom", 120), ("line_ends", 150),
    ("long_lines", 24), ("comments", 120), ("non_utf8", 150),
    ("url_forms", 150), ("longest_match", 250), ("whitespace", 150),
    ("empty", 40), ("random", 400), ("big_files", 12),
]


def run_oracle(oracle, body, agent, urls, tmpdir):
    path = os.path.join(tmpdir, "robots.txt")
    with open(path, "wb") as f:
        f.write(body)
    # robots_check takes the agent from argv: no NUL there.
    out = subprocess.run([oracle, "--robots", path, "--agent", agent],
                         input=b"".join(u + b"\n" for u in urls),
                         stdout=subprocess.PIPE, check=True).stdout
    verdicts = out.decode("ascii").split("\n")[:-1]
    if len(verdicts) != len(urls):
        raise RuntimeError("oracle gave %d verdicts for %d URLs" %
                           (len(verdicts), len(urls)))
    return [v == "allowed" for v in verdicts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--oracle", required=True, help="robots_check binary")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", help="also write two bodies per family (not "
                    "big_files) into this folder, as fuzzer seeds")
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
        "data", "robots", "google_verdicts.txt"))
    args = ap.parse_args()

    g = Gen(args.seed)
    cases = []
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, count in FAMILIES:
            fn = globals()["fam_" + name]
            for _ in range(count):
                body, agents, urls = fn(g)
                case = corpus.Case(name, body)
                for agent in agents:
                    verdicts = run_oracle(args.oracle, body, agent, urls, tmp)
                    case.queries.append((agent, list(zip(urls, verdicts))))
                    total += len(urls)
                cases.append(case)
    header = [
        "Google's robots.txt verdicts (github.com/google/robotstxt 22b355f,",
        "robots_check) for generated cases. Written by",
        "tools/robots_corpus/generate.py --seed %d; do not edit by hand." %
        args.seed,
        "Refresh: tools/robots_corpus/refresh.sh (docs/ROBOTS.md).",
        "Format: tools/robots_corpus/corpus.py. %d cases, %d verdicts." %
        (len(cases), total),
    ]
    corpus.write(args.out, cases, header)
    if args.seeds:
        written = {}
        for case in cases:
            n = written.get(case.family, 0)
            if n >= 2 or case.family == "big_files":
                continue
            written[case.family] = n + 1
            name = "google_%s_%d.txt" % (case.family, n)
            with open(os.path.join(args.seeds, name), "wb") as f:
                f.write(case.body)
    print("%s: %d cases, %d verdicts" % (os.path.normpath(args.out),
                                         len(cases), total))


if __name__ == "__main__":
    main()
