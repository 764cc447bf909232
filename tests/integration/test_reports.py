"""Crawl reports (issue 18, part 2): a crawl of the webfarm by several
worker processes, and the reports crawld gives of it -- the admin API's
GET /api/reports/{name} while the crawl is paused, the files written into
<data>/reports at its end, and `crawlctl report` over the data directory --
agree with the WARC files counted here, independently of crawld (captures
per host, per status code, per MIME type). The seed, error and rule reports
are judged against what the farm was built to do: a redirecting seed, a
seed whose name does not resolve, a host whose robots.txt answers 500."""
import collections
import csv
import glob
import http.client
import io
import json
import os
import subprocess
import tempfile
import unittest
from urllib.parse import urlsplit

import crawl_util
import harness
from test_admin_cli import ctl, wait_admin_url, wait_for

FARM = """
seed = 18
hosts = 6
pages = 14
page_bytes = 900
links = 4
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"

[[profile]]
hosts = 1
errors = ["404", "500"]

[[profile]]
hosts = 2
redirects = ["chain"]

[[profile]]
hosts = 3
non_html = true

[[profile]]
hosts = 4
duplicates = true

[[profile]]
hosts = 5
robots = "500"
"""

# The default configuration but several workers, and a delay that keeps
# the crawl running long enough to be paused while it runs.
SETTINGS = {"workers.count": 3, "politeness.min_delay_ms": 250}

REPORTS = ["summary", "hosts", "mime", "status", "seeds", "errors", "rules"]


def warc_figures(data):
    """Per host, status and MIME type: the response and revisit records of
    the WARCs, read by crawl_util.read_warc (not crawld's reader)."""
    hosts = collections.Counter()
    statuses = collections.Counter()
    mimes = collections.Counter()
    pages = 0
    for path in sorted(glob.glob(os.path.join(data, "warc", "*.warc.gz"))):
        for rec in crawl_util.read_warc(path):
            h = rec["headers"]
            kind = h.get("warc-type")
            if kind not in ("response", "revisit"):
                continue
            uri = h["warc-target-uri"]
            head = rec["block"].split(b"\r\n\r\n", 1)[0].decode("latin-1")
            lines = head.split("\r\n")
            status = int(lines[0].split(" ")[1])
            mime = "unk"
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-type":
                    mime = value.split(";")[0].strip().lower() or "unk"
                    break
            if kind == "revisit":
                mime = "warc/revisit"  # as the CDXJ index (and pywb) says
            hosts[urlsplit(uri).hostname] += 1
            statuses[status] += 1
            mimes[mime] += 1
            if not uri.endswith("/robots.txt"):
                pages += 1
    return {"hosts": hosts, "statuses": statuses, "mimes": mimes,
            "pages": pages}


def rows(report):
    return report["rows"]


def by(report, key, value):
    return {r[key]: r[value] for r in rows(report)}


def summary_value(report, metric):
    return by(report, "metric", "value")[metric]


def api_get(api, path, headers=None):
    u = urlsplit(api)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type"), resp.read()
    finally:
        conn.close()


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text, newline="")))


