"""The recrawl schedule moves with its hosts (issue 17, Build 1: "survives
restarts and rebalances like the rest of the frontier"; docs/CHECKPOINT.md,
"Recrawl schedule").

A continuous crawl with three workers, stopped, then resumed on the same
data directory with two: worker 2 leaves the ring, hands its queues and
its recrawl schedule (every URL's capture: validators, digest, record)
to the workers that own its hosts now, drains and stops. Judged from the
outside, from the webfarm's request log and the WARCs parsed here:

- every page of a moved host that the first run fetched is revisited in
  the second run, by its new owner;
- each of those revisits is conditional (If-None-Match and
  If-Modified-Since from the first run's capture), and every 304 the farm
  sent for them is a server-not-modified revisit record that refers to
  the URL's last response record (id, URI, date, digest): for a page
  that never changes, the first run's;
- no static page is asked twice within half of its first interval (no
  duplicate revisits from the move), and politeness holds throughout;
- worker 2 drained and left no schedule behind.

Budget: about 25 s under ASan on a loaded 2-core machine (two crawls of
RUN_S each, plus starts and stops); every process is bounded
(max_duration_s, the farm's max_seconds) and stopped by PID.
"""
import collections
import glob
import os
import shutil
import tempfile
import time
import unittest
import urllib.parse

import crawl_util
import harness

RUN_S = 7.0                        # real seconds per run
TIME_SCALE = 37800.0               # a simulated week in 16 real seconds
FIRST_INTERVAL_S = 86400 / TIME_SCALE
CHANGE_MS = 1500                   # even pages change this often (real)
MIN_DELAY_MS = 100
FARM = {"seed": 23, "hosts": 9, "pages": 4, "links": 3,
        "cross_host_share": 0.3,
        "profile": [{"hosts": "0-8", "change_ms": CHANGE_MS}]}
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def page_number(path):
    """n of /p/<n>.html, or None."""
    if path.startswith("/p/") and path.endswith(".html"):
        return int(path[3:-5])
    return None


def warc_worker(path):
    """The worker id in <prefix>-<time>-<worker>-<n>.warc.gz."""
    return int(os.path.basename(path).split("-")[2])


