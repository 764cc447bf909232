"""Dedupe against earlier crawls (issue 17, Build 4; docs/STORE.md,
"Revisits of an earlier crawl").

A second crawl of an unchanged web, started with the first crawl's data
directory (dedupe.earlier), stores no payload the first one stored: every
2xx fetch, robots.txt included, is an identical-payload-digest revisit
naming the first crawl's record (its id, URI, date and digest, checked
against the first crawl's WARCs as parsed here, not as crawld says). Both
crawls run against one webfarm (the same port, so the same bytes), with
several workers, the default shape.
"""
import unittest

import crawl_util
import harness

FARM = {"seed": 11, "hosts": 5, "pages": 12, "links": 3,
        "cross_host_share": 0.2}


def captures(result):
    """(responses, revisits) of a crawl's WARCs: responses by record id
    with uri, date, digest and status; revisits as header dicts."""
    responses, revisits = {}, []
    for r in result.records():
        h = r["headers"]
        if h.get("warc-type") == "response":
            responses[h["warc-record-id"]] = {
                "uri": h["warc-target-uri"], "date": h["warc-date"],
                "digest": crawl_util.payload_digest(r["block"]),
                "status": crawl_util.status_of(r["block"])}
        elif h.get("warc-type") == "revisit":
            revisits.append(h)
    return responses, revisits


class DedupeEarlier(unittest.TestCase):

    def test_a_recrawl_of_an_unchanged_web_stores_no_payload_twice(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            first = crawl_util.run_crawl(farm, dns, **{"workers.count": 3})
            self.assertEqual(first.returncode, 0, first.stderr)
            second = crawl_util.run_crawl(
                farm, dns, **{"workers.count": 3,
                              "dedupe.earlier": [first.data_dir]})
            self.assertEqual(second.returncode, 0, second.stderr)
            manifest = set(farm.manifest())

        old, old_revisits = captures(first)
        new, revisits = captures(second)
        old_pages = {o["uri"] for o in old.values()
                     if not o["uri"].endswith("/robots.txt")}
        self.assertEqual(manifest - old_pages, set())
        # No payload of the first crawl is stored again.
        old_digests = {o["digest"] for o in old.values()
                       if 200 <= o["status"] < 300}
        again = sorted(n["uri"] for n in new.values()
                       if 200 <= n["status"] < 300 and
                       n["digest"] in old_digests)
        self.assertEqual(again, [], "stored in full again")
        # The web did not change: every page of the manifest and every
        # robots.txt is a revisit of the first crawl's record of it.
        revisited = {h["warc-target-uri"] for h in revisits}
        self.assertEqual(manifest - revisited, set())
        robots = {o["uri"] for o in old.values()
                  if o["uri"].endswith("/robots.txt") and
                  200 <= o["status"] < 300}
        self.assertTrue(robots)
        self.assertEqual(robots - revisited, set())
        for h in revisits:
            uri = h["warc-target-uri"]
            self.assertEqual(
                h.get("warc-profile"),
                "http://netpreserve.org/warc/1.1/revisit/"
                "identical-payload-digest", uri)
            original = old.get(h.get("warc-refers-to"))
            self.assertIsNotNone(original, f"{uri}: refers to "
                                 f"{h.get('warc-refers-to')}, not a record "
                                 "of the first crawl")
            self.assertEqual(h["warc-refers-to-target-uri"], original["uri"])
            self.assertEqual(h["warc-refers-to-date"], original["date"])
            self.assertEqual(h["warc-payload-digest"], original["digest"])
        self.assertEqual(second.count("dedupe_earlier"), len(revisits))
        # The first crawl's own duplicates stay its business: a revisit
        # never names one of them (they hold no payload).
        old_revisit_ids = {h["warc-record-id"] for h in old_revisits}
        self.assertEqual({h.get("warc-refers-to") for h in revisits} &
                         old_revisit_ids, set())
        verify = crawl_util.crawlctl("warc", "verify", *second.warc_files())
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        # warcio.js reads both crawls; each revisit of the second refers to
        # a record it finds in the first's files, with the same digest.
        ok, summary, out = crawl_util.warcio_check(*first.warc_files(),
                                                   *second.warc_files())
        self.assertTrue(ok, out)
        self.assertGreater(summary["counts"].get("revisit", 0), 0, out)

    def test_a_missing_earlier_crawl_stops_the_start_with_its_name(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, timeout=60,
                **{"workers.count": 2,
                   "dedupe.earlier": ["/nonexistent/crawl-2026-10"]})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("/nonexistent/crawl-2026-10", result.stderr)
        self.assertEqual(result.warc_files(), [])


if __name__ == "__main__":
    unittest.main()
