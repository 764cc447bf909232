"""HTTP/2 over TLS (issue 17 part 5), judged from the servers and the WARCs.

Two sites served by Debian's nghttpd (a real HTTP/2 server, h2 only) over
TLS with a CA made here by openssl, and one plain-http site, each on its own
loopback address. crawld runs with its default fetch settings (fetch.http2
on) and several workers. Judged:
- from the WARCs, parsed here: every page of every site was recorded (the
  links were followed); h2 exchanges are HTTP/1.1-style request and
  response records (request line "... HTTP/1.1", "host:" from :authority,
  status line "HTTP/1.1 NNN ", names lower-case as received) carrying
  `WARC-Protocol: h2`; their block and payload digests are right; the
  plain-http site's records are HTTP/1.1 as sent, without WARC-Protocol;
  `crawlctl warc verify` passes;
- from nghttpd's own log: never two requests of one host in flight at once
  (no multiplexing), and each page requested once.

BrokenH2: a hand-written h2 server resets a stream mid-body (RST_STREAM),
sends GOAWAY mid-body, and resets a stream before its head; each is a
counted outcome, and what arrived of a cut body is recorded as truncated.
"""
import base64
import contextlib
import hashlib
import http.server
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

import crawl_util
import harness

NGHTTPD = "/usr/sbin/nghttpd"
PAGES = 8  # per h2 site: index.html + p1..p7


