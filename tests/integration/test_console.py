"""The web console (issue 18, part 1) in a real headless Chromium.

A live crawl of the webfarm with the default process layout (several
workers, so the supervisor serves the console and the API) and an admin
token. tests/console/drive.mjs (playwright-core driving Debian's
/usr/bin/chromium) acts as the operator; this side starts and stops
everything and judges from the outside:
  - the app loads, asks for the token, and a pause without it is refused;
  - the overview's page count grows while the crawl runs;
  - a host page shows that host's robots.txt rules (h1 disallows
    /private/);
  - a rule test names the deciding rule as file:line;
  - the documents page lists the feed, and a record opened from its WARC
    is shown as text;
  - pause stops fetches (the webfarm's request log shows no request
    starting once the pause has settled) and resume restarts them;
  - a cross-site form POST to the API from another site's page in the same
    browser is refused (403) and changes nothing.
Screenshots go to <build>/tests/console-artifacts/. Everything is bounded:
the farm (max_seconds), crawld (stopped by PID), the driver (its own
deadline, and killed with its browser on ours).
"""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import crawl_util
import harness
import test_admin_cli as admin_cli

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER_DIR = os.path.join(os.path.dirname(HERE), "console")
CHROMIUM = "/usr/bin/chromium"

# Six hosts, 400 pages each, one page every 200 ms per host: the crawl
# would run for about 80 s, far longer than the browser needs (it is
# stopped when the test ends), so it is still fetching at the resume even
# on a loaded machine; h1 has robots rules.
FARM = """
seed = 18
hosts = 6
pages = 400
page_bytes = 600
links = 2
cross_host_share = 0.0
relative_share = 0.5
seeds = "all"

[[profile]]
hosts = 1
robots = "disallow"
"""

TOKEN = "console-t0ken"
# The driver's own deadline; ours is a little longer, to read its report.
DRIVER_DEADLINE_S = 50
PAUSE_HOLD_S = 4.5
# How long a pause may take to settle: fetches in flight finish, and a
# worker's loop may start one that was already past its gate.
PAUSE_SETTLE_S = 2.0


def api(base, path, method="GET", token=TOKEN, headers=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=b"{}" if method == "POST" else None)
    if method == "POST":
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def artifacts_dir():
    d = os.path.join(harness.build_dir(), "tests", "console-artifacts")
    os.makedirs(d, exist_ok=True)
    return d


