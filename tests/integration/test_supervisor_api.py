"""The supervisor's admin API (issues 6 and 7): crawld with workers.count = 2
serves the configured [admin] address and port itself and answers every
endpoint of docs/API.md by asking its workers. Judged as an operator would:
through crawlctl and plain HTTP against DATA/run/admin.url, and by the
webfarm's request log, the WARC files and the summary.
"""
import collections
import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import crawl_util
import harness
import test_admin_cli as admin_cli
import test_progress as progress

FARM = """
seed = 11
hosts = 6
pages = 200
page_bytes = 600
links = 1
cross_host_share = 0.0
relative_share = 0.5
"""

SMALL_FARM = """
seed = 3
hosts = 6
pages = 25
page_bytes = 800
links = 4
cross_host_share = 0.3
relative_share = 0.5
seeds = "all"
"""

TOKEN = "sup-t0ken"


def host(i):
    return f"h{i}.farm.test"


def ctl(*args, **kw):
    return admin_cli.ctl(*args, **kw)


def http(base, path, method="GET", body=None, token=None):
    """(status, content type, text) of one call; errors are answers too."""
    req = urllib.request.Request(base + path, method=method, data=body)
    if body is not None or method != "GET":
        # What the API asks of every state change (docs/API.md,
        # "Cross-site requests").
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def check_exposition(test, text):
    """Parses like test_progress (which fails on a bad line), then checks
    what that parser does not: each family's HELP and TYPE at most once and
    before its samples, and all samples of a family together."""
    samples, types = progress.parse_exposition(text)
    type_lines = collections.Counter(
        l.split(" ")[2] for l in text.splitlines() if l.startswith("# TYPE "))
    help_lines = collections.Counter(
        l.split(" ")[2] for l in text.splitlines() if l.startswith("# HELP "))
    test.assertEqual({k: n for k, n in type_lines.items() if n > 1}, {})
    test.assertEqual({k: n for k, n in help_lines.items() if n > 1}, {})

    def family(name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and types.get(base) == "histogram":
                return base
        return name

    runs = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        if not runs or runs[-1] != family(name):
            runs.append(family(name))
    test.assertEqual(len(runs), len(set(runs)),
                     f"a family's samples are split: {runs}")
    return samples, types


def by_worker(samples, name):
    """{worker label: value} of one family's unlabelled-but-worker series."""
    out = {}
    for (n, labels), v in samples.items():
        if n != name:
            continue
        d = dict(labels)
        if set(d) == {"worker"}:
            out[d["worker"]] = v
    return out


def warc_workers(data):
    """{host: {worker ids}} and the response URIs (robots.txt excluded)."""
    owners = collections.defaultdict(set)
    uris = []
    for path in sorted(glob.glob(os.path.join(data, "warc", "*.warc.gz"))):
        worker = int(os.path.basename(path).split("-")[2])
        for r in crawl_util.read_warc(path):
            h = r["headers"]
            if h.get("warc-type") != "response":
                continue
            uri = h["warc-target-uri"]
            if uri.endswith("/robots.txt"):
                continue
            owners[uri.split("/")[2].split(":")[0]].add(worker)
            uris.append(uri)
    return owners, uris


class Session(unittest.TestCase):
    """An operator session against a two-worker crawl, through the
    supervisor: status, metrics, pause/resume, seeds, rules, host, docs,
    and stop; then /metrics against the WARCs."""

    def test_operator_session_through_the_supervisor(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            work = tempfile.mkdtemp(prefix="crawld-supapi-")
            rules = os.path.join(work, "rules.txt")
            admin_cli.write(rules, "reject regex /never/\n")
            port = harness.free_port()
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(work, "data"),
                **{"workers.count": 2,
                   "crawl.rules_file": rules,
                   "politeness.min_delay_ms": 200,
                   "admin.port": port})
            try:
                self._session(farm, proc, data, work, rules, port)
            finally:
                harness.stop_process(proc)

    def _session(self, farm, proc, data, work, rules, port):
        api = admin_cli.wait_admin_url(proc, data)
        self.assertEqual(api, f"http://127.0.0.1:{port}")
        self.assertTrue(admin_cli.wait_for(
            lambda: all(os.path.exists(os.path.join(
                data, "run", f"admin-{i}.url")) for i in (0, 1)), 60),
            "the workers did not start their APIs")
        self.assertTrue(farm.wait_requests(
            lambda rs: sum(r["path"].startswith("/p/") for r in rs) >= 6,
            timeout=60), "the crawl did not start")

        # --- status: sums and one entry per worker.
        r = ctl("status", "--data", data, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        st = json.loads(r.stdout)
        self.assertEqual(st["state"], "running")
        ws = st["workers"]
        self.assertEqual([w["id"] for w in ws], [0, 1])
        for w in ws:
            self.assertTrue(w["up"], w)
            self.assertEqual(w["restarts"], 0)
            self.assertGreater(w["pid"], 0)
            self.assertNotIn("error", w)
            self.assertEqual(w["status"]["workers"][0]["id"], w["id"])
            self.assertEqual(w["pages"], w["status"]["pages"])
        self.assertEqual(st["pages"], sum(w["status"]["pages"] for w in ws))
        self.assertEqual(st["queued"], sum(w["status"]["queued"] for w in ws))
        self.assertEqual(st["hosts"]["known"],
                         sum(w["status"]["hosts"]["known"] for w in ws))
        self.assertEqual({w["pid"] for w in ws} & {proc.pid}, set())
        r = ctl("status", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        self.assertRegex(r.stdout, r"worker 0:\s+\d+ pages")
        self.assertRegex(r.stdout, r"worker 1:\s+\d+ pages")

        # --- metrics: one exposition, each worker's series labelled.
        r = ctl("metrics", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        samples, types = check_exposition(self, r.stdout)
        self.assertEqual(set(by_worker(samples, "crawld_pages_fetched_total")),
                         {"0", "1"})
        self.assertEqual(types["crawld_pages_fetched_total"], "counter")
        self.assertEqual(samples[("crawld_workers_up", frozenset())], 2)
        for w in ("0", "1"):
            key = frozenset({("worker", w)})
            self.assertEqual(samples[("crawld_worker_up", key)], 1)
            self.assertEqual(samples[("crawld_worker_restarts_total", key)], 0)

        # --- pause: every worker; no request starts 2 s after the answer.
        r = ctl("pause", "--data", data)
        t_pause = time.time()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"state:\s+paused")
        st = json.loads(ctl("status", "--data", data, "--json").stdout)
        self.assertEqual(st["state"], "paused")
        self.assertEqual([w["status"]["state"] for w in st["workers"]],
                         ["paused", "paused"])
        time.sleep(3.5)
        t_resume = time.time()
        r = ctl("resume", "--data", data)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"state:\s+running")
        self.assertTrue(farm.wait_requests(
            lambda rs: any(x["start_us"] / 1e6 > t_resume for x in rs),
            timeout=20), "no request after resume")
        late = [x for x in farm.requests()
                if t_pause + 2.0 < x["start_us"] / 1e6 < t_resume]
        self.assertEqual(late, [], "requests started while paused")

        # --- seeds: to worker 0, which routes each URL to its owner. One
        # deep page per host: the chains (200 ms apart) are far from them.
        new = [farm.url(host(i), "/p/190.html") for i in range(6)]
        seeds = os.path.join(work, "seeds.txt")
        admin_cli.write(seeds, "".join(u + "\n" for u in new) +
                        "ftp://example.test/x\n")
        r = ctl("seeds", "add", seeds, "--data", data)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # the ftp URL
        # Worker 0 counts a URL it sent on to another worker as known
        # (worker.cc Enqueue), so only the total is certain here; the fetch
        # below shows that each one arrived.
        added = int(r.stdout.split("added ")[1].split(",")[0])
        known = int(r.stdout.split("already known ")[1].split(",")[0])
        self.assertEqual(added + known, 6, r.stdout)
        self.assertIn("rejected 1", r.stdout)
        # Malformed bodies: the worker's 400, as JSON.
        for body in (b"{not json", b'{"urls": "x"}', b"[]"):
            status, ctype, text = http(api, "/api/seeds", "POST", body)
            self.assertEqual(status, 400, text)
            self.assertEqual(ctype, "application/json")
            self.assertEqual(json.loads(text)["status"], 400)
        status, _, text = http(api, "/api/nothing")
        self.assertEqual((status, json.loads(text)["status"]), (404, 404))
        status, _, text = http(api, "/api/seeds")
        self.assertEqual(status, 405, text)

        # --- rules test (worker 0) and reload (every worker).
        r = ctl("rules", "test", farm.url(host(1), "/never/x"), "--data",
                data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"filter:\s+reject")
        self.assertIn("rules.txt:1", r.stdout)

        # --- host: asked of its owner, which alone knows it.
        self.assertTrue(farm.wait_requests(
            lambda rs: all(any(x["host"] == host(i) and
                               x["path"].startswith("/p/") for x in rs)
                           for i in range(6)), timeout=30),
            "not every host fetched yet")
        for i in range(6):
            r = ctl("host", f"{host(i)}:{farm.port}", "--data", data,
                    "--json")
            self.assertEqual(r.returncode, 0, f"{host(i)}: {r.stderr}")
            rec = json.loads(r.stdout)
            self.assertEqual(rec["host"], f"http://{host(i)}:{farm.port}")
            self.assertGreater(rec["pages"], 0)
        r = ctl("host", f"http://{host(2)}:{farm.port}", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"robots:\s+ready")
        r = ctl("host", "nowhere.farm.test", "--data", data)
        self.assertEqual(r.returncode, 1)
        self.assertIn("404", r.stderr)

        admin_cli.write(rules, "reject regex /never/\nthis is not a rule\n")
        r = ctl("rules", "reload", "--data", data)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rules.txt:2", r.stderr)
        admin_cli.write(rules, "reject regex /never/\nreject regex /nope/\n")
        r = ctl("rules", "reload", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 filter rules", r.stdout)
        r = ctl("rules", "test", farm.url(host(0), "/nope/y"), "--data",
                data, "--json")
        self.assertFalse(json.loads(r.stdout)["filter"]["accept"])

        # --- the seeded pages were fetched, by whichever worker owns them.
        self.assertTrue(farm.wait_requests(
            lambda rs: {f"http://{x['host']}:{farm.port}{x['path']}"
                        for x in rs} >= set(new), timeout=30),
            "a seeded page was not fetched")

        # --- docs tail: the feed through worker 0.
        cursor_file = os.path.join(work, "feed.cursor")
        r = ctl("docs", "tail", "--data", data, "--cursor-file", cursor_file,
                "--limit", "50")
        self.assertEqual(r.returncode, 0, r.stderr)
        tailed = admin_cli.tail_lines(r.stdout)
        self.assertGreater(len(tailed), 0)

        # --- pause, let in-flight fetches end, scrape, then stop.
        r = ctl("pause", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)

        def idle():
            s = ctl("status", "--data", data, "--json")
            return s.returncode == 0 and json.loads(s.stdout)["in_flight"] == 0

        self.assertTrue(admin_cli.wait_for(idle, 30), "fetches in flight")
        status, ctype, text = http(api, "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain"), ctype)
        samples, _ = check_exposition(self, text)
        pages = by_worker(samples, "crawld_pages_fetched_total")
        self.assertEqual(set(pages), {"0", "1"})

        r = ctl("stop", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"state:\s+stopping")
        proc.wait(timeout=60)
        self.assertEqual(proc.returncode, 0)
        with open(os.path.join(data, "summary.json")) as f:
            self.assertEqual(json.load(f)["stop_reason"], "api stop")
        self.assertFalse(os.path.exists(os.path.join(data, "run",
                                                     "admin.url")))
        r = ctl("status", "--data", data, "--timeout-ms", "2000")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)

        # The counters, summed over the workers, are the WARCs' responses,
        # and each worker's counter is its own WARC files' count.
        owners, uris = warc_workers(data)
        self.assertEqual(sum(pages.values()), len(uris))
        per_worker = collections.Counter()
        for path in glob.glob(os.path.join(data, "warc", "*.warc.gz")):
            w = os.path.basename(path).split("-")[2]
            per_worker[str(int(w))] += sum(
                1 for x in crawl_util.read_warc(path)
                if x["headers"].get("warc-type") == "response" and
                not x["headers"]["warc-target-uri"].endswith("/robots.txt"))
        self.assertEqual({k: int(v) for k, v in pages.items()},
                         dict(per_worker))
        self.assertEqual({h: w for h, w in owners.items() if len(w) > 1}, {})
        # Every fed document is in the WARCs.
        self.assertLessEqual({t[2] for t in tailed},
                             set(crawl_util.CrawlResult(
                                 subprocess.CompletedProcess([], 0), data)
                                 .response_uris(include_robots=True)))


class TokenAndBadInput(unittest.TestCase):
    """With admin.token: the supervisor requires it and forwards it to the
    workers; a malformed request is answered 4xx while the crawl runs to
    its end with nothing lost."""

    def test_token_forwarded_and_crawl_completes(self):
        with harness.Webfarm(SMALL_FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-supapi-tok-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data,
                **{"workers.count": 2,
                   "politeness.min_delay_ms": 50,
                   "admin.token": TOKEN})
            try:
                api = admin_cli.wait_admin_url(proc, data)
                r = ctl("status", "--data", data)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("401", r.stderr)
                status, _, text = http(api, "/api/status", token="wrong")
                self.assertEqual(status, 401, text)
                self.assertTrue(admin_cli.wait_for(
                    lambda: all(os.path.exists(os.path.join(
                        data, "run", f"admin-{i}.url")) for i in (0, 1)), 60))
                r = ctl("status", "--data", data, "--json", "--token", TOKEN)
                self.assertEqual(r.returncode, 0, r.stderr)
                st = json.loads(r.stdout)
                # The workers accepted the forwarded token.
                self.assertEqual([("error" in w) for w in st["workers"]],
                                 [False, False], st["workers"])
                for body in (b"{not json", b"\xff\xfe", b'{"urls": [1, 2'):
                    status, ctype, text = http(api, "/api/seeds", "POST",
                                               body, token=TOKEN)
                    self.assertEqual(status, 400, text)
                    self.assertEqual(json.loads(text)["status"], 400)
                status, _, text = http(api, "/api/docs?limit=0",
                                       token=TOKEN)
                self.assertEqual(status, 400, text)
                status, _, text = http(api, "/api/hosts/%zz", token=TOKEN)
                self.assertEqual(status, 400, text)
                result = crawl_util.finish_crawl(proc, data, timeout=300)
            finally:
                harness.stop_process(proc)
            msg = result.stderr[-3000:]
            self.assertEqual(result.returncode, 0, msg)
            self.assertEqual(result.summary["stop_reason"], "done", msg)
            self.assertIn(f"admin API: {api}", result.stderr)
            _, uris = warc_workers(data)
            self.assertEqual(set(farm.manifest()) - set(uris), set())
            self.assertFalse(os.path.exists(os.path.join(data, "run",
                                                         "admin.url")))


class PausedRestart(unittest.TestCase):
    """A worker killed while the crawl is paused comes back paused, and
    status and /metrics count its restart."""

    def test_restarted_worker_is_paused_again(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-supapi-kill-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data,
                **{"workers.count": 2,
                   "checkpoint.interval_s": 0.5,
                   "politeness.min_delay_ms": 200})
            try:
                admin_cli.wait_admin_url(proc, data)
                self.assertTrue(farm.wait_requests(
                    lambda rs: sum(r["path"].startswith("/p/")
                                   for r in rs) >= 6, timeout=60))

                def status():
                    r = ctl("status", "--data", data, "--json")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    return json.loads(r.stdout)

                r = ctl("pause", "--data", data)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                victim = status()["workers"][1]
                os.kill(victim["pid"], signal.SIGKILL)

                def back_and_paused():
                    st = status()
                    w = st["workers"][1]
                    return (w["restarts"] == 1 and w["up"] and
                            w.get("pid") != victim["pid"] and
                            w.get("status", {}).get("state") == "paused" and
                            st["state"] == "paused") and st

                st = admin_cli.wait_for(back_and_paused, 60)
                self.assertTrue(st, status())
                samples, _ = check_exposition(
                    self, ctl("metrics", "--data", data).stdout)
                self.assertEqual(samples[("crawld_worker_restarts_total",
                                          frozenset({("worker", "1")}))], 1)
                self.assertEqual(samples[("crawld_workers_up", frozenset())],
                                 2)
                r = ctl("resume", "--data", data)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual(status()["state"], "running")
                r = ctl("stop", "--data", data)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                proc.wait(timeout=60)
                self.assertEqual(proc.returncode, 0)
            finally:
                harness.stop_process(proc)


class Issue19(unittest.TestCase):
    """Through the supervisor: idle connections do not lock the API (issue
    19 item 5), and the workers' metrics arrive as data (issue 13): the
    supervisor's /api/metrics is the same registry as its /metrics."""

    def test_idle_connections_and_structured_metrics(self):
        import socket
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            work = tempfile.mkdtemp(prefix="crawld-supapi-19-")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(work, "data"),
                **{"workers.count": 2, "politeness.min_delay_ms": 200,
                   "admin.port": 0})
            idle = []
            try:
                api = admin_cli.wait_admin_url(proc, data)
                self.assertTrue(admin_cli.wait_for(
                    lambda: all(os.path.exists(os.path.join(
                        data, "run", f"admin-{i}.url")) for i in (0, 1)),
                    60), "the workers did not start their APIs")
                self.assertTrue(farm.wait_requests(
                    lambda rs: sum(r["path"].startswith("/p/")
                                   for r in rs) >= 6,
                    timeout=60), "the crawl did not start")
                host_, port = api.removeprefix("http://").rsplit(":", 1)
                for _ in range(80):
                    idle.append(socket.create_connection(
                        (host_, int(port)), timeout=5))
                r = ctl("--data", data, "status", "--timeout-ms", "5000")
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertRegex(r.stdout, r"worker 1:\s+\d+ pages")
                for s in idle:
                    s.close()
                idle = []

                r = ctl("pause", "--data", data)
                self.assertEqual(r.returncode, 0, r.stderr)

                def quiet():
                    s = ctl("status", "--data", data, "--json")
                    return (s.returncode == 0 and
                            json.loads(s.stdout)["in_flight"] == 0)

                self.assertTrue(admin_cli.wait_for(quiet, 30))
                status, _, text = http(api, "/metrics")
                self.assertEqual(status, 200)
                samples, _ = check_exposition(self, text)
                status, ctype, body = http(api, "/api/metrics")
                self.assertEqual(status, 200)
                self.assertTrue(ctype.startswith("application/json"), ctype)
                snap = json.loads(body)
                fams = {f["name"]: f for f in snap["families"]}
                pages = {
                    dict(x["labels"])["worker"]: x["value"]
                    for x in fams["crawld_pages_fetched_total"]["series"]}
                self.assertEqual(set(pages), {"0", "1"})
                self.assertEqual(
                    {k: int(v) for k, v in pages.items()},
                    {k: int(v) for k, v in by_worker(
                        samples, "crawld_pages_fetched_total").items()})
                self.assertEqual(fams["crawld_workers_up"]["series"][0]
                                 ["value"], 2)
                r = ctl("--data", data, "stop")
                self.assertEqual(r.returncode, 0, r.stderr)
                proc.wait(timeout=60)
                self.assertEqual(proc.returncode, 0)
            finally:
                for s in idle:
                    s.close()
                harness.stop_process(proc)


class PortTaken(unittest.TestCase):
    """A configured admin port in use: crawld says so and exits 1 before
    any worker starts."""

    def test_port_in_use(self):
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            with tempfile.TemporaryDirectory() as work:
                data = os.path.join(work, "data")
                os.makedirs(data)
                config = crawl_util.write_config(
                    "127.0.0.1:9", data,
                    **{"workers.count": 2, "admin.port": port})
                r = subprocess.run(
                    [harness.binary("crawld"), "--config", config, "--seed",
                     "http://127.0.0.1:1/"],
                    capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(f"127.0.0.1:{port}", r.stderr)
                self.assertEqual(glob.glob(os.path.join(data, "worker-*",
                                                        "summary.json")), [])


if __name__ == "__main__":
    unittest.main()
