#!/usr/bin/env python3
"""What per-IP politeness across workers and nodes costs (issue 14, part 1;
docs/CLUSTER.md, "Per-IP politeness across workers and nodes").

Crawls one webfarm web with politeness.per_ip on, then off, with 4 worker
processes on one node and with 2 nodes x 2 workers over a real
redis-server, all in one run on this machine. Two webs:

  shared   H hosts x P pages on A addresses (default 200 x 5 on 8), every
           response --first-byte-ms late (a server's think time), and
           --ip-min-delay-ms between two requests to one address: the rule
           itself serializes each address, so "on" costs what the rule
           demands. "floor" is what the rule allows at best: requests per
           address x (first byte + gap).
  own      H hosts x 4P pages, each host on its own address, no delay, no
           think time: the rule never makes anyone wait, so "on" costs
           only the mechanism (the table of address slots, and the Redis
           leases in the cluster), at full speed.

Judged from the webfarm's request log (the server's side): pages/s is the
manifest size over the span from the first request's start to the last
response's end; the log also gives the largest number of requests in flight
on one address and the smallest gap between two on one address. Each row is
the median of --repeat runs (by span).

usage: bench/ip_politeness.py [--build build/rel] [--hosts 200] [--ips 8]
                              [--pages 5] [--first-byte-ms 10]
                              [--ip-min-delay-ms 40] [--webs shared,own]
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import crawl_util  # noqa: E402
import harness  # noqa: E402
import redis_util  # noqa: E402


def farm_config(a, web):
    shared = web == "shared"
    ips = a.ips if shared else a.hosts
    pages = a.pages if shared else 4 * a.pages
    first_byte_ms = a.first_byte_ms if shared else 0
    return f"""
seed = 14
hosts = {a.hosts}
pages = {pages}
page_bytes = 800
links = 4
cross_host_share = 0.3
relative_share = 0.5
ips = {ips}
seeds = "all"

[[profile]]
hosts = "0-{a.hosts - 1}"
first_byte_ms = {first_byte_ms}
"""


def settings(a, per_ip, workers):
    return {
        "workers.count": workers,
        "politeness.per_ip": per_ip,
        "politeness.ip_min_delay_ms": a.web_ip_delay_ms,
        "politeness.min_delay_ms": 0,
        "politeness.delay_factor": 0.0,
        "fetch.max_connections": 32,
    }


def median_run(a, web, run, per_ip):
    out = []
    for _ in range(a.repeat):
        with harness.Webfarm(farm_config(a, web)) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            run(farm, dns, a, per_ip)
            out.append(judge(farm))
        time.sleep(1)
    out.sort(key=lambda j: j["span_s"])
    j = out[len(out) // 2]
    j["max_in_flight_per_ip"] = max(x["max_in_flight_per_ip"] for x in out)
    gaps = [x["min_gap_ms"] for x in out if x["min_gap_ms"] is not None]
    j["min_gap_ms"] = min(gaps) if gaps else None
    j["missing"] = max(x["missing"] for x in out)
    return j


def run_one_node(farm, dns, a, per_ip):
    data = tempfile.mkdtemp(prefix="crawld-ipbench-")
    result = crawl_util.run_crawl(farm, dns, timeout=900, data_dir=data,
                                  **settings(a, per_ip, 4))
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-2000:])
    return data


def run_two_nodes(farm, dns, a, per_ip):
    base = tempfile.mkdtemp(prefix="crawld-ipbench-")
    with redis_util.RedisServer(persistent=False) as redis:
        procs = []
        for node in range(2):
            data = os.path.join(base, f"node-{node}")
            os.makedirs(data)
            cfg = crawl_util.write_config(dns.server, data,
                                          **settings(a, per_ip, 2))
            procs.append(subprocess.Popen(
                [harness.binary("crawld"), "--config", cfg, "--seeds",
                 farm.seeds_file, "--cluster", redis.url, "--node-id",
                 str(node), "--nodes", "2", "--quiet"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        try:
            for p in procs:
                if p.wait(timeout=900) != 0:
                    raise RuntimeError(f"node exited with {p.returncode}")
        finally:
            for p in procs:
                harness.stop_process(p)
    return base


def judge(farm):
    reqs = farm.final_requests()
    manifest = set(farm.manifest())
    got = {f"http://{r['host']}:{farm.port}{r['path']}" for r in reqs
           if r["method"] == "GET"}
    missing = len(manifest - got)
    span = (max(r["end_us"] for r in reqs) -
            min(r["start_us"] for r in reqs)) / 1e6
    per_ip = harness.max_in_flight_per_ip(reqs)
    by_ip = {}
    for r in reqs:
        by_ip.setdefault(r["ip"], []).append(r)
    min_gap = None
    for rs in by_ip.values():
        rs.sort(key=lambda r: r["start_us"])
        for x, y in zip(rs, rs[1:]):
            g = y["start_us"] - x["end_us"]
            min_gap = g if min_gap is None else min(min_gap, g)
    return {"pages": len(manifest), "requests": len(reqs), "missing": missing,
            "span_s": span, "pages_per_s": len(manifest) / span,
            "max_in_flight_per_ip": max(per_ip.values()),
            "min_gap_ms": None if min_gap is None else min_gap / 1000}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build", "rel"))
    p.add_argument("--hosts", type=int, default=200)
    p.add_argument("--ips", type=int, default=8)
    p.add_argument("--pages", type=int, default=5)
    p.add_argument("--first-byte-ms", type=int, default=10)
    p.add_argument("--ip-min-delay-ms", type=int, default=40)
    p.add_argument("--webs", default="shared,own")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(a.build)
    print(f"# {platform.node()} {os.cpu_count()} cpus, load "
          f"{os.getloadavg()[0]:.2f}; {a.hosts} hosts x {a.pages} pages, "
          f"first_byte_ms {a.first_byte_ms}, ip_min_delay_ms "
          f"{a.ip_min_delay_ms}; build {a.build}")
    print(f"{'web':<7} {'shape':<12} {'per_ip':<6} {'pages':>6} "
          f"{'span s':>7} {'pages/s':>8} {'floor s':>7} {'max/ip':>6} "
          f"{'min gap ms':>10} {'missing':>7}")
    for web in a.webs.split(","):
        a.web_ip_delay_ms = a.ip_min_delay_ms if web == "shared" else 0
        for shape, run in (("4 workers", run_one_node),
                           ("2 x 2 nodes", run_two_nodes)):
            for per_ip in (True, False):
                j = median_run(a, web, run, per_ip)
                floor = "-"
                if web == "shared" and per_ip:
                    per_address = j["requests"] / a.ips
                    step_ms = a.first_byte_ms + a.ip_min_delay_ms
                    floor = f"{per_address * step_ms / 1000:.2f}"
                gap = ("-" if j["min_gap_ms"] is None
                       else f"{j['min_gap_ms']:.1f}")
                print(f"{web:<7} {shape:<12} {'on' if per_ip else 'off':<6} "
                      f"{j['pages']:>6} {j['span_s']:>7.2f} "
                      f"{j['pages_per_s']:>8.1f} {floor:>7} "
                      f"{j['max_in_flight_per_ip']:>6} {gap:>10} "
                      f"{j['missing']:>7}", flush=True)


if __name__ == "__main__":
    main()