class Console(unittest.TestCase):

    def setUp(self):
        missing = [p for p in (CHROMIUM, os.path.join(
            DRIVER_DIR, "node_modules", "playwright-core")) if
            not os.path.exists(p)]
        # Not a skip: scripts/setup.sh installs both, and a console that is
        # never driven would pass unseen.
        self.assertEqual(missing, [], "run scripts/setup.sh (chromium, npm ci "
                         "in tests/console)")

    def test_operator_drives_the_console_of_a_live_crawl(self):
        started = time.monotonic()
        with harness.Webfarm(FARM, max_seconds=120) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=120) as dns:
            work = tempfile.mkdtemp(prefix="crawld-console-")
            rules = os.path.join(work, "rules.txt")
            admin_cli.write(rules, "reject regex /never/\n")
            port = harness.free_port()
            overrides = {
                "crawl.rules_file": rules,
                "politeness.min_delay_ms": 200,
                "admin.port": port,
                "admin.token": TOKEN,
                # The default: one worker per core, so the supervisor
                # serves the console (at least two here, as on CI's 2
                # cores).
                "workers.count": 0 if (os.cpu_count() or 1) >= 2 else 2,
            }
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(work, "data"), **overrides)
            try:
                self._drive(farm, proc, data, rules, port)
            finally:
                harness.stop_process(proc)
        elapsed = time.monotonic() - started
        print(f"console test: {elapsed:.1f} s wall")

    def _drive(self, farm, proc, data, rules, port):
        base = admin_cli.wait_admin_url(proc, data)
        self.assertEqual(base, f"http://127.0.0.1:{port}")
        self.assertTrue(farm.wait_requests(
            lambda rs: sum(r["path"].startswith("/p/") for r in rs) >= 6,
            timeout=60), "the crawl did not start")
        status, st = api(base, "/api/status")
        self.assertEqual(status, 200, st)
        self.assertGreaterEqual(len(st["workers"]), 2,
                                "not the supervisor's API")

        shots = artifacts_dir()
        for f in os.listdir(shots):
            if f.endswith(".png"):
                os.remove(os.path.join(shots, f))
        cfg = {
            "base": base,
            "token": TOKEN,
            "shots": shots,
            "profile": tempfile.mkdtemp(prefix="crawld-chromium-"),
            "robots_host": f"http://h1.farm.test:{farm.port}",
            "robots_text": "/private/",
            "rule_url": farm.url("h2.farm.test", "/never/x.html"),
            "rule_where": f"{rules}:1",
            "evil_origin": f"http://127.0.0.2:{harness.free_port()}",
            "pause_hold_s": PAUSE_HOLD_S,
            "deadline_s": DRIVER_DEADLINE_S,
        }
        # Its own process group: on our deadline the driver and the
        # Chromium it started go together (we started all of them).
        driver = subprocess.Popen(
            ["node", os.path.join(DRIVER_DIR, "drive.mjs"), json.dumps(cfg)],
            cwd=DRIVER_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True)
        try:
            out, err = driver.communicate(timeout=DRIVER_DEADLINE_S + 15)
        except subprocess.TimeoutExpired:
            os.killpg(driver.pid, signal.SIGKILL)
            out, err = driver.communicate(timeout=10)
        steps = {}
        for line in out.splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            steps.setdefault(j["step"], j)
        self.assertEqual(driver.returncode, 0,
                         f"driver failed: {steps.get('error')}\n{out}\n{err}")

        # The browser saw what an operator relies on (drive.mjs checked
        # each in the page; these are its reports).
        self.assertIn("401", steps["untokened_pause_refused"]["text"])
        self.assertGreater(steps["overview_updates"]["later"],
                           steps["overview_updates"]["first"])
        self.assertGreaterEqual(steps["overview_updates"]["workers"], 2)
        # Both workers' hosts, merged by the supervisor (GET /api/hosts).
        self.assertEqual(steps["hosts_table"]["rows"], 6)
        self.assertIn("/private/", steps["host_robots"]["robots"])
        self.assertGreater(steps["record_opened"]["records"], 0)
        self.assertTrue(steps["record_opened"]["inert"])
        self.assertEqual(steps["rule_test"]["where"], f"{rules}:1")
        self.assertIn("rejected", steps["rule_test"]["verdict"])
        self.assertEqual(steps["cross_site_refused"]["status"], 403)
        self.assertIn("cross-site", steps["cross_site_refused"]["body"])

        # Pause stopped the fetches, judged by the webfarm: nothing started
        # between the settled pause and the resume; resume restarts them.
        t_pause = steps["paused"]["t"]
        t_resume = steps["resuming"]["t"]
        self.assertGreaterEqual(t_resume - t_pause, PAUSE_HOLD_S - 0.1)
        self.assertEqual(steps["resuming"]["badge"].strip(), "paused")
        self.assertTrue(farm.wait_requests(
            lambda rs: any(x["start_us"] / 1e6 > t_resume for x in rs),
            timeout=20), "no request after resume")
        reqs = farm.requests()
        late = [x["path"] for x in reqs
                if t_pause + PAUSE_SETTLE_S < x["start_us"] / 1e6 < t_resume]
        self.assertEqual(late, [], "requests started while paused")
        before = [x for x in reqs if x["start_us"] / 1e6 < t_pause]
        self.assertGreater(len(before), 0)

        # The refused forgeries changed nothing: still running.
        status, st = api(base, "/api/status")
        self.assertEqual(status, 200, st)
        self.assertEqual(st["state"], "running")
        # And the same two refusals for a plain client, the API's own rule.
        self.assertEqual(api(base, "/api/pause", "POST", token=None)[0], 401)
        self.assertEqual(api(base, "/api/pause", "POST", headers={
            "Origin": "http://evil.example",
            "Sec-Fetch-Site": "cross-site"})[0], 403)

        for name in ("console-overview.png", "console-host.png"):
            path = os.path.join(artifacts_dir(), name)
            self.assertTrue(os.path.getsize(path) > 10_000, path)


SMALL_FARM = """
seed = 5
hosts = 4
pages = 80
page_bytes = 700
links = 2
cross_host_share = 0.0
relative_share = 0.5
seeds = "all"

[[profile]]
hosts = 1
robots = "disallow"

[[profile]]
hosts = 2
errors = ["404"]
"""


