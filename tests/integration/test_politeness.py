"""Politeness from the server's side (issue 3).

robots.txt failures and retries, Crawl-delay, Retry-After, the per-IP gate,
X-Robots-Tag, admin overrides and the last good robots.txt copy, each judged
by the webfarm's request log and the WARCs, never by crawld's own claims.

Gaps below are min_gap_per_host's: from the end of one response (last byte
handed to the kernel) to the start of the next request on the same host.
"""
import os
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import crawl_util
import harness

# A small web: crawls finish in seconds even under ASan on 2 shared cores.
SMALL = """
seed = 3
hosts = {hosts}
pages = {pages}
page_bytes = 800
links = 4
cross_host_share = 0.2
relative_share = 0.5
ips = {ips}
"""


def small_farm(profiles="", hosts=4, pages=15, ips=16):
    return SMALL.format(hosts=hosts, pages=pages, ips=ips) + "\n" + profiles


def host(i):
    return f"h{i}.farm.test"


def reqs_of(reqs, name):
    return sorted((r for r in reqs if r["host"] == name),
                  key=lambda r: r["start_us"])


def paths_of(reqs, name):
    return [r["path"] for r in reqs_of(reqs, name)]


class RobotsFailure(unittest.TestCase):
    """Test 1: robots.txt answering 500 or never answering."""

    def test_500_and_timeout_hosts_get_only_robots_with_growing_gaps(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "500"\n'
                         '[[profile]]\nhosts = 1\nrobots = "timeout"\n')
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            # max_host_errors = 3: robots.txt is asked three times (errors
            # back off 2 s, then 4 s), then the host is retired, so the crawl
            # ends in about 15 s.
            result = crawl_util.run_crawl(
                farm, dns, **{"fetch.total_timeout_ms": 2000,
                              "politeness.max_host_errors": 3})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            for name in (host(0), host(1)):
                paths = paths_of(reqs, name)
                self.assertEqual(set(paths), {"/robots.txt"}, name)
                # Only the third consecutive failure retires the host.
                self.assertGreaterEqual(len(paths), 3, name)
                rs = reqs_of(reqs, name)
                gaps = [b["start_us"] - a["end_us"]
                        for a, b in zip(rs, rs[1:])]
                # The first retry waits at least the 2 s backoff base, the
                # next one longer.
                self.assertGreaterEqual(gaps[0], 2_000_000, (name, gaps))
                self.assertGreater(gaps[1], gaps[0], (name, gaps))
            self.assertGreater(result.count("robots_5xx"), 0)
            self.assertGreater(result.count("robots_unreachable"), 0)
            # Every other host is crawled completely.
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))
            self.assertEqual(result.summary["stop_reason"], "done")


class CrawlDelay(unittest.TestCase):
    """Test 2: robots.txt Crawl-delay: 1."""

    def test_every_gap_at_least_crawl_delay(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "crawl-delay"\n'
                         'crawl_delay = 1\n', hosts=3, pages=6)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            self.assertGreaterEqual(len(reqs_of(reqs, host(0))), 3)
            # End of one response to start of the next, robots.txt included:
            # the delay is known from the robots.txt response on.
            gap = harness.min_gap_per_host(reqs)[host(0)]
            self.assertGreaterEqual(gap, 1_000_000)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))


class RetryAfter(unittest.TestCase):
    """Test 3: 503 and 429 with Retry-After: 1."""

    def test_next_request_waits_retry_after_and_url_finally_200(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nerrors = ["503", "429"]\n',
                         hosts=2, pages=8)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            rs = reqs_of(farm.final_requests(), host(0))
            throttled = [i for i, r in enumerate(rs)
                         if r["status"] in (503, 429)]
            self.assertGreaterEqual(len(throttled), 4)
            for i in throttled:
                self.assertLess(i + 1, len(rs), "no request after a 503/429")
                wait = rs[i + 1]["start_us"] - rs[i]["end_us"]
                self.assertGreaterEqual(wait, 1_000_000, (rs[i], rs[i + 1]))
            for code in (503, 429):
                for k in (0, 1):
                    path = f"/e/{code}/{k}.html"
                    statuses = [r["status"] for r in rs if r["path"] == path]
                    self.assertEqual(statuses[-1:], [200], (path, statuses))
            self.assertGreater(result.count("http_503"), 0)
            self.assertGreater(result.count("http_429"), 0)


