"""Sitemaps in a real crawl (issue 17 part 3; docs/SITEMAPS.md).

The webfarm's sitemap hosts (docs/WEBFARM.md, "Sitemaps") name their
sitemaps in robots.txt: a urlset, an index of five children (gzip, one
over the protocol's 50,000-URL limit, malformed XML, another host's URL,
a gzip bomb), and cross-submitted sitemaps on another host. The manifest
is what a polite crawler that reads them by the protocol fetches: every
page only a sitemap lists, none that a sitemap lists out of scope, past
its limit or after its XML error. Several workers, so sitemaps and their
entries cross between workers.
"""

import collections
import unittest
import urllib.parse

import crawl_util
import harness

FARM = {"seed": 7, "hosts": 6, "pages": 12, "links": 3,
        "cross_host_share": 0.2,
        "profile": [{"hosts": [0], "sitemap": True, "sitemap_pages": 9},
                    {"hosts": [2], "sitemap": True, "robots": "disallow"}]}


class SitemapCrawl(unittest.TestCase):

    def crawl(self, **overrides):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns, **{"workers.count": 3,
                                                       **overrides})
            self.assertEqual(result.returncode, 0, result.stderr)
            return (result, farm.final_requests(), farm.port,
                    {"manifest.txt": farm.manifest(),
                     **{n: farm.sitemap_listing(n) for n in
                        ("sitemap_only.txt", "sitemap_never.txt",
                         "sitemaps.txt")}})

    def test_the_crawl_reads_sitemaps_by_the_protocol(self):
        result, reqs, port, farm = self.crawl()
        sitemaps = set(farm["sitemaps.txt"])
        self.assertEqual(len(sitemaps), 16)
        self.assertGreater(len(farm["sitemap_only.txt"]), 9)
        gets = [f"http://{r['host']}:{port}{r['path']}" for r in reqs
                if r["method"] == "GET" and r["path"] != "/robots.txt"]
        counts = collections.Counter(gets)
        pages = {u for u in counts if u not in sitemaps}
        # Every page only a sitemap leads to, and no other page than the
        # manifest's: nothing out of scope, past the limit, after the error.
        self.assertEqual(sorted(set(farm["sitemap_only.txt"]) - pages), [])
        self.assertEqual(sorted(pages & set(farm["sitemap_never.txt"])), [])
        self.assertEqual(pages, set(farm["manifest.txt"]))
        self.assertEqual({u: n for u, n in counts.items() if n > 1}, {},
                         "fetched more than once")
        # Every sitemap file is read (h2's under /private/ none), once.
        self.assertEqual(sitemaps - set(counts), set())
        # The bounded and the broken are counted, not silent.
        self.assertEqual(result.count("sitemap_reads"), len(sitemaps))
        self.assertGreaterEqual(result.count("sitemap_urls_over_limit"), 2)
        self.assertGreaterEqual(result.count("sitemap_truncated"), 2)
        self.assertGreaterEqual(result.count("sitemap_errors"), 4)
        self.assertGreaterEqual(result.count("sitemap_urls_other_origin"), 2)
        self.assertGreaterEqual(result.count("sitemap_urls_admitted"),
                                len(farm["sitemap_only.txt"]))
        # Politeness holds for sitemaps as for pages.
        self.assertEqual(
            {h: n for h, n in harness.max_in_flight_per_host(reqs).items()
             if n > 1}, {})
        # Robots before anything else on every host.
        for host, first in harness.first_request_per_host(reqs).items():
            self.assertEqual(first["path"], "/robots.txt", host)
        # The sitemaps are archived like any response (the second bomb,
        # byte for byte the first, as a revisit).
        uris = {r["headers"].get("warc-target-uri") for r in result.records()
                if r["headers"].get("warc-type") in ("response", "revisit")}
        self.assertEqual(sitemaps - uris, set())

    def test_off_the_sitemaps_are_not_read(self):
        result, reqs, port, farm = self.crawl(**{"sitemaps.from_robots":
                                                 False})
        gets = {urllib.parse.urlsplit(f"http://x{r['path']}").path
                for r in reqs if r["method"] == "GET"}
        self.assertFalse(any(p.startswith("/sitemap") or p.startswith("/sm/")
                             for p in gets), sorted(gets))
        self.assertEqual(result.count("sitemap_reads"), 0)


if __name__ == "__main__":
    unittest.main()
