"""crawlctl as the admin API's client (issue 7): the online commands
against a real crawld on loopback, judged by crawlctl's output and exit
codes, the webfarm's request log, the WARC files and crawld's summary.

Exit codes under test (docs/CRAWLCTL.md): 0 ok, 1 the server answered an
error, 2 usage error, 3 cannot reach the server.
"""
import collections
import contextlib
import http.server
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import crawl_util
import harness

FARM = """
seed = 7
hosts = {hosts}
pages = {pages}
page_bytes = 600
links = 1
cross_host_share = 0.0
relative_share = 0.5
"""

TOKEN = "s3cret-token"


def host(i):
    return f"h{i}.farm.test"


def write(path, text):
    # Whole file, then rename: a reload never reads a half-written file.
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    return pred()


def ctl(*args, env=None, timeout=60, input_text=None):
    full_env = dict(os.environ)
    full_env.pop("CRAWLD_TOKEN", None)
    if env:
        full_env.update(env)
    return subprocess.run([harness.binary("crawlctl"), *args],
                          capture_output=True, text=True, env=full_env,
                          timeout=timeout, input=input_text)


def wait_admin_url(proc, data_dir, timeout=60):
    path = os.path.join(data_dir, "run", "admin.url")

    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"crawld exited early: {proc.returncode}")
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        return text.strip() if text.endswith("\n") else None

    url = wait_for(ready, timeout)
    if not url:
        raise AssertionError(f"no {path} after {timeout} s")
    return url


def end_crawld(proc):
    """SIGTERM by PID, bounded wait, then SIGKILL (harness.stop_process)."""
    return harness.stop_process(proc)


def tail_lines(text):
    """Parses `docs tail` text output: [(cursor, status, url, warc:off)]."""
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 4:
            raise AssertionError(f"bad docs tail line: {line!r}")
        out.append(tuple(parts))
    return out