class PerIp(unittest.TestCase):
    """Tests 4 and 5: 8 hosts on 2 addresses."""

    FARM = small_farm(hosts=8, pages=10, ips=2)

    def test_one_request_per_ip_and_host_with_defaults(self):
        min_delay_ms = 100
        with harness.Webfarm(self.FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, **{"politeness.min_delay_ms": min_delay_ms})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            per_ip = harness.max_in_flight_per_ip(reqs)
            self.assertEqual(len(per_ip), 2, per_ip)
            self.assertEqual(max(per_ip.values()), 1, per_ip)
            self.assertEqual(
                max(harness.max_in_flight_per_host(reqs).values()), 1)
            gaps = [g for g in harness.min_gap_per_host(reqs).values()
                    if g is not None]
            self.assertGreaterEqual(min(gaps), min_delay_ms * 1000)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_per_ip_off_still_completes(self):
        with harness.Webfarm(self.FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns,
                                          **{"politeness.per_ip": False})
            self.assertEqual(result.returncode, 0, result.stderr)
            in_flight = harness.max_in_flight_per_host(farm.final_requests())
            self.assertEqual(max(in_flight.values()), 1, in_flight)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))


def xrt_profile(value):
    return f'[[profile]]\nhosts = 0\nx_robots_tag = "{value}"\n'


class XRobotsTag(unittest.TestCase):
    """Test 6: X-Robots-Tag noindex / nofollow for us / for another bot."""

    def crawl(self, value):
        farm = harness.Webfarm(small_farm(xrt_profile(value), hosts=2,
                                          pages=10))
        return farm

    def test_noindex_counted_and_in_metadata_record(self):
        with self.crawl("noindex") as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertGreater(result.count("x_robots_noindex"), 0)
            self.assertGreater(result.count("noindex_pages"), 0)
            url = farm.url(host(0), "/p/3.html")
            meta = [r for r in result.records()
                    if r["headers"].get("warc-type") == "metadata"
                    and r["headers"].get("warc-target-uri") == url]
            self.assertEqual(len(meta), 1, url)
            self.assertIn(b"robots: noindex", meta[0]["block"])
            # noindex does not stop link following.
            self.assertIn(farm.url(host(0), "/nf/xrt/3.html"),
                          result.response_uris())
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_nofollow_for_crawld_is_obeyed(self):
        with self.crawl("crawld: nofollow") as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            paths = paths_of(farm.final_requests(), host(0))
            self.assertIn("/p/3.html", paths)
            self.assertEqual([p for p in paths if p.startswith("/nf/xrt/")],
                             [])
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_nofollow_for_another_bot_is_ignored(self):
        with self.crawl("otherbot: nofollow") as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(farm, dns)
            self.assertEqual(result.returncode, 0, result.stderr)
            paths = paths_of(farm.final_requests(), host(0))
            self.assertIn("/nf/xrt/3.html", paths)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))


class Overrides(unittest.TestCase):
    """Test 7: politeness.overrides_file."""

    def test_ignore_robots_disallow_and_delay(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "disallow"\n',
                         hosts=4, pages=10)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-ov-")
            ov = os.path.join(d, "ov.conf")
            with open(ov, "w") as f:
                f.write("# test overrides\n"
                        "h0.farm.test  ignore-robots\n"
                        "h1.farm.test  disallow  /p/1\n"
                        "h2.farm.test  delay-ms  500\n")
            result = crawl_util.run_crawl(
                farm, dns, **{"politeness.overrides_file": ov})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            p0 = paths_of(reqs, host(0))
            self.assertNotIn("/robots.txt", p0)
            self.assertTrue([p for p in p0 if p.startswith("/private/")], p0)
            p1 = paths_of(reqs, host(1))
            self.assertEqual([p for p in p1 if p.startswith("/p/1")], [])
            self.assertGreater(result.count("override_disallowed"), 0)
            self.assertGreaterEqual(result.count("override_hosts"), 3)
            # robots.txt included: the override is known before it.
            self.assertGreaterEqual(len(reqs_of(reqs, host(2))), 4)
            self.assertGreaterEqual(harness.min_gap_per_host(reqs)[host(2)],
                                    500_000)
            events = crawl_util.log_events(result.data_dir, "override_applied")
            text = "\n".join(str(e) for e in events)
            for line in (2, 3, 4):
                self.assertIn(f"ov.conf:{line}", text)

    def test_delay_below_min_delay_and_concurrency(self):
        # Host 0 answers slowly (first byte after 300 ms) and has an
        # override of delay-ms 0 and concurrency 3; the others keep
        # min_delay 400 ms and one request at a time.
        cfg = small_farm('[[profile]]\nhosts = 0\nfirst_byte_ms = 300\n',
                         hosts=3, pages=15)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-ov-")
            ov = os.path.join(d, "ov.conf")
            with open(ov, "w") as f:
                f.write("h0.farm.test  delay-ms     0\n"
                        "h0.farm.test  concurrency  3\n")
            result = crawl_util.run_crawl(
                farm, dns, **{"politeness.overrides_file": ov,
                              "politeness.min_delay_ms": 400})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            in_flight = harness.max_in_flight_per_host(reqs)
            # Several requests overlap on host 0 (each takes >= 300 ms and
            # up to three start together), never more than three.
            self.assertGreaterEqual(in_flight[host(0)], 2)
            self.assertLessEqual(in_flight[host(0)], 3)
            for i in (1, 2):
                self.assertEqual(in_flight[host(i)], 1)
                self.assertGreaterEqual(
                    harness.min_gap_per_host(reqs)[host(i)], 400_000)
            self.assertEqual(set(result.response_uris()),
                             set(farm.manifest()))

    def test_bad_overrides_file_exits_2_naming_file_and_line(self):
        d = tempfile.mkdtemp(prefix="crawld-ov-")
        ov = os.path.join(d, "ov.conf")
        with open(ov, "w") as f:
            f.write("h0.farm.test ignore-robots\n"
                    "h1.farm.test ignore_robots\n")
        proc = crawl_util.run_crawld_bad_start(
            d, **{"politeness.overrides_file": ov})
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("ov.conf:2", proc.stderr)


