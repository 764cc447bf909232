"""Tests of the webfarm itself (docs/WEBFARM.md), over real loopback sockets.

Crawler tests judge the crawler only by the webfarm's manifest and request
log, so these tests pin the webfarm's contract: determinism, a manifest equal
to what a polite reference crawler (below) finds over live fetches, every
robots variant, traps, redirects, errors, sizes, the log format, DNS through
dnsmasq, protocol errors and self-exit.
"""

import gzip
import http.client
import os
import re
import socket
import struct
import subprocess
import time
import unittest
import urllib.parse
import zlib
from html.parser import HTMLParser

import harness
from harness import Dnsmasq, Webfarm

UA = "crawld-webfarm-test/1.0 (+http://example.invalid/contact)"


def fetch(farm, host, path, method="GET", headers=None, timeout=10.0):
    """One request on a fresh connection to the host's own IP.
    Returns (status, {lowercase header: value}, body bytes)."""
    conn = http.client.HTTPConnection(farm.ip_of(host), farm.port,
                                      timeout=timeout)
    try:
        h = {"Host": host, "User-Agent": UA}
        h.update(headers or {})
        conn.request(method, path, headers=h)
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def raw_exchange(ip, port, data, timeout=5.0):
    """Sends raw bytes, reads until the server closes or `timeout`."""
    with socket.create_connection((ip, port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        except socket.timeout:
            pass
        return b"".join(chunks)


class LinkParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []  # (href, nofollow)
        self.meta_nofollow = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "a" and "href" in a:
            rel = a.get("rel", "").lower().split()
            self.links.append((a["href"], "nofollow" in rel))
        if (tag == "meta" and a.get("name", "").lower() == "robots" and
                "nofollow" in a.get("content", "").lower()):
            self.meta_nofollow = True


def reference_crawl(farm, max_urls=20000, skip_hosts=(), skipped=None):
    """A tiny polite crawler over live fetches: robots.txt first (RFC 9309:
    2xx rules, 3xx followed, 4xx allow all, 5xx or no answer disallow all),
    follows links and redirects, honours meta and rel nofollow, retries
    503/429, and does not expand trap pages (/cal/, /deep/, ?sid=), as the
    manifest contract says. URLs of `skip_hosts` (the link farm, which is
    endless) are not fetched but added to the set `skipped`. Returns
    (fetched URLs, disallowed URLs)."""
    robots = {}

    def rules(host):
        if host in robots:
            return robots[host]
        path, rule = "/robots.txt", None
        for _ in range(5):
            try:
                st, hd, body = fetch(farm, host, path, timeout=2.0)
            except (socket.timeout, TimeoutError, ConnectionError):
                rule = ["/"]
                break
            if st in (301, 302, 303, 307, 308):
                path = urllib.parse.urlsplit(hd["location"]).path
                continue
            if 200 <= st < 300:
                rule = [m.group(1).strip() for m in re.finditer(
                    r"(?im)^disallow:(.*)$", body.decode("latin-1"))
                    if m.group(1).strip()]
            elif 400 <= st < 500:
                rule = []
            else:
                rule = ["/"]
            break
        robots[host] = rule
        return rule

    seen, fetched, disallowed = set(), set(), set()
    queue = list(farm.seeds())
    seen.update(queue)
    while queue and len(fetched) < max_urls:
        url = queue.pop(0)
        u = urllib.parse.urlsplit(url)
        host = u.hostname
        if host in skip_hosts:
            skipped.add(url)
            continue
        path = u.path + ("?" + u.query if u.query else "")
        if any(u.path.startswith(p) for p in rules(host)):
            disallowed.add(url)
            continue
        fetched.add(url)
        for _ in range(5):
            st, hd, body = fetch(farm, host, path)
            if st in (503, 429):
                time.sleep(float(hd.get("retry-after", "1")))
                continue
            break

        def push(target):
            t = urllib.parse.urljoin(url, target)
            if t not in seen:
                seen.add(t)
                queue.append(t)

        if 300 <= st < 400:
            push(hd["location"])
            continue
        if (u.path.startswith("/cal/") or u.path.startswith("/deep/") or
                "sid=" in u.query):
            continue
        if st != 200 or not hd.get("content-type", "").startswith(
                "text/html") or "content-encoding" in hd:
            continue
        p = LinkParser()
        p.feed(body.decode("latin-1"))
        if p.meta_nofollow:
            continue
        for href, nofollow in p.links:
            if not nofollow:
                push(href)
    return fetched, disallowed


ALL_PROFILES = [
    {"hosts": [1], "robots": "disallow", "redirects": ["chain", "loop",
                                                        "cross-host"],
     "errors": ["404", "500", "503", "429"]},
    {"hosts": [2], "robots": "404", "duplicates": True, "nofollow": True,
     "charset": "windows-1252"},
    {"hosts": [3], "robots": "500"},
    {"hosts": [4], "robots": "redirect", "malformed": True,
     "non_html": True, "charset": "shift_jis"},
    {"hosts": [5], "mirror_of": 0, "robots": "crawl-delay",
     "charset": "iso-8859-1"},
    {"hosts": [6], "trap": ["calendar", "deep", "session"], "nofollow": True,
     "malformed": True},
    {"hosts": "7", "robots": "nofile", "large_bytes": 200000,
     "gzip_bomb": True},
]


class Contract(unittest.TestCase):
    """Files, manifest and the reference crawl."""

    def test_files_and_host_addresses(self):
        with Webfarm({"seed": 3, "hosts": 20, "pages": 5, "ips": 4}) as farm:
            self.assertGreater(farm.port, 0)
            hosts = farm.hosts()
            self.assertEqual(len(hosts), 20)
            for i in range(20):
                slot = i % 4
                self.assertEqual(hosts[f"h{i}.farm.test"],
                                 f"127.1.{slot // 250}.{slot % 250 + 1}")
            self.assertEqual(
                farm.seeds(),
                [f"http://h{i}.farm.test:{farm.port}/p/0.html"
                 for i in range(20)])
            m = farm.manifest()
            self.assertEqual(m, sorted(m))
            self.assertEqual(len(m), len(set(m)))
            self.assertEqual(farm.disallowed(), [])
        with Webfarm({"hosts": 3, "pages": 4, "seeds": "first"}) as farm:
            self.assertEqual(farm.seeds(),
                             [f"http://h0.farm.test:{farm.port}/p/0.html"])

    def test_manifest_equals_reference_crawl_allow_all(self):
        cfg = {"seed": 11, "hosts": 6, "pages": 25, "links": 6,
               "cross_host_share": 0.3, "relative_share": 0.6,
               "page_bytes": 1500}
        with Webfarm(cfg) as farm:
            fetched, disallowed = reference_crawl(farm)
            self.assertEqual(sorted(fetched), farm.manifest())
            self.assertEqual(disallowed, set())
            # Every page of every host is reachable from the seeds.
            self.assertEqual(len(farm.manifest()), 6 * 25)

    def test_manifest_equals_reference_crawl_all_profiles(self):
        cfg = {"seed": 5, "hosts": 9, "pages": 15, "links": 5,
               "cross_host_share": 0.2, "relative_share": 0.5,
               "page_bytes": 1200, "profile": ALL_PROFILES}
        with Webfarm(cfg) as farm:
            fetched, disallowed = reference_crawl(farm)
            self.assertEqual(sorted(fetched), farm.manifest())
            self.assertEqual(sorted(disallowed), farm.disallowed())
            m = set(farm.manifest())
            port = farm.port
            u = lambda h, p: f"http://h{h}.farm.test:{port}{p}"
            # Spot checks of what the manifest holds and leaves out.
            self.assertFalse([x for x in m if "h3.farm.test" in x])
            self.assertIn(u(3, "/p/0.html"), farm.disallowed())
            self.assertIn(u(1, "/private/0.html"), farm.disallowed())
            self.assertIn(u(4, "/private/0.html"), farm.disallowed())
            for p in ("/r/chain/0", "/r/chain/2", "/r/target/chain.html",
                      "/r/loop/a", "/r/loop/b", "/e/503/1.html"):
                self.assertIn(u(1, p), m)
            self.assertIn(u(6, "/cal/2024/01/"), m)
            self.assertNotIn(u(6, "/cal/2024/02/"), m)
            self.assertIn(u(6, "/deep/a/"), m)
            self.assertNotIn(u(6, "/deep/a/a/"), m)
            self.assertNotIn(u(2, "/nf/rel/2.html"), m)
            self.assertNotIn(u(2, "/nf/meta/4.html"), m)
            self.assertIn(u(7, "/bomb.html"), m)
            # robots*.txt are never in the manifest.
            self.assertFalse([x for x in m if "/robots" in x])


class Determinism(unittest.TestCase):
    PATHS = [("h0.farm.test", "/p/0.html"), ("h1.farm.test", "/p/7.html"),
             ("h2.farm.test", "/p/3.html"), ("h1.farm.test", "/robots.txt")]
    CFG = {"seed": 42, "hosts": 3, "pages": 10, "page_bytes": 3000,
           "cross_host_share": 0.5,
           "profile": [{"hosts": [1], "malformed": True,
                        "charset": "shift_jis"}]}

    def bodies(self, cfg, port=0):
        with Webfarm(cfg, port=port) as farm:
            out = [fetch(farm, h, p)[2] for h, p in self.PATHS]
            manifest = farm.manifest()
            return farm.port, out, manifest

    def test_same_seed_same_bytes(self):
        port, a, ma = self.bodies(self.CFG)
        # The same port too, so absolute links compare byte for byte.
        _, b, mb = self.bodies(self.CFG, port=port)
        self.assertEqual(a, b)
        self.assertEqual(ma, mb)
        self.assertGreaterEqual(len(a[0]), 3000)

    def test_other_seed_other_bytes(self):
        _, a, _ = self.bodies(self.CFG)
        _, b, _ = self.bodies(dict(self.CFG, seed=43))
        self.assertNotEqual(a[0], b[0])


ROBOTS = {"allow": 0, "disallow": 1, "crawl-delay": 2, "404": 3, "500": 4,
          "timeout": 5, "redirect": 6, "nofile": 7}


class RobotsVariants(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        profiles = [{"hosts": [i], "robots": v} for v, i in ROBOTS.items()]
        profiles[2]["crawl_delay"] = 3
        cls.farm = Webfarm({"hosts": 8, "pages": 4, "profile": profiles})
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def robots(self, variant, path="/robots.txt", timeout=10.0):
        return fetch(self.farm, f"h{ROBOTS[variant]}.farm.test", path,
                     timeout=timeout)

    def test_allow(self):
        st, hd, body = self.robots("allow")
        self.assertEqual(st, 200)
        self.assertTrue(hd["content-type"].startswith("text/plain"))
        self.assertEqual(body, b"User-agent: *\nDisallow:\n")

    def test_disallow_and_private_links(self):
        st, _, body = self.robots("disallow")
        self.assertEqual((st, body), (200, b"User-agent: *\nDisallow: /private/\n"))
        _, _, page = fetch(self.farm, "h1.farm.test", "/p/0.html")
        self.assertIn(b'href="/private/0.html"', page)
        self.assertIn(f"http://h1.farm.test:{self.farm.port}/private/0.html",
                      self.farm.disallowed())
        self.assertEqual(fetch(self.farm, "h1.farm.test",
                               "/private/0.html")[0], 200)

    def test_crawl_delay(self):
        st, _, body = self.robots("crawl-delay")
        self.assertEqual(st, 200)
        self.assertIn(b"Crawl-delay: 3\n", body)

    def test_404_and_nofile_allow_crawling(self):
        for v in ("404", "nofile"):
            self.assertEqual(self.robots(v)[0], 404)
            url = f"http://h{ROBOTS[v]}.farm.test:{self.farm.port}/p/0.html"
            self.assertIn(url, self.farm.manifest())

    def test_500_means_nothing_of_the_host(self):
        self.assertEqual(self.robots("500")[0], 500)
        url = f"http://h4.farm.test:{self.farm.port}/p/0.html"
        self.assertNotIn(url, self.farm.manifest())
        self.assertIn(url, self.farm.disallowed())

    def test_timeout_holds_and_is_logged_when_client_gives_up(self):
        t0 = time.monotonic()
        with self.assertRaises((socket.timeout, TimeoutError)):
            self.robots("timeout", timeout=1.0)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        url = f"http://h5.farm.test:{self.farm.port}/p/0.html"
        self.assertIn(url, self.farm.disallowed())
        reqs = self.farm.wait_requests(lambda rs: any(
            r["host"] == "h5.farm.test" for r in rs))
        r = [r for r in reqs if r["host"] == "h5.farm.test"][0]
        self.assertEqual((r["path"], r["status"], r["bytes"], r["aborted"]),
                         ("/robots.txt", 0, 0, True))

    def test_redirect(self):
        st, hd, _ = self.robots("redirect")
        self.assertEqual(st, 301)
        self.assertEqual(hd["location"],
                         f"http://h6.farm.test:{self.farm.port}/robots-real.txt")
        st, _, body = self.robots("redirect", "/robots-real.txt")
        self.assertEqual((st, body), (200, b"User-agent: *\nDisallow: /private/\n"))
        # robots-real.txt is a robots file too: not in the manifest.
        self.assertFalse([u for u in self.farm.manifest() if "robots" in u])


class Behaviours(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.farm = Webfarm({"seed": 9, "hosts": 6, "pages": 8,
                            "page_bytes": 1000, "profile": ALL_PROFILES[:2] + [
                                {"hosts": [3], "trap": ["calendar", "deep",
                                                        "session"]},
                                {"hosts": [4], "large_bytes": 3000000,
                                 "first_byte_ms": 300,
                                 "gzip_bomb": True, "non_html": True,
                                 "trickle_bytes_per_s": 0},
                                {"hosts": [5], "mirror_of": 0,
                                 "trickle_bytes_per_s": 4000}]})
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def get(self, host, path, **kw):
        return fetch(self.farm, f"h{host}.farm.test", path, **kw)

    def test_redirect_chain_loop_cross_host(self):
        o = f"http://h1.farm.test:{self.farm.port}"
        for src, dst in (("/r/chain/0", "/r/chain/1"),
                         ("/r/chain/1", "/r/chain/2"),
                         ("/r/chain/2", "/r/target/chain.html"),
                         ("/r/loop/a", "/r/loop/b"), ("/r/loop/b", "/r/loop/a")):
            st, hd, _ = self.get(1, src)
            self.assertEqual((st, hd["location"]), (301, o + dst))
        self.assertEqual(self.get(1, "/r/target/chain.html")[0], 200)
        st, hd, _ = self.get(1, "/r/x/1")
        self.assertEqual((st, hd["location"]),
                         (301, f"http://h2.farm.test:{self.farm.port}/p/1.html"))

    def test_errors_and_retry_after(self):
        self.assertEqual(self.get(1, "/e/404/0.html")[0], 404)
        self.assertEqual(self.get(1, "/e/500/1.html")[0], 500)
        for code in (503, 429):
            path = f"/e/{code}/0.html"
            for _ in range(2):
                st, hd, _ = self.get(1, path)
                self.assertEqual((st, hd.get("retry-after")), (code, "1"))
            st, hd, _ = self.get(1, path)
            self.assertEqual(st, 200)
            self.assertNotIn("retry-after", hd)
            self.assertEqual(self.get(1, path)[0], 200)

    def test_calendar_trap_is_endless(self):
        path, seen = "/cal/2024/01/", set()
        for _ in range(40):
            st, _, body = self.get(3, path)
            self.assertEqual(st, 200)
            seen.add(path)
            nxt = [h for h in re.findall(rb'href=["\']?([^"\' >]+)', body)
                   if h.startswith(b"/cal/")]
            path = nxt[-1].decode()
        self.assertEqual(len(seen), 40)
        self.assertEqual(path, "/cal/2027/05/")

    def test_deep_and_session_traps(self):
        path = "/deep/a/"
        for _ in range(30):
            st, _, body = self.get(3, path)
            self.assertEqual(st, 200)
            self.assertIn(b'href="a/"', body)
            path += "a/"
        _, _, root = self.get(3, "/p/0.html")
        path = re.search(rb'href="(/p/\d+\.html\?sid=[0-9a-f]+)"', root)
        path, sids = path.group(1).decode(), set()
        for _ in range(20):
            st, _, body = self.get(3, path)
            self.assertEqual(st, 200)
            sids.add(path.split("sid=")[1])
            path = re.search(rb'href="(/p/\d+\.html\?sid=[0-9a-f]+)"',
                             body).group(1).decode()
        self.assertEqual(len(sids), 20)

    def test_first_byte_delay(self):
        self.get(4, "/p/1.html")
        reqs = self.farm.wait_requests(lambda rs: any(
            r["host"] == "h4.farm.test" and r["path"] == "/p/1.html"
            for r in rs))
        r = [r for r in reqs if r["host"] == "h4.farm.test" and
             r["path"] == "/p/1.html"][-1]
        self.assertGreaterEqual(r["end_us"] - r["start_us"], 300000)

    def test_trickle(self):
        st, _, body = self.get(5, "/p/2.html")
        self.assertEqual(st, 200)
        reqs = self.farm.wait_requests(lambda rs: any(
            r["host"] == "h5.farm.test" and r["path"] == "/p/2.html"
            for r in rs))
        r = [r for r in reqs if r["host"] == "h5.farm.test" and
             r["path"] == "/p/2.html"][-1]
        self.assertEqual(r["bytes"], len(body))
        # 4000 bytes/s: a body of len(body) bytes takes at least this long
        # (lower bound only; ticks of 50 ms send 200 bytes each).
        min_us = (len(body) // 200 - 1) * 50000
        self.assertGreaterEqual(r["end_us"] - r["start_us"], min_us)

    def test_mirror_and_duplicates(self):
        _, _, src = self.get(0, "/p/3.html")
        _, _, mirror = self.get(5, "/p/3.html")
        self.assertEqual(mirror, src.replace(b"h0.farm.test", b"h5.farm.test"))
        _, _, page = self.get(2, "/p/4.html")
        st, _, dup = self.get(2, "/dup/4.html")
        self.assertEqual((st, dup), (200, page))

    def test_nofollow_and_charset(self):
        _, hd, page2 = self.get(2, "/p/2.html")
        self.assertIn(b'href="/nf/rel/2.html" rel="nofollow"', page2)
        _, _, page4 = self.get(2, "/p/4.html")
        self.assertIn(b'<meta name="robots" content="nofollow">', page4)
        self.assertEqual(hd["content-type"], "text/html; charset=windows-1252")
        self.assertIn(b'<meta charset="windows-1252">', page2)
        self.assertTrue(any(b > 0x7F for b in page2))
        self.assertIn("caf\u00e9", page2.decode("windows-1252") +
                      self.get(2, "/p/0.html")[2].decode("windows-1252") +
                      self.get(2, "/p/1.html")[2].decode("windows-1252"))

    def test_large_body_streamed(self):
        st, hd, body = self.get(4, "/large/0.html", timeout=60)
        self.assertEqual(st, 200)
        self.assertEqual(int(hd["content-length"]), 3000000)
        self.assertEqual(len(body), 3000000)
        self.assertEqual(body, fetch(self.farm, "h4.farm.test",
                                     "/large/1.html", timeout=60)[2])
        st, hd, body = self.get(4, "/large/0.html", method="HEAD")
        self.assertEqual((st, hd["content-length"], body), (200, "3000000", b""))

    def test_gzip_bomb(self):
        st, hd, body = self.get(4, "/bomb.html", timeout=60)
        self.assertEqual(st, 200)
        self.assertEqual(hd["content-encoding"], "gzip")
        self.assertEqual(int(hd["content-length"]), len(body))
        self.assertLess(len(body), 2 << 20)  # small on the wire
        self.assertEqual(body[:2], b"\x1f\x8b")
        isize = struct.unpack("<I", body[-4:])[0]
        self.assertEqual(isize, (1 << 30) % (1 << 32))
        d = zlib.decompressobj(wbits=31)
        out = d.decompress(body[:len(body) // 32], 16 << 20)
        self.assertEqual(len(out), 16 << 20)
        self.assertEqual(out.strip(b" "), b"")

    def test_non_html(self):
        types = {"/f/doc.pdf": "application/pdf", "/f/img.png": "image/png",
                 "/f/note.txt": "text/plain; charset=utf-8",
                 "/f/lie.html": "text/html"}
        for path, ctype in types.items():
            st, hd, body = self.get(4, path)
            self.assertEqual((st, hd["content-type"]), (200, ctype))
        self.assertTrue(self.get(4, "/f/doc.pdf")[2].startswith(b"%PDF-"))
        self.assertTrue(self.get(4, "/f/img.png")[2].startswith(b"\x89PNG"))
        self.assertIn(b"\x00", self.get(4, "/f/lie.html")[2])


class Validators(unittest.TestCase):
    """Profile keys change_ms and etag_per_request (docs/WEBFARM.md,
    "Changing pages and validators"): ETag and Last-Modified, real 304s,
    pages that change on a schedule and pages that never do."""

    CHANGE_MS = 1000

    @classmethod
    def setUpClass(cls):
        cls.farm = Webfarm({"seed": 5, "hosts": 2, "pages": 4,
                            "profile": [{"hosts": [0],
                                         "change_ms": cls.CHANGE_MS},
                                        {"hosts": [1],
                                         "etag_per_request": True}]},
                           max_seconds=60)
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def get(self, host, path, **kw):
        return fetch(self.farm, f"h{host}.farm.test", path, **kw)

    def test_a_static_page_answers_304_to_its_validators(self):
        st, hd, body = self.get(0, "/p/1.html")
        self.assertEqual(st, 200)
        etag, lm = hd["etag"], hd["last-modified"]
        for cond in ({"If-None-Match": etag}, {"If-None-Match": "W/" + etag},
                     {"If-None-Match": '"x", ' + etag},
                     {"If-Modified-Since": lm}):
            st, hd2, body2 = self.get(0, "/p/1.html", headers=cond)
            self.assertEqual((st, body2), (304, b""), cond)
            self.assertEqual(hd2["etag"], etag)
            self.assertNotIn("content-length", hd2)
        # If-None-Match decides when present, even with a fresh date.
        st, _, body2 = self.get(0, "/p/1.html", headers={
            "If-None-Match": '"other"', "If-Modified-Since": lm})
        self.assertEqual((st, body2), (200, body))
        st, _, _ = self.get(0, "/p/1.html", headers={
            "If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})
        self.assertEqual(st, 200)
        # The request log names the validators and the answer.
        reqs = self.farm.wait_requests(lambda rs: any(
            r["path"] == "/p/1.html" and r["status"] == 304 for r in rs))
        log = [r for r in reqs if r["path"] == "/p/1.html"
               and r["host"] == "h0.farm.test"]
        self.assertTrue(any(r.get("if_none_match") == etag and
                            r["status"] == 304 for r in log), log)
        self.assertTrue(all(r.get("etag") == etag for r in log), log)

    def test_an_even_page_changes_every_change_ms(self):
        _, hd, body = self.get(0, "/p/2.html")
        time.sleep(self.CHANGE_MS * 1.2 / 1000)
        st, hd2, body2 = self.get(0, "/p/2.html",
                                  headers={"If-None-Match": hd["etag"]})
        self.assertEqual(st, 200)
        self.assertNotEqual(hd2["etag"], hd["etag"])
        self.assertNotEqual(body2, body)
        _, hd3, body3 = self.get(0, "/p/3.html")
        time.sleep(self.CHANGE_MS * 1.2 / 1000)
        _, hd4, body4 = self.get(0, "/p/3.html")
        self.assertEqual((hd4["etag"], body4), (hd3["etag"], body3))

    def test_a_lying_host_sends_a_new_etag_every_time(self):
        _, hd, body = self.get(1, "/p/1.html")
        st, hd2, body2 = self.get(1, "/p/1.html",
                                  headers={"If-None-Match": hd["etag"]})
        self.assertEqual((st, body2), (200, body))
        self.assertNotEqual(hd2["etag"], hd["etag"])


class LinkFarm(unittest.TestCase):
    """The link-farm profile (docs/bench/linkfarm.md, "The webfarm's link
    farm"): dense, closed, endless spam hosts reached by one link; none of
    it in the manifest."""

    CFG = {"seed": 4, "hosts": 9, "pages": 12, "links": 5,
           "cross_host_share": 0.5, "relative_share": 0.5, "page_bytes": 900,
           "profile": [{"hosts": "3-7", "link_farm": True,
                        "link_farm_links": 12},
                       {"hosts": [1], "link_farm_entry": 4,
                        "redirects": "cross-host"},
                       {"hosts": [8], "redirects": "cross-host"}]}
    FARM = {f"h{i}.farm.test" for i in range(3, 8)}

    @classmethod
    def setUpClass(cls):
        cls.farm = Webfarm(cls.CFG)
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def links(self, host, path):
        st, hd, body = fetch(self.farm, host, path)
        self.assertEqual(st, 200, (host, path))
        self.assertTrue(hd["content-type"].startswith("text/html"))
        p = LinkParser()
        p.feed(body.decode("latin-1"))
        return [urllib.parse.urljoin(f"http://{host}:{self.farm.port}{path}",
                                     h) for h, _ in p.links]

    def test_files_seeds_and_manifest_leave_the_farm_out(self):
        farm = self.farm
        self.assertEqual(farm.link_farm_hosts(), self.FARM)
        normal = [0, 1, 2, 8]
        self.assertEqual(farm.seeds(), [farm.url(f"h{i}.farm.test",
                                                 "/p/0.html") for i in normal])
        # The hosts file still names every host (the crawler resolves them).
        self.assertEqual(len(farm.hosts()), 9)
        m = farm.manifest()
        self.assertFalse([u for u in m if "/spam/" in u])
        self.assertFalse([u for u in m
                          if urllib.parse.urlsplit(u).hostname in self.FARM])
        self.assertEqual(len(m), 4 * 12 + 2)  # plus two /r/x/1 redirects

    def test_manifest_equals_reference_crawl_and_one_link_enters(self):
        skipped = set()
        fetched, disallowed = reference_crawl(self.farm, skip_hosts=self.FARM,
                                              skipped=skipped)
        self.assertEqual(sorted(fetched), self.farm.manifest())
        self.assertEqual(disallowed, set())
        entry = self.farm.url("h3.farm.test", "/spam/0.html")
        self.assertEqual(skipped, {entry})
        # Exactly one link in the whole normal web points into the farm, on
        # the configured page; cross-host redirects skip the farm too
        # (h1 -> h2, h8 -> h0, not h8 -> h9 or into h3..h7).
        into = [(u, t) for u in fetched for t in
                (self.links(urllib.parse.urlsplit(u).hostname,
                            urllib.parse.urlsplit(u).path)
                 if "/r/" not in u else [])
                if urllib.parse.urlsplit(t).hostname in self.FARM]
        self.assertEqual(into, [(self.farm.url("h1.farm.test", "/p/4.html"),
                                 entry)])
        st, hd, _ = fetch(self.farm, "h8.farm.test", "/r/x/1")
        self.assertEqual((st, hd["location"]),
                         (301, self.farm.url("h0.farm.test", "/p/1.html")))

    def test_spam_pages_are_dense_closed_and_endless(self):
        host, path = "h3.farm.test", "/spam/0.html"
        seen, cross, total = set(), 0, 0
        for step in range(40):
            links = self.links(host, path)
            self.assertEqual(len(links), 12)
            for t in links:
                u = urllib.parse.urlsplit(t)
                self.assertIn(u.hostname, self.FARM, t)  # closed
                self.assertRegex(u.path, r"^/spam/\d+\.html$")
                cross += u.hostname != host
                total += 1
            seen.add((host, path))
            # Walk to the last link: its id grows ~12x per step until it
            # wraps at 10^15, and every step is a URL not seen before.
            nxt = urllib.parse.urlsplit(links[-1])
            host, path = nxt.hostname, nxt.path
        self.assertEqual(len(seen), 40)
        self.assertGreater(cross / total, 0.75)  # 0.9 expected
        # The largest id answers and its links wrap instead of overflowing.
        links = self.links("h5.farm.test", "/spam/999999999999999.html")
        self.assertIn(self.farm.url("h5.farm.test", "/spam/0.html"), links)
        # Same bytes every time; nothing but /spam/ on a spam host.
        self.assertEqual(fetch(self.farm, "h4.farm.test", "/spam/7.html")[2],
                         fetch(self.farm, "h4.farm.test", "/spam/7.html")[2])
        for p in ("/p/0.html", "/spam/1000000000000000.html", "/spam/01.html",
                  "/spam/x.html"):
            self.assertEqual(fetch(self.farm, "h4.farm.test", p)[0], 404, p)
        self.assertEqual(fetch(self.farm, "h0.farm.test", "/spam/0.html")[0],
                         404)
        self.assertEqual(self.links("h4.farm.test", "/"),
                         [self.farm.url("h4.farm.test", "/spam/0.html")])
        st, _, body = fetch(self.farm, "h4.farm.test", "/robots.txt")
        self.assertEqual((st, body), (200, b"User-agent: *\nDisallow:\n"))

    def test_link_farm_report(self):
        def req(t, host, path):
            return {"host": host, "path": path, "method": "GET",
                    "start_us": t, "end_us": t + 5}
        port, farm = 8, {"s.farm.test"}
        m = ["http://a.farm.test:8/p/0.html", "http://a.farm.test:8/p/1.html"]
        log = [req(40, "a.farm.test", "/p/1.html"),  # completion order
               req(10, "a.farm.test", "/robots.txt"),
               req(20, "a.farm.test", "/p/0.html"),
               req(30, "s.farm.test", "/spam/0.html"),
               req(50, "s.farm.test", "/spam/1.html"),
               req(60, "a.farm.test", "/p/1.html")]
        r = harness.link_farm_report(log, port, m, farm)
        self.assertEqual(
            r, {"missing": [], "total": 6, "farm": 2, "until": 4,
                "farm_until": 1, "share": 0.25, "normal_done_s": 35e-6})
        r = harness.link_farm_report(log[1:4], port, m, farm)
        self.assertEqual((r["missing"], r["share"], r["farm"]),
                         ([m[1]], None, 1))

    def test_bad_link_farm_configs_are_reported(self):
        bad = [
            ("hosts = 2\n[[profile]]\nhosts = \"0-1\"\nlink_farm = true\n",
             "at least one host"),
            ("hosts = 2\n[[profile]]\nhosts = 0\nlink_farm_entry = 1\n",
             "needs a link_farm host"),
            ("hosts = 2\npages = 3\n[[profile]]\nhosts = 1\n"
             "link_farm = true\n[[profile]]\nhosts = 0\n"
             "link_farm_entry = 3\n", "link_farm_entry must be a page"),
            ("hosts = 2\n[[profile]]\nhosts = 1\nlink_farm = true\n"
             "link_farm_entry = 0\n", "must be on a normal host"),
            ("hosts = 3\n[[profile]]\nhosts = 1\nlink_farm = true\n"
             "[[profile]]\nhosts = 2\nmirror_of = 1\n", "mirror_of"),
            ("hosts = 2\n[[profile]]\nhosts = 1\n"
             "link_farm_cross_share = 1.5\n", "farm.toml:4"),
            ("hosts = 2\n[[profile]]\nhosts = 1\nlink_farm_links = 0\n",
             "farm.toml:4"),
        ]
        for text, want in bad:
            with self.assertRaises(RuntimeError, msg=text) as ctx:
                with Webfarm(text):
                    pass
            self.assertIn(want, str(ctx.exception), text)


class Protocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.farm = Webfarm({"hosts": 3, "pages": 5, "ips": 2})
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def test_unknown_host_is_404(self):
        st, _, body = fetch(self.farm, "h1.farm.test", "/p/0.html",
                            headers={"Host": "nowhere.example"})
        self.assertEqual((st, body), (404, b"unknown host\n"))
        st, _, _ = fetch(self.farm, "h1.farm.test", "/nope.html")
        self.assertEqual(st, 404)

    def test_garbage_is_400_and_closes(self):
        for data in (b"GARBAGE\r\n\r\n", b"\x00\x01\x02 hello\r\n",
                     b"GET /p/0.html HTTP/1.1\r\nHost: h0.farm.test\r\n"
                     b"bad header line\r\n\r\n",
                     b"GET /p/0.html HTTP/1.1\r\n\r\n"):  # no Host
            resp = raw_exchange("127.0.0.1", self.farm.port, data)
            self.assertTrue(resp.startswith(b"HTTP/1.1 400 "), resp[:80])
            self.assertIn(b"Connection: close", resp)

    def test_405_keeps_the_connection_and_http10_closes(self):
        data = (b"POST /p/0.html HTTP/1.1\r\nHost: h0.farm.test\r\n"
                b"Content-Length: 5\r\n\r\nhello"
                b"GET /p/0.html HTTP/1.1\r\nHost: h0.farm.test\r\n"
                b"Connection: close\r\n\r\n")
        resp = raw_exchange("127.0.0.1", self.farm.port, data)
        self.assertTrue(resp.startswith(b"HTTP/1.1 405 "), resp[:80])
        self.assertIn(b"Allow: GET, HEAD\r\n", resp)
        self.assertEqual(resp.count(b"HTTP/1.1 200 OK"), 1)
        # HTTP/1.0 without keep-alive: answered, then closed by the server
        # (raw_exchange returns at EOF, not at its timeout).
        t0 = time.monotonic()
        resp = raw_exchange("127.0.0.1", self.farm.port,
                            b"GET /p/1.html HTTP/1.0\r\nHost: h0.farm.test"
                            b"\r\n\r\n", timeout=20)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertTrue(resp.startswith(b"HTTP/1.1 200 OK"))
        self.assertIn(b"Connection: close", resp)

    def test_oversized_head_is_431(self):
        data = (b"GET /p/0.html HTTP/1.1\r\nHost: h0.farm.test\r\nX: " +
                b"a" * 40000 + b"\r\n\r\n")
        resp = raw_exchange("127.0.0.1", self.farm.port, data)
        self.assertTrue(resp.startswith(b"HTTP/1.1 431 "), resp[:80])

    def test_pipelining_and_keep_alive(self):
        req = (b"GET /p/%d.html HTTP/1.1\r\nHost: h1.farm.test\r\n"
               b"User-Agent: pipe\r\n\r\n")
        data = req % 0 + req % 1 + (b"HEAD /p/2.html HTTP/1.1\r\nHost: "
                                     b"h1.farm.test\r\nUser-Agent: pipe\r\n"
                                     b"Connection: close\r\n\r\n")
        resp = raw_exchange(self.farm.ip_of("h1.farm.test"), self.farm.port,
                            data)
        self.assertEqual(resp.count(b"HTTP/1.1 200 OK"), 3)
        bodies = [fetch(self.farm, "h1.farm.test", f"/p/{i}.html")[2]
                  for i in (0, 1)]
        self.assertIn(bodies[0] + b"HTTP/1.1 200 OK", resp)
        self.assertTrue(resp.endswith(b"\r\n\r\n"))  # HEAD: no body
        reqs = self.farm.wait_requests(lambda rs: len(
            [r for r in rs if r["ua"] == "pipe"]) == 3)
        pipe = [r for r in reqs if r["ua"] == "pipe"]
        self.assertEqual([r["path"] for r in pipe],
                         ["/p/0.html", "/p/1.html", "/p/2.html"])
        self.assertEqual(len({r["conn"] for r in pipe}), 1)
        self.assertEqual(pipe[2]["method"], "HEAD")
        self.assertEqual(pipe[2]["bytes"], 0)
        # In order and never overlapping on the connection.
        for a, b in zip(pipe, pipe[1:]):
            self.assertLessEqual(a["end_us"], b["start_us"])

    def test_log_fields(self):
        before = time.time_ns() // 1000
        st, hd, body = fetch(self.farm, "h2.farm.test", "/p/3.html")
        after = time.time_ns() // 1000
        self.assertEqual(st, 200)
        reqs = self.farm.wait_requests(lambda rs: any(
            r["path"] == "/p/3.html" and r["host"] == "h2.farm.test"
            for r in rs))
        r = [r for r in reqs if r["path"] == "/p/3.html" and
             r["host"] == "h2.farm.test"][-1]
        self.assertEqual(set(r), {"host", "ip", "port", "method", "path",
                                  "start_us", "end_us", "status", "bytes",
                                  "conn", "ua"})
        self.assertEqual(r["ip"], self.farm.ip_of("h2.farm.test"))
        self.assertEqual(r["ip"], "127.1.0.1")  # ips = 2: h2 shares h0's
        self.assertEqual((r["port"], r["method"], r["status"], r["ua"]),
                         (self.farm.port, "GET", 200, UA))
        self.assertEqual(r["bytes"], len(body))
        self.assertLessEqual(before, r["start_us"])
        self.assertLessEqual(r["start_us"], r["end_us"])
        # start_us precedes the response, so the client saw it before
        # `after`; end_us (the uv_write callback) may run after the client
        # has already read the bytes, so it has no upper bound here.
        self.assertLessEqual(r["start_us"], after)
        self.assertIsInstance(r["conn"], int)

    def test_checkers(self):
        reqs = [
            {"host": "a", "ip": "1", "start_us": 0, "end_us": 10},
            {"host": "a", "ip": "1", "start_us": 15, "end_us": 20},
            {"host": "b", "ip": "1", "start_us": 5, "end_us": 30},
            {"host": "c", "ip": "2", "start_us": 10, "end_us": 12},
        ]
        self.assertEqual(harness.max_in_flight_per_host(reqs),
                         {"a": 1, "b": 1, "c": 1})
        self.assertEqual(harness.max_in_flight_per_ip(reqs), {"1": 2, "2": 1})
        self.assertEqual(harness.min_gap_per_host(reqs),
                         {"a": 5, "b": None, "c": None})
        self.assertEqual(harness.first_request_per_host(reqs)["a"]["end_us"],
                         10)


class Processes(unittest.TestCase):
    def test_dnsmasq_answers_farm_names(self):
        with Webfarm({"hosts": 40, "pages": 2, "ips": 30}) as farm:
            with Dnsmasq(farm.hosts_file) as dns:
                self.assertTrue(dns.server.startswith("127.0.0.1:"))
                self.assertEqual(dns.resolve("h0.farm.test"), ["127.1.0.1"])
                self.assertEqual(dns.resolve("h33.farm.test"), ["127.1.0.4"])
                self.assertEqual(dns.resolve("h39.farm.test"),
                                 [farm.ip_of("h39.farm.test")])
                self.assertEqual(dns.resolve("h40.farm.test"), [])
            self.assertIsNotNone(dns.proc.poll())

    def test_max_seconds_self_exit_and_sigterm(self):
        with Webfarm({"hosts": 1, "pages": 1}, max_seconds=1) as farm:
            fetch(farm, "h0.farm.test", "/p/0.html")
            farm.proc.wait(timeout=30)
            self.assertEqual(farm.proc.returncode, 0)
            self.assertEqual(len(farm.requests()), 1)
        with Webfarm({"hosts": 1, "pages": 1}) as farm:
            fetch(farm, "h0.farm.test", "/p/0.html")
            self.assertEqual(farm.stop(), 0)
            self.assertEqual(len(farm.requests()), 1)

    def test_usage_errors_exit_2(self):
        wf = harness.binary("webfarm")
        self.assertEqual(subprocess.run([wf, "--help"], capture_output=True,
                                        timeout=30).returncode, 0)
        for args in ([], ["--config"], ["--config", "x", "--dir", "/tmp",
                                        "--port", "70000"],
                     ["--config", "/nonexistent.toml", "--dir", "/tmp"],
                     ["--bogus", "1"]):
            r = subprocess.run([wf, *args], capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)

    def test_bad_config_is_reported(self):
        with self.assertRaises(RuntimeError) as ctx:
            with Webfarm("hosts = 2\nbogus = 1\n"):
                pass
        self.assertIn("farm.toml:2", str(ctx.exception))
        self.assertIn("bogus", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
