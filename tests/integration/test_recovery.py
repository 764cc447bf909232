"""Crash safety (issue 5, item 4): kill -9 at random moments, restart on the
same data directory, and the crawl still ends with every page recorded
exactly once, and every WARC file valid."""
import collections
import glob
import os
import random
import signal
import tempfile
import time
import unittest

import crawl_util
import harness

# The demo web: 50 hosts x 100 pages.
FARM = """
seed = 2
hosts = 50
pages = 100
page_bytes = 1500
links = 6
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"
"""

SETTINGS = {
    "checkpoint.interval_s": 0.5,
    "politeness.min_delay_ms": 20,
}


class KillNine(unittest.TestCase):

    def test_five_kills_lose_nothing_and_store_every_page_once(self):
        seed = int(os.environ.get("CRAWLD_TEST_SEED", time.time_ns() % 100000))
        rng = random.Random(seed)
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-kill9-")
            kills = 0
            for _ in range(5):
                proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                                 **SETTINGS)
                time.sleep(rng.uniform(0.5, 2.5))
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    kills += 1
                proc.wait(timeout=30)
            proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                             **SETTINGS)
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            msg = f"seed {seed}: {result.stderr[-2000:]}"
            self.assertEqual(result.returncode, 0, msg)
            self.assertEqual(result.summary["stop_reason"], "done", msg)
            self.assertGreaterEqual(kills, 3, f"seed {seed}: the crawl ended "
                                    "before most kills; the web is too small")

            files = sorted(glob.glob(os.path.join(data, "warc", "*.warc.gz")))
            verify = crawl_util.crawlctl("warc", "verify", *files)
            self.assertEqual(verify.returncode, 0,
                             f"seed {seed}: {verify.stdout}{verify.stderr}")
            # Files cut after kills read whole with warcio.js too.
            ok, _, out = crawl_util.warcio_check(*files)
            self.assertTrue(ok, f"seed {seed}: {out}")
            counts = collections.Counter()
            for path in files:
                for r in crawl_util.read_warc(path):
                    h = r["headers"]
                    if h.get("warc-type") in ("response", "revisit"):
                        uri = h["warc-target-uri"]
                        if not uri.endswith("/robots.txt"):
                            counts[uri] += 1
            manifest = set(farm.manifest())
            self.assertGreaterEqual(len(manifest), 5000)
            missing = manifest - set(counts)
            self.assertEqual(missing, set(), f"seed {seed}: lost URLs")
            # A page in flight at a kill has no record and is fetched again;
            # a page recorded is never fetched again (the replay skips it,
            # whatever the moment of the kill): each page is stored once.
            twice = {u: n for u, n in counts.items() if n > 1}
            self.assertEqual(twice, {}, f"seed {seed}: stored twice")
            self.assertEqual(set(counts), manifest, f"seed {seed}")


