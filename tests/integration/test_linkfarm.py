"""AOPIC credit scheduling against traps (issue 5, "Done when / Traps"),
judged by the webfarm's request log only.

LinkFarmTrap: a small web of normal hosts plus a link farm (spam hosts that
link densely among themselves and generate URLs without end, reached by one
link from one normal page), crawled with few connections so that the
scheduler must choose among many ready hosts. Every normal manifest URL
must be fetched, and up to the moment the last one is, the farm may have
had less than 15% of all fetches. The full-size run, with credit scheduling
on and off side by side, is bench/linkfarm.py (docs/bench/linkfarm.md).

CalendarBudget: with every trap heuristic off, a single host whose calendar
is endless is still cut off, by its AOPIC page budget alone.
"""
import os
import tempfile
import time
import unittest

import crawl_util
import harness

NORMAL_HOSTS = 10
SPAM_HOSTS = 30
PAGES = 30

# The entry link sits on the first seed page, so the farm is discovered by
# the very first fetch: the scheduler meets it at once, not at the end.
LINKFARM = """
seed = {seed}
hosts = {hosts}
pages = {pages}
page_bytes = 1500
links = 8
cross_host_share = 0.3
relative_share = 0.5
# One address per host: the per-IP rule must not be what limits the crawl.
ips = {hosts}
seeds = "all"

[[profile]]
hosts = "{normal}-{last}"
link_farm = true
link_farm_links = 20

[[profile]]
hosts = 0
link_farm_entry = 0
"""


def linkfarm_config(seed):
    return LINKFARM.format(seed=seed, hosts=NORMAL_HOSTS + SPAM_HOSTS,
                           pages=PAGES, normal=NORMAL_HOSTS,
                           last=NORMAL_HOSTS + SPAM_HOSTS - 1)


# Several webs: one lucky link graph proves nothing about the scheduler.
SEEDS = (4, 5, 7)
# Fewer connections than normal hosts, far fewer than ready hosts.
MAX_CONNECTIONS = 4
FARM_SHARE_LIMIT = 0.15


def crawl_until_manifest(farm, dns, settings, max_pages, timeout=300):
    """Runs crawld until every manifest URL and at least one link-farm URL
    are in the log (then stops it by PID), or until it ends by itself
    (max_pages, max_duration_s); returns the whole log, crawld's exit code
    and its data directory. Waiting for a farm fetch too proves the trap
    was live, whatever the machine's speed."""
    want = set(farm.manifest())
    spam = farm.link_farm_hosts()

    def done(reqs):
        return (want <= harness.fetched_urls(reqs, farm.port) and
                any(r["host"] in spam for r in reqs))

    proc, data = crawl_util.start_crawl(
        farm, dns, **{"crawl.max_pages": max_pages,
                      "crawl.max_duration_s": float(timeout - 30),
                      **settings})
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if done(farm.requests()):
                break
            time.sleep(0.2)
    finally:
        code = harness.stop_process(proc)
    return farm.final_requests(), code, data


class LinkFarmTrap(unittest.TestCase):

    def test_normal_hosts_finish_before_the_farm_takes_15_percent(self):
        for seed in SEEDS:
            with self.subTest(seed=seed):
                self.crawl(seed)

    def crawl(self, seed):
        with harness.Webfarm(linkfarm_config(seed)) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            spam = farm.link_farm_hosts()
            self.assertEqual(len(spam), SPAM_HOSTS)
            manifest = farm.manifest()
            self.assertEqual(len(manifest), NORMAL_HOSTS * PAGES)
            # max_pages is only the bound of an endless web: the farm alone
            # could absorb all of it if the scheduler let it.
            reqs, code, _ = crawl_until_manifest(
                farm, dns, {"fetch.max_connections": MAX_CONNECTIONS,
                            "frontier.credit_scheduling": True},
                max_pages=4 * len(manifest))
            self.assertIn(code, (0, None))
            r = harness.link_farm_report(reqs, farm.port, manifest, spam)
            figures = (f"fetches {r['total']}, farm {r['farm']}, until the "
                       f"last normal URL {r['until']} of which farm "
                       f"{r['farm_until']}; never fetched: "
                       f"{len(r['missing'])} {r['missing'][:5]}")
            # The farm was found and crawled into: the trap was live.
            self.assertGreater(r["farm"], 0, figures)
            self.assertEqual(r["missing"], [], figures)
            self.assertLess(r["share"], FARM_SHARE_LIMIT, figures)
            # Politeness held while the scheduler juggled 40 hosts.
            self.assertLessEqual(
                max(harness.max_in_flight_per_host(reqs).values()), 1)


class CalendarBudget(unittest.TestCase):
    """Issue 5: "A single-host infinite calendar is cut off by its budget".
    test_scope.Traps cuts the calendar by the trap heuristics (date window,
    traps.host_budget); here they are all off and only
    frontier.base_page_budget stands between the crawler and 9,000 years of
    months."""

    BASE = 30
    PER_CREDIT = 10.0  # the seed's credit of 1 adds 10 pages

    def test_calendar_host_is_cut_by_the_page_budget(self):
        cfg = ("seed = 2\nhosts = 1\npages = 5\nlinks = 3\n"
               "page_bytes = 600\n\n[[profile]]\nhosts = 0\n"
               "trap = \"calendar\"\n")
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-calbudget-")
            result = crawl_util.run_crawl(
                farm, dns, timeout=240, data_dir=data,
                **{"traps.calendar": False, "traps.host_budget": 0,
                   "traps.max_path_repeats": 0,
                   "traps.max_query_variants": 0,
                   "frontier.credit_scheduling": True,
                   "frontier.base_page_budget": self.BASE,
                   "frontier.budget_pages_per_credit": self.PER_CREDIT,
                   # Only a safety net; the budget must end the crawl first.
                   "crawl.max_pages": 2000,
                   "crawl.max_duration_s": 180.0})
            # It ended by itself, well before the safety net.
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            pages = [r["path"] for r in reqs if r["path"] != "/robots.txt"]
            cal = [p for p in pages if p.startswith("/cal/")]
            budget = self.BASE + int(self.PER_CREDIT * 1.0)
            self.assertGreater(len(cal), 5, pages)  # the trap was entered
            self.assertLessEqual(len(pages), budget, pages)
            # ... and not before it: the budget, not an error, ended it.
            self.assertGreaterEqual(len(pages), self.BASE, pages)
            # The heuristics were really off: nothing was dropped by them.
            for name in ("trap_calendar", "trap_host_budget",
                         "trap_path_repeats"):
                self.assertEqual(result.count(name), 0, name)
            # The real pages came first and were all fetched (FIFO).
            for n in range(5):
                self.assertIn(f"/p/{n}.html", pages)
            # Cut off, not exhausted: the next months still wait, and the
            # crawl stopped because nothing else could be served.
            self.assertGreater(result.summary["queued_left"], 0)
            self.assertNotIn(result.summary["stop_reason"],
                             ("max_pages", "max_duration"))


if __name__ == "__main__":
    unittest.main()
