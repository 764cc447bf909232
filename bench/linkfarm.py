#!/usr/bin/env python3
"""Link-farm trap benchmark for AOPIC credit scheduling (issue 5, "Traps").

Runs a Release crawld over a webfarm web of normal interlinked hosts plus a
link farm: spam hosts that link densely among themselves and generate URLs
without end, reached by one link from one normal page (docs/WEBFARM.md,
"Link farm"). Connections are limited, and the politeness delay is 0, so
the scheduler always has many ready hosts to choose from. The same web is
crawled with frontier.credit_scheduling on, then off.

Everything is judged from the webfarm's request log (the server's side,
never the crawler's claims), in the order the server took requests up:
  fetches       every logged request of the run (robots.txt included)
  until         requests up to and including the first fetch of the normal
                manifest URL fetched last
  farm until    of those, requests to link-farm hosts
  share         farm until / until (issue 5 wants < 15% with credit on)
  normal done   seconds from the first request to the end of that fetch
The crawl is stopped (SIGTERM, by PID) once every manifest URL is in the
log; crawl.max_pages and crawl.max_duration_s only bound an endless web.

usage: bench/linkfarm.py [--build build-rel] [--normal-hosts 50]
                         [--spam-hosts 100] [--connections 16] ...
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))


def farm_config(a):
    hosts = a.normal_hosts + a.spam_hosts
    return f"""
seed = {a.seed}
hosts = {hosts}
pages = {a.pages}
page_bytes = {a.page_bytes}
links = {a.links}
cross_host_share = 0.3
relative_share = 0.5
ips = {min(hosts, 62500)}
seeds = "all"

[[profile]]
hosts = "{a.normal_hosts}-{hosts - 1}"
link_farm = true
link_farm_links = {a.spam_links}

[[profile]]
hosts = 0
link_farm_entry = {a.entry_page}
"""


class LogTail:
    """Reads requests.jsonl incrementally (complete lines only), so polling
    a long run stays linear."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.partial = b""
        self.reqs = []

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return self.reqs
        self.pos += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        self.reqs.extend(json.loads(l) for l in lines if l)
        return self.reqs


def start_dns(harness, hosts_file, max_seconds):
    """A started harness.Dnsmasq. dnsmasq also binds TCP on its port, and a
    long crawl (or a neighbour's) leaves tens of thousands of loopback
    ports in TIME-WAIT, so a port the harness found free for UDP is often
    taken for TCP: try more often than the harness does."""
    for attempt in range(20):
        dns = harness.Dnsmasq(hosts_file, max_seconds=max_seconds)
        try:
            return dns.__enter__()
        except RuntimeError:
            if attempt == 19:
                raise
            time.sleep(0.5)


def run(a, credit, settings):
    import crawl_util
    import harness

    data = tempfile.mkdtemp(prefix="crawld-bench-linkfarm-")
    dns = None
    try:
        with harness.Webfarm(farm_config(a),
                             max_seconds=a.max_seconds + 60) as farm:
            dns = start_dns(harness, farm.hosts_file, a.max_seconds + 60)
            manifest = farm.manifest()
            want = set(manifest)
            spam = farm.link_farm_hosts()
            config = os.path.join(data, "bench.toml")
            with open(config, "w") as f:
                f.write(crawl_util.crawl_config(
                    dns.server, data,
                    **{"politeness.min_delay_ms": 0,
                       "politeness.delay_factor": 0.0,
                       "fetch.max_connections": a.connections,
                       "frontier.credit_scheduling": credit,
                       "crawl.max_pages": a.max_pages_factor * len(manifest),
                       "crawl.max_duration_s": float(a.max_seconds),
                       "crawl.progress_interval_s": 10.0,
                       **settings}))
            cmd = [harness.binary("crawld"), "--config", config,
                   "--seeds", farm.seeds_file]
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            tail = LogTail(farm.log_file)
            done, looked = False, 0
            try:
                while proc.poll() is None:
                    time.sleep(0.5)
                    reqs = tail.read()
                    want -= {f"http://{r['host']}:{farm.port}{r['path']}"
                             for r in reqs[looked:]}
                    looked = len(reqs)
                    if not want:
                        done = True
                        break
            finally:
                code = harness.stop_process(proc)
            wall = time.monotonic() - t0
            reqs = farm.final_requests()
            r = harness.link_farm_report(reqs, farm.port, manifest, spam)
            r.update(credit=credit, wall=wall, exit=code, stopped=done,
                     manifest=len(manifest))
            return r
    finally:
        if dns is not None:
            dns.__exit__(None, None, None)
        shutil.rmtree(data, ignore_errors=True)


def line(r):
    on = "on " if r["credit"] else "off"
    if r["missing"]:
        return (f"credit {on}  fetches {r['total']:6d}  farm {r['farm']:6d}  "
                f"normal URLs never fetched {len(r['missing'])} of "
                f"{r['manifest']} (crawl bound reached): "
                + " ".join(r["missing"][:5]))
    return (f"credit {on}  fetches {r['total']:6d}  until {r['until']:6d}  "
            f"farm until {r['farm_until']:6d}  share "
            f"{100 * r['share']:5.1f}%  normal done "
            f"{r['normal_done_s']:6.1f} s  "
            f"({r['until'] / r['normal_done_s']:.0f} fetches/s)")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--normal-hosts", type=int, default=50)
    ap.add_argument("--spam-hosts", type=int, default=100)
    ap.add_argument("--pages", type=int, default=100,
                    help="pages per normal host")
    ap.add_argument("--page-bytes", type=int, default=4000)
    ap.add_argument("--links", type=int, default=10,
                    help="links per normal page")
    ap.add_argument("--spam-links", type=int, default=20,
                    help="links per spam page")
    ap.add_argument("--entry-page", type=int, default=0,
                    help="page of host 0 that links into the farm")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--max-seconds", type=int, default=900,
                    help="bound of each crawl")
    ap.add_argument("--max-pages-factor", type=int, default=10,
                    help="bound of each crawl: crawl.max_pages = this x "
                         "the normal manifest")
    ap.add_argument("--only", choices=("on", "off"),
                    help="run one mode only")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a crawld config override, e.g. frontier.tax=0.2")
    args = ap.parse_args()
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(args.build)
    settings = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        settings[key] = json.loads(value)
    print(f"linkfarm: {args.normal_hosts} normal hosts x {args.pages} pages, "
          f"{args.spam_hosts} spam hosts x {args.spam_links} links/page, "
          f"entry h0/p/{args.entry_page}.html, max_connections "
          f"{args.connections}, seed {args.seed}", flush=True)
    modes = {"on": [True], "off": [False], None: [True, False]}[args.only]
    for credit in modes:
        print(line(run(args, credit, settings)), flush=True)


if __name__ == "__main__":
    main()
