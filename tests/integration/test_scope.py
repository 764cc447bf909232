"""What crawld enqueues (issue 4): filter rules and their SIGHUP reload,
trap limits, processing by content type, path ascending and rel=nofollow,
judged by the webfarm's request log and the WARCs.
"""
import json
import os
import re
import signal
import tempfile
import time
import unittest

import crawl_util
import harness

SMALL = """
seed = 5
hosts = {hosts}
pages = {pages}
page_bytes = 800
links = {links}
cross_host_share = 0.2
relative_share = 0.5
"""


def small_farm(profiles="", hosts=3, pages=15, links=4):
    return (SMALL.format(hosts=hosts, pages=pages, links=links) + "\n" +
            profiles)


def near_duplicates(data_dir):
    """{url: the URL it is a near-duplicate of} from the CDXJ index."""
    flagged = {}
    for path in os.listdir(os.path.join(data_dir, "index")):
        if not path.endswith(".cdxj"):
            continue
        with open(os.path.join(data_dir, "index", path)) as f:
            for line in f:
                j = json.loads(line.split(" ", 2)[2])
                if j.get("near_duplicate_of"):
                    flagged[j["url"]] = j["near_duplicate_of"]
    return flagged


def host(i):
    return f"h{i}.farm.test"


def paths_of(reqs, name):
    return [r["path"] for r in sorted(reqs, key=lambda r: r["start_us"])
            if r["host"] == name]