class RecrawlHandOff(unittest.TestCase):

    def test_three_workers_then_two_revisit_the_moved_hosts(self):
        settings = {
            "politeness.min_delay_ms": MIN_DELAY_MS,
            "crawl.max_duration_s": RUN_S,
            "recrawl.enabled": True,
            "recrawl.time_scale": TIME_SCALE,
            "recrawl.initial_interval_s": 86400.0,
            "recrawl.min_interval_s": 3600.0,
            "recrawl.max_interval_s": 604800.0,
            "recrawl.shrink": 0.5,
            "recrawl.grow": 2.0}
        with harness.Webfarm(FARM, max_seconds=120) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-rhandoff-")
            self.addCleanup(shutil.rmtree, data, ignore_errors=True)
            first = crawl_util.run_crawl(farm, dns, timeout=60, data_dir=data,
                                         **{**settings, "workers.count": 3})
            self.assertEqual(first.returncode, 0, first.stderr[-2000:])
            first_warcs = set(glob.glob(os.path.join(data, "warc",
                                                     "*.warc.gz")))
            time.sleep(0.3)  # the farm flushes its log every 100 ms
            boundary_us = max(r["start_us"] for r in farm.requests())
            second = crawl_util.run_crawl(farm, dns, timeout=60,
                                          data_dir=data,
                                          **{**settings, "workers.count": 2})
            self.assertEqual(second.returncode, 0, second.stderr[-2000:])
            reqs = farm.final_requests()

        # The first run's records: which worker fetched which host, and
        # each URL's response records (id -> uri, date, digest).
        first_owner = collections.defaultdict(set)
        first_responses = {}
        for path in first_warcs:
            for rec in crawl_util.read_warc(path):
                h = rec["headers"]
                if h.get("warc-type") not in ("response", "revisit"):
                    continue
                uri = h["warc-target-uri"]
                if uri.endswith("/robots.txt"):
                    continue
                first_owner[urllib.parse.urlsplit(uri).hostname].add(
                    warc_worker(path))
                if h.get("warc-type") == "response":
                    first_responses[h["warc-record-id"]] = (
                        uri, h["warc-date"],
                        crawl_util.payload_digest(rec["block"]))
        moved_hosts = {host for host, w in first_owner.items() if 2 in w}
        self.assertTrue(moved_hosts, "worker 2 fetched no host: no move")

        pages = [r for r in reqs
                 if r["method"] == "GET" and page_number(r["path"]) is not None]
        by_url = collections.defaultdict(list)
        for r in pages:
            by_url[f"http://{r['host']}:{farm.port}{r['path']}"].append(r)
        for rs in by_url.values():
            rs.sort(key=lambda r: r["start_us"])
        moved = {u: rs for u, rs in by_url.items()
                 if urllib.parse.urlsplit(u).hostname in moved_hosts
                 and rs[0]["start_us"] <= boundary_us}
        self.assertTrue(moved)

        # Revisited after the move, and every such revisit conditional.
        not_revisited = sorted(u for u, rs in moved.items()
                               if rs[-1]["start_us"] <= boundary_us)
        self.assertEqual(not_revisited, [],
                         "pages of moved hosts not revisited after the move")
        answered_304 = collections.Counter()
        for url, rs in moved.items():
            for r in rs[1:]:
                self.assertIn("if_none_match", r, url)
                self.assertIn("if_modified_since", r, url)
                if r["start_us"] > boundary_us and r["status"] == 304:
                    answered_304[url] += 1
        print(f"\nrecrawl hand-off: {len(moved_hosts)} hosts moved, "
              f"{len(moved)} pages, {sum(answered_304.values())} 304s "
              f"after the move; counts: handoff_sent "
              f"{second.count('recrawl_handoff_sent')}, handed_off "
              f"{second.count('recrawl_handed_off')}, received "
              f"{second.count('recrawl_received')}")
        self.assertTrue(answered_304, "no 304 after the move")

        # Every 304 after the move is a server-not-modified revisit of the
        # URL's last response record: for a static page, the first run's.
        all_responses = {}
        for rec in second.records():
            h = rec["headers"]
            if h.get("warc-type") == "response":
                all_responses[h["warc-record-id"]] = (
                    h["warc-target-uri"], h["warc-date"],
                    crawl_util.payload_digest(rec["block"]))
        revisits = collections.Counter()
        static_from_first_run = 0
        for path in set(second.warc_files()) - first_warcs:
            for rec in crawl_util.read_warc(path):
                h = rec["headers"]
                uri = h.get("warc-target-uri", "")
                if warc_worker(path) == 2:
                    self.assertNotIn(h.get("warc-type"),
                                     ("response", "revisit", "request"),
                                     "worker 2 left the ring: it fetches "
                                     "nothing")
                if h.get("warc-type") != "revisit" or \
                        h.get("warc-profile") != NOT_MODIFIED or \
                        uri not in moved:
                    continue
                self.assertEqual(crawl_util.status_of(rec["block"]), 304, uri)
                original = all_responses.get(h.get("warc-refers-to"))
                self.assertIsNotNone(original, uri)
                if page_number(urllib.parse.urlsplit(uri).path) % 2 == 1:
                    self.assertIn(h.get("warc-refers-to"), first_responses,
                                  uri)
                    static_from_first_run += 1
                self.assertEqual(original[0], uri)
                self.assertEqual(h.get("warc-refers-to-target-uri"), uri)
                self.assertEqual(h.get("warc-refers-to-date"), original[1],
                                 uri)
                self.assertEqual(h.get("warc-payload-digest"), original[2],
                                 uri)
                revisits[uri] += 1
        self.assertEqual(revisits, answered_304)
        self.assertGreater(static_from_first_run, 0)

        # No duplicate revisits of a static page, politeness throughout.
        for url, rs in by_url.items():
            if page_number(urllib.parse.urlsplit(url).path) % 2 == 1:
                for a, b in zip(rs, rs[1:]):
                    self.assertGreater(b["start_us"] - a["start_us"],
                                       FIRST_INTERVAL_S / 2 * 1e6, url)
        gaps = [g for g in harness.min_gap_per_host(reqs).values()
                if g is not None]
        self.assertGreaterEqual(min(gaps), MIN_DELAY_MS * 1000)

        # Worker 2 handed everything over and left nothing scheduled.
        self.assertEqual(len(crawl_util.log_events(data, "drained")), 1)
        self.assertFalse(os.path.exists(
            os.path.join(data, "worker-2", "recrawl")))
        self.assertGreater(second.count("recrawl_handed_off"), 0)
        self.assertGreater(second.count("recrawl_received"), 0)

        verify = crawl_util.crawlctl("warc", "verify", *second.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)


if __name__ == "__main__":
    unittest.main()
