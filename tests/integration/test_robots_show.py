"""`crawlctl robots show` against the webfarm's robots.txt variants.

One webfarm, one host per robots variant (docs/WEBFARM.md), each reached
through --resolve (no DNS). The outcome line and the effective rules are
judged against what the webfarm serves, and the request log proves what was
(and was not) fetched.
"""
import os
import tempfile
import unittest

import crawl_util
import harness

# Host index -> robots profile.
VARIANTS = {
    0: {"robots": "allow"},
    1: {"robots": "disallow"},
    2: {"robots": "crawl-delay", "crawl_delay": 3},
    3: {"robots": "404"},
    4: {"robots": "500"},
    5: {"robots": "timeout"},
    6: {"robots": "redirect", "robots_real": "disallow"},
    7: {"robots": "allow"},  # only ever asked without --allow-private
    8: {"robots": "500"},    # only ever asked with ignore-robots
}

CRAWLCTL_TIMEOUT_S = 60


class RobotsShow(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        profiles = [dict(hosts=i, **p) for i, p in VARIANTS.items()]
        cls.farm = harness.Webfarm(
            {"hosts": len(VARIANTS), "pages": 3, "ips": len(VARIANTS)},
            profiles, max_seconds=300)
        cls.farm.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.farm.__exit__(None, None, None)

    def host(self, i):
        return f"h{i}.farm.test"

    def show(self, i, *extra, allow_private=True):
        host = self.host(i)
        args = ["robots", "show", self.farm.url(host, "/p/0.html"),
                "--resolve", f"{host}:{self.farm.port}:{self.farm.ip_of(host)}"]
        if allow_private:
            args.append("--allow-private")
        proc = crawl_util.crawlctl(*args, *extra, timeout=CRAWLCTL_TIMEOUT_S)
        return proc

    def show_ok(self, i, *extra):
        proc = self.show(i, *extra)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(
            lines[0],
            f"robots.txt: http://{self.host(i)}:{self.farm.port}/robots.txt")
        return lines

    def test_allow_parses_and_allows_everything(self):
        lines = self.show_ok(0)
        self.assertIn("outcome: parsed (robots.txt status 200, 24 bytes)",
                      lines)
        self.assertIn('group: * (no group names "crawld")', lines)
        self.assertIn("  line 1: User-agent: *", lines)
        self.assertIn("rules: none, everything is allowed", lines)

    def test_disallow_lists_the_rule_with_its_line(self):
        lines = self.show_ok(1)
        self.assertIn("outcome: parsed (robots.txt status 200, 34 bytes)",
                      lines)
        i = lines.index("rules: 1, first match wins")
        self.assertEqual(lines[i + 1], "  line 2: Disallow: /private/")

    def test_crawl_delay_is_shown(self):
        lines = self.show_ok(2)
        self.assertIn("crawl-delay: 3 s", lines)
        self.assertIn("rules: none, everything is allowed", lines)

    def test_404_means_allow_all(self):
        lines = self.show_ok(3)
        self.assertEqual(lines[1], "outcome: allow all (robots.txt status 404)")
        self.assertIn("rules: none, everything is allowed", lines)

    def test_500_means_disallow_all(self):
        lines = self.show_ok(4)
        self.assertEqual(
            lines[1],
            "outcome: disallow all (unreachable: robots.txt status 500)")
        i = lines.index("rules: 1, first match wins")
        self.assertEqual(lines[i + 1], "  Disallow: /")

    def test_timeout_means_disallow_all(self):
        # The webfarm holds this robots.txt for 90 s; we give up first.
        lines = self.show_ok(5, "--timeout-ms", "500")
        self.assertTrue(lines[1].startswith(
            "outcome: disallow all (unreachable: "), lines)
        self.assertIn("timed out", lines[1])
        self.assertIn("  Disallow: /", lines)

    def test_redirect_is_followed_to_the_real_file(self):
        lines = self.show_ok(6)
        host = self.host(6)
        self.assertEqual(
            lines[1],
            f"fetched: http://{host}:{self.farm.port}/robots-real.txt "
            "(after 1 redirect)")
        self.assertEqual(
            lines[2], "outcome: parsed (robots.txt status 200, 34 bytes)")
        self.assertIn("  line 2: Disallow: /private/", lines)
        reqs = self.farm.wait_requests(
            lambda rs: any(r["host"] == host and r["path"] ==
                           "/robots-real.txt" for r in rs))
        paths = [r["path"] for r in reqs if r["host"] == host]
        self.assertIn("/robots.txt", paths)
        self.assertIn("/robots-real.txt", paths)
        # Only robots.txt is fetched, never the page named on the command.
        self.assertNotIn("/p/0.html", paths)

    def test_user_agent_names_the_agent_with_contact_url(self):
        self.show_ok(0, "--agent", "examplebot")
        reqs = self.farm.wait_requests(
            lambda rs: any(r["ua"].startswith("examplebot/") for r in rs))
        uas = [r["ua"] for r in reqs if r["host"] == self.host(0)]
        self.assertIn("examplebot/0.1 (+https://github.com/crawld/crawld)",
                      uas)

    def test_loopback_refused_without_allow_private(self):
        host = self.host(7)
        # --resolve to a loopback address is a usage error ...
        proc = self.show(7, allow_private=False)
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("--allow-private", proc.stderr)
        self.assertEqual(proc.stdout, "")
        # ... and so is nothing fetched from a loopback address in the URL.
        ip = self.farm.ip_of(host)
        proc = crawl_util.crawlctl(
            "robots", "show", f"http://{ip}:{self.farm.port}/",
            timeout=CRAWLCTL_TIMEOUT_S)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"outcome: disallow all (unreachable: private address "
                      f"blocked: {ip}; see --allow-private)",
                      proc.stdout.splitlines())
        # A fetch made afterwards shows up in the log; the refused one never
        # reached the server (no request on that address at all).
        self.show_ok(0)
        reqs = self.farm.wait_requests(
            lambda rs: sum(r["host"] == self.host(0) for r in rs) > 0)
        self.assertTrue(any(r["host"] == self.host(0) for r in reqs))
        self.assertEqual([r for r in reqs if r["ip"] == ip], [])

    def overrides_file(self, text):
        d = tempfile.mkdtemp(prefix="overrides-")
        self.addCleanup(lambda: (os.remove(path), os.rmdir(d)))
        path = os.path.join(d, "ov.conf")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_override_disallow_is_added_and_named(self):
        ov = self.overrides_file("# test\n"
                                 "h1.farm.test disallow /tmp/*\n"
                                 ".farm.test delay-ms 5000\n"
                                 "h2.farm.test concurrency 2\n")
        lines = self.show_ok(1, "--overrides", ov)
        self.assertEqual(
            lines[1], "outcome: parsed (robots.txt status 200, 34 bytes)")
        self.assertEqual(lines[2],
                         f"override: {ov}:2 h1.farm.test disallow /tmp/*; "
                         f"{ov}:3 .farm.test delay-ms 5000")
        i = lines.index("rules: 2, first match wins")
        # "/private/" is longer than "/tmp/*": it comes first.
        self.assertEqual(lines[i + 1:i + 3], [
            "  line 2: Disallow: /private/",
            f"  override {ov}:2: Disallow: /tmp/*"])

    def test_ignore_robots_override_skips_the_fetch(self):
        ov = self.overrides_file("h8.farm.test ignore-robots\n"
                                 "h8.farm.test disallow /admin\n")
        lines = self.show_ok(8, "--overrides", ov)
        self.assertEqual(lines[1],
                         "outcome: not fetched (ignore-robots override)")
        i = lines.index("rules: 1, first match wins")
        self.assertEqual(lines[i + 1], f"  override {ov}:2: Disallow: /admin")
        # A later fetch reaches the log; h8's robots.txt never did.
        self.show_ok(0, "--agent", "afterbot")
        reqs = self.farm.wait_requests(
            lambda rs: any(r["ua"].startswith("afterbot/") for r in rs))
        self.assertTrue(any(r["ua"].startswith("afterbot/") for r in reqs))
        self.assertEqual([r for r in reqs if r["host"] == self.host(8)], [])

    def test_invalid_overrides_file_exits_2_with_file_and_line(self):
        ov = self.overrides_file("h1.farm.test delay-ms 5\n"
                                 "h1.farm.test delay-ms soon\n")
        proc = self.show(1, "--overrides", ov)
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn(f"{ov}:2: delay-ms: bad number 'soon'", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_usage_errors_exit_2(self):
        for args in (["robots", "show"],
                     ["robots", "show", "not a url"],
                     ["robots", "show", "ftp://example.com/"],
                     ["robots", "show", "http://example.com/",
                      "--timeout-ms", "0"],
                     ["robots", "show", "http://example.com/",
                      "--resolve", "example.com:80"],
                     ["robots", "show", "http://example.com/", "--bogus"]):
            proc = crawl_util.crawlctl(*args, timeout=CRAWLCTL_TIMEOUT_S)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("robots show:", proc.stderr)
            self.assertEqual(proc.stdout, "")


if __name__ == "__main__":
    unittest.main()