def children(pid):
    """The PIDs of a process's children (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except FileNotFoundError:
        return []


def alive(pid):
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class SupervisorKilled(unittest.TestCase):
    """kill -9 of the supervisor (the default layout: several workers): its
    workers notice, stop at a checkpoint and exit; a crawl started at once
    on the same data directory waits for them instead of running beside
    them (two crawls writing one directory fetch pages again and again).
    One old worker is held stopped (SIGSTOP) to make that window long."""

    def test_a_restart_waits_for_the_workers_of_a_killed_supervisor(self):
        settings = dict(SETTINGS, **{"workers.count": 2})
        farm_cfg = FARM.replace("pages = 100", "pages = 30")
        with harness.Webfarm(farm_cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-sup-kill9-")
            proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                             **settings)
            deadline = time.monotonic() + 60
            while (len(farm.requests()) < 100 and proc.poll() is None and
                   time.monotonic() < deadline):
                time.sleep(0.05)
            old = children(proc.pid)
            self.assertIsNone(proc.poll(), "the crawl ended too soon")
            self.assertEqual(len(old), 2, old)
            held = old[0]
            os.kill(held, signal.SIGSTOP)
            try:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                again, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                                  **settings)
                # Two seconds with the old worker alive: the new crawl
                # must start no worker of its own, and say why it waits.
                end = time.monotonic() + 2
                while time.monotonic() < end and again.poll() is None:
                    self.assertEqual(children(again.pid), [],
                                     "a worker started beside the old one")
                    time.sleep(0.05)
                self.assertIsNone(again.poll())
                with open(os.path.join(data, "stderr.txt")) as f:
                    self.assertIn("waiting up to", f.read())
            finally:
                os.kill(held, signal.SIGCONT)
            # Released, the old worker stops; then the new crawl runs.
            end = time.monotonic() + 60
            while any(alive(p) for p in old) and time.monotonic() < end:
                time.sleep(0.05)
            self.assertFalse(any(alive(p) for p in old), "old workers live")
            result = crawl_util.finish_crawl(again, data, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.summary["stop_reason"], "done")
            files = sorted(glob.glob(os.path.join(data, "warc", "*.warc.gz")))
            verify = crawl_util.crawlctl("warc", "verify", *files)
            self.assertEqual(verify.returncode, 0, verify.stdout)
            counts = collections.Counter()
            for path in files:
                for r in crawl_util.read_warc(path):
                    h = r["headers"]
                    if h.get("warc-type") in ("response", "revisit"):
                        uri = h["warc-target-uri"]
                        if not uri.endswith("/robots.txt"):
                            counts[uri] += 1
            self.assertEqual(set(counts), set(farm.manifest()))
            self.assertEqual({u: n for u, n in counts.items() if n > 2}, {})


class TrapBudgetAcrossKills(unittest.TestCase):
    """Issue 14: a host's URL budget (traps.host_budget) holds over the
    crawl, not per process: five kill -9 restarts grant no fresh budget.
    Judged from the web server's request log."""

    BUDGET = 30

    def test_five_kills_never_exceed_a_hosts_budget(self):
        seed = int(os.environ.get("CRAWLD_TEST_SEED", time.time_ns() % 100000))
        rng = random.Random(seed)
        farm_cfg = ("seed = 4\nhosts = 2\npages = 300\npage_bytes = 800\n"
                    "links = 8\ncross_host_share = 0.0\n"
                    "relative_share = 0.5\nseeds = \"all\"\n")
        settings = dict(SETTINGS, **{"traps.host_budget": self.BUDGET,
                                     "politeness.min_delay_ms": 100})
        with harness.Webfarm(farm_cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-budget-kill9-")
            kills = 0
            for _ in range(5):
                # Each kill lands while the budget is being spent: after a
                # few more pages (a random number), whatever the machine's
                # speed. Five kills take at most 40 of the 60 pages.
                before = len(farm.requests())
                more = rng.randint(2, 8)
                proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                                 **settings)
                deadline = time.monotonic() + 60
                while (len(farm.requests()) < before + more and
                       proc.poll() is None and time.monotonic() < deadline):
                    time.sleep(0.05)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    kills += 1
                proc.wait(timeout=30)
            proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                             **settings)
            result = crawl_util.finish_crawl(proc, data, timeout=120)
            msg = f"seed {seed}: {result.stderr[-2000:]}"
            self.assertEqual(result.returncode, 0, msg)
            self.assertGreaterEqual(kills, 3, f"seed {seed}: too few kills")
            pages = collections.defaultdict(set)
            for r in farm.final_requests():
                if r["method"] == "GET" and r["path"] != "/robots.txt":
                    pages[r["host"]].add(r["path"])
            self.assertEqual(len(pages), 2, msg)
            for host, paths in pages.items():
                self.assertLessEqual(len(paths), self.BUDGET,
                                     f"seed {seed}: {host}: {sorted(paths)}")
                # The budget was spent (300 pages were there to take).
                self.assertGreaterEqual(len(paths), self.BUDGET // 2,
                                        f"seed {seed}: {host}")


class RobotsAcrossRestart(unittest.TestCase):

    def test_restart_does_not_fetch_robots_txt_again(self):
        """robots.txt answers are part of the checkpoint: stopped and
        started again within their TTL, crawld asks no host for robots.txt
        twice (judged from the webfarm's request log)."""
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-robots-restart-")
            proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                             **SETTINGS)
            deadline = time.time() + 120
            while time.time() < deadline and proc.poll() is None and \
                    len(farm.requests()) < len(farm.manifest()) // 3:
                time.sleep(0.05)
            self.assertIsNone(proc.poll(), "the crawl ended too soon")
            proc.send_signal(signal.SIGTERM)
            first = crawl_util.finish_crawl(proc, data, timeout=120)
            self.assertEqual(first.returncode, 0, first.stderr[-2000:])
            asked_before = {r["host"] for r in farm.requests()
                            if r["path"] == "/robots.txt"}
            self.assertGreater(len(asked_before), 0)
            proc, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                             **SETTINGS)
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            self.assertEqual(result.summary["stop_reason"], "done")
            robots = collections.Counter(
                r["host"] for r in farm.final_requests()
                if r["path"] == "/robots.txt")
            self.assertEqual({h: n for h, n in robots.items() if n > 1}, {},
                             "robots.txt fetched again after the restart")
            restored = sum(int(e.get("robots_restored", 0))
                           for e in crawl_util.log_events(data, "recovered"))
            self.assertEqual(restored, len(asked_before))


if __name__ == "__main__":
    unittest.main()
