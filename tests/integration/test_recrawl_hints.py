"""What steers a URL's revisit interval besides adaptation (issue 17 parts
1 and 3; docs/RULES.md "Recrawl intervals", docs/SITEMAPS.md "What the
schedule takes from it").

A compressed week (recrawl.time_scale) over a webfarm of three hosts with
three workers, the default shape. No page changes, so without steering
every URL would be revisited at initial_interval_s, then ever less often.
The rule file and host 0's /sitemap.xml steer it:

- `recrawl 6h` on /p/1.html and /p/2.html of every host ("news"): a fixed
  interval, revisited many times; `recrawl 2d..7d` on the other /p/ pages:
  the initial 1 d is clamped up to 2 d, so no revisit comes sooner;
- the sitemap's changefreq gives the /sm/<k>.html pages (which only it
  lists) their first interval: `always` the minimum, `daily` a day,
  `weekly` / `monthly` / `yearly` / `never` a week or the maximum (past
  the run); /sm/10.html says `hourly` but an operator's `recrawl 7d` rule
  for it wins;
- the sitemap gives the seed /p/0.html (fetched before the sitemap is
  read) a lastmod of "now": it is due at once, not after its 2 d.

Judged from the webfarm's request log (when each URL was asked) and the
crawl's counters. Politeness holds throughout. Budget: about 20 s under
ASan (a RUN_S crawl plus start and stop); every process is bounded
(crawl.max_duration_s, the farm's max_seconds) and stopped by PID.
"""
import collections
import os
import shutil
import statistics
import tempfile
import unittest
import urllib.parse

import crawl_util
import harness

WEEK_S = 16.0                      # real seconds for a simulated week
TIME_SCALE = 604800 / WEEK_S       # simulated seconds per real second
DAY_S = 86400 / TIME_SCALE         # a simulated day in real seconds
HOUR_S = 3600 / TIME_SCALE
RUN_S = 11.0                       # the crawl's length (real seconds)
MIN_DELAY_MS = 60
FARM = {"seed": 23, "hosts": 3, "pages": 6, "links": 3,
        "cross_host_share": 0.5,
        "profile": [{"hosts": [0], "sitemap": True, "sitemap_pages": 14,
                     "sitemap_lastmod_now": True}]}
RULES = """\
# news: fixed; the rest of /p/ adaptive within 2 d .. 7 d
recrawl 6h      regex ^http://[^/]+/p/[12]\\.html$
recrawl 2d..7d  regex ^http://[^/]+/p/
# the sitemap says hourly; the operator says weekly, and wins
recrawl 7d      regex /sm/10\\.html$
accept  scope   any
"""
# /sitemap.xml lists /sm/<k>.html for even k with changefreq
# (daily, weekly, monthly, hourly, yearly, never, always)[k % 7].
SOON = {6}                         # always: the minimum (1 h)
DAILY = {0}                        # daily: 1 d
PAST_THE_RUN = {2, 4, 8, 12, 10}   # monthly, yearly, weekly, never; rule


