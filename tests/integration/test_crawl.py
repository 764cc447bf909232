"""End-to-end crawls of the webfarm, judged from the server's side.

Issue 2 (foundation): every manifest URL is in the WARCs exactly once, the
WARCs verify, politeness holds in the webfarm's request log, and bad input is
counted by class while the crawl goes on.
"""
import collections
import os
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest

import crawl_util
import harness

DEMO_FARM = """
seed = 2
hosts = 50
pages = 100
page_bytes = 1500
links = 6
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"
"""


def farm_with(extra):
    return DEMO_FARM.replace("hosts = 50", "hosts = 6").replace(
        "pages = 100", "pages = 20") + "\n" + extra


class FullCrawl(unittest.TestCase):
    """The demo-sized web: 50 hosts x 100 pages."""

    def test_every_manifest_url_in_the_warcs_exactly_once(self):
        with harness.Webfarm(DEMO_FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            manifest = farm.manifest()
            self.assertGreaterEqual(len(manifest), 5000)
            uris = result.response_uris()
            counts = collections.Counter(uris)
            dupes = {u: n for u, n in counts.items() if n > 1}
            self.assertEqual(dupes, {}, "URLs recorded more than once")
            self.assertEqual(set(uris), set(manifest))
            verify = crawl_util.crawlctl("warc", "verify",
                                         *result.warc_files())
            self.assertEqual(verify.returncode, 0,
                             verify.stdout + verify.stderr)
            # The server saw each page exactly once too.
            fetched = collections.Counter(
                f"http://{r['host']}:{farm.port}{r['path']}"
                for r in farm.final_requests() if r["path"] != "/robots.txt")
            self.assertEqual(max(fetched.values()), 1)
            self.assertEqual(result.summary["stop_reason"], "done")
            self.assertEqual(result.summary["pages"], len(manifest))


class Politeness(unittest.TestCase):

    def test_one_request_in_flight_per_host_and_min_delay(self):
        min_delay_ms = 150
        farm_cfg = farm_with("")
        with harness.Webfarm(farm_cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, **{"politeness.min_delay_ms": min_delay_ms})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            self.assertGreater(len(reqs), 100)
            self.assertEqual(
                max(harness.max_in_flight_per_host(reqs).values()), 1)
            gaps = [g for g in harness.min_gap_per_host(reqs).values()
                    if g is not None]
            self.assertTrue(gaps)
            self.assertGreaterEqual(min(gaps), min_delay_ms * 1000)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_robots_txt_first_and_disallowed_never_fetched(self):
        farm_cfg = farm_with('[[profile]]\nhosts = "0-5"\nrobots = "disallow"\n')
        with harness.Webfarm(farm_cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            for host, first in harness.first_request_per_host(reqs).items():
                self.assertEqual(first["path"], "/robots.txt", host)
            disallowed = set(farm.disallowed())
            self.assertTrue(disallowed, "the farm must link to disallowed URLs")
            fetched = {f"http://{r['host']}:{farm.port}{r['path']}"
                       for r in reqs}
            self.assertEqual(fetched & disallowed, set())
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))
            self.assertGreater(result.count("robots_disallowed"), 0)


class SelfSignedTlsServer:
    """A TLS server on 127.0.0.1 with a fresh self-signed certificate that
    crawld must refuse (verification is on). Bounded: a daemon thread that
    handles at most 50 connections, each with a 5 s timeout."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="crawld-tls-")
        key = os.path.join(self.dir, "key.pem")
        cert = os.path.join(self.dir, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                        "-subj", "/CN=127.0.0.1"], check=True,
                       capture_output=True, timeout=60)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(1.0)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.handshakes = 0

        def serve():
            for _ in range(50):
                if self.stop.is_set():
                    return
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    continue
                conn.settimeout(5)
                try:
                    with ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1024)
                        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2"
                                    b"\r\n\r\nok")
                except (OSError, ssl.SSLError):
                    self.handshakes += 1  # the client refused us
                finally:
                    conn.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=10)


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class BadInput(unittest.TestCase):
    """Each failure is counted by class and logged; the crawl goes on."""

    def crawl_seeds(self, farm, dns, seed_lines, **overrides):
        fd, path = tempfile.mkstemp(suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(seed_lines) + "\n")
        return crawl_util.run_crawl(farm, dns, seeds_file=path, **overrides)

    def test_junk_seed_lines_reported_with_line_numbers(self):
        with harness.Webfarm(farm_with("")) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            good = f"http://h0.farm.test:{farm.port}/p/0.html"
            result = self.crawl_seeds(farm, dns, [
                "# comment", good, "not a url at all", "", "http://[::1",
                "mailto:someone@example.com"])
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertRegex(result.stderr, r":3: .*not a url at all")
            self.assertRegex(result.stderr, r":5: ")
            self.assertRegex(result.stderr, r":6: .*mailto")
            self.assertIn(good, result.response_uris())

    def test_unreachable_nxdomain_refused_tls_are_counted(self):
        with harness.Webfarm(farm_with("")) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns, \
                SelfSignedTlsServer() as tls:
            good = f"http://h0.farm.test:{farm.port}/p/0.html"
            result = self.crawl_seeds(farm, dns, [
                f"http://no-such-host.farm.test:{farm.port}/",
                f"http://127.0.0.1:{closed_port()}/",
                f"https://127.0.0.1:{tls.port}/",
                good])
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertGreaterEqual(result.count("dns"), 1)
            self.assertGreaterEqual(result.count("connect"), 1)
            self.assertGreaterEqual(result.count("tls"), 1)
            self.assertIn(good, result.response_uris())
            log = open(os.path.join(result.data_dir, "logs",
                                    "crawld.jsonl")).read()
            self.assertIn('"class":"dns"', log)
            self.assertIn('"class":"tls"', log)

    def test_body_over_cap_is_truncated_and_counted(self):
        cfg = farm_with('[[profile]]\nhosts = [0]\nlarge_bytes = 3000000\n')
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, **{"fetch.max_body_bytes": 100000})
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertGreaterEqual(result.count("too_large"), 1)
            truncated = [r for r in result.records()
                         if r["headers"].get("warc-truncated") == "length"]
            self.assertTrue(truncated)
            verify = crawl_util.crawlctl("warc", "verify",
                                         *result.warc_files())
            self.assertEqual(verify.returncode, 0, verify.stdout)

    def test_redirect_loop_is_counted_and_crawl_completes(self):
        cfg = farm_with('[[profile]]\nhosts = [0]\nredirects = "loop"\n')
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertGreaterEqual(result.count("redirect_loop"), 1)
            self.assertEqual(result.summary["stop_reason"], "done")
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_bad_config_names_file_line_and_key_and_exits_2(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "bad.toml")
        with open(path, "w") as f:
            f.write("[fetch]\nmax_connections = 4\nno_such_key = 1\n")
        proc = subprocess.run([harness.binary("crawld"), "--config", path,
                               "--seed", "http://127.0.0.1:1/"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("bad.toml:3", proc.stderr)
        self.assertIn("no_such_key", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "data")))


if __name__ == "__main__":
    unittest.main()
