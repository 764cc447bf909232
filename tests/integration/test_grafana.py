"""The Grafana dashboard conf/grafana/crawld.json (issue 18).

- DashboardSchema: the JSON has what Grafana needs to import it (uid,
  title, schemaVersion, templating, panels with unique ids, gridPos on the
  24-column grid without overlaps, targets with refIds and PromQL), every
  $variable a query uses is defined, and the "errors" regex agrees with
  the classes crawld's progress line counts as errors (IsErrorCount,
  daemon/progress.cc).
- DashboardMetrics: every metric name a query names (panels and template
  variables) is a sample name in GET /metrics of a live crawl of the
  webfarm (two workers, a rules file, an overrides file), and every label
  a query matches on or groups by is on that metric (or is a label
  Prometheus adds itself: job, instance); equality matchers name values
  that occur; and every metric in /metrics is on some panel.

- DashboardInPrometheus: a real Prometheus server (Debian's prometheus
  package) scrapes a live crawl every second; every panel query, with
  $__rate_interval = 10s and the variables at "All", succeeds and returns
  at least one series, and every template variable lists values. Skipped
  (exit 77 when run as a script, which ctest reports as skipped) when
  /usr/bin/prometheus is not installed.

What it does not prove: that Grafana renders the panels (no Grafana here).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import crawl_util
import harness
from test_progress import parse_exposition

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "conf", "grafana", "crawld.json")

# Labels the Prometheus server attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}
# Grafana's built-in variables that may appear in a query.
BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "__all"}

PANEL_TYPES = {"row", "timeseries", "stat", "bargauge", "gauge", "table",
               "state-timeline", "text", "heatmap"}

# PromQL words that are not metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "and", "or", "unless", "offset"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
FUNCTIONS = {"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar",
             "topk", "bottomk", "quantile", "count_values", "rate", "irate",
             "increase", "delta", "idelta", "deriv", "histogram_quantile",
             "vector", "scalar", "abs", "clamp_min", "clamp_max", "resets",
             "changes", "max_over_time", "min_over_time", "avg_over_time",
             "sum_over_time", "last_over_time", "time", "timestamp",
             "label_replace", "label_join", "absent", "sort", "sort_desc",
             "round", "ceil", "floor", "label_values", "query_result"}

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)
  | (?P<number>[0-9][0-9A-Za-z.]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=(){}\[\],])
""", re.X)


