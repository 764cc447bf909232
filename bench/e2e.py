#!/usr/bin/env python3
"""End-to-end crawl benchmark against the webfarm (after LevelDB's db_bench:
named workloads, one line of figures each).

Runs a Release crawld over a webfarm web with politeness delay 0 across many
hosts and reports pages/s, crawler CPU ms per page (user+sys of the crawld
process, from wait4), peak RSS, and the floor: Gumbo's bare parse CPU per
page over the same pages (bench/gumbo_floor on the crawl's WARCs).

usage: bench/e2e.py [--build build/bench] [--workload small|medium|large]...
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

WORKLOADS = {
    # name: (hosts, pages per host, page bytes, links per page)
    "smoke": (20, 50, 8000, 10),
    "small": (200, 100, 16000, 20),     # 20,000 pages
    "medium": (1000, 100, 16000, 20),   # 100,000 pages
    "large": (10000, 100, 8000, 10),    # 1,000,000 pages
}


def run(workload, build, keep, settings=None):
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(build)
    import crawl_util
    import harness

    hosts, pages, page_bytes, links = WORKLOADS[workload]
    farm_cfg = f"""
seed = 3
hosts = {hosts}
pages = {pages}
page_bytes = {page_bytes}
links = {links}
cross_host_share = 0.3
relative_share = 0.5
ips = 64
seeds = "all"
"""
    data = tempfile.mkdtemp(prefix=f"crawld-bench-{workload}-")
    try:
        with harness.Webfarm(farm_cfg, max_seconds=7200) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            config = os.path.join(data, "bench.toml")
            with open(config, "w") as f:
                f.write(crawl_util.crawl_config(
                    dns.server, data,
                    **{"politeness.min_delay_ms": 0,
                       "politeness.delay_factor": 0.0,
                       "fetch.max_connections": 128,
                       "crawl.progress_interval_s": 10.0,
                       **(settings or {})}))
            cmd = [harness.binary("crawld"), "--config", config,
                   "--seeds", farm.seeds_file]
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - t0
            out = proc.stdout.read()
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                print(out)
                raise SystemExit(f"crawld exited with {proc.returncode}")
            result = crawl_util.CrawlResult(
                subprocess.CompletedProcess(cmd, 0, out, ""), data)
            fetched = result.summary["pages"]
            print("counts:", result.summary["counts"])
            cpu = usage.ru_utime + usage.ru_stime
            floor = subprocess.run(
                [os.path.join(build, "bench", "gumbo_floor"),
                 *result.warc_files()],
                capture_output=True, text=True, check=True).stdout.split()
            floor_ms = float(floor[0])
            cpu_ms = cpu * 1000 / max(1, fetched)
            print(f"{workload:8s} pages {fetched:8d}  manifest "
                  f"{len(farm.manifest()):8d}  wall {wall:7.1f} s  "
                  f"{fetched / wall:8.0f} pages/s  crawler CPU "
                  f"{cpu_ms:.3f} ms/page  peak RSS {usage.ru_maxrss / 1024:.0f} MB"
                  f"  gumbo floor {floor_ms:.3f} ms/page  "
                  f"ratio {cpu_ms / floor_ms:.2f}x")
    finally:
        if not keep:
            shutil.rmtree(data, ignore_errors=True)
        else:
            print(f"data kept in {data}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/bench")
    ap.add_argument("--workload", action="append", choices=sorted(WORKLOADS))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override, e.g. store.gzip_level=1 "
                         "(TOML value: true, 3, 0.5, \"text\")")
    args = ap.parse_args()
    settings = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        settings[key] = json.loads(value)
    for w in args.workload or ["small"]:
        run(w, args.build, args.keep, settings)


if __name__ == "__main__":
    main()