class RecrawlHints(unittest.TestCase):

    def test_rules_and_sitemap_hints_steer_the_intervals(self):
        work = tempfile.mkdtemp(prefix="crawld-recrawl-hints-")
        self.addCleanup(shutil.rmtree, work, ignore_errors=True)
        data = os.path.join(work, "data")
        os.makedirs(data)
        rules = os.path.join(work, "recrawl.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        settings = {
            "workers.count": 3,
            "politeness.min_delay_ms": MIN_DELAY_MS,
            "crawl.max_duration_s": RUN_S,
            "crawl.rules_file": rules,
            "sitemaps.max_per_host": 1,   # /sitemap.xml only: no bomb here
            "recrawl.enabled": True,
            "recrawl.time_scale": TIME_SCALE,
            "recrawl.initial_interval_s": 86400.0,
            "recrawl.min_interval_s": 3600.0,
            "recrawl.max_interval_s": 604800.0,
            "recrawl.shrink": 0.5,
            "recrawl.grow": 2.0}
        with harness.Webfarm(FARM, max_seconds=90) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns, timeout=60,
                                          data_dir=data,
                                          **settings)
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            seed = farm.seeds()[0]

        gets = collections.defaultdict(list)   # url -> request start times
        for r in reqs:
            if r["method"] == "GET":
                url = f"http://{r['host']}:{farm.port}{r['path']}"
                gets[url].append(r["start_us"] / 1e6)
        for times in gets.values():
            times.sort()
        origin = seed[:seed.index("/p/")]

        def gaps(url):
            t = gets.get(url, [])
            return [b - a for a, b in zip(t, t[1:])]

        def path_of(url):
            return urllib.parse.urlsplit(url).path

        # News every 6 h (fixed), the other /p/ pages never within 2 d.
        news = [u for u in gets if path_of(u) in ("/p/1.html", "/p/2.html")]
        others = [u for u in gets if path_of(u).startswith("/p/") and
                  u not in news and u != seed]
        self.assertGreaterEqual(len(news), 4, sorted(gets))
        self.assertTrue(others, sorted(gets))
        news_gaps = [g for u in news for g in gaps(u)]
        other_gaps = [g for u in others for g in gaps(u)]
        news_visits = statistics.mean(len(gets[u]) for u in news)
        other_visits = statistics.mean(len(gets[u]) for u in others)
        print(f"\nnews pages: {news_visits:.1f} visits each, mean gap "
              f"{statistics.mean(news_gaps or [0]):.2f} s (rule 6 h = "
              f"{6 * HOUR_S:.2f} s); other pages: {other_visits:.1f} visits "
              f"each, gaps {sorted(round(g, 2) for g in other_gaps)} (rule "
              f"2 d..7 d, 2 d = {2 * DAY_S:.2f} s)")
        self.assertGreaterEqual(news_visits, 5)
        self.assertGreater(news_visits, 2 * other_visits)
        # A fixed 6 h never grows, though the pages never change.
        self.assertLess(max(news_gaps), 3 * 6 * HOUR_S + 1.0, news_gaps)
        for g in other_gaps:
            self.assertGreater(g, 2 * DAY_S * 0.95, other_gaps)

        # The sitemap's changefreq is the first interval of its pages.
        sm = {k: gets.get(f"{origin}/sm/{k}.html", [])
              for k in range(0, 14, 2)}
        print("sitemap pages, request times after the first: " + ", ".join(
            f"/sm/{k}: {[round(t - v[0], 2) for t in v[1:]]}"
            for k, v in sm.items()))
        self.assertEqual([k for k, v in sm.items() if not v], [],
                         "sitemap pages never fetched")
        for k in SOON:
            self.assertGreaterEqual(len(sm[k]), 2, k)
            self.assertLess(sm[k][1] - sm[k][0], DAY_S / 2, (k, sm[k]))
        for k in DAILY:
            self.assertGreaterEqual(len(sm[k]), 2, k)
            self.assertGreater(sm[k][1] - sm[k][0], DAY_S * 0.95, (k, sm[k]))
        for k in PAST_THE_RUN:
            self.assertEqual(len(sm[k]), 1, (k, sm[k]))

        # lastmod: the seed, fetched before the sitemap said it changed
        # "now", is due at once rather than after its 2 d.
        sitemap_at = gets[f"{origin}/sitemap.xml"][0]
        self.assertLess(gets[seed][0], sitemap_at)
        after = [t for t in gets[seed] if t > sitemap_at]
        self.assertTrue(after, gets[seed])
        print(f"seed: fetched {sitemap_at - gets[seed][0]:.2f} s before the "
              f"sitemap, again {after[0] - sitemap_at:.2f} s after it")
        self.assertLess(after[0] - gets[seed][0], DAY_S, gets[seed])
        self.assertGreaterEqual(result.count("recrawl_lastmod_due"), 1)

        # Politeness, revisits included.
        gap = [g for g in harness.min_gap_per_host(reqs).values()
               if g is not None]
        self.assertGreaterEqual(min(gap), MIN_DELAY_MS * 1000)


if __name__ == "__main__":
    unittest.main()
