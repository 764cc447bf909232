"""Worker processes (issue 6): crawld with workers.count > 1 is a supervisor
with that many worker processes, each owning the hosts the consistent-hash
ring gives it. Judged from the outside: the webfarm's request log (who asked
for what, when), the WARC files (the worker id is in each file's name), and
the summary."""
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

FARM = """
seed = 7
hosts = 24
pages = 40
page_bytes = 1500
links = 6
cross_host_share = 0.3
relative_share = 0.5
seeds = "all"
"""

MIN_DELAY_MS = 20


def records_by_worker(data):
    return crawl_util.page_records_by_worker(data)


def host_of(uri):
    return uri.split("/")[2].split(":")[0]


def worker_pids(supervisor_pid):
    """PIDs of the supervisor's children (its workers), from /proc."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == supervisor_pid:
            pids.append(int(name))
    return pids


class WorkersTest(unittest.TestCase):

    def assert_polite(self, farm):
        reqs = farm.final_requests()
        over = {h: n for h, n in harness.max_in_flight_per_host(reqs).items()
                if n > 1}
        self.assertEqual(over, {}, "two requests in flight on one host")
        short = {h: g for h, g in harness.min_gap_per_host(reqs).items()
                 if g is not None and g < MIN_DELAY_MS * 1000 * 0.9}
        self.assertEqual(short, {}, "gaps below min_delay_ms (us)")

    def assert_complete(self, farm, data, result, max_copies):
        msg = result.stderr[-3000:]
        self.assertEqual(result.returncode, 0, msg)
        self.assertEqual(result.summary["stop_reason"], "done", msg)
        files = sorted(glob.glob(os.path.join(data, "warc", "*.warc.gz")))
        verify = crawl_util.crawlctl("warc", "verify", *files)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        counts = collections.Counter(u for _, u in records_by_worker(data))
        manifest = set(farm.manifest())
        self.assertEqual(manifest - set(counts), set(), "manifest URLs lost")
        self.assertEqual(set(counts) - manifest, set(), "URLs off manifest")
        over = {u: n for u, n in counts.items() if n > max_copies}
        self.assertEqual(over, {}, f"URLs recorded more than {max_copies}x")
        return counts


class FourWorkers(WorkersTest):

    def test_each_host_has_one_worker_and_each_page_is_fetched_once(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-w4-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 4,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assert_complete(farm, data, result, max_copies=1)
            owners = collections.defaultdict(set)
            for worker, uri in records_by_worker(data):
                owners[host_of(uri)].add(worker)
            self.assertEqual(len(owners), 24)
            shared = {h: w for h, w in owners.items() if len(w) > 1}
            self.assertEqual(shared, {}, "a host fetched by two workers")
            # The ring spreads the hosts: every worker got some.
            used = set().union(*owners.values())
            self.assertEqual(used, {0, 1, 2, 3})
            # The server saw each page once (robots.txt once per host too).
            pages = collections.Counter(
                (r["host"], r["path"]) for r in farm.final_requests())
            self.assertEqual({k: n for k, n in pages.items() if n > 1}, {})
            self.assertGreater(result.count("routed_out"), 0)
            self.assertEqual(result.count("routed_out"),
                             result.count("routed_in"))
            self.assert_polite(farm)


class KillWorker(WorkersTest):

    def test_killed_worker_is_restarted_and_nothing_is_lost(self):
        seed = int(os.environ.get("CRAWLD_TEST_SEED", time.time_ns() % 100000))
        rng = random.Random(seed)
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-wkill-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 3,
                    "checkpoint.interval_s": 0.5,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            killed = None
            deadline = time.time() + 120
            # Kill one worker once the crawl is under way: between 10% and
            # 60% of the pages requested.
            want = int(len(farm.manifest()) * rng.uniform(0.1, 0.6))
            while time.time() < deadline and proc.poll() is None and \
                    len(farm.requests()) < want:
                time.sleep(0.05)
            pids = worker_pids(proc.pid)
            if proc.poll() is None and pids:
                killed = rng.choice(pids)
                os.kill(killed, signal.SIGKILL)
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertIsNotNone(killed, f"seed {seed}: no worker to kill")
            self.assertGreaterEqual(result.count("worker_restarts"), 1,
                                    f"seed {seed}: {result.stderr[-2000:]}")
            self.assert_complete(farm, data, result, max_copies=2)
            self.assert_polite(farm)


class Rebalance(WorkersTest):

    def test_two_workers_then_three_continue_without_refetching(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-wre-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 2,
                    "crawl.max_pages": 300,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            first = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertEqual(first.returncode, 0, first.stderr[-2000:])
            self.assertEqual(first.summary["stop_reason"], "max_pages")
            before = set(glob.glob(os.path.join(data, "warc", "*.warc.gz")))
            fetched_first = {u for _, u in records_by_worker(data)}
            self.assertGreaterEqual(len(fetched_first), 300)
            self.assertLess(len(fetched_first), len(farm.manifest()))

            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 3,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            second = crawl_util.finish_crawl(proc, data, timeout=300)
            counts = self.assert_complete(farm, data, second, max_copies=1)
            self.assertEqual(len(counts), len(farm.manifest()))
            # After the restart each host is fetched only by its owner among
            # three, and some hosts did move (to the new worker 2).
            owners = collections.defaultdict(set)
            for path in set(glob.glob(os.path.join(data, "warc",
                                                   "*.warc.gz"))) - before:
                worker = int(os.path.basename(path).split("-")[2])
                for r in crawl_util.read_warc(path):
                    h = r["headers"]
                    if h.get("warc-type") in ("response", "revisit"):
                        owners[host_of(h["warc-target-uri"])].add(worker)
            self.assertEqual({h: w for h, w in owners.items() if len(w) > 1},
                             {})
            self.assertIn(2, set().union(*owners.values()))
            moved = crawl_util.log_events(data, "rebalanced")
            self.assertEqual(len(moved), 2, "workers 0 and 1 hand over")
            self.assertGreater(sum(int(e["hosts_moved"]) for e in moved), 0)
            self.assert_polite(farm)


class Shrink(WorkersTest):

    def test_three_workers_then_two_hand_over_without_refetching(self):
        """Fewer workers than before: the one no longer on the ring runs
        once more to hand its queues and fetched pages to the others,
        then deletes its state; no page is fetched twice."""
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-wshrink-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 3,
                    "crawl.max_pages": 300,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            first = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertEqual(first.returncode, 0, first.stderr[-2000:])
            self.assertEqual(first.summary["stop_reason"], "max_pages")
            self.assertLess(len({u for _, u in records_by_worker(data)}),
                            len(farm.manifest()))
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 2,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            second = crawl_util.finish_crawl(proc, data, timeout=300)
            counts = self.assert_complete(farm, data, second, max_copies=1)
            self.assertEqual(len(counts), len(farm.manifest()))
            self.assertEqual(len(crawl_util.log_events(data, "drained")), 1)
            self.assertFalse(os.path.exists(
                os.path.join(data, "worker-2", "state")))
            self.assert_polite(farm)


if __name__ == "__main__":
    unittest.main()