def tokens(expr):
    pos = 0
    out = []
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot tokenize {expr[pos:]!r} in {expr!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


def analyze(expr):
    """Returns (metrics, matchers, grouping, variables) of a PromQL
    expression: metric names; (metric, label, op, value) per label
    matcher; label names of by/without/on/ignoring clauses; $variables.
    Raises ValueError on an unknown function or an unbalanced expression."""
    toks = tokens(expr)
    metrics, matchers, grouping = [], [], set()
    # Grafana substitutes variables in strings too ({worker=~"$worker"}).
    variables = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expr))
    i = 0
    depth = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "ident" and text in GROUPING and nxt == "(":
            j = i + 2
            while j < len(toks) and toks[j][1] != ")":
                if toks[j][0] == "ident":
                    grouping.add(toks[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "ident" and (nxt == "(" or nxt in GROUPING):
            if text not in FUNCTIONS:
                raise ValueError(f"unknown function {text!r} in {expr!r}")
        elif kind == "ident" and text not in KEYWORDS:
            metrics.append(text)
            if nxt == "{":
                j = i + 2
                while j < len(toks) and toks[j][1] != "}":
                    if toks[j][1] == ",":
                        j += 1
                        continue
                    label, op, value = toks[j:j + 3]
                    if label[0] != "ident" or op[0] != "op" or \
                            value[0] != "string":
                        raise ValueError(f"bad matcher in {expr!r}")
                    matchers.append((text, label[1], op[1],
                                     json.loads(value[1])))
                    j += 3
                if j >= len(toks):
                    raise ValueError(f"unclosed selector in {expr!r}")
                i = j + 1
                continue
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced {expr!r}")
        i += 1
    if depth != 0:
        raise ValueError(f"unbalanced {expr!r}")
    return metrics, matchers, grouping, variables


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def queries(dash):
    """(where, expr) of every PromQL query: panel targets and template
    variable queries (label_values(...) unwrapped)."""
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel {p['id']} {p['title']!r} {t['refId']}",
                        t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)", q)
        assert m, f"variable {v['name']}: expected label_values(...): {q}"
        # The same check as a panel query: the metric exists and has the
        # label (grouping labels are checked like any other).
        out.append((f"variable {v['name']}",
                    f"sum by ({m.group(2)}) ({m.group(1)})"))
    return out


def worker_error_classes():
    """The names in IsErrorCount's kErrors (in daemon/, progress.cc today):
    what the progress line adds up as "errors"."""
    for path in sorted(glob.glob(os.path.join(ROOT, "daemon", "*.cc"))):
        with open(path) as f:
            src = f.read()
        m = re.search(r"bool IsErrorCount\(.*?kErrors\[\]\s*=\s*\{(.*?)\};",
                      src, re.S)
        if m:
            body = re.sub(r"//[^\n]*", "", m.group(1))
            return set(re.findall(r'"([a-z0-9_]+)"', body))
    raise AssertionError("daemon/*.cc: IsErrorCount's kErrors list not "
                         "found; update this test and the dashboard")


class DashboardSchema(unittest.TestCase):

    def setUp(self):
        self.dash = load_dashboard()

    def test_promql_reader(self):
        # The checker below is only as good as this reader.
        metrics, matchers, grouping, variables = analyze(
            'sum by (state) (rate(crawld_x_total{a="b",c=~"$v"}[5m])) / '
            'sum without (le) (crawld_y) or vector(0)')
        self.assertEqual(metrics, ["crawld_x_total", "crawld_y"])
        self.assertEqual(matchers, [("crawld_x_total", "a", "=", "b"),
                                    ("crawld_x_total", "c", "=~", "$v")])
        self.assertEqual(grouping, {"state", "le"})
        self.assertEqual(variables, {"v"})
        with self.assertRaises(ValueError):
            analyze("sum(rte(crawld_x_total[5m]))")
        with self.assertRaises(ValueError):
            analyze("sum(rate(crawld_x_total[5m])")

    def test_top_level_fields(self):
        d = self.dash
        self.assertRegex(d["uid"], r"^[A-Za-z0-9_-]{1,40}$")
        self.assertIsInstance(d["title"], str)
        self.assertTrue(d["title"])
        self.assertIsInstance(d["schemaVersion"], int)
        self.assertGreaterEqual(d["schemaVersion"], 36)  # Grafana 9+
        self.assertIsInstance(d["panels"], list)
        self.assertIn("from", d["time"])
        self.assertIn("to", d["time"])
        self.assertIsInstance(d["templating"]["list"], list)
        # A dashboard file that still carries an instance id (exported
        # with "id": N) would overwrite another dashboard on import.
        self.assertIsNone(d.get("id"))

    def test_panels_have_ids_gridpos_and_targets(self):
        ids = set()
        cells = {}
        for p in self.dash["panels"]:
            where = f"panel {p.get('id')} {p.get('title')!r}"
            self.assertIsInstance(p["id"], int, where)
            self.assertNotIn(p["id"], ids, f"{where}: duplicate id")
            ids.add(p["id"])
            self.assertIn(p["type"], PANEL_TYPES, where)
            self.assertTrue(p["title"], where)
            g = p["gridPos"]
            for k in ("h", "w", "x", "y"):
                self.assertIsInstance(g[k], int, f"{where}: gridPos.{k}")
            self.assertGreaterEqual(g["x"], 0, where)
            self.assertGreaterEqual(g["w"], 1, where)
            self.assertGreaterEqual(g["h"], 1, where)
            self.assertLessEqual(g["x"] + g["w"], 24, f"{where}: past column 24")
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells,
                                     f"{where} overlaps {cells.get((x, y))}")
                    cells[(x, y)] = where
            if p["type"] == "row":
                self.assertNotIn("targets", p, where)
                continue
            self.assertEqual(p["datasource"]["type"], "prometheus", where)
            self.assertTrue(p["targets"], f"{where}: no targets")
            refs = [t["refId"] for t in p["targets"]]
            self.assertEqual(len(refs), len(set(refs)), f"{where}: refIds")
            for t in p["targets"]:
                self.assertTrue(t["expr"].strip(), where)
                self.assertEqual(t["datasource"]["type"], "prometheus", where)

    def test_queries_parse_and_use_defined_variables(self):
        defined = {v["name"] for v in self.dash["templating"]["list"]}
        self.assertIn("datasource", defined)
        for where, expr in queries(self.dash):
            metrics, _, _, variables = analyze(expr)
            self.assertTrue(metrics, f"{where}: names no metric: {expr}")
            self.assertEqual(variables - defined - BUILTIN_VARS, set(),
                             f"{where}: undefined variable in {expr}")
        # Panels reach Prometheus through the datasource variable, so the
        # file imports into any Grafana whatever its datasource's uid.
        for p in self.dash["panels"]:
            if p["type"] != "row":
                self.assertEqual(p["datasource"]["uid"], "${datasource}")

    def test_covers_what_an_operator_watches(self):
        exprs = " ".join(e for _, e in queries(self.dash))
        for name in ("crawld_pages_fetched_total",
                     "crawld_bytes_received_total", "crawld_queued_urls",
                     "crawld_hosts", "crawld_in_flight_requests",
                     "crawld_fetch_duration_seconds_bucket",
                     "crawld_events_total", "crawld_connections_opened_total",
                     "crawld_connections_not_kept_total",
                     "crawld_robots_fetches_total", "crawld_filter_rule_hits",
                     "crawld_override_hits", "crawld_paused",
                     "crawld_worker_up", "crawld_worker_restarts_total",
                     "crawld_worker_scrape_ok", "crawld_workers_up"):
            self.assertIn(name, exprs)
        self.assertIn("by (instance, worker)", exprs)

    def test_error_regex_matches_the_progress_line(self):
        want = worker_error_classes()
        self.assertGreater(len(want), 5)
        found = set()
        for where, expr in queries(self.dash):
            for metric, label, op, value in analyze(expr)[1]:
                if metric == "crawld_events_total" and label == "event":
                    classes = set(value.split("|"))
                    self.assertEqual(
                        classes, want,
                        f"{where}: the dashboard's error classes differ from "
                        f"IsErrorCount in daemon/progress.cc; update "
                        f"conf/grafana/crawld.json")
                    found.add(op)
        # Errors (=~) and everything else (!~) are both shown.
        self.assertEqual(found, {"=~", "!~"})


