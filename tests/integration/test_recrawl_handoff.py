"""The recrawl schedule moves with its hosts (issue 17, Build 1: "survives
restarts and rebalances like the rest of the frontier"; docs/CHECKPOINT.md,
"Recrawl schedule").

One continuous crawl over three runs on the same data directory: three
workers, then two, then three again. From three to two, worker 2 leaves
the ring: it hands its queues and its recrawl schedule (every URL's
capture: validators, digest, record) to the workers that own its hosts
now, drains and stops. From two to three, workers 0 and 1 hand the same
hosts back to the new worker 2. Judged from the outside, from the
webfarm's request log and the WARCs parsed here, for each move:

- every page of a moved host fetched before the move is revisited after
  it, by the host's new owner;
- each revisit is conditional (If-None-Match and If-Modified-Since from
  the capture handed over), and every 304 the farm sent after the move is
  a server-not-modified revisit record referring to the URL's last
  response record (id, URI, date, digest): for a page that never
  changes, the first run's record, written by another worker;
- no static page is asked twice within half of its first interval (no
  duplicate revisits from a move), and politeness holds throughout;
- worker 2 drained and left no schedule behind.

Intervals are short (recrawl.max_interval_s: 4.6 s real) so that every
page is due again within each run. Budget: about 27 s under ASan on a
loaded 2-core machine (three crawls of RUN_S each, plus starts and
stops); every process is bounded (max_duration_s, the farm's
max_seconds) and stopped by PID.
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

RUN_S = 6.5                        # real seconds per run
TIME_SCALE = 37800.0               # a simulated week in 16 real seconds
FIRST_INTERVAL_S = 86400 / TIME_SCALE
CHANGE_MS = 1500                   # even pages change this often (real)
MIN_DELAY_MS = 100
FARM = {"seed": 23, "hosts": 9, "pages": 4, "links": 3,
        "cross_host_share": 0.3,
        "profile": [{"hosts": "0-8", "change_ms": CHANGE_MS}]}
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def page_number(url):
    """n of http://host/p/<n>.html (or of the path alone), or None."""
    path = urllib.parse.urlsplit(url).path
    if path.startswith("/p/") and path.endswith(".html"):
        return int(path[3:-5])
    return None


def host_of(url):
    return urllib.parse.urlsplit(url).hostname


def warc_worker(path):
    """The worker id in <prefix>-<time>-<worker>-<n>.warc.gz."""
    return int(os.path.basename(path).split("-")[2])


def page_records(paths):
    """[(worker, headers, block)] of the response and revisit records of
    pages (robots.txt excluded) in these WARC files."""
    out = []
    for path in sorted(paths):
        for rec in crawl_util.read_warc(path):
            h = rec["headers"]
            if h.get("warc-type") in ("response", "revisit") and \
                    not h["warc-target-uri"].endswith("/robots.txt"):
                out.append((warc_worker(path), h, rec["block"]))
    return out


