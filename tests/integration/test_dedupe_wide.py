"""Document dedupe across the crawl (issue 14, item 2): a body identical to
one stored earlier, whichever worker or node fetched either, is written as a
revisit of the one full copy, also across kill -9 and restart.

Judged from the WARC files alone (parsed here, not by crawld): each payload
is computed from the record's block, so "stored in full" means a response
record whose bytes are the body, whatever crawld counted. The web: host 0
and seven byte-identical mirrors of it (relative links only, no cross-host
links), spread by the ring over the workers and nodes."""
import collections
import glob
import os
import random
import signal
import subprocess
import tempfile
import time
import unittest

import crawl_util
import harness
import redis_util

PAGES = 30
MIRRORS = 7
FARM = f"""
seed = 21
hosts = {MIRRORS + 1}
pages = {PAGES}
page_bytes = 1500
links = 4
cross_host_share = 0.0
relative_share = 1.0
ips = {MIRRORS + 1}
seeds = "all"

[[profile]]
hosts = "1-{MIRRORS}"
mirror_of = 0
"""

MIN_DELAY_MS = 20


def worker_of(path):
    return int(os.path.basename(path).split("-")[2])


def page_records(data_dirs):
    """Every page record (response or revisit, robots.txt excluded) of the
    data directories: dicts with type, uri, id, worker, path, headers and,
    for responses, the payload digest computed from the block."""
    out = []
    for data in data_dirs:
        for path in sorted(glob.glob(os.path.join(data, "warc",
                                                  "*.warc.gz"))):
            for r in crawl_util.read_warc(path):
                h = r["headers"]
                kind = h.get("warc-type")
                if kind not in ("response", "revisit"):
                    continue
                uri = h["warc-target-uri"]
                if uri.endswith("/robots.txt"):
                    continue
                rec = {"type": kind, "uri": uri, "id": h["warc-record-id"],
                       "worker": worker_of(path), "path": path,
                       "headers": h,
                       "status": crawl_util.status_of(r["block"])}
                if kind == "response":
                    rec["digest"] = crawl_util.payload_digest(r["block"])
                out.append(rec)
    return out


class DedupeTest(unittest.TestCase):

    def assert_one_full_copy_each(self, farm, data_dirs, min_workers=2,
                                  pages=PAGES):
        """The WARCs of `data_dirs` hold every manifest URL, each distinct
        2xx body in exactly one response record, and every other fetch of
        it as a revisit naming that record. Returns the records."""
        files = [p for d in data_dirs
                 for p in glob.glob(os.path.join(d, "warc", "*.warc.gz"))]
        verify = crawl_util.crawlctl("warc", "verify", *files)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        recs = page_records(data_dirs)
        self.assertEqual(set(farm.manifest()) - {r["uri"] for r in recs},
                         set(), "manifest URLs missing from the WARCs")
        responses = [r for r in recs
                     if r["type"] == "response" and 200 <= r["status"] < 300]
        by_digest = collections.defaultdict(list)
        for r in responses:
            by_digest[r["digest"]].append(r)
        twice = {d: [r["uri"] for r in rs] for d, rs in by_digest.items()
                 if len(rs) > 1}
        self.assertEqual(twice, {}, "a body stored in full twice")
        # Host 0's pages are all different; each mirror page equals one.
        self.assertEqual(len(by_digest), pages)
        by_id = {r["id"]: r for r in responses}
        revisits = [r for r in recs if r["type"] == "revisit"]
        self.assertEqual(len(revisits) + len(responses), len(recs))
        for v in revisits:
            h = v["headers"]
            self.assertEqual(
                h.get("warc-profile"),
                "http://netpreserve.org/warc/1.1/revisit/"
                "identical-payload-digest", v["uri"])
            original = by_id.get(h.get("warc-refers-to"))
            self.assertIsNotNone(original, f"{v['uri']}: refers to a "
                                 f"record not in the WARCs: "
                                 f"{h.get('warc-refers-to')}")
            self.assertEqual(h["warc-refers-to-target-uri"], original["uri"])
            self.assertEqual(h["warc-payload-digest"], original["digest"])
            self.assertIn("warc-refers-to-date", h)
        # Every page of every mirror is in the WARCs; with host 0's, each
        # body was fetched MIRRORS + 1 times, once in full.
        self.assertGreaterEqual(len(revisits), pages * MIRRORS)
        # The copies really were spread: revisits written by a worker
        # other than the one that stored the original.
        across = [v for v in revisits if v["worker"] !=
                  by_id[v["headers"]["warc-refers-to"]]["worker"]]
        workers = {r["worker"] for r in recs}
        self.assertGreaterEqual(len(workers), min_workers, workers)
        self.assertGreater(len(across), pages, "few revisits across workers")
        return recs