def write(path, text):
    # Written whole, then renamed: a reload never reads a half-written file.
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def wait_for(pred, timeout):
    """Polls pred() until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    return pred()


class FilterRules(unittest.TestCase):
    """Test 9: crawl.rules_file (docs/RULES.md)."""

    def test_prefix_and_regex_rejects_are_never_requested(self):
        with harness.Webfarm(small_farm()) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-rules-")
            rules = os.path.join(d, "rules.txt")
            prefix = farm.url(host(1), "/p/1")  # /p/1.html, /p/10..14.html
            write(rules, "# test rules\n"
                         f"reject prefix {prefix}\n"
                         r"reject regex  /p/[0-9]*7\.html$" "\n")
            result = crawl_util.run_crawl(farm, dns,
                                          **{"crawl.rules_file": rules})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            rejected = [f"{r['host']}{r['path']}" for r in reqs
                        if (r["host"] == host(1)
                            and r["path"].startswith("/p/1"))
                        or re.search(r"/p/[0-9]*7\.html$", r["path"])]
            self.assertEqual(rejected, [])
            self.assertGreater(result.count("filter_rejected"), 0)
            # The rest is crawled: e.g. /p/0, /p/2 of every host.
            fetched = harness.fetched_urls(reqs, farm.port)
            for i in range(3):
                self.assertIn(farm.url(host(i), "/p/2.html"), fetched)

    def test_bad_rules_file_exits_2_naming_file_and_line(self):
        d = tempfile.mkdtemp(prefix="crawld-rules-")
        rules = os.path.join(d, "rules.txt")
        write(rules, "reject prefix http://a.example/\n"
                     "\n"
                     "reject hostname a.example\n")
        proc = crawl_util.run_crawld_bad_start(
            d, **{"crawl.rules_file": rules})
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("rules.txt:3", proc.stderr)


class RulesReload(unittest.TestCase):
    """Test 10: SIGHUP reloads the rules file; a bad file keeps the old."""

    def test_bad_reload_keeps_old_rules_good_reload_applies(self):
        # links = 1: each page links only to the next, so /p/<n>.html is
        # discovered only after /p/<n-1>.html is fetched; at 300 ms per
        # request /p/30.html is about 9 s away when the reload happens.
        cfg = small_farm(hosts=2, pages=40, links=1)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-rules-")
            rules = os.path.join(d, "rules.txt")
            write(rules, "reject regex /never/\n")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(d, "data"),
                **{"crawl.rules_file": rules,
                   "politeness.min_delay_ms": 300})
            try:
                self.assertTrue(farm.wait_requests(
                    lambda rs: any(r["path"] == "/p/3.html" for r in rs),
                    timeout=30), "the crawl did not start")

                write(rules, "reject regex /never/\nreject hostname x\n")
                os.kill(proc.pid, signal.SIGHUP)
                failed = wait_for(lambda: crawl_util.log_events(
                    data, "rules_reload_failed"), 20)
                self.assertTrue(failed, "no rules_reload_failed event")
                self.assertIn("rules.txt:2", str(failed[0]))
                self.assertIsNone(proc.poll(), "crawld exited on a bad reload")
                seen = len(farm.requests())
                self.assertTrue(farm.wait_requests(
                    lambda rs: len(rs) > seen + 2, timeout=20),
                    "the crawl stopped after a failed reload")

                write(rules, "reject regex /never/\n"
                             r"reject regex /p/3[0-9]\.html$" "\n")
                os.kill(proc.pid, signal.SIGHUP)
                reloaded = wait_for(lambda: crawl_util.log_events(
                    data, "rules_reloaded"), 20)
                self.assertTrue(reloaded, "no rules_reloaded event")
                # The event is flushed within a progress tick (1 s): every
                # request for /p/3x.html before this point would make the
                # check below meaningless, so make sure there is none.
                before = [r for r in farm.requests()
                          if re.match(r"/p/3[0-9]\.html$", r["path"])]
                self.assertEqual(before, [], "reload came too late")
                result = crawl_util.finish_crawl(proc, data, timeout=120)
            finally:
                harness.stop_process(proc)
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            late = [r["path"] for r in reqs
                    if re.match(r"/p/3[0-9]\.html$", r["path"])]
            self.assertEqual(late, [])
            # Up to the rejected part, the chain was crawled under the old
            # rules on every host.
            for i in range(2):
                self.assertIn("/p/29.html", paths_of(reqs, host(i)))
            self.assertGreaterEqual(result.count("rules_reloaded"), 1)
            self.assertGreaterEqual(result.count("rules_reload_failed"), 1)


class Traps(unittest.TestCase):
    """Test 11: calendar, deep, session traps and the host budget."""

    def test_trap_spaces_are_bounded_and_normal_pages_fetched(self):
        cfg = small_farm('[[profile]]\nhosts = 0\n'
                         'trap = ["calendar", "deep", "session"]\n',
                         hosts=2, pages=10)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns, timeout=240)
            self.assertEqual(result.returncode, 0, result.stderr)
            paths = paths_of(farm.final_requests(), host(0))
            # Calendar: years current-30 .. current+2 pass, 12 months each:
            # at most 33 x 12 = 396 pages, well under 500.
            cal = [p for p in paths if p.startswith("/cal/")]
            self.assertGreater(len(cal), 0)
            self.assertLess(len(cal), 500)
            years = {int(p.split("/")[2]) for p in cal}
            now = time.gmtime().tm_year
            self.assertGreaterEqual(min(years), now - 31)
            self.assertLessEqual(max(years), now + 3)
            self.assertGreater(result.count("trap_calendar"), 0)
            # Deep: max_path_repeats 3 lets /deep/a/a/a/ through, not
            # /deep/a/a/a/a/.
            deep = [p for p in paths if p.startswith("/deep/")]
            self.assertTrue(deep)
            self.assertLessEqual(max(p.count("a/") for p in deep), 4, deep)
            self.assertGreater(result.count("trap_path_repeats"), 0)
            # Session: canonicalization drops sid, so the sid space is not
            # explored (at most the entry URL would carry one).
            sid = [p for p in paths if "sid=" in p]
            self.assertLessEqual(len(sid), 1, sid)
            for n in range(10):
                self.assertIn(f"/p/{n}.html", paths)

    def test_host_budget(self):
        cfg = small_farm(hosts=2, pages=20)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns,
                                          **{"traps.host_budget": 10})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            for i in range(2):
                pages = [p for p in paths_of(reqs, host(i))
                         if p != "/robots.txt"]
                self.assertGreater(len(pages), 0)
                self.assertLessEqual(len(pages), 10, (host(i), pages))
            self.assertGreater(result.count("trap_host_budget"), 0)


class ProcessingByType(unittest.TestCase):
    """Test 12: non-HTML bodies are archived, not parsed."""

    def test_non_html_archived_not_parsed(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nnon_html = true\n',
                         hosts=2, pages=8)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            files = ["/f/doc.pdf", "/f/img.png", "/f/note.txt", "/f/lie.html"]
            uris = result.response_uris()
            for f in files:
                self.assertIn(farm.url(host(0), f), uris)
            self.assertGreaterEqual(result.count("not_parsed"), 4)
            # No metadata (outlinks) record for them: they were not parsed.
            meta = {r["headers"].get("warc-target-uri")
                    for r in result.records()
                    if r["headers"].get("warc-type") == "metadata"}
            for f in files:
                self.assertNotIn(farm.url(host(0), f), meta)
            fetched = harness.fetched_urls(farm.final_requests(), farm.port)
            fetched = {u for u in fetched if not u.endswith("/robots.txt")}
            self.assertEqual(fetched, set(farm.manifest()))


class PathAscending(unittest.TestCase):
    """Test 13: crawl.path_ascending."""

    def crawl(self, **overrides):
        with harness.Webfarm(small_farm(hosts=2, pages=6)) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns, **overrides)
            self.assertEqual(result.returncode, 0, result.stderr)
            return result, farm.final_requests()

    def test_on_requests_parent_paths(self):
        result, reqs = self.crawl(**{"crawl.path_ascending": True})
        for i in range(2):
            paths = paths_of(reqs, host(i))
            self.assertIn("/p/", paths)
            self.assertIn("/", paths)
        self.assertGreater(result.count("path_ascending_added"), 0)

    def test_off_by_default(self):
        result, reqs = self.crawl()
        paths = [r["path"] for r in reqs]
        self.assertNotIn("/p/", paths)
        self.assertNotIn("/", paths)
        self.assertEqual(result.count("path_ascending_added"), 0)


class RelNofollow(unittest.TestCase):
    """Test 14: crawl.follow_rel_nofollow."""

    def crawl(self, **overrides):
        cfg = small_farm('[[profile]]\nhosts = 0\nnofollow = true\n',
                         hosts=2, pages=10)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns, **overrides)
            self.assertEqual(result.returncode, 0, result.stderr)
            return result, paths_of(farm.final_requests(), host(0))

    def test_followed_when_enabled(self):
        result, paths = self.crawl(**{"crawl.follow_rel_nofollow": True})
        self.assertIn("/nf/rel/2.html", paths)
        self.assertIn("/nf/rel/7.html", paths)
        # Page-wide meta nofollow is obeyed either way.
        self.assertEqual([p for p in paths if p.startswith("/nf/meta/")], [])

    def test_never_followed_by_default(self):
        result, paths = self.crawl()
        self.assertIn("/p/2.html", paths)
        self.assertEqual([p for p in paths if p.startswith("/nf/")], [])
        self.assertGreater(result.count("nofollow_links"), 0)


if __name__ == "__main__":
    unittest.main()


class DuplicateBodies(unittest.TestCase):
    """Issue 5, item 3: an exact duplicate body is stored as a revisit
    record pointing at the original, and is not parsed again."""

    def test_duplicates_become_revisits_of_the_original(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nduplicates = true\n',
                         hosts=2, pages=12)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            records = result.records()
            by_uri = {}
            for r in records:
                h = r["headers"]
                if h.get("warc-type") in ("response", "revisit"):
                    by_uri.setdefault(h["warc-target-uri"], []).append(r)
            # Every manifest URL is in the WARCs once, as a response or a
            # revisit.
            self.assertEqual(set(farm.manifest()),
                             {u for u in by_uri if not u.endswith("robots.txt")})
            self.assertEqual(max(len(v) for v in by_uri.values()), 1)
            responses = {h["warc-record-id"]: h for h in
                         (r["headers"] for r in records)
                         if h.get("warc-type") == "response"}
            pairs = 0
            for uri, (rec,) in by_uri.items():
                if "/dup/" not in uri:
                    continue
                twin = uri.replace("/dup/", "/p/")
                (other,) = by_uri[twin]
                kinds = {rec["headers"]["warc-type"],
                         other["headers"]["warc-type"]}
                # The pair is byte-identical: one response, one revisit of it.
                self.assertEqual(kinds, {"response", "revisit"}, uri)
                revisit = rec if rec["headers"]["warc-type"] == "revisit" \
                    else other
                original = other if revisit is rec else rec
                h = revisit["headers"]
                self.assertEqual(h["warc-refers-to"],
                                 original["headers"]["warc-record-id"])
                self.assertIn(h["warc-refers-to"], responses)
                self.assertEqual(h["warc-refers-to-target-uri"],
                                 original["headers"]["warc-target-uri"])
                self.assertIn("warc-refers-to-date", h)
                self.assertEqual(h["warc-payload-digest"],
                                 original["headers"]["warc-payload-digest"])
                pairs += 1
            self.assertGreater(pairs, 5)
            self.assertEqual(result.count("revisits"), pairs)
            verify = crawl_util.crawlctl("warc", "verify", *result.warc_files())
            self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)

    def assert_twins(self, flagged):
        for url, original in flagged.items():
            # The twin on the other host, same path.
            self.assertNotEqual(url.split("/")[2], original.split("/")[2])
            self.assertEqual(url.split("/", 3)[3], original.split("/", 3)[3])

    def test_near_duplicates_are_flagged_with_the_original(self):
        # Host 1 mirrors host 0: same text, links naming the mirror, so the
        # bodies differ but their text does not.
        cfg = small_farm('[[profile]]\nhosts = 1\nmirror_of = 0\n',
                         hosts=2, pages=12)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            flagged = near_duplicates(result.data_dir)
            self.assertGreater(len(flagged), 5, flagged)
            self.assertEqual(result.count("near_duplicates"), len(flagged))
            self.assert_twins(flagged)
            # The metadata record says it too.
            metas = [r for r in result.records()
                     if r["headers"].get("warc-type") == "metadata"
                     and b"near-duplicate-of: " in r["block"]]
            self.assertEqual(len(metas), len(flagged))

    def test_near_duplicates_name_the_original_after_the_index_wraps(self):
        # store.near_duplicate_entries = 16 and 80 new texts: the index
        # forgets the oldest texts many times over. A page flagged then
        # still names its original's URL; where the page was is forgotten
        # with its text, never kept for a text the index no longer has
        # (before, the places filled up at 16 and every reference after
        # that was named "?").
        cfg = small_farm('[[profile]]\nhosts = 1\nmirror_of = 0\n',
                         hosts=2, pages=80)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, **{"store.near_duplicate_entries": 16})
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.summary["pages"], len(farm.manifest()))
            self.assertGreaterEqual(len(farm.manifest()), 160)
            flagged = near_duplicates(result.data_dir)
            # The two hosts are crawled side by side, so many twins come
            # within 16 new texts of each other (25 of 80 in one run).
            self.assertGreater(len(flagged), 10, flagged)
            self.assertNotIn("?", flagged.values())
            self.assert_twins(flagged)