class LastGoodRobots(unittest.TestCase):
    """Test 8: robots.txt that works once, then answers 500."""

    def check_zero_grace(self, ttl_s):
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "flaky"\n',
                         hosts=2, pages=12)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            # 250 ms between requests: host 0 takes about 3 s, so robots.txt
            # expires during its crawl. 20 s is several times what it needs.
            result = crawl_util.run_crawl(
                farm, dns, timeout=20,
                **{"politeness.robots_ttl_s": ttl_s,
                   "politeness.robots_outage_grace_s": 0,
                   "politeness.min_delay_ms": 250})
            self.assertEqual(result.returncode, 0, result.stderr)
            rs = reqs_of(farm.final_requests(), host(0))
            robots = [r for r in rs if r["path"] == "/robots.txt"]
            self.assertGreaterEqual(len(robots), 2)
            self.assertEqual(robots[0]["status"], 200)
            first_500 = robots[1]["end_us"]
            after = [r for r in rs if r["start_us"] > first_500
                     and r["path"] != "/robots.txt"]
            self.assertTrue(after, "no page fetched after robots.txt failed")
            self.assertGreater(result.count("robots_last_good_used"), 0)
            fetched = harness.fetched_urls(rs, farm.port)
            self.assertEqual(fetched & set(farm.disallowed()), set())
            self.assertTrue(crawl_util.log_events(result.data_dir,
                                                  "robots_last_good_used"))
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))

    def test_zero_grace_ttl_3s_uses_last_good_copy_and_never_private(self):
        self.check_zero_grace(3)

    # A 1 s copy expires before the next dispatch; the failure that falls
    # back on it must not back the host off (it did once: no page was
    # fetched after the first 500 until the host was retired).
    def test_zero_grace_ttl_1s_uses_last_good_copy_and_never_private(self):
        self.check_zero_grace(1)

    def test_large_grace_stops_the_host_after_the_first_500(self):
        # One link per page: a chain /p/0 -> /p/1 -> ..., so host 0 still
        # has pages to fetch when its robots.txt expires (ttl 1 s, 400 ms
        # between requests, 12 pages).
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "flaky"\n',
                         hosts=1, pages=12).replace("links = 4",
                                                    "links = 1")
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, timeout=60,
                **{"politeness.robots_ttl_s": 1,
                              "politeness.robots_outage_grace_s": 3600,
                              "politeness.min_delay_ms": 400,
                              "politeness.max_host_errors": 3})
            self.assertEqual(result.returncode, 0, result.stderr)
            rs = reqs_of(farm.final_requests(), host(0))
            robots = [r for r in rs if r["path"] == "/robots.txt"]
            self.assertGreaterEqual(len(robots), 2)
            self.assertEqual(robots[1]["status"], 500)
            first_500 = robots[1]["start_us"]
            after = [r["path"] for r in rs if r["start_us"] > first_500
                     and r["path"] != "/robots.txt"]
            self.assertEqual(after, [])
            self.assertEqual(result.count("robots_last_good_used"), 0)
            fetched = harness.fetched_urls(farm.final_requests(), farm.port)
            self.assertEqual(fetched & set(farm.disallowed()), set())


