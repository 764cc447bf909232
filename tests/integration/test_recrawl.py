"""A continuous crawl (issue 17, Build 1 and 2; docs/OPERATIONS.md, "A
continuous crawl").

A simulated week, compressed into WEEK_S real seconds
(recrawl.time_scale), against a webfarm whose even pages change every
CHANGE_MS and whose odd pages never change, all with ETag and
Last-Modified and real 304 answers. Several workers (the default shape).
The week runs as two halves, the second resuming the first's data
directory (the schedule survives a restart). Judged from the outside: the webfarm's request log (when each URL was
asked, with which validators, and what it answered) and the WARCs parsed
here, then `crawlctl warc verify`.

- changing pages are revisited more often than static ones (the mean
  intervals are printed);
- every revisit of a page is a conditional request; every 304 the farm
  sent is a server-not-modified revisit record in the WARCs that refers
  to the URL's response record (its id, URI, date and payload digest);
- no two requests to one host closer than politeness.min_delay_ms;
- the restart loses no schedule (the second half's first request of a
  page is conditional too) and duplicates none (no static page asked
  twice within half of its first interval).

Budget: about 20 s wall under ASan on a loaded 2-core machine (WEEK_S of
crawling plus two starts and stops); every process is bounded (max_duration_s, the farm's max_seconds)
and stopped by PID.
"""
import collections
import shutil
import statistics
import tempfile
import unittest

import crawl_util
import harness

WEEK_S = 16.0                      # real seconds for a simulated week
TIME_SCALE = 604800 / WEEK_S       # simulated seconds per real second
CHANGE_MS = 1500                   # even pages change this often (real)
MIN_DELAY_MS = 100
FARM = {"seed": 17, "hosts": 4, "pages": 6, "links": 3,
        "cross_host_share": 0.3,
        "profile": [{"hosts": "0-3", "change_ms": CHANGE_MS}]}
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def page_number(path):
    """n of /p/<n>.html, or None."""
    if path.startswith("/p/") and path.endswith(".html"):
        return int(path[3:-5])
    return None


class Recrawl(unittest.TestCase):

    def test_a_compressed_week_revisits_changing_pages_more_often(self):
        settings = {
            "workers.count": 3,
            "politeness.min_delay_ms": MIN_DELAY_MS,
            "crawl.max_duration_s": WEEK_S / 2,
            "recrawl.enabled": True,
            "recrawl.time_scale": TIME_SCALE,
            "recrawl.initial_interval_s": 86400.0,
            "recrawl.min_interval_s": 3600.0,
            "recrawl.max_interval_s": 604800.0,
            "recrawl.shrink": 0.5,
            "recrawl.grow": 2.0}
        with harness.Webfarm(FARM, max_seconds=120) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-recrawl-")
            self.addCleanup(shutil.rmtree, data, ignore_errors=True)
            for half in (1, 2):
                result = crawl_util.run_crawl(farm, dns, timeout=60,
                                              data_dir=data, **settings)
                self.assertEqual(result.returncode, 0,
                                 f"half {half}: {result.stderr}")
            reqs = farm.final_requests()
            manifest = set(farm.manifest())

        pages = [r for r in reqs
                 if r["method"] == "GET" and page_number(r["path"]) is not None]
        by_url = collections.defaultdict(list)
        number = {}  # url -> n of /p/<n>.html: even ones change
        for r in pages:
            url = f"http://{r['host']}:{farm.port}{r['path']}"
            by_url[url].append(r)
            number[url] = page_number(r["path"])
        for rs in by_url.values():
            rs.sort(key=lambda r: r["start_us"])
        self.assertEqual({u for u in manifest if "/p/" in u} - set(by_url),
                         set(), "pages never fetched")

        # Intervals between visits of one URL, changing vs static.
        def intervals(even):
            out = []
            for url, rs in by_url.items():
                if (number[url] % 2 == 0) == even:
                    out += [(b["start_us"] - a["start_us"]) / 1e6
                            for a, b in zip(rs, rs[1:])]
            return out
        changing, static = intervals(True), intervals(False)
        print(f"\nrecrawl intervals over a {WEEK_S:.0f} s week: changing "
              f"pages {len(changing)} revisits, mean "
              f"{statistics.mean(changing or [0]):.2f} s; static pages "
              f"{len(static)} revisits, mean "
              f"{statistics.mean(static or [0]):.2f} s")
        self.assertTrue(changing and static, (changing, static))
        changing_visits = sum(len(rs) for u, rs in by_url.items()
                              if number[u] % 2 == 0)
        static_visits = sum(len(rs) for u, rs in by_url.items()
                            if number[u] % 2 == 1)
        self.assertLess(statistics.mean(changing), statistics.mean(static))
        self.assertGreater(changing_visits, static_visits)

        # Every revisit is conditional; a static page is never sent again.
        for url, rs in by_url.items():
            self.assertNotIn("if_none_match", rs[0], url)
            for r in rs[1:]:
                self.assertIn("if_none_match", r, url)
                self.assertIn("if_modified_since", r, url)
            if number[url] % 2 == 1:
                self.assertEqual([r["status"] for r in rs[1:]],
                                 [304] * (len(rs) - 1), url)
                first_interval_s = 86400 / TIME_SCALE
                for a, b in zip(rs, rs[1:]):
                    self.assertGreater(b["start_us"] - a["start_us"],
                                       first_interval_s / 2 * 1e6, url)

        # Every 304 is a server-not-modified revisit of the URL's response.
        records = result.records()
        responses = {}
        revisits = collections.Counter()
        for rec in records:
            h = rec["headers"]
            if h.get("warc-type") == "response":
                responses[h["warc-record-id"]] = (
                    h["warc-target-uri"], h["warc-date"],
                    crawl_util.payload_digest(rec["block"]))
        for rec in records:
            h = rec["headers"]
            if h.get("warc-type") != "revisit" or \
                    h.get("warc-profile") != NOT_MODIFIED:
                continue
            uri = h["warc-target-uri"]
            self.assertEqual(crawl_util.status_of(rec["block"]), 304, uri)
            original = responses.get(h.get("warc-refers-to"))
            self.assertIsNotNone(original, uri)
            self.assertEqual(original[0], uri)
            self.assertEqual(h.get("warc-refers-to-target-uri"), uri)
            self.assertEqual(h.get("warc-refers-to-date"), original[1], uri)
            self.assertEqual(h.get("warc-payload-digest"), original[2], uri)
            revisits[uri] += 1
        answered = collections.Counter(
            url for url, rs in by_url.items() for r in rs
            if r["status"] == 304)
        self.assertTrue(answered)
        self.assertEqual(revisits, answered)

        # Politeness, revisits included.
        gaps = [g for g in harness.min_gap_per_host(reqs).values()
                if g is not None]
        self.assertGreaterEqual(min(gaps), MIN_DELAY_MS * 1000)

        verify = crawl_util.crawlctl("warc", "verify", *result.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        # warcio.js reads them too, server-not-modified revisits included,
        # each referring to a record among these files.
        ok, summary, out = crawl_util.warcio_check(*result.warc_files())
        self.assertTrue(ok, out)
        self.assertGreater(summary["profiles"].get(
            "http://netpreserve.org/warc/1.1/revisit/server-not-modified", 0),
            0, out)


if __name__ == "__main__":
    unittest.main()