class RecrawlHandOff(unittest.TestCase):

    def test_three_workers_then_two_then_three_revisit_moved_hosts(self):
        settings = {
            "politeness.min_delay_ms": MIN_DELAY_MS,
            "crawl.max_duration_s": RUN_S,
            "recrawl.enabled": True,
            "recrawl.time_scale": TIME_SCALE,
            "recrawl.initial_interval_s": 86400.0,
            "recrawl.min_interval_s": 3600.0,
            "recrawl.max_interval_s": 172800.0,
            "recrawl.shrink": 0.5,
            "recrawl.grow": 2.0}
        runs = []  # (workers, WARC files before the run, last request before)
        with harness.Webfarm(FARM, max_seconds=120) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-rhandoff-")
            self.addCleanup(shutil.rmtree, data, ignore_errors=True)
            for workers in (3, 2, 3):
                time.sleep(0.3)  # the farm flushes its log every 100 ms
                before = set(glob.glob(os.path.join(data, "warc",
                                                    "*.warc.gz")))
                last_us = max([r["start_us"] for r in farm.requests()] or [0])
                result = crawl_util.run_crawl(
                    farm, dns, timeout=60, data_dir=data,
                    **{**settings, "workers.count": workers})
                self.assertEqual(result.returncode, 0,
                                 f"{workers} workers: {result.stderr[-2000:]}")
                runs.append((workers, before, last_us, result))
                if workers == 2:
                    # Drained: its schedule handed over, nothing left.
                    self.assertFalse(os.path.exists(
                        os.path.join(data, "worker-2", "recrawl")))
            reqs = farm.final_requests()
        final = runs[-1][3]
        all_warcs = set(final.warc_files())

        # Which hosts worker 2 fetched in the first run: they move to
        # workers 0 and 1 in the second, and back in the third.
        first_run = runs[1][1]  # the WARC files before the second run
        moved_hosts = {host_of(h["warc-target-uri"])
                       for w, h, _ in page_records(first_run) if w == 2}
        self.assertTrue(moved_hosts, "worker 2 fetched no host: no move")
        responses = {}  # record id -> (uri, date, digest, first run?)
        for path in all_warcs:
            for w, h, block in page_records([path]):
                if h["warc-type"] == "response":
                    responses[h["warc-record-id"]] = (
                        h["warc-target-uri"], h["warc-date"],
                        crawl_util.payload_digest(block), path in first_run)

        by_url = collections.defaultdict(list)
        for r in reqs:
            if r["method"] == "GET" and page_number(r["path"]) is not None:
                by_url[f"http://{r['host']}:{farm.port}{r['path']}"].append(r)
        for rs in by_url.values():
            rs.sort(key=lambda r: r["start_us"])

        counts = []
        for index in (1, 2):
            workers, before, boundary_us, result = runs[index]
            after = (runs[index + 1][1] if index + 1 < len(runs)
                     else all_warcs)
            until_us = (runs[index + 1][2] if index + 1 < len(runs)
                        else float("inf"))
            label = f"run {index + 1} ({workers} workers)"
            new_records = page_records(after - before)
            owners = {host_of(h["warc-target-uri"]): w
                      for w, h, _ in new_records}
            if workers == 2:
                self.assertNotIn(2, owners.values(), "a drainer fetches")
            # The moved hosts have their new owners: 0 or 1, then 2.
            for host in moved_hosts & set(owners):
                self.assertEqual(owners[host] == 2, workers == 3,
                                 f"{label}: {host}")
            moved = {u: rs for u, rs in by_url.items()
                     if host_of(u) in moved_hosts
                     and rs[0]["start_us"] <= boundary_us}
            self.assertTrue(moved, label)
            in_run = {u: [r for r in rs
                          if boundary_us < r["start_us"] <= until_us]
                      for u, rs in moved.items()}
            self.assertEqual(sorted(u for u, rs in in_run.items() if not rs),
                             [], f"{label}: moved pages not revisited")
            answered_304 = collections.Counter()
            for url, rs in in_run.items():
                for r in rs:
                    self.assertIn("if_none_match", r, f"{label}: {url}")
                    self.assertIn("if_modified_since", r, f"{label}: {url}")
                    if r["status"] == 304:
                        answered_304[url] += 1
            self.assertTrue(answered_304, f"{label}: no 304")

            revisits = collections.Counter()
            static_of_first_run = 0
            for w, h, block in new_records:
                uri = h["warc-target-uri"]
                if uri not in moved or h["warc-type"] != "revisit" or \
                        h.get("warc-profile") != NOT_MODIFIED:
                    continue
                self.assertEqual(crawl_util.status_of(block), 304, uri)
                original = responses.get(h.get("warc-refers-to"))
                self.assertIsNotNone(original, f"{label}: {uri}")
                self.assertEqual(original[0], uri)
                self.assertEqual(h.get("warc-refers-to-target-uri"), uri)
                self.assertEqual(h.get("warc-refers-to-date"), original[1],
                                 uri)
                self.assertEqual(h.get("warc-payload-digest"), original[2],
                                 uri)
                if page_number(uri) % 2 == 1:
                    # Never changes: its one response is the first run's.
                    self.assertTrue(original[3], f"{label}: {uri}")
                    static_of_first_run += 1
                revisits[uri] += 1
            self.assertEqual(revisits, answered_304, label)
            self.assertGreater(static_of_first_run, 0, label)
            counts.append(
                f"{label}: {len(moved)} pages of {len(moved_hosts)} moved "
                f"hosts, {sum(answered_304.values())} 304s; handed off "
                f"{result.count('recrawl_handed_off')}, received "
                f"{result.count('recrawl_received')}")
            # Counters live in each worker's checkpoint (a drainer's go
            # with its state): the receivers' count grows in every run.
            self.assertGreater(result.count("recrawl_handed_off"), 0, label)
            self.assertGreater(result.count("recrawl_received"),
                               runs[index - 1][3].count("recrawl_received"),
                               label)
        print("\nrecrawl hand-off: " + "; ".join(counts))

        # No duplicate revisits of a static page; politeness throughout.
        for url, rs in by_url.items():
            if page_number(url) % 2 == 1:
                for a, b in zip(rs, rs[1:]):
                    self.assertGreater(b["start_us"] - a["start_us"],
                                       FIRST_INTERVAL_S / 2 * 1e6, url)
        gaps = [g for g in harness.min_gap_per_host(reqs).values()
                if g is not None]
        self.assertGreaterEqual(min(gaps), MIN_DELAY_MS * 1000)

        # Worker 2 drained in the second run and left no schedule behind
        # (the third run made it anew).
        drained = crawl_util.log_events(final.data_dir, "drained")
        self.assertEqual(len(drained), 1)
        second_end = [e for e in crawl_util.log_events(final.data_dir,
                                                       "crawl_end")
                      if e.get("reason") == "drained" and "pages" in e]
        self.assertEqual(len(second_end), 1)

        verify = crawl_util.crawlctl("warc", "verify", *final.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)


if __name__ == "__main__":
    unittest.main()