def sha1_b32(data):
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def make_ca_and_cert(d, names):
    """A test CA and a server certificate it signs for `names` (DNS SANs).
    Returns (ca_pem, key_pem, cert_pem)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True,
                       timeout=60, cwd=d)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt",
        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=crawld test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
        "/CN=" + names[0])
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2",
        "-extfile", "san.ext")
    return (os.path.join(d, "ca.pem"), os.path.join(d, "server.key"),
            os.path.join(d, "server.pem"))


def write_site(root, links_out):
    """index.html and p1..p7 in `root`: a chain with a link back home on
    each page, and the links in `links_out` (absolute URLs) on the index.
    Returns the paths a crawl finds."""
    names = ["index.html"] + [f"p{i}.html" for i in range(1, PAGES)]
    for i, name in enumerate(names):
        links = ['<a href="/">home</a>']
        if i + 1 < len(names):
            links.append(f'<a href="/{names[i + 1]}">next</a>')
        if i == 0:
            links += [f'<a href="{u}">away</a>' for u in links_out]
        # The site's name in every page: equal bodies would be revisits.
        site = os.path.basename(root)
        body = (f"<!doctype html><html><head><title>{site} {name}</title>"
                "</head>"
                f"<body><p>page {i} " + "x" * (200 * i) + "</p>" +
                "".join(links) + "</body></html>\n")
        with open(os.path.join(root, name), "w") as f:
            f.write(body)
    with open(os.path.join(root, "robots.txt"), "w") as f:
        f.write("User-agent: *\nAllow: /\n")
    return ["/"] + ["/" + n for n in names[1:]]


class Nghttpd:
    """nghttpd -v on ADDR:<free port> serving `docroot` (context manager),
    bounded by `timeout`, stopped by PID; its verbose log (every frame, in
    the order its one event loop handled them) goes to `log`."""

    def __init__(self, addr, docroot, key, cert, log, max_seconds=120):
        self.addr, self.docroot, self.key, self.cert = addr, docroot, key, cert
        self.log = log
        self.max_seconds = max_seconds
        self.proc = None
        self.port = 0

    def __enter__(self):
        for _ in range(5):
            self.port = harness.free_port()
            out = open(self.log, "w")
            self.proc = subprocess.Popen(
                ["timeout", "--signal=TERM", "--kill-after=5",
                 str(self.max_seconds), NGHTTPD, "-v", "-a", self.addr,
                 "-d", self.docroot, str(self.port), self.key, self.cert],
                stdout=out, stderr=subprocess.STDOUT)
            out.close()
            deadline = time.monotonic() + harness.START_TIMEOUT_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                with open(self.log) as f:
                    if "listen " in f.read():
                        return self
                time.sleep(0.05)
            harness.stop_process(self.proc)
        raise RuntimeError(f"nghttpd did not start on {self.addr}")

    def __exit__(self, *exc):
        harness.stop_process(self.proc)

    def streams(self):
        """(max streams open at once, [(authority, path)] in order)."""
        open_now, most, requests = set(), 0, []
        pseudo = {}
        frame = re.compile(r"^\[id=(\d+)\] \[\s*[\d.]+\] (.*)$")
        with open(self.log, errors="replace") as f:
            for line in f:
                m = frame.match(line)
                if not m:
                    continue
                session, what = m.group(1), m.group(2)
                h = re.match(r"recv \(stream_id=(\d+)\) (:\w+): (.*)$", what)
                if h:
                    pseudo.setdefault((session, h.group(1)), {})[
                        h.group(2)] = h.group(3)
                    continue
                h = re.match(r"recv HEADERS frame <.*stream_id=(\d+)>", what)
                if h:
                    key = (session, h.group(1))
                    if key not in open_now:
                        open_now.add(key)
                        most = max(most, len(open_now))
                        p = pseudo.get(key, {})
                        requests.append((p.get(":authority"),
                                         p.get(":path")))
                    continue
                h = re.match(r"stream_id=(\d+) closed", what)
                if h:
                    open_now.discard((session, h.group(1)))
        return most, requests


class PlainSite:
    """A plain-http site on ADDR (stdlib server in a daemon thread, at most
    `max_requests` requests, 5 s per connection), HTTP/1.1 status lines."""

    def __init__(self, addr, root):
        site_root = root

        class Handler(http.server.SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 5

            def __init__(self, *a, **kw):
                super().__init__(*a, directory=site_root, **kw)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer((addr, 0), Handler)
        self.server.daemon_threads = True
        self.server.timeout = 1
        self.port = self.server.server_address[1]
        self.stop = threading.Event()

        def serve():
            deadline = time.monotonic() + 120
            while not self.stop.is_set() and time.monotonic() < deadline:
                self.server.handle_request()

        self.thread = threading.Thread(target=serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)
        self.server.server_close()


def head_lines(block):
    return block[:block.index(b"\r\n\r\n")].decode("latin-1").split("\r\n")


class Http2Crawl(unittest.TestCase):

    def test_h2_sites_recorded_as_http11_with_protocol(self):
        if not os.access(NGHTTPD, os.X_OK):
            self.fail(f"{NGHTTPD} missing: scripts/setup.sh installs "
                      "nghttp2-server")
        work = tempfile.mkdtemp(prefix="crawld-h2-")
        hosts = {"a.h2.test": "127.0.0.31", "b.h2.test": "127.0.0.32",
                 "plain.h2.test": "127.0.0.33"}
        ca, key, cert = make_ca_and_cert(work, ["a.h2.test", "b.h2.test"])
        started = time.monotonic()
        roots = {n: os.path.join(work, n) for n in hosts}
        for root in roots.values():
            os.makedirs(root)
        with open(os.path.join(roots["plain.h2.test"], "index.html"),
                  "w") as f:
            f.write("<html><body>plain</body></html>\n")
        hosts_file = os.path.join(work, "hosts")
        with open(hosts_file, "w") as f:
            for name, ip in hosts.items():
                f.write(f"{ip} {name}\n")
        # The servers read their trees at each request: the pages, which
        # link across sites, are written once the ports are known.
        with PlainSite(hosts["plain.h2.test"], roots["plain.h2.test"]) \
                as plain, \
                Nghttpd(hosts["a.h2.test"], roots["a.h2.test"], key, cert,
                        os.path.join(work, "a.log")) as a, \
                Nghttpd(hosts["b.h2.test"], roots["b.h2.test"], key, cert,
                        os.path.join(work, "b.log")) as b, \
                harness.Dnsmasq(hosts_file) as dns:
            plain_url = f"http://plain.h2.test:{plain.port}/"
            a_paths = write_site(roots["a.h2.test"], [
                plain_url, f"https://b.h2.test:{b.port}/"])
            b_paths = write_site(roots["b.h2.test"], [])
            seeds = os.path.join(work, "seeds.txt")
            with open(seeds, "w") as f:
                f.write(f"https://a.h2.test:{a.port}/\n")
            result = crawl_util.run_crawl(
                None, dns, timeout=120, seeds_file=seeds,
                **{"fetch.ca_file": ca, "workers.count": 2})
            self.assertEqual(result.returncode, 0, result.stderr)
            a_most, a_reqs = a.streams()
            b_most, b_reqs = b.streams()
        elapsed = time.monotonic() - started

        sites = {"a.h2.test": (a.port, a_paths),
                 "b.h2.test": (b.port, b_paths)}
        expected = {f"https://{h}:{port}{p}"
                    for h, (port, paths) in sites.items() for p in paths}
        records = result.records()
        responses = [r for r in records
                     if r["headers"].get("warc-type") == "response"]
        by_id = {r["headers"]["warc-record-id"]: r for r in records}
        uris = [r["headers"]["warc-target-uri"] for r in responses]
        # Links followed: every page of both h2 sites, and the plain one.
        self.assertEqual({u for u in uris if u.startswith("https://")
                          and not u.endswith("/robots.txt")}, expected)
        self.assertIn(plain_url, uris)
        self.assertEqual(len(uris), len(set(uris)), "a URL recorded twice")

        h2_responses = 0
        for r in responses:
            h, block = r["headers"], r["block"]
            uri = h["warc-target-uri"]
            # Digests over the block as written, and over the payload.
            self.assertEqual(h["warc-block-digest"], sha1_b32(block), uri)
            self.assertEqual(h["warc-payload-digest"],
                             crawl_util.payload_digest(block), uri)
            request = by_id[h["warc-concurrent-to"]]
            rq = request["headers"]
            self.assertEqual(rq["warc-type"], "request")
            self.assertEqual(rq["warc-block-digest"],
                             sha1_b32(request["block"]), uri)
            self.assertTrue(request["block"].endswith(b"\r\n\r\n"), uri)
            status, *fields = head_lines(block)
            req_line, *req_fields = head_lines(request["block"])
            path = "/" + uri.split("/", 3)[3]
            if uri.startswith("https://"):
                h2_responses += 1
                self.assertEqual(h.get("warc-protocol"), "h2", uri)
                self.assertEqual(rq.get("warc-protocol"), "h2", uri)
                self.assertRegex(status, r"^HTTP/1\.1 [0-9]{3} $", uri)
                for line in fields:
                    name = line.split(":", 1)[0]
                    self.assertEqual(name, name.lower(), uri)
                self.assertEqual(req_line, f"GET {path} HTTP/1.1", uri)
                host = uri.split("/")[2]
                self.assertEqual(req_fields[0], f"host: {host}", uri)
                for line in req_fields:
                    name = line.split(":", 1)[0]
                    self.assertEqual(name, name.lower(), uri)
                self.assertTrue(any(f.startswith("user-agent: crawld-test")
                                    for f in req_fields), uri)
                self.assertNotIn(b"HTTP/2", block[:block.index(b"\r\n\r\n")])
                self.assertNotIn(b"HTTP/2", request["block"])
            else:
                # Plain http: HTTP/1.1 as on the wire, no WARC-Protocol.
                self.assertNotIn("warc-protocol", h)
                self.assertNotIn("warc-protocol", rq)
                self.assertIn(status, ("HTTP/1.1 200 OK",
                                       "HTTP/1.1 404 File not found"))
                self.assertEqual(req_line, f"GET {path} HTTP/1.1")
                self.assertIn(f"Host: plain.h2.test:{plain.port}", req_fields)
        self.assertEqual(h2_responses, 2 * (PAGES + 1))  # pages + robots.txt

        verify = crawl_util.crawlctl("warc", "verify", *result.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        # h2 exchanges recorded as HTTP/1.1-style messages: warcio.js
        # parses them as any archival reader would.
        ok, _, out = crawl_util.warcio_check(*result.warc_files())
        self.assertTrue(ok, out)

        # The servers' side: one request of a host in flight at a time, and
        # each URL asked once (robots.txt first).
        self.assertEqual(a_most, 1, a_reqs)
        self.assertEqual(b_most, 1, b_reqs)
        for (name, (port, paths)), reqs in zip(sites.items(),
                                               (a_reqs, b_reqs)):
            self.assertEqual(reqs[0], (f"{name}:{port}", "/robots.txt"))
            self.assertEqual(sorted(p for _, p in reqs),
                             sorted(paths + ["/robots.txt"]))
        print(f"h2 crawl: {len(responses)} responses, {elapsed:.1f} s")


class BrokenH2Server:
    """A TLS server on ADDR that picks "h2" by ALPN and answers in HTTP/2
    frames written here, misbehaving on purpose (context manager; a daemon
    thread, at most 20 connections, 5 s each, 60 s in all).

    The n-th request it receives (one at a time: crawld's politeness) is
    answered: n = 1 (robots.txt) a 404; later ones by `mode`:
      "rst_body"   the head (200, content-length: 100), 10 body bytes, then
                   RST_STREAM (INTERNAL_ERROR)
      "goaway_body" the same head and bytes, then GOAWAY and a close
      "rst_head"   RST_STREAM (INTERNAL_ERROR) before any head
    """

    PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    # HPACK (RFC 7541): ":status: 200" and ":status: 404" from the static
    # table; content-type and content-length as literals without indexing
    # with indexed names (31, 28).
    HEAD_200 = (b"\x88" + b"\x0f\x10\x09text/html" + b"\x0f\x0d\x03100")
    HEAD_404 = b"\x8d"
    BODY = b"<html>0123"

    def __init__(self, addr, key, cert, mode):
        import socket
        import ssl
        self.mode = mode
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["h2"])
        self.sock = socket.socket()
        self.sock.bind((addr, 0))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @staticmethod
    def frame(kind, flags, stream, payload=b""):
        return (len(payload).to_bytes(3, "big") + bytes([kind, flags]) +
                stream.to_bytes(4, "big") + payload)

    def _serve(self):
        import ssl
        deadline = time.monotonic() + 60
        for _ in range(20):
            while not self.stop.is_set() and time.monotonic() < deadline:
                try:
                    conn, _ = self.sock.accept()
                    break
                except OSError:
                    continue
            else:
                return
            conn.settimeout(5)
            try:
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    self._session(tls)
            except (OSError, ssl.SSLError, ValueError):
                pass
            finally:
                conn.close()

    def _read(self, tls, n):
        data = b""
        while len(data) < n:
            chunk = tls.recv(n - len(data))
            if not chunk:
                raise ValueError("closed")
            data += chunk
        return data

    def _session(self, tls):
        if self._read(tls, len(self.PREFACE)) != self.PREFACE:
            return
        tls.sendall(self.frame(4, 0, 0))  # our SETTINGS
        while True:
            head = self._read(tls, 9)
            length = int.from_bytes(head[:3], "big")
            kind, flags = head[3], head[4]
            stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            self._read(tls, length)
            if kind == 4 and not flags & 1:
                tls.sendall(self.frame(4, 1, 0))  # SETTINGS ACK
            elif kind == 1:  # a request (HEADERS, END_HEADERS: curl's)
                self.requests += 1
                if self.requests == 1:
                    tls.sendall(self.frame(1, 0x5, stream, self.HEAD_404))
                elif self.mode == "rst_head":
                    tls.sendall(self.frame(3, 0, stream, (2).to_bytes(4,
                                                                    "big")))
                else:
                    tls.sendall(self.frame(1, 0x4, stream, self.HEAD_200) +
                                self.frame(0, 0, stream, self.BODY))
                    time.sleep(0.1)
                    if self.mode == "rst_body":
                        tls.sendall(self.frame(3, 0, stream,
                                               (2).to_bytes(4, "big")))
                    else:
                        tls.sendall(self.frame(
                            7, 0, 0, stream.to_bytes(4, "big") +
                            (2).to_bytes(4, "big")))
                        return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)
        self.sock.close()


class BrokenH2(unittest.TestCase):
    """RST_STREAM and GOAWAY mid-body, RST_STREAM before the head: each a
    clear counted outcome; what arrived is kept, marked as cut."""

    def test_resets_are_counted_and_cut_bodies_kept(self):
        work = tempfile.mkdtemp(prefix="crawld-h2bad-")
        names = {"rst-body.h2.test": ("127.0.0.41", "rst_body"),
                 "goaway-body.h2.test": ("127.0.0.42", "goaway_body"),
                 "rst-head.h2.test": ("127.0.0.43", "rst_head")}
        ca, key, cert = make_ca_and_cert(work, list(names))
        hosts_file = os.path.join(work, "hosts")
        with open(hosts_file, "w") as f:
            for name, (ip, _) in names.items():
                f.write(f"{ip} {name}\n")
        with contextlib.ExitStack() as stack:
            servers = {n: stack.enter_context(
                BrokenH2Server(ip, key, cert, mode))
                for n, (ip, mode) in names.items()}
            dns = stack.enter_context(harness.Dnsmasq(hosts_file))
            seeds = os.path.join(work, "seeds.txt")
            urls = {n: f"https://{n}:{s.port}/page.html"
                    for n, s in servers.items()}
            with open(seeds, "w") as f:
                f.write("".join(u + "\n" for u in urls.values()))
            # The page reset before its head is retried with backoff
            # (2, 4 and 8 s: most of this test's time) and then
            # counted as retries_exhausted.
            result = crawl_util.run_crawl(
                None, dns, timeout=120, seeds_file=seeds,
                **{"fetch.ca_file": ca, "workers.count": 2})
        self.assertEqual(result.returncode, 0, result.stderr)
        responses = {r["headers"]["warc-target-uri"]: r
                     for r in result.records()
                     if r["headers"].get("warc-type") == "response"}
        for name in ("rst-body.h2.test", "goaway-body.h2.test"):
            r = responses.get(urls[name])
            self.assertIsNotNone(r, (name, sorted(responses)))
            h = r["headers"]
            self.assertEqual(h.get("warc-protocol"), "h2")
            self.assertEqual(h.get("warc-truncated"), "disconnect")
            self.assertTrue(r["block"].startswith(b"HTTP/1.1 200 \r\n"))
            self.assertIn(b"\r\ncontent-length: 100\r\n", r["block"])
            self.assertTrue(r["block"].endswith(
                b"\r\n\r\n" + BrokenH2Server.BODY))
        self.assertNotIn(urls["rst-head.h2.test"], responses)
        self.assertGreaterEqual(result.count("incomplete"), 2,
                                result.summary)
        self.assertGreaterEqual(result.count("protocol"), 1, result.summary)
        self.assertEqual(result.count("retries_exhausted"), 1,
                         result.summary)
        verify = crawl_util.crawlctl("warc", "verify", *result.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        # h2 exchanges recorded as HTTP/1.1-style messages: warcio.js
        # parses them as any archival reader would.
        ok, _, out = crawl_util.warcio_check(*result.warc_files())
        self.assertTrue(ok, out)


if __name__ == "__main__":
    unittest.main()