def raw(base, path, method="GET", headers=None, body=None):
    """(status, headers, body bytes) of one call, without a token."""
    req = urllib.request.Request(base + path, method=method, data=body)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class Endpoints(unittest.TestCase):
    """What the console calls, without a browser, on one worker's own API
    and on the supervisor's: the same answers, the same errors."""

    def test_one_worker(self):
        self._check(workers=1)

    def test_supervisor(self):
        self._check(workers=2)

    def _check(self, workers):
        with harness.Webfarm(SMALL_FARM, max_seconds=90) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=90) as dns:
            work = tempfile.mkdtemp(prefix="crawld-console-api-")
            rules = os.path.join(work, "rules.txt")
            admin_cli.write(rules, "reject regex /never/\n")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(work, "data"),
                **{"workers.count": workers, "crawl.rules_file": rules,
                   "politeness.min_delay_ms": 150})
            try:
                base = admin_cli.wait_admin_url(proc, data)
                self.assertTrue(farm.wait_requests(
                    lambda rs: sum(r["path"].startswith("/p/")
                                   for r in rs) >= 12, timeout=60),
                    "the crawl did not start")
                self._console_files(base)
                self._status_and_hosts(base, farm)
                self._rules_and_records(base, rules)
                self._refusals(base)
            finally:
                harness.stop_process(proc)

    def _json(self, base, path):
        status, headers, body = raw(base, path)
        self.assertEqual(headers.get("Content-Type"), "application/json",
                         path)
        return status, json.loads(body)

    def _console_files(self, base):
        status, headers, body = raw(base, "/")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "text/html; charset=utf-8")
        self.assertIn("default-src 'self'", headers["Content-Security-Policy"])
        self.assertIn("frame-ancestors 'none'",
                      headers["Content-Security-Policy"])
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
        self.assertIn(b"/console/console.js", body)
        status, headers, _ = raw(base, "/console/console.js")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"],
                         "text/javascript; charset=utf-8")
        status, again, body = raw(base, "/console/console.js", headers={
            "If-None-Match": headers["ETag"]})
        self.assertEqual((status, body), (304, b""))
        self.assertEqual(raw(base, "/console/nope.js")[0], 404)

    def _status_and_hosts(self, base, farm):
        status, st = self._json(base, "/api/status")
        self.assertEqual(status, 200, st)
        hosts = st["hosts"]
        by_state = sum(hosts[k] for k in ("active", "ready", "waiting",
                                          "backing_off", "idle", "retired"))
        self.assertEqual(by_state, hosts["known"], hosts)
        # Errors by class: the failure classes among the counts, as the
        # progress line adds them up; h2's two 404 pages are one.
        self.assertTrue(admin_cli.wait_for(lambda: self._json(
            base, "/api/status")[1]["errors"].get("http_4xx"), 20), st)
        status, st = self._json(base, "/api/status")
        self.assertEqual(st["errors"]["http_4xx"], st["counts"]["http_4xx"])
        self.assertNotIn("dedupe_claimed", st["errors"])
        for k, v in st["errors"].items():
            self.assertEqual(st["counts"][k], v, k)
        self.assertGreaterEqual(st["disk"]["warc_bytes"], 0)
        self.assertGreater(st["disk"]["state_bytes"], 0)

        status, j = self._json(base, "/api/hosts?sort=host&limit=2")
        self.assertEqual(status, 200, j)
        names = [r["host"] for r in j["hosts"]]
        self.assertEqual(len(names), 2)
        self.assertEqual(names, sorted(names))
        self.assertEqual(j["matched"], 4)
        status, j = self._json(base, "/api/hosts?q=H1.FARM&sort=fetched")
        self.assertEqual([r["host"] for r in j["hosts"]],
                         [f"http://h1.farm.test:{farm.port}"])
        for bad, name in (("limit=0", "limit"), ("limit=100000", "limit"),
                          ("sort=bogus", "sort"), ("state=sleepy", "state"),
                          ("order=up", "order"), ("x=1", "x"),
                          ("q=" + "a" * 300, "q"), ("limit=1&limit=2",
                                                     "limit")):
            status, j = self._json(base, "/api/hosts?" + bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(j["status"], 400)
            self.assertIn(name, j["error"], bad)

        # A host page's recent fetches: that host's, newest first.
        host = f"h1.farm.test:{farm.port}"
        self.assertTrue(admin_cli.wait_for(lambda: self._json(
            base, "/api/hosts/" + host)[1].get("recent"), 20))
        status, j = self._json(base, "/api/hosts/" + host)
        self.assertEqual(status, 200, j)
        self.assertIn("Disallow: /private/", j["robots"]["rules"])
        times = [f["time"] for f in j["recent"]]
        self.assertEqual(times, sorted(times, reverse=True))
        for f in j["recent"]:
            self.assertTrue(f["url"].startswith("http://" + host + "/"), f)
        status, j = self._json(base, "/api/hosts/nowhere.example")
        self.assertEqual(status, 404, j)

    def _rules_and_records(self, base, rules):
        status, j = self._json(base, "/api/rules")
        self.assertEqual(status, 200, j)
        self.assertEqual(j["filter"][0]["where"], f"{rules}:1")
        self.assertEqual(j["filter"][0]["rule"], "reject regex /never/")

        entries = []
        self.assertTrue(admin_cli.wait_for(lambda: entries.extend(
            self._json(base, "/api/docs?limit=20")[1]["entries"]) or
            entries, 30), "no feed entry")
        e = next(x for x in entries if "/p/" in x["url"])
        q = urllib.parse.urlencode({"warc": e["warc"], "offset": e["offset"],
                                    "length": e["length"]})
        status, rec = self._json(base, "/api/docs/record?" + q)
        self.assertEqual(status, 200, rec)
        self.assertEqual(rec["target_uri"], e["url"])
        self.assertEqual(rec["type"], "response")
        self.assertTrue(rec["http_head"].startswith("HTTP/1.1 200"))
        self.assertIn("<html", rec["body"].lower())
        for bad in ("warc=..%2Fx.warc.gz&offset=0&length=1",
                    "warc=a.warc&offset=0&length=0",
                    "warc=a.warc&offset=x&length=1", "warc=a.warc"):
            status, j = self._json(base, "/api/docs/record?" + bad)
            self.assertEqual(status, 400, bad)
        status, j = self._json(
            base, "/api/docs/record?warc=none.warc.gz&offset=0&length=9")
        self.assertEqual(status, 404, j)

    def _refusals(self, base):
        # No token configured here: the browser rules still hold.
        cases = [
            ({"Content-Type": "text/plain"}, 415),
            ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
            ({"Content-Type": "application/json",
              "Origin": "http://evil.example"}, 403),
            ({"Content-Type": "application/json",
              "Sec-Fetch-Site": "cross-site"}, 403),
        ]
        for headers, want in cases:
            status, _, body = raw(base, "/api/pause", "POST", headers, b"{}")
            self.assertEqual(status, want, (headers, body))
            self.assertEqual(json.loads(body)["status"], want)
        status, _, body = raw(base, "/api/status",
                              headers={"Host": "evil.example"})
        self.assertEqual(status, 403, body)
        self.assertIn("rebinding", json.loads(body)["error"])
        status, st = self._json(base, "/api/status")
        self.assertNotEqual(st["state"], "paused")


class ClusterNodes(unittest.TestCase):
    """The overview's nodes: with --cluster, a node's /api/status says which
    node it is and which nodes the ring holds (two nodes of two workers
    over a real redis-server)."""

    def test_status_names_the_live_nodes(self):
        import redis_util  # only here: the other tests need no Redis
        with harness.Webfarm(SMALL_FARM, max_seconds=90) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=90) as dns, \
                redis_util.RedisServer(max_seconds=90) as redis:
            work = tempfile.mkdtemp(prefix="crawld-console-cluster-")
            procs, datas = [], []
            try:
                for node in (0, 1):
                    data = os.path.join(work, f"node-{node}")
                    os.makedirs(data)
                    config = crawl_util.write_config(
                        dns.server, data, **{"workers.count": 2,
                                             "politeness.min_delay_ms": 150})
                    with open(os.path.join(data, "stderr.txt"), "w") as err:
                        procs.append(subprocess.Popen(
                            [harness.binary("crawld"), "--config", config,
                             "--seeds", farm.seeds_file, "--cluster",
                             redis.url, "--node-id", str(node), "--nodes",
                             "2", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=err))
                    datas.append(data)
                base = admin_cli.wait_admin_url(procs[0], datas[0])

                def cluster(url):
                    status, st = api(url, "/api/status", token=None)
                    c = st.get("cluster") if status == 200 else None
                    return c if c and c["live_nodes"] == [0, 1] else None

                c = admin_cli.wait_for(lambda: cluster(base), 60)
                self.assertTrue(c, api(base, "/api/status", token=None))
                self.assertEqual(c["node_id"], 0)
                self.assertEqual(c["nodes"], 2)
                self.assertEqual(c["gone_nodes"], [])
                self.assertGreater(c["epoch"], 0)
                # Node 1 says the same ring from its side.
                other = admin_cli.wait_admin_url(procs[1], datas[1])
                c = admin_cli.wait_for(lambda: cluster(other), 30)
                self.assertTrue(c, api(other, "/api/status", token=None))
                self.assertEqual(c["node_id"], 1)
            finally:
                for p in procs:
                    harness.stop_process(p)


if __name__ == "__main__":
    unittest.main()