class IdleHostRecords(unittest.TestCase):
    """Issue 16: an idle host's robots record leaves the worker's memory
    after a checkpoint and comes back at the host's next page. In the
    default configuration (one worker per core), with records idle after
    1 s, checkpoints every 0.5 s and a host's pages 1.6 s apart, each
    record leaves and comes back between pages, yet robots.txt is fetched
    once per host, its Disallow holds and the crawl is complete."""

    DELAY_MS = 1600

    def test_records_come_back_without_a_second_robots_fetch(self):
        cfg = small_farm('[[profile]]\nhosts = [0, 1, 2, 3]\n'
                         'robots = "disallow"\n', hosts=4, pages=6)
        with harness.Webfarm(cfg) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, timeout=120,
                **{"workers.count": 0,
                   "checkpoint.interval_s": 0.5,
                   "politeness.host_record_idle_s": 1,
                   "politeness.min_delay_ms": self.DELAY_MS})
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(set(result.response_uris()), set(farm.manifest()))
            reqs = farm.final_requests()
            for i in range(4):
                robots = [p for p in paths_of(reqs, host(i))
                          if p == "/robots.txt"]
                self.assertEqual(len(robots), 1, host(i))
            self.assertTrue(farm.disallowed())
            fetched = harness.fetched_urls(reqs, farm.port)
            self.assertEqual(fetched & set(farm.disallowed()), set())
            short = {h: g for h, g in harness.min_gap_per_host(reqs).items()
                     if g is not None and g < self.DELAY_MS * 1000 * 0.9}
            self.assertEqual(short, {}, "gaps below min_delay_ms (us)")
            self.assertGreater(result.count("host_records_evicted"), 0)
            self.assertGreater(result.count("host_records_loaded"), 0)


class FarmProfiles(unittest.TestCase):
    """The webfarm behaviours these tests rely on, checked directly."""

    def get(self, farm, name, path):
        req = urllib.request.Request(farm.url(name, path))
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}))
        # Connect to the host's own address: the farm serves by Host header.
        ip = farm.ip_of(name)
        req.host = f"{ip}:{farm.port}"
        req.full_url = f"http://{ip}:{farm.port}{path}"
        req.add_header("Host", name)
        try:
            with opener.open(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def test_flaky_robots_then_500(self):
        cfg = small_farm('[[profile]]\nhosts = 0\nrobots = "flaky"\n',
                         hosts=2, pages=5)
        with harness.Webfarm(cfg) as farm:
            s1, _, b1 = self.get(farm, host(0), "/robots.txt")
            s2, _, _ = self.get(farm, host(0), "/robots.txt")
            s3, _, _ = self.get(farm, host(0), "/robots.txt")
            self.assertEqual((s1, s2, s3), (200, 500, 500))
            self.assertIn(b"Disallow: /private/", b1)
            self.assertIn(farm.url(host(0), "/private/0.html"),
                          farm.disallowed())
            self.assertEqual(self.get(farm, host(1), "/robots.txt")[0], 200)

    def test_x_robots_tag_header_and_manifest(self):
        for value, listed in (("noindex", True), ("crawld: nofollow", False),
                              ("otherbot: nofollow", True), ("none", False)):
            cfg = small_farm(xrt_profile(value), hosts=1, pages=10)
            with harness.Webfarm(cfg) as farm:
                st, headers, body = self.get(farm, host(0), "/p/3.html")
                self.assertEqual(st, 200)
                self.assertEqual(headers.get("X-Robots-Tag"), value)
                self.assertIn(b"/nf/xrt/3.html", body)
                _, h2, _ = self.get(farm, host(0), "/p/2.html")
                self.assertNotIn("X-Robots-Tag", h2)
                self.assertEqual(self.get(farm, host(0),
                                          "/nf/xrt/3.html")[0], 200)
                self.assertEqual(
                    farm.url(host(0), "/nf/xrt/3.html") in farm.manifest(),
                    listed, value)

    def test_bad_x_robots_tag_is_a_config_error(self):
        d = tempfile.mkdtemp(prefix="webfarm-bad-")
        path = os.path.join(d, "farm.toml")
        with open(path, "w") as f:
            f.write(small_farm('[[profile]]\nhosts = 0\n'
                               'x_robots_tag = "a\\u0001b"\n'))
        proc = subprocess.run([harness.binary("webfarm"), "--config", path,
                               "--dir", d, "--max-seconds", "5"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("farm.toml:", proc.stderr)
        self.assertIn("x_robots_tag", proc.stderr)


if __name__ == "__main__":
    unittest.main()