class AcrossWorkers(DedupeTest):
    """Mirror hosts owned by different worker processes of one node: the
    machine's shared claim table."""

    def test_every_copy_after_the_first_is_a_revisit(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-dedupe-w3-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{"workers.count": 3})
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr[-3000:])
            self.assertEqual(result.summary["stop_reason"], "done")
            self.assert_one_full_copy_each(farm, [data], min_workers=3)
            # The table is where the docs say.
            self.assertTrue(os.path.exists(
                os.path.join(data, "dedupe", "claims")))

    def test_dedupe_off_stores_every_copy(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-dedupe-off-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data,
                **{"workers.count": 2, "dedupe.documents": "off"})
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr[-3000:])
            recs = page_records([data])
            self.assertEqual([r for r in recs if r["type"] == "revisit"], [])
            self.assertEqual(len(recs), PAGES * (MIRRORS + 1))


class AcrossNodes(DedupeTest):
    """Two nodes of two workers over a real redis-server: claims in Redis."""

    def test_every_copy_after_the_first_is_a_revisit(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns, \
                redis_util.RedisServer() as redis:
            base = tempfile.mkdtemp(prefix="crawld-dedupe-nodes-")
            dirs = [os.path.join(base, f"node-{i}") for i in range(2)]
            procs = []
            try:
                for i, data in enumerate(dirs):
                    os.makedirs(data)
                    config = crawl_util.write_config(
                        dns.server, data, **{
                            "workers.count": 2,
                            "checkpoint.interval_s": 0.5,
                            "politeness.min_delay_ms": MIN_DELAY_MS})
                    with open(os.path.join(data, "stderr.txt"), "w") as err:
                        procs.append(subprocess.Popen(
                            [harness.binary("crawld"), "--config", config,
                             "--seeds", farm.seeds_file, "--cluster",
                             redis.url, "--node-id", str(i), "--nodes", "2",
                             "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=err))
                codes = []
                for p in procs:
                    try:
                        codes.append(p.wait(timeout=300))
                    except subprocess.TimeoutExpired:
                        codes.append(None)
            finally:
                for p in procs:
                    if p.poll() is None:
                        harness.stop_process(p)
            for data, code in zip(dirs, codes):
                with open(os.path.join(data, "stderr.txt")) as f:
                    self.assertEqual(code, 0, f.read()[-2000:])
            # The ring leaves some of the four workers without a host of
            # eight; what matters is the nodes (below).
            recs = self.assert_one_full_copy_each(farm, dirs, min_workers=2)
            # Across nodes: a revisit on one node of a record of the other.
            node_of = {}
            for i, data in enumerate(dirs):
                for r in recs:
                    if r["path"].startswith(data + os.sep):
                        node_of[r["id"]] = i
            cross_node = [r for r in recs if r["type"] == "revisit" and
                          node_of[r["id"]] !=
                          node_of[r["headers"]["warc-refers-to"]]]
            self.assertGreater(len(cross_node), 0, "no revisit across nodes")
            # Neither node has a claim table of its own: Redis holds them.
            for data in dirs:
                self.assertFalse(os.path.exists(
                    os.path.join(data, "dedupe", "claims")))


def worker_pids(supervisor_pid):
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == supervisor_pid:
            pids.append(int(name))
    return pids


# More pages and a delay per host, so that kills land mid-crawl.
FARM_SLOW = FARM.replace(f"pages = {PAGES}", "pages = 60")


class KillAndRestart(DedupeTest):
    """kill -9 mid-crawl, then the crawl goes on: no body stored in full
    twice, no revisit of a record that is not there."""

    def check(self, farm, data):
        return self.assert_one_full_copy_each(farm, [data], pages=60)

    def test_killed_worker_restarts_without_storing_a_body_twice(self):
        seed = int(os.environ.get("CRAWLD_TEST_SEED", time.time_ns() % 100000))
        rng = random.Random(seed)
        with harness.Webfarm(FARM_SLOW) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-dedupe-wkill-")
            proc, _ = crawl_util.start_crawl(
                farm, dns, data_dir=data, **{
                    "workers.count": 3,
                    "checkpoint.interval_s": 0.5,
                    "politeness.min_delay_ms": MIN_DELAY_MS})
            kills = 0
            deadline = time.time() + 120
            # Two kills, between 15% and 70% of the pages requested.
            for want in sorted(rng.uniform(0.15, 0.7) for _ in range(2)):
                target = int(len(farm.manifest()) * want)
                while time.time() < deadline and proc.poll() is None and \
                        len(farm.requests()) < target:
                    time.sleep(0.02)
                pids = worker_pids(proc.pid)
                if proc.poll() is None and pids:
                    os.kill(rng.choice(pids), signal.SIGKILL)
                    kills += 1
                    time.sleep(0.5)
            result = crawl_util.finish_crawl(proc, data, timeout=300)
            self.assertGreaterEqual(kills, 1, f"seed {seed}: no kill")
            self.assertEqual(result.returncode, 0,
                             f"seed {seed}: {result.stderr[-3000:]}")
            self.assertGreaterEqual(result.count("worker_restarts"), 1)
            self.check(farm, data)

    def test_killed_node_resumes_without_storing_a_body_twice(self):
        seed = int(os.environ.get("CRAWLD_TEST_SEED", time.time_ns() % 100000))
        rng = random.Random(seed)
        with harness.Webfarm(FARM_SLOW) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-dedupe-kill-")
            config = crawl_util.write_config(
                dns.server, data, **{
                    "workers.count": 2, "checkpoint.interval_s": 0.5,
                    "politeness.min_delay_ms": MIN_DELAY_MS})

            def start():
                # Its own process group: kill -9 of the whole node at once.
                with open(os.path.join(data, "stderr.txt"), "a") as err:
                    return subprocess.Popen(
                        [harness.binary("crawld"), "--config", config,
                         "--seeds", farm.seeds_file, "--quiet"],
                        stdout=subprocess.DEVNULL, stderr=err,
                        start_new_session=True)

            kills = 0
            for want in sorted(rng.uniform(0.15, 0.7) for _ in range(2)):
                proc = start()
                target = int(len(farm.manifest()) * want)
                deadline = time.time() + 120
                while time.time() < deadline and proc.poll() is None and \
                        len(farm.requests()) < target:
                    time.sleep(0.02)
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    kills += 1
                proc.wait(timeout=30)
                time.sleep(0.3)  # the workers of the group are gone too
            proc = start()
            try:
                code = proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                harness.stop_process(proc)
                code = None
            with open(os.path.join(data, "stderr.txt")) as f:
                err = f.read()[-3000:]
            self.assertGreaterEqual(kills, 1, f"seed {seed}: no kill")
            self.assertEqual(code, 0, f"seed {seed}: {err}")
            self.check(farm, data)


if __name__ == "__main__":
    unittest.main()