class Session(unittest.TestCase):
    """One operator session against a running crawl, in order: status,
    docs tail, pause/resume, seeds, rules test/reload, host, stop."""

    def test_operator_session(self):
        # links = 1 and min_delay 200 ms: each host is a chain of pages
        # fetched one after the other, so the crawl lasts well beyond the
        # session (it is stopped through the API at the end).
        farm_cfg = FARM.format(hosts=3, pages=150)
        with harness.Webfarm(farm_cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            work = tempfile.mkdtemp(prefix="crawld-admin-")
            rules = os.path.join(work, "rules.txt")
            write(rules, "reject regex /never/\n")
            data = os.path.join(work, "data")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=data,
                **{"crawl.rules_file": rules,
                   "politeness.min_delay_ms": 200,
                   "admin.port": 0})
            try:
                self._session(farm, proc, data, work, rules)
            finally:
                end_crawld(proc)

    def _session(self, farm, proc, data, work, rules):
        api = wait_admin_url(proc, data)
        self.assertTrue(api.startswith("http://127.0.0.1:"), api)
        self.assertTrue(farm.wait_requests(
            lambda rs: sum(r["path"].startswith("/p/") for r in rs) >= 3,
            timeout=30), "the crawl did not start")

        # --- status, text and JSON, through --data and --api.
        r = ctl("status", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        self.assertRegex(r.stdout, r"pages:\s+\d+")
        r = ctl("status", "--api", api, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        st = json.loads(r.stdout)
        self.assertEqual(st["state"], "running")
        self.assertIn("workers", st)

        # --- metrics: Prometheus text.
        r = ctl("metrics", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# TYPE", r.stdout)

        # --- docs tail, run 1: drain with a small page size.
        cursor_file = os.path.join(work, "feed.cursor")
        seen = []
        r = ctl("docs", "tail", "--data", data, "--cursor-file", cursor_file,
                "--limit", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        seen += tail_lines(r.stdout)
        self.assertTrue(os.path.exists(cursor_file) or not seen)

        # --- pause: no request starts more than 2 s after the answer.
        r = ctl("pause", "--data", data)
        t_pause = time.time()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+paused")
        r = ctl("status", "--data", data, "--json")
        self.assertEqual(json.loads(r.stdout)["state"], "paused")
        time.sleep(4.5)
        t_resume = time.time()
        late = [r for r in farm.requests()
                if t_pause + 2.0 < r["start_us"] / 1e6 < t_resume]
        self.assertEqual(late, [], "requests started while paused")
        r = ctl("resume", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        self.assertTrue(farm.wait_requests(
            lambda rs: any(x["start_us"] / 1e6 > t_resume for x in rs),
            timeout=20), "no request after resume")
        # The request log is flushed every 100-200 ms: read it again now
        # that it covers the whole pause.
        late = [r for r in farm.requests()
                if t_pause + 2.0 < r["start_us"] / 1e6 < t_resume]
        self.assertEqual(late, [], "requests started while paused")

        # --- docs tail, run 2: --follow, ended by SIGTERM.
        follow = subprocess.Popen(
            [harness.binary("crawlctl"), "docs", "tail", "--data", data,
             "--cursor-file", cursor_file, "--follow", "--max-seconds", "60",
             "--limit", "5"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2.0)
            os.kill(follow.pid, signal.SIGTERM)
            out, err = follow.communicate(timeout=30)
        finally:
            harness.stop_process(follow)
        self.assertEqual(follow.returncode, 0, err)
        seen += tail_lines(out)

        # --- seeds add: comments, blanks, a known seed, a new URL and a
        # URL the server rejects; then 2500 filtered URLs (3 batches).
        seed0 = farm.seeds()[0]
        new_url = farm.url(host(2), "/p/140.html")
        seeds = os.path.join(work, "seeds.txt")
        write(seeds, f"# operator seeds\n\n{seed0}\n  {new_url}  \n"
                     "ftp://example.test/file\n")
        r = ctl("seeds", "add", seeds, "--data", data)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rejected 1", r.stdout)
        self.assertIn("ftp://example.test/file", r.stderr)
        added = int(r.stdout.split("added ")[1].split(",")[0])
        known = int(r.stdout.split("already known ")[1].split(",")[0])
        self.assertEqual(added + known, 2, r.stdout)
        self.assertGreaterEqual(known, 1, r.stdout)  # seed0
        many = "".join(farm.url(host(0), f"/never/{i}") + "\n"
                       for i in range(2500))
        r = ctl("seeds", "add", "-", "--data", data, "--json",
                input_text=many)
        self.assertEqual(r.returncode, 1, r.stderr)
        replies = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual(len(replies), 3)
        self.assertEqual(sum(len(x["rejected"]) for x in replies), 2500)
        self.assertEqual(sum(x["added"] for x in replies), 0)
        r = ctl("seeds", "add", os.path.join(work, "missing.txt"),
                "--data", data)
        self.assertEqual(r.returncode, 2)

        # --- rules test.
        r = ctl("rules", "test", farm.url(host(0), "/never/x"), "--data",
                data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"filter:\s+reject")
        self.assertIn("rules.txt:1", r.stdout)
        r = ctl("rules", "test", farm.url(host(0), "/p/1.html"), "--depth",
                "1", "--seed-host", host(0), "--data", data, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        verdict = json.loads(r.stdout)
        self.assertTrue(verdict["filter"]["accept"], verdict)
        self.assertEqual(verdict["url"], farm.url(host(0), "/p/1.html"))

        # --- host: a crawled host (origin and host:port), an unknown one.
        # Before the reload: a reload sends every host's robots state back
        # to 'unknown' until its next dispatch.
        self.assertTrue(farm.wait_requests(
            lambda rs: any(x["host"] == host(1) and
                           x["path"].startswith("/p/") for x in rs),
            timeout=30), f"no page of {host(1)} fetched")
        origin = f"http://{host(0)}:{farm.port}"
        r = ctl("host", origin, "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"host:\s+" + origin)
        self.assertRegex(r.stdout, r"robots:\s+ready")
        r = ctl("host", f"{host(1)}:{farm.port}", "--data", data, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        rec = json.loads(r.stdout)
        self.assertEqual(rec["host"], f"http://{host(1)}:{farm.port}")
        self.assertGreater(rec["pages"], 0)
        r = ctl("host", "nowhere.farm.test", "--data", data)
        self.assertEqual(r.returncode, 1)
        self.assertIn("404", r.stderr)

        # --- rules reload: a bad file is refused and names file:line;
        # the old rules stay.
        write(rules, "reject regex /never/\nthis is not a rule\n")
        r = ctl("rules", "reload", "--data", data)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rules.txt:2", r.stderr)
        r = ctl("rules", "test", farm.url(host(0), "/never/y"), "--data",
                data, "--json")
        self.assertFalse(json.loads(r.stdout)["filter"]["accept"])
        write(rules, "reject regex /never/\nreject regex /nope/\n")
        r = ctl("rules", "reload", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 filter rules", r.stdout)

        # --- docs tail, run 3: --follow bounded by --max-seconds.
        r = ctl("docs", "tail", "--data", data, "--cursor-file",
                cursor_file, "--follow", "--max-seconds", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        seen += tail_lines(r.stdout)

        # --- pause again, let in-flight fetches end, then the last run.
        r = ctl("pause", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)

        def idle():
            s = ctl("status", "--data", data, "--json")
            return s.returncode == 0 and json.loads(s.stdout)["in_flight"] == 0

        self.assertTrue(wait_for(idle, 30), "fetches still in flight")
        r = ctl("docs", "tail", "--data", data, "--cursor-file",
                cursor_file)
        self.assertEqual(r.returncode, 0, r.stderr)
        seen += tail_lines(r.stdout)
        # The whole feed at once, for comparison.
        r = ctl("docs", "tail", "--data", data, "--json", "--limit", "1000")
        self.assertEqual(r.returncode, 0, r.stderr)
        feed = [e for line in r.stdout.splitlines()
                for e in json.loads(line)["entries"]]

        # --- stop: crawld exits 0 and says why.
        r = ctl("stop", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+stopping")
        proc.wait(timeout=60)
        self.assertEqual(proc.returncode, 0)
        with open(os.path.join(data, "summary.json")) as f:
            summary = json.load(f)
        reason = summary.get("stop_reason", "")
        self.assertTrue("api" in reason or "stop" in reason, reason)
        r = ctl("status", "--data", data, "--timeout-ms", "2000")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)

        # --- exactly once: the runs together saw the whole feed in order,
        # and the feed's responses are the WARCs' response records.
        self.assertGreater(len(seen), 10)
        self.assertEqual([s[0] for s in seen], [e["cursor"] for e in feed])
        self.assertEqual(len({s[0] for s in seen}), len(seen))
        for s, e in zip(seen, feed):
            self.assertEqual(s[2], e["url"])
            self.assertEqual(s[3], f"{e['warc']}:{e['offset']}")
        result = crawl_util.CrawlResult(
            subprocess.CompletedProcess([], 0, "", ""), data)
        warc_uris = collections.Counter(
            u for u in result.response_uris(include_robots=True))
        feed_uris = collections.Counter(
            e["url"] for e in feed if not e["flags"].get("revisit"))
        self.assertEqual(feed_uris, warc_uris)


class Token(unittest.TestCase):
    """admin.token: without it every call is refused (401, exit 1)."""

    def test_token_required(self):
        with harness.Webfarm(FARM.format(hosts=1, pages=200)) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            work = tempfile.mkdtemp(prefix="crawld-admin-token-")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(work, "data"),
                **{"politeness.min_delay_ms": 200, "admin.port": 0,
                   "admin.token": TOKEN})
            try:
                wait_admin_url(proc, data)
                r = ctl("status", "--data", data)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("401", r.stderr)
                r = ctl("pause", "--data", data, "--token", "wrong")
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("401", r.stderr)
                r = ctl("status", "--data", data, "--token", TOKEN)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stdout, r"state:\s+running")
                r = ctl("status", "--data", data,
                        env={"CRAWLD_TOKEN": TOKEN})
                self.assertEqual(r.returncode, 0, r.stderr)
                r = ctl("stop", "--data", data, env={"CRAWLD_TOKEN": TOKEN})
                self.assertEqual(r.returncode, 0, r.stderr)
                proc.wait(timeout=60)
                self.assertEqual(proc.returncode, 0)
            finally:
                end_crawld(proc)


def raw_get(api, path, extra=""):
    """One HTTP/1.1 request on a fresh socket; returns (status, body)."""
    host, port = api.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


class Issue19(unittest.TestCase):
    """Issue 19 against a live crawld: idle connections must not lock the
    API (item 5); a websocket upgrade is 400 and the documented
    `crawlctl --data DIR <command>` form works (item 9)."""

    @classmethod
    def setUpClass(cls):
        cls.stack = contextlib.ExitStack()
        farm = cls.stack.enter_context(
            harness.Webfarm(FARM.format(hosts=1, pages=300)))
        dns = cls.stack.enter_context(harness.Dnsmasq(farm.hosts_file))
        work = tempfile.mkdtemp(prefix="crawld-admin-19-")
        cls.proc, cls.data = crawl_util.start_crawl(
            farm, dns, data_dir=os.path.join(work, "data"),
            **{"politeness.min_delay_ms": 200, "admin.port": 0})
        cls.stack.callback(end_crawld, cls.proc)
        cls.api = wait_admin_url(cls.proc, cls.data)

    @classmethod
    def tearDownClass(cls):
        cls.stack.close()

    def test_idle_connections_do_not_lock_the_api(self):
        host, port = self.api.removeprefix("http://").rsplit(":", 1)
        idle = []
        try:
            # More than max_connections (64), sending nothing.
            for _ in range(80):
                idle.append(socket.create_connection((host, int(port)),
                                                     timeout=5))
            t0 = time.monotonic()
            r = ctl("status", "--data", self.data, "--timeout-ms", "5000")
            took = time.monotonic() - t0
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"state:\s+running")
            self.assertLess(took, 5.0)
            status, body = raw_get(self.api, "/api/status")
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["state"], "running")
        finally:
            for s in idle:
                s.close()

    def test_websocket_upgrade_is_400(self):
        status, body = raw_get(
            self.api, "/api/status",
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n")
        self.assertEqual(status, 400, body)
        self.assertIn("upgrade", json.loads(body)["error"])

    def test_global_options_before_the_command(self):
        r = ctl("--data", self.data, "status")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        r = ctl("--data", self.data, "--json", "status")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(json.loads(r.stdout)["state"], ("running", "paused"))
        r = ctl("--data", self.data, "pause")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+paused")
        r = ctl("--api", self.api, "--timeout-ms", "5000", "resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        r = ctl("--data", self.data, "rules", "test", "http://a.test/x",
                "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["url"], "http://a.test/x")


class ConfigErrors(unittest.TestCase):
    """Issue 19 item 9: admin.address off loopback without admin.token is
    a config error (exit 2, file:line and key), not a runtime failure
    (exit 1, which the systemd unit restarts forever)."""

    def test_admin_off_loopback_needs_a_token(self):
        with tempfile.TemporaryDirectory() as work:
            r = crawl_util.run_crawld_bad_start(
                work, **{"admin.address": "0.0.0.0"})
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertRegex(r.stderr,
                             r"test-config\.toml:\d+: admin\.address: "
                             r"'0\.0\.0\.0' is not a loopback address")
            self.assertFalse(os.path.exists(
                os.path.join(work, "data", "run", "admin.url")))


class _FakeApi(http.server.BaseHTTPRequestHandler):
    """Canned answers, some hostile, to check the client's side alone."""
    seen = None  # list of (method, path, authorization), set per server

    def _answer(self):
        self.server.seen.append((self.command, self.path,
                                 self.headers.get("Authorization")))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/api/status":
            status, text = 200, b"this is not json"
        elif self.path.startswith("/api/hosts/"):
            status, text = 500, b"[" * 100000
        elif self.path.startswith("/api/docs"):
            status, text = 200, json.dumps({
                "entries": [{"cursor": 5, "url": "http://x/a\tb\nc",
                             "status": None},
                            "not an object"],
                "next": "c1"}).encode()
        elif self.path == "/api/seeds":
            urls = json.loads(body)["urls"]
            status, text = 200, json.dumps(
                {"added": len(urls), "known": 0, "rejected": []}).encode()
        elif self.path == "/api/pause":
            status, text = 503, json.dumps(
                {"error": "busy \u00e9", "status": 503}).encode()
        else:
            status, text = 404, b'{"error":"no route","status":404}'
        self.send_response(status)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *args):
        pass


class ClientAlone(unittest.TestCase):
    """Usage errors, an unreachable server and a hostile fake server."""

    def test_usage_and_unreachable(self):
        r = ctl("status")
        self.assertEqual(r.returncode, 2)
        r = ctl("docs", "tail", "--api", "http://127.0.0.1:9", "--limit",
                "0")
        self.assertEqual(r.returncode, 2)
        r = ctl("status", "--api", "http://127.0.0.1:9", "--bogus")
        self.assertEqual(r.returncode, 2)
        r = ctl("rules", "frobnicate", "--api", "http://127.0.0.1:9")
        self.assertEqual(r.returncode, 2)
        r = ctl("host", "--api", "http://127.0.0.1:9")
        self.assertEqual(r.returncode, 2)
        r = ctl("status", "--api", "http://127.0.0.1:9", "--token", "a\nb")
        self.assertEqual(r.returncode, 2)  # no header injection
        r = ctl("status", "--api", "ftp://127.0.0.1:9")
        self.assertEqual(r.returncode, 2)
        for cmd in (["status"], ["seeds", "add", "-"], ["rules", "reload"],
                    ["rules", "test", "http://a/"], ["host", "a"],
                    ["docs", "tail"], ["pause"], ["resume"], ["stop"],
                    ["metrics"]):
            r = ctl(*cmd, "--help")
            self.assertEqual(r.returncode, 0, cmd)
            self.assertIn("usage: crawlctl", r.stdout)
        port = harness.free_port()
        r = ctl("status", "--api", f"http://127.0.0.1:{port}")
        self.assertEqual(r.returncode, 3, r.stderr)
        with tempfile.TemporaryDirectory() as d:
            r = ctl("status", "--data", d)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("admin.url", r.stderr)
            # Issue 19: the documented form, the option first, was
            # "unknown command '--data'" (exit 2).
            for cmd in (["status"], ["pause"], ["stop"], ["docs", "tail"]):
                r = ctl("--data", d, *cmd)
                self.assertEqual(r.returncode, 3, (cmd, r.stderr))
                self.assertIn("admin.url", r.stderr)
            r = ctl("--data", d, "url", "canon", "http://a/")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("online commands", r.stderr)
        r = ctl("--data")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_hostile_server(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeApi)
        server.seen = []
        server.timeout = 1
        thread = threading.Thread(target=server.serve_forever,
                                  kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            api = f"http://127.0.0.1:{server.server_address[1]}"
            r = ctl("status", "--api", api, "--token", "t0k")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("invalid JSON", r.stderr)
            self.assertEqual(server.seen[-1][2], "Bearer t0k")
            r = ctl("host", "http://a.test:81/x y", "--api", api)
            self.assertEqual(r.returncode, 1)
            self.assertIn("500", r.stderr)
            self.assertEqual(server.seen[-1][1],
                             "/api/hosts/http%3A%2F%2Fa.test%3A81%2Fx%20y")
            r = ctl("pause", "--api", api)
            self.assertEqual(r.returncode, 1)
            self.assertIn("503: busy", r.stderr)
            r = ctl("docs", "tail", "--api", api, "--once")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "5\tnull\thttp://x/a?b?c\t?:?\n"
                                       "?\t?\t?\t?:?\n")
            # Full pages whose cursor never moves would loop forever.
            r = ctl("docs", "tail", "--api", api, "--limit", "2")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("did not advance", r.stderr)
            # 2500 URLs in batches of at most 1000.
            urls = "".join(f"http://a.test/{i}\n" for i in range(2500))
            before = len(server.seen)
            r = ctl("seeds", "add", "-", "--api", api, input_text=urls)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("added 2500", r.stdout)
            self.assertEqual(len(server.seen) - before, 3)
            # A line over 64 KiB is not sent; the others are.
            r = ctl("seeds", "add", "-", "--api", api,
                    input_text="http://a.test/" + "x" * 70000 +
                    "\nhttp://a.test/ok\n")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("-:1: line longer than 64 KiB", r.stderr)
            self.assertIn("added 1, already known 0, rejected 1", r.stdout)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


if __name__ == "__main__":
    unittest.main()
