"""What an operator sees: the live progress line and /metrics (issue 7).

- Under a pseudo-terminal crawld redraws one status line in place; with
  output to a pipe it prints plain lines.
- /metrics parses as Prometheus text exposition format 0.0.4 (a small
  parser below) and its counters agree with the WARCs on disk.
"""
import glob
import json
import os
import pty
import re
import select
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import crawl_util
import harness

FARM = """
seed = 5
hosts = 4
pages = 30
page_bytes = 1500
links = 5
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"
[[profile]]
hosts = 1
errors = ["404"]
"""


def start(farm, dns, data, **overrides):
    """crawld in the background with output to files; returns Popen."""
    return crawl_util.start_crawl(farm, dns, data_dir=data, **overrides)[0]


class ProgressLine(unittest.TestCase):

    def test_terminal_redraws_one_line_pipe_gets_plain_lines(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-pty-")
            config = crawl_util.write_config(
                dns.server, data, **{"politeness.min_delay_ms": 50})
            master, slave = pty.openpty()
            proc = subprocess.Popen(
                [harness.binary("crawld"), "--config", config,
                 "--seeds", farm.seeds_file],
                stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
            os.close(slave)
            out = b""
            deadline = time.monotonic() + 120
            try:
                while time.monotonic() < deadline:
                    r, _, _ = select.select([master], [], [], 0.5)
                    if r:
                        try:
                            chunk = os.read(master, 65536)
                        except OSError:  # the child closed the terminal
                            break
                        if not chunk:
                            break
                        out += chunk
                    elif proc.poll() is not None:
                        break
            finally:
                harness.stop_process(proc)
                os.close(master)
            self.assertEqual(proc.returncode, 0, out[-2000:])
            text = out.decode("utf-8", "replace")
            # Redraws: carriage return + erase-line before each status line,
            # more than one of them, and the final line ends the line.
            redraws = text.count("\r\x1b[K")
            self.assertGreaterEqual(redraws, 2, text[-500:])
            status = [s for s in text.split("\r\x1b[K") if s.startswith("pages ")]
            self.assertTrue(status)
            self.assertRegex(status[-1], r"^pages \d+ \| [\d.]+/s \| queued \d+ "
                                         r"\| hosts \d+ \(active \d+\) \| "
                                         r"errors \d+ \| [\d.]+ [kMG]B \| \d+s\r?\n")

            # The same crawl with stderr to a pipe: plain lines, no escapes.
            data2 = tempfile.mkdtemp(prefix="crawld-pipe-")
            result = crawl_util.run_crawl(
                farm, dns, data_dir=data2,
                **{"crawl.progress_interval_s": 0.2})
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertNotIn("\r", result.stderr)
            self.assertNotIn("\x1b", result.stderr)
            self.assertRegex(result.stderr, r"(?m)^pages \d+ \| ")
            # "errors" on the last line is the failures (the 404 host's
            # pages), not every counted event.
            errors = re.findall(r"(?m)^pages \d+ .*\| errors (\d+) \|",
                                result.stderr)
            self.assertGreater(int(errors[-1]), 0)
            self.assertEqual(int(errors[-1]), result.count("http_4xx"),
                             result.summary["counts"])


# Prometheus text format 0.0.4: comments, then "name{labels} value".
SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|'
    r'\\.)*",?)*)\})? (-?[0-9.eE+-]+|NaN|[+-]Inf)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """{(name, frozenset(labels)): value}; fails the test on a bad line."""
    samples = {}
    types = {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if line.startswith("#"):
            assert line.startswith("# HELP "), line
            continue
        m = SAMPLE.match(line)
        assert m, f"not exposition format: {line!r}"
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples, types


class Metrics(unittest.TestCase):

    def test_metrics_parse_and_agree_with_the_warcs(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-metrics-")
            proc = start(farm, dns, data,
                         **{"politeness.min_delay_ms": 100})
            try:
                url_file = os.path.join(data, "run", "admin.url")
                deadline = time.monotonic() + 30
                while not os.path.exists(url_file):
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
                with open(url_file) as f:
                    base = f.read().strip()

                def call(path, method="GET"):
                    req = urllib.request.Request(base + path, method=method)
                    if method == "POST":
                        req.add_header("Content-Type", "application/json")
                    with urllib.request.urlopen(req, timeout=10) as r:
                        return r.read().decode()

                time.sleep(1.5)  # some pages, some 404s
                call("/api/pause", "POST")
                # Paused: wait until nothing is in flight, so the WARCs and
                # the counters describe the same moment.
                deadline = time.monotonic() + 30
                while json.loads(call("/api/status"))["in_flight"] != 0:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
                samples, types = parse_exposition(call("/metrics"))
                records = []
                for path in sorted(glob.glob(os.path.join(data, "warc",
                                                          "*.warc.gz"))):
                    records += crawl_util.read_warc(path)
            finally:
                harness.stop_process(proc)

            responses = [r for r in records
                         if r["headers"].get("warc-type") == "response"
                         and not r["headers"]["warc-target-uri"].endswith(
                             "/robots.txt")]
            status = [int(r["block"].split(b" ", 2)[1]) for r in responses]
            self.assertGreater(len(responses), 0)
            self.assertEqual(types.get("crawld_pages_fetched_total"), "counter")
            self.assertEqual(
                samples[("crawld_pages_fetched_total", frozenset())],
                len(responses))
            robots = [r for r in records
                      if r["headers"].get("warc-type") == "response"
                      and r["headers"]["warc-target-uri"].endswith(
                          "/robots.txt")]
            self.assertEqual(
                samples[("crawld_robots_fetches_total", frozenset())],
                len(robots))
            # Keep-alive: a host's robots.txt and its next page share one
            # connection, so fewer connections than fetches were opened.
            opened = samples[("crawld_connections_opened_total", frozenset())]
            self.assertGreaterEqual(opened, 1)
            self.assertLess(opened, len(responses) + len(robots))
            # A handful of hosts never fill the idle pool.
            self.assertEqual(types.get("crawld_connections_not_kept_total"),
                             "counter")
            self.assertEqual(
                samples[("crawld_connections_not_kept_total", frozenset())],
                0)
            fours = sum(1 for s in status if 400 <= s < 500)
            self.assertGreater(fours, 0, "the farm serves 404s")
            self.assertEqual(
                samples.get(("crawld_events_total",
                             frozenset({("event", "http_4xx")})), 0), fours)
            body_bytes = sum(len(r["block"].split(b"\r\n\r\n", 1)[1])
                             for r in responses)
            self.assertEqual(
                samples[("crawld_bytes_received_total", frozenset())],
                body_bytes)
            # The histogram counted every page, its +Inf bucket is the count.
            self.assertEqual(types.get("crawld_fetch_duration_seconds"),
                             "histogram")
            count = samples[("crawld_fetch_duration_seconds_count",
                             frozenset())]
            self.assertEqual(count, len(responses))
            self.assertEqual(
                samples[("crawld_fetch_duration_seconds_bucket",
                         frozenset({("le", "+Inf")}))], count)
            self.assertEqual(samples[("crawld_paused", frozenset())], 1)


class BadRequests(unittest.TestCase):
    """A malformed request gets a JSON error and never harms the crawl."""

    def test_malformed_requests_are_refused_and_the_crawl_completes(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-bad-")
            proc = start(farm, dns, data, **{"politeness.min_delay_ms": 50})
            try:
                url_file = os.path.join(data, "run", "admin.url")
                deadline = time.monotonic() + 30
                while not os.path.exists(url_file):
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
                with open(url_file) as f:
                    base = f.read().strip()

                def post(path, body):
                    req = urllib.request.Request(
                        base + path, data=body, method="POST",
                        headers={"Content-Type": "application/json"})
                    try:
                        with urllib.request.urlopen(req, timeout=10) as r:
                            return r.status, json.loads(r.read())
                    except urllib.error.HTTPError as e:
                        return e.code, json.loads(e.read())

                for path, body in (("/api/seeds", b"{not json"),
                                   ("/api/seeds", b'{"urls": "x"}'),
                                   ("/api/rules/test", b"[]"),
                                   ("/api/rules/test", b'{"url": 5}')):
                    status, j = post(path, body)
                    self.assertEqual(status, 400, (path, body, j))
                    self.assertEqual(j["status"], 400)
                    self.assertTrue(j["error"])
                status, j = post("/api/nowhere", b"{}")
                self.assertEqual((status, j["status"]), (404, 404))
                # Garbage on a raw socket: 400, then the connection closes.
                host, port = base[len("http://"):].rsplit(":", 1)
                with socket.create_connection((host, int(port)), 10) as s:
                    s.sendall(b"\x00\x01 NOT HTTP\r\n\r\n")
                    reply = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        reply += chunk
                self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply[:80])
                proc.wait(timeout=120)
            finally:
                harness.stop_process(proc)
            self.assertEqual(proc.returncode, 0)
            with open(os.path.join(data, "summary.json")) as f:
                summary = json.load(f)
            self.assertEqual(summary["stop_reason"], "done")
            self.assertEqual(summary["pages"], len(farm.manifest()))


if __name__ == "__main__":
    unittest.main()