class ReportChecks:
    """What both tests check; mixed into a unittest.TestCase."""

    def assert_agrees(self, reports, figures, where):
        """The hosts, status and mime reports against the WARC counts."""
        self.assertEqual(by(reports["hosts"], "host", "captures"),
                         dict(figures["hosts"]), where)
        self.assertEqual(by(reports["status"], "status", "captures"),
                         dict(figures["statuses"]), where)
        self.assertEqual(by(reports["mime"], "mime", "captures"),
                         dict(figures["mimes"]), where)
        s = reports["summary"]
        self.assertEqual(summary_value(s, "captures"),
                         sum(figures["hosts"].values()), where)
        self.assertEqual(summary_value(s, "pages"), figures["pages"], where)
        self.assertEqual(summary_value(s, "hosts"), len(figures["hosts"]),
                         where)

    def check_api_while_paused(self, api, data, min_pages=10):
        """GET /api/reports/{name} (the supervisor's, or a single worker's),
        the crawl paused and nothing in flight, against the WARCs as they
        are at that moment."""
        def some_pages():
            status, _, body = api_get(api, "/api/reports/summary")
            return status == 200 and \
                summary_value(json.loads(body), "pages") >= min_pages

        self.assertTrue(wait_for(some_pages, 60), "no pages in 60 s")
        r = ctl("pause", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)

        def idle():
            s = ctl("status", "--data", data, "--json")
            return s.returncode == 0 and json.loads(s.stdout)["in_flight"] == 0

        self.assertTrue(wait_for(idle, 30), "still fetching 30 s after pause")
        figures = warc_figures(data)
        reports = {}
        for name in ("summary", "hosts", "status", "mime"):
            status, ctype, body = api_get(api, f"/api/reports/{name}")
            self.assertEqual(status, 200, body)
            self.assertTrue(ctype.startswith("application/json"), ctype)
            reports[name] = json.loads(body)
        self.assert_agrees(reports, figures, "the API, paused")
        # CSV, asked for either way.
        for path, headers in (("/api/reports/status?format=csv", {}),
                              ("/api/reports/status",
                               {"Accept": "text/csv"})):
            status, ctype, body = api_get(api, path, headers)
            self.assertEqual(status, 200, body)
            self.assertTrue(ctype.startswith("text/csv"), ctype)
            self.assertTrue(body.startswith(b"status,captures\r\n"), body)
            self.assertEqual(
                {int(r["status"]): int(r["captures"])
                 for r in csv_rows(body.decode())},
                dict(figures["statuses"]))
        status, _, body = api_get(api, "/api/reports/nosuch")
        self.assertEqual(status, 404, body)
        self.assertIn(b"summary, hosts", body)
        status, _, body = api_get(api, "/api/reports/hosts?format=xml")
        self.assertEqual(status, 400, body)
        status, _, body = api_get(api, "/api/reports")
        self.assertEqual(status, 200, body)
        self.assertEqual([r["name"] for r in json.loads(body)["reports"]],
                         REPORTS)
        r = ctl("resume", "--data", data)
        self.assertEqual(r.returncode, 0, r.stderr)

    def check_seeds(self, seeds, port, redirect_seed, lost_seed, figures):
        got = {r["seed"]: r for r in rows(seeds)}
        self.assertEqual(len(got), 8)
        for i in range(5):
            s = got[f"http://h{i}.farm.test:{port}/p/0.html"]
            self.assertTrue(s["fetched"], s)
            self.assertEqual(s["status"], 200, s)
            self.assertEqual(s["host_captures"],
                             figures["hosts"][f"h{i}.farm.test"], s)
        r = got[redirect_seed]
        self.assertTrue(r["fetched"], r)
        self.assertEqual(r["status"], 301, r)
        self.assertEqual(r["redirect_to"],
                         f"http://h2.farm.test:{port}/r/chain/1")
        # robots.txt answers 500: nothing of the host is fetched.
        robots_500 = got[f"http://h5.farm.test:{port}/p/0.html"]
        self.assertFalse(robots_500["fetched"], robots_500)
        self.assertTrue(robots_500["error"].startswith("robots_unavailable"),
                        robots_500)
        # A name that does not resolve: its robots.txt cannot be fetched,
        # so neither can the seed; its host's error says so.
        lost = got[lost_seed]
        self.assertFalse(lost["fetched"], lost)
        self.assertEqual(lost["error"], "robots_unavailable:unreachable", lost)
        self.assertEqual(lost["host_captures"], 0)

    def check_errors_and_rules(self, written, crawl_summary, lost_seed):
        errors = {r["class"]: r for r in rows(written["errors"])}
        self.assertIn("fetch_error:dns", errors)
        self.assertEqual(errors["fetch_error:dns"]["example_url"],
                         lost_seed + "robots.txt")
        self.assertIn("nohost.farm.test",
                      errors["fetch_error:dns"]["example_error"])
        self.assertTrue(any(c.startswith("robots_unavailable")
                            for c in errors), errors)
        self.assertEqual(summary_value(written["summary"], "error_events"),
                         sum(e["count"] for e in errors.values()))
        # The decision counters are the crawl's own (summary.json).
        counters = {r["rule"]: r["hits"] for r in rows(written["rules"])
                    if r["kind"] == "counter"}
        expected = {k: v for k, v in crawl_summary["counts"].items()
                    if k in ("filter_rejected", "max_depth",
                             "nofollow_links", "x_robots_noindex") or
                    k.startswith(("trap_", "robots_", "override_"))}
        self.assertEqual(counters, expected)
        self.assertTrue(any(k.startswith("robots_") for k in counters),
                        counters)


