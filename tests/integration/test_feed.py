"""The indexer's contract (issue 7): a consumer of the document feed that is
killed and restarted from its cursor file, while crawld is restarted too,
sees every stored record exactly once, in ascending feed ID order (issue
14), and each record's CDXJ line points at a record that verifies.
test_feed_cluster.py does the same for a crawl of several nodes."""
import collections
import glob
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

import crawl_util
import harness
from test_admin_cli import ctl, tail_lines, wait_admin_url, wait_for

FARM = """
seed = 11
hosts = 6
pages = 60
page_bytes = 1200
links = 4
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"
"""

SETTINGS = {"politeness.min_delay_ms": 150, "checkpoint.interval_s": 1.0}


def follow(data, cursor_file):
    """A consumer in the background: docs tail --follow, bounded."""
    return subprocess.Popen(
        [harness.binary("crawlctl"), "docs", "tail", "--data", data,
         "--follow", "--max-seconds", "60", "--cursor-file", cursor_file],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_consumer(proc):
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return out, err


class IndexerRestarts(unittest.TestCase):

    def test_every_record_once_across_consumer_and_crawld_restarts(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-feed-")
            work = tempfile.mkdtemp(prefix="crawld-indexer-")
            cursor_file = os.path.join(work, "cursor")
            seen = []

            crawld, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                               **SETTINGS)
            try:
                wait_admin_url(crawld, data)
                # Consumer 1 follows, then is killed (SIGTERM ends it
                # between batches, the cursor saved).
                consumer = follow(data, cursor_file)
                time.sleep(2.0)
                out, err = stop_consumer(consumer)
                seen += tail_lines(out)
                self.assertTrue(seen, err)
                # crawld is restarted while nothing consumes.
                self.assertEqual(harness.stop_process(crawld), 0)
                crawld, _ = crawl_util.start_crawl(farm, dns, data_dir=data,
                                                   **SETTINGS)
                wait_admin_url(crawld, data)
                # Consumer 2 resumes from its cursor file.
                consumer = follow(data, cursor_file)
                time.sleep(2.0)
                out, err = stop_consumer(consumer)
                seen += tail_lines(out)
                # Pause, let in-flight fetches end, drain the rest.
                r = ctl("pause", "--data", data)
                self.assertEqual(r.returncode, 0, r.stderr)

                def idle():
                    s = ctl("status", "--data", data, "--json")
                    return (s.returncode == 0 and
                            json.loads(s.stdout)["in_flight"] == 0)

                self.assertTrue(wait_for(idle, 30))
                r = ctl("docs", "tail", "--data", data, "--cursor-file",
                        cursor_file)
                self.assertEqual(r.returncode, 0, r.stderr)
                seen += tail_lines(r.stdout)
                warcs = sorted(glob.glob(os.path.join(data, "warc",
                                                      "*.warc.gz")))
                records = {}
                for path in warcs:
                    for rec in crawl_util.read_warc(path):
                        h = rec["headers"]
                        if h.get("warc-type") in ("response", "revisit"):
                            records.setdefault(h["warc-target-uri"], 0)
                            records[h["warc-target-uri"]] += 1
            finally:
                harness.stop_process(crawld)

            # Exactly once: no cursor twice, and the consumed records are the
            # stored ones (each URL as often as the WARCs hold it).
            cursors = [s[0] for s in seen]
            self.assertEqual(len(cursors), len(set(cursors)))
            # Issue 14: a cursor is the record's feed ID, and they only go
            # up, across consumer and crawld restarts.
            ids = [int(c) for c in cursors]
            self.assertEqual(ids, sorted(ids))
            consumed = collections.Counter(s[2] for s in seen)
            self.assertEqual(consumed, collections.Counter(records))
            self.assertGreater(len(seen), 50)

            # Each consumed record's CDXJ line names that record's file and
            # offset, and the files verify.
            index = {}
            for path in glob.glob(os.path.join(data, "index", "*.cdxj")):
                with open(path) as f:
                    for line in f:
                        key, ts, js = line.split(" ", 2)
                        j = json.loads(js)
                        index[(j["filename"], int(j["offset"]))] = j["url"]
            for cursor, status, url, where in seen:
                warc, off = where.rsplit(":", 1)
                self.assertEqual(index.get((warc, int(off))), url, where)
            verify = crawl_util.crawlctl("warc", "verify", *warcs)
            self.assertEqual(verify.returncode, 0,
                             verify.stdout + verify.stderr)

            # crawlctl warc get through the index returns the very block the
            # WARC holds, as the scan of whole files does.
            blocks = {}
            for path in warcs:
                for rec in crawl_util.read_warc(path):
                    h = rec["headers"]
                    if h.get("warc-type") == "response":
                        blocks.setdefault(h["warc-target-uri"], rec["block"])
            for url in sorted(blocks)[:20]:
                got = subprocess.run(
                    [harness.binary("crawlctl"), "warc", "get", url,
                     "--data", data], capture_output=True, timeout=60)
                self.assertEqual(got.returncode, 0, got.stderr)
                self.assertEqual(got.stdout, blocks[url], url)
                scan = subprocess.run(
                    [harness.binary("crawlctl"), "warc", "get", url, *warcs],
                    capture_output=True, timeout=60)
                self.assertEqual(scan.stdout, got.stdout, url)
            missing = subprocess.run(
                [harness.binary("crawlctl"), "warc", "get",
                 "http://nowhere.test/", "--data", data],
                capture_output=True, timeout=60)
            self.assertEqual(missing.returncode, 1)


if __name__ == "__main__":
    unittest.main()