FARM = """
seed = 7
hosts = 6
pages = 25
page_bytes = 1500
links = 5
cross_host_share = 0.3
relative_share = 0.5
ips = 3
seeds = "all"
[[profile]]
hosts = 1
errors = ["404", "500"]
[[profile]]
hosts = [2]
robots = "disallow"
"""


def start_crawl(test, farm, dns, data, min_delay_ms, **overrides):
    """A two-worker crawl with a rules file and an overrides file (so that
    every family of the dashboard is exposed); returns (Popen, admin base
    URL) once the admin API is up."""
    os.makedirs(data, exist_ok=True)
    rules = os.path.join(data, "rules.txt")
    with open(rules, "w") as f:
        f.write("reject regex /never/\ndefault accept\n")
    overrides_file = os.path.join(data, "overrides.conf")
    with open(overrides_file, "w") as f:
        f.write("h3.farm.test delay-ms 100\n")
    proc, _ = crawl_util.start_crawl(
        farm, dns, data_dir=data,
        **{"workers.count": 2, "crawl.rules_file": rules,
           "politeness.overrides_file": overrides_file,
           "politeness.min_delay_ms": min_delay_ms, **overrides})
    url_file = os.path.join(data, "run", "admin.url")
    deadline = time.monotonic() + 30
    while not os.path.exists(url_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            harness.stop_process(proc)
            test.fail("crawld wrote no admin.url")
        time.sleep(0.05)
    with open(url_file) as f:
        return proc, f.read().strip()


class DashboardMetrics(unittest.TestCase):

    def scrape_live_crawl(self):
        """Union of the samples of a few /metrics scrapes of a running
        two-worker crawl with a rules file and an overrides file."""
        with harness.Webfarm(FARM, max_seconds=300) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=300) as dns:
            data = tempfile.mkdtemp(prefix="crawld-grafana-")
            proc, base = start_crawl(self, farm, dns, data, 100)
            samples = {}
            try:
                # Scrape until pages and events have shown up (bounded).
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    with urllib.request.urlopen(base + "/metrics",
                                                timeout=10) as r:
                        s, _ = parse_exposition(r.read().decode())
                    samples.update(s)
                    names = {n for n, _ in samples}
                    if {"crawld_events_total",
                        "crawld_fetch_duration_seconds_bucket"} <= names and \
                            any(n == "crawld_pages_fetched_total" and v > 20
                                for (n, _), v in s.items()):
                        break
                    time.sleep(0.5)
            finally:
                harness.stop_process(proc)
        return samples

    def test_every_metric_and_label_a_query_names_exists(self):
        dash = load_dashboard()
        samples = self.scrape_live_crawl()
        labels_of = {}
        values_of = {}
        for name, labels in samples:
            labels_of.setdefault(name, set()).update(k for k, _ in labels)
            for k, v in labels:
                values_of.setdefault((name, k), set()).add(v)
        self.assertIn("crawld_pages_fetched_total", labels_of)
        checked = set()
        for where, expr in queries(dash):
            metrics, matchers, grouping, _ = analyze(expr)
            for m in metrics:
                self.assertIn(m, labels_of,
                              f"{where}: {m} is not in /metrics: {expr}")
                checked.add(m)
            for metric, label, op, value in matchers:
                if label in TARGET_LABELS:
                    continue
                self.assertIn(label, labels_of[metric],
                              f"{where}: {metric} has no label {label}")
                if op == "=" and "$" not in value:
                    self.assertIn(value, values_of[(metric, label)],
                                  f"{where}: {metric}{{{label}={value!r}}}")
            have = set(TARGET_LABELS)
            for m in metrics:
                have |= labels_of[m]
            self.assertEqual(grouping - have, set(),
                             f"{where}: groups by a label no metric has")
        self.assertGreaterEqual(len(checked), 15, sorted(checked))
        # And the other way round: every series crawld exposes is on a
        # panel, so that a new metric does not go unseen.
        self.assertEqual(set(labels_of) - checked, set(),
                         "metrics in /metrics that no panel shows; add them "
                         "to conf/grafana/crawld.json")