class CrawlReports(ReportChecks, unittest.TestCase):
    """Several worker processes: the supervisor's API serves the reports."""

    def test_reports_agree_with_the_warcs(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-reports-")
            port = farm.port
            redirect_seed = f"http://h2.farm.test:{port}/r/chain/0"
            lost_seed = f"http://nohost.farm.test:{port}/"
            seeds_file = os.path.join(data, "seeds-in.txt")
            with open(seeds_file, "w") as f:
                f.write("\n".join(farm.seeds() + [redirect_seed, lost_seed]))
                f.write("\n")
            config = crawl_util.write_config(dns.server, data, **SETTINGS)
            out = open(os.path.join(data, "stdout.txt"), "w")
            err = open(os.path.join(data, "stderr.txt"), "w")
            crawld = subprocess.Popen(
                [harness.binary("crawld"), "--config", config, "--seeds",
                 seeds_file], stdout=out, stderr=err, text=True)
            out.close()
            err.close()
            try:
                api = wait_admin_url(crawld, data)
                self.check_api_while_paused(api, data)
                try:
                    crawld.wait(timeout=180)
                except subprocess.TimeoutExpired:
                    self.fail("the crawl did not end in 180 s")
            finally:
                harness.stop_process(crawld)
            with open(os.path.join(data, "stderr.txt")) as f:
                stderr = f.read()
            self.assertEqual(crawld.returncode, 0, stderr)
            with open(os.path.join(data, "summary.json")) as f:
                crawl_summary = json.load(f)
            self.assertEqual(crawl_summary["stop_reason"], "done")

            figures = warc_figures(data)
            # Each worker wrote its own WARCs: the reports add them up.
            workers = {os.path.basename(p).split("-")[2] for p in
                       os.listdir(os.path.join(data, "warc"))}
            self.assertGreater(len(workers), 1)
            self.assertGreaterEqual(len(figures["hosts"]), 5)
            self.assertIn(404, figures["statuses"])
            self.assertIn(500, figures["statuses"])
            self.assertIn(301, figures["statuses"])
            self.assertIn("application/pdf", figures["mimes"])
            self.assertIn("warc/revisit", figures["mimes"])

            # The files written at the end, JSON and CSV alike.
            written = {}
            for name in REPORTS:
                base = os.path.join(data, "reports", name)
                with open(base + ".json") as f:
                    written[name] = json.load(f)
                with open(base + ".csv", newline="") as f:
                    as_csv = csv_rows(f.read())
                self.assertEqual(len(as_csv), len(rows(written[name])), name)
                for row_csv, row_json in zip(as_csv, rows(written[name])):
                    self.assertEqual(
                        row_csv,
                        {k: csv_text(v) for k, v in row_json.items()}, name)
            self.assert_agrees(written, figures, "reports/ at the end")

            # crawlctl report over the data directory says the same.
            for name in REPORTS:
                r = ctl("report", name, "--data", data)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["rows"],
                                 rows(written[name]), name)
            r = ctl("report", "hosts", "--data", data, "--csv")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(
                {row["host"]: int(row["captures"])
                 for row in csv_rows(r.stdout)},
                dict(figures["hosts"]))

            self.check_seeds(written["seeds"], port, redirect_seed,
                             lost_seed, figures)
            self.check_errors_and_rules(written, crawl_summary, lost_seed)


SMALL_FARM = """
seed = 19
hosts = 3
pages = 12
page_bytes = 700
links = 3
cross_host_share = 0.2
seeds = "all"

[[profile]]
hosts = 1
errors = ["404"]
"""


class SingleWorker(ReportChecks, unittest.TestCase):
    """One worker process: the worker's own admin API serves the reports,
    and the worker writes the seed list and the reports at the end."""

    def test_reports_agree_with_the_warcs(self):
        with harness.Webfarm(SMALL_FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            crawld, data = crawl_util.start_crawl(
                farm, dns, **{"workers.count": 1,
                              "politeness.min_delay_ms": 250})
            try:
                api = wait_admin_url(crawld, data)
                self.check_api_while_paused(api, data, min_pages=5)
                result = crawl_util.finish_crawl(crawld, data, timeout=120)
            finally:
                harness.stop_process(crawld)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.summary["stop_reason"], "done")
            figures = warc_figures(data)
            written = {}
            for name in REPORTS:
                with open(os.path.join(data, "reports",
                                       name + ".json")) as f:
                    written[name] = json.load(f)
            self.assert_agrees(written, figures, "reports/ at the end")
            seeds = {r["seed"]: r for r in rows(written["seeds"])}
            self.assertEqual(sorted(seeds), sorted(farm.seeds()))
            for r in seeds.values():
                self.assertTrue(r["fetched"], r)
                self.assertEqual(r["status"], 200, r)


def csv_text(value):
    """A JSON cell as the CSV form writes it."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


if __name__ == "__main__":
    unittest.main()