PROMETHEUS = "/usr/bin/prometheus"


class DashboardInPrometheus(unittest.TestCase):
    """Every query of the dashboard, evaluated by a real Prometheus that
    scrapes a live crawl."""

    RATE_INTERVAL = "10s"

    def setUp(self):
        if not os.access(PROMETHEUS, os.X_OK):
            self.skipTest(f"{PROMETHEUS} is not installed (Debian package "
                          f"prometheus): the dashboard's queries are not "
                          f"evaluated")

    def api(self, port, path, **params):
        url = f"http://127.0.0.1:{port}/api/v1/{path}?" + \
            urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                reply = json.load(r)
        except urllib.error.HTTPError as e:  # e.g. 400 for bad PromQL
            self.fail(f"Prometheus refused {params}: {e.read()[:500]!r}")
        self.assertEqual(reply["status"], "success", reply)
        return reply["data"]

    def expand(self, expr):
        """Grafana's substitution with every variable at "All" (.*)."""
        expr = expr.replace("$__rate_interval", self.RATE_INTERVAL)
        return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", expr)

    def test_every_query_returns_data(self):
        dash = load_dashboard()
        admin_port = harness.free_port()
        prom_port = harness.free_port()
        work = tempfile.mkdtemp(prefix="crawld-prometheus-")
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "scrape_configs:\n  - job_name: crawld\n"
                    "    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{admin_port}']\n")
        with harness.Webfarm(FARM, max_seconds=300) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=300) as dns:
            # Prometheus has no lifetime bound of its own: `timeout` gives
            # it one, so a crashed test never leaves it running.
            log = open(os.path.join(work, "prometheus.log"), "w")
            prom = subprocess.Popen(
                [shutil.which("timeout") or "/usr/bin/timeout",
                 "--signal=TERM", "--kill-after=5", "300", PROMETHEUS,
                 f"--config.file={work}/prometheus.yml",
                 f"--storage.tsdb.path={work}/tsdb",
                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                stdout=log, stderr=log)
            log.close()
            proc = None
            try:
                # min_delay_ms = 1000: 25 pages a host keep the crawl (and
                # its /metrics) up for more than 25 s.
                proc, _ = start_crawl(self, farm, dns,
                                      os.path.join(work, "data"), 1000,
                                      **{"admin.port": admin_port})
                # Until every query has data (rate() needs two scrapes in
                # its window, an error class its first error), bounded.
                deadline = time.monotonic() + 40
                while True:
                    empty = self.empty_queries(dash, prom_port)
                    if not empty or time.monotonic() > deadline:
                        break
                    time.sleep(1)
                self.assertIsNone(proc.poll(), "the crawl ended too soon")
            finally:
                harness.stop_process(proc)
                harness.stop_process(prom)
        self.assertEqual(empty, [], "queries without data")

    def empty_queries(self, dash, port):
        """Panel queries and template variables that return nothing (or
        that Prometheus refuses: the test fails at once)."""
        empty = []
        for p in dash["panels"]:
            for t in p.get("targets", []):
                expr = self.expand(t["expr"])
                try:
                    data = self.api(port, "query", query=expr)
                except OSError:
                    data = {"result": []}  # not listening yet
                if not data["result"]:
                    empty.append(f"panel {p['id']} {p['title']!r} "
                                 f"{t['refId']}: {expr}")
        for v in dash["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)",
                             v["query"]["query"])
            try:
                values = self.api(port, f"label/{m.group(2)}/values",
                                  **{"match[]": self.expand(m.group(1))})
            except OSError:
                values = []
            if not values:
                empty.append(f"variable {v['name']}")
        return empty


if __name__ == "__main__":
    # As a script (ctest): exit 77, "skipped", when every test skipped.
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped and
             result.testsRun <= len(result.skipped) else 0)
