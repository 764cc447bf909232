#!/usr/bin/env python3
"""End-to-end crawl benchmark against the webfarm (after LevelDB's db_bench:
named workloads, one line of figures each).

Runs a Release crawld over a webfarm web with politeness delay 0 across many
hosts and reports pages/s, crawler CPU ms per page (user+sys of the crawld
process, from wait4), peak RSS, and the floor: Gumbo's bare parse CPU per
page over the same pages (bench/gumbo_floor on the crawl's WARCs: the
fastest of three passes over the first 20,000 pages).

It also reports whether the crawl keeps its speed (issue 5, "scale"): the
pages are the successful page responses in the webfarm's request log (the
server's side, never the crawler's claims), ordered by the time their last
byte left the server. The crawl's time line is cut into ten deciles of pages
(the first starts with the first request the server saw) and each gets its
pages/s, plus the crawler's CPU per page, its RSS and the machine's load
average over it, sampled from /proc every second: on a shared machine a
slow decile is either the crawler's doing (more CPU per page) or the
neighbours' (same CPU per page, higher load).

usage: bench/e2e.py [--build build/bench] [--workload small|medium|large]...
                   [--web hosts=2000 --web pages=10 ...] [--set KEY=VALUE]...
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

WORKLOADS = {
    # name: (hosts, pages per host, page bytes, links per page)
    "smoke": (20, 50, 8000, 10),
    "small": (200, 100, 16000, 20),     # 20,000 pages
    "small8k": (200, 100, 8000, 10),    # 20,000 smaller pages
    "medium": (1000, 100, 16000, 20),   # 100,000 pages
    "large": (10000, 100, 8000, 10),    # 1,000,000 pages
}


# The sampler's period: short enough to resolve a decile of the small
# workload (about 3 s), long enough to cost the crawl nothing measurable.
SAMPLE_PERIOD_S = 1.0
# gumbo_floor holds every page in memory: above this many bytes of WARC
# files it parses only the first files (8 GB of pages in the large web).
FLOOR_MAX_WARC_BYTES = 400 << 20
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree_usage(root):
    """(CPU seconds, RSS bytes) of process `root` and its descendants, from
    /proc; CPU includes reaped children (cutime, cstime). None once gone."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/statm") as f:
                rss = int(f.read().split()[1]) * _PAGE
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after it.
        fields = stat[stat.rindex(")") + 2:].split()
        procs[int(name)] = (int(fields[1]),
                            sum(int(x) for x in fields[11:15]) / _TICK, rss)
    if root not in procs:
        return None
    tree, todo = {root}, [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, _, _) in procs.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                todo.append(pid)
    return (sum(procs[p][1] for p in tree), sum(procs[p][2] for p in tree))


class Sampler(threading.Thread):
    """Samples the crawler's CPU and RSS and the load average every
    SAMPLE_PERIOD_S, on CLOCK_REALTIME like the webfarm's log stamps; every
    `report_s` prints a progress line (for long runs watched from a log)."""

    def __init__(self, pid, farm_log, crawl_err, report_s):
        super().__init__(daemon=True)
        self.pid, self.farm_log, self.crawl_err = pid, farm_log, crawl_err
        self.report_s = report_s
        self.samples = []  # (unix time, cpu s, rss bytes, load 1 min)
        self.done = threading.Event()

    def run(self):
        t0 = time.time()
        next_report = t0 + self.report_s
        while not self.done.is_set():
            usage = _tree_usage(self.pid)
            with open("/proc/loadavg") as f:
                load = float(f.read().split()[0])
            now = time.time()
            if usage is not None:
                self.samples.append((now, usage[0], usage[1], load))
            if self.report_s and now >= next_report and self.samples:
                next_report += self.report_s
                self._report(now - t0)
            self.done.wait(SAMPLE_PERIOD_S)

    def _report(self, elapsed):
        _, cpu, rss, load = self.samples[-1]
        try:
            log_mb = os.path.getsize(self.farm_log) / 1e6
        except OSError:
            log_mb = 0.0
        last = ""
        try:
            with open(self.crawl_err, "rb") as f:
                f.seek(max(0, os.path.getsize(self.crawl_err) - 400))
                tail = f.read().decode("utf-8", "replace")
            lines = [l for l in tail.replace("\r", "\n").split("\n")
                     if l.strip()]
            last = lines[-1].strip() if lines else ""
        except OSError:
            pass
        print(f"[{elapsed:6.0f} s] load {load:5.2f}  crawld CPU {cpu:7.1f} s"
              f"  RSS {rss / 2**20:6.0f} MB  farm log {log_mb:7.1f} MB  "
              f"| {last}", flush=True)

    def at(self, t):
        """Cumulative CPU seconds at unix time t (linear between samples)."""
        s = self.samples
        if not s:
            return 0.0
        if t <= s[0][0]:
            return s[0][1]
        for a, b in zip(s, s[1:]):
            if t <= b[0]:
                return a[1] + (b[1] - a[1]) * (t - a[0]) / (b[0] - a[0])
        return s[-1][1]

    def window(self, t0, t1):
        """(peak RSS bytes, mean load) of the samples in [t0, t1]."""
        inside = [x for x in self.samples if t0 <= x[0] <= t1]
        if not inside:  # a window shorter than the period
            inside = [min(self.samples, key=lambda x: abs(x[0] - t1))]
        return (max(x[2] for x in inside),
                sum(x[3] for x in inside) / len(inside))


def page_times(log_file, port):
    """From the webfarm's request log: (start of the first request in
    seconds, sorted end times in seconds of the successful page responses,
    set of the page URLs served, number of page responses served more than
    once). A page is a GET answered 200 that is not robots.txt. Streams the
    file: the large web's log is about 1 M lines."""
    first_start, ends, urls, again = None, [], set(), 0
    with open(log_file) as f:
        for line in f:
            if not line.endswith("\n"):
                continue  # a partial last line
            r = json.loads(line)
            if first_start is None or r["start_us"] < first_start:
                first_start = r["start_us"]
            if (r["method"] != "GET" or r["status"] != 200
                    or r["path"] == "/robots.txt"):
                continue
            url = f"http://{r['host']}:{port}{r['path']}"
            if url in urls:
                again += 1
            urls.add(url)
            ends.append(r["end_us"])
    ends.sort()
    return ((first_start or 0) / 1e6, [e / 1e6 for e in ends], urls, again)


def deciles(first_start, ends, sampler):
    """Ten rows (pages, seconds, pages/s, CPU ms/page, peak RSS MB, mean
    load): decile d holds pages d*N/10 .. (d+1)*N/10 - 1 and runs from the
    end of the previous decile's last page (the first request's start for
    d = 0) to the end of its own last page."""
    n = len(ends)
    rows = []
    prev_t = first_start
    for d in range(10):
        lo, hi = d * n // 10, (d + 1) * n // 10
        if hi <= lo:
            continue
        t1 = ends[hi - 1]
        secs = max(t1 - prev_t, 1e-6)
        cpu = sampler.at(t1) - sampler.at(prev_t)
        rss, load = sampler.window(prev_t, t1)
        rows.append((hi - lo, secs, (hi - lo) / secs,
                     cpu * 1000 / (hi - lo), rss / 2**20, load))
        prev_t = t1
    return rows


def floor_files(warcs):
    """The WARC files gumbo_floor parses: all, or the first ones up to
    FLOOR_MAX_WARC_BYTES (the floor is per page; a sample serves)."""
    out, total = [], 0
    for w in warcs:
        size = os.path.getsize(w)
        if out and total + size > FLOOR_MAX_WARC_BYTES:
            break
        out.append(w)
        total += size
    return out


def farm_config(workload, web=None):
    """The webfarm's config for a workload, with --web overrides (any key of
    tests/webfarm's config: hosts, pages, page_bytes, links, seed, ...)."""
    hosts, pages, page_bytes, links = WORKLOADS[workload]
    keys = {"seed": 3, "hosts": hosts, "pages": pages,
            "page_bytes": page_bytes, "links": links,
            "cross_host_share": 0.3, "relative_share": 0.5, "ips": 64,
            "seeds": "all", **(web or {})}
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


def run(workload, build, keep, settings=None, report_s=60.0, web=None):
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(build)
    import crawl_util
    import harness

    farm_cfg = farm_config(workload, web)
    print(farm_cfg.replace("\n", "; ").strip("; "), flush=True)
    data = tempfile.mkdtemp(prefix=f"crawld-bench-{workload}-")
    try:
        # The large web's manifest and hosts take the farm a while to write.
        with harness.Webfarm(farm_cfg, max_seconds=7200,
                             start_timeout=600) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=7200) as dns:
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
            print(f"{workload}: webfarm {farm.dir}, data {data}", flush=True)
            # Files, not pipes: an unread pipe would stall a long crawl
            # once its progress lines filled the pipe buffer.
            out_path = os.path.join(data, "crawld.stdout")
            err_path = os.path.join(data, "crawld.stderr")
            with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
                t0 = time.monotonic()
                proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f,
                                        text=True)
            sampler = Sampler(proc.pid, farm.log_file, err_path, report_s)
            # Anchors at both ends (no CPU yet at the start, wait4's total
            # at the exit), so deciles shorter than the sampling period
            # are interpolated, not read as zero.
            with open("/proc/loadavg") as f:
                load0 = float(f.read().split()[0])
            sampler.samples.append((time.time(), 0.0, 0, load0))
            sampler.start()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - t0
            sampler.done.set()
            sampler.join()
            last = sampler.samples[-1]
            sampler.samples.append((time.time(),
                                    usage.ru_utime + usage.ru_stime,
                                    last[2], last[3]))
            with open(out_path) as f:
                out = f.read()
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                print(out)
                raise SystemExit(f"crawld exited with {proc.returncode}")
            # The farm flushes its log every 100 ms: read it after the stop.
            farm.stop()
            first_start, ends, urls, again = page_times(farm.log_file,
                                                        farm.port)
            manifest = farm.manifest()
            missing = sum(1 for u in manifest if u not in urls)
            result = crawl_util.CrawlResult(
                subprocess.CompletedProcess(cmd, 0, out, ""), data)
            fetched = result.summary["pages"]
            print("counts:", result.summary["counts"])
            cpu = usage.ru_utime + usage.ru_stime
            warcs = result.warc_files()
            sample = floor_files(warcs)
            floor = subprocess.run(
                [os.path.join(build, "bench", "gumbo_floor"), *sample],
                capture_output=True, text=True, check=True).stdout.split()
            floor_ms = float(floor[0])
            cpu_ms = cpu * 1000 / max(1, fetched)
            print(f"{workload:8s} pages {fetched:8d}  manifest "
                  f"{len(manifest):8d}  wall {wall:7.1f} s  "
                  f"{fetched / wall:8.0f} pages/s  crawler CPU "
                  f"{cpu_ms:.3f} ms/page  peak RSS {usage.ru_maxrss / 1024:.0f} MB"
                  f"  gumbo floor {floor_ms:.3f} ms/page  "
                  f"ratio {cpu_ms / floor_ms:.2f}x")
            print(f"  floor over {floor[1]} pages in {len(sample)} of "
                  f"{len(warcs)} WARC files")
            print(f"  webfarm log: {len(ends)} page responses, "
                  f"{len(urls)} distinct, {again} served again; manifest "
                  f"URLs never served: {missing}")
            rows = deciles(first_start, ends, sampler)
            print("  decile    pages   seconds   pages/s  CPU ms/page  "
                  "peak RSS MB  load")
            for d, (n, secs, rate, ms, rss, load) in enumerate(rows):
                print(f"  {d + 1:6d} {n:8d} {secs:9.1f} {rate:9.0f} "
                      f"{ms:12.3f} {rss:12.0f} {load:5.2f}")
            if len(rows) == 10:
                first, last = rows[0][2], rows[-1][2]
                print(f"  pages/s first 10% {first:.0f}, last 10% "
                      f"{last:.0f}: last/first {last / first:.2f} "
                      f"(issue 5 wants >= 0.80); CPU ms/page first "
                      f"{rows[0][3]:.3f}, last {rows[-1][3]:.3f}")
            peak_tree = max((x[2] for x in sampler.samples), default=0)
            print(f"  sampled peak RSS {peak_tree / 2**20:.0f} MB; data dir "
                  f"{_du(data) / 2**30:.2f} GiB, webfarm log "
                  f"{os.path.getsize(farm.log_file) / 2**20:.0f} MiB",
                  flush=True)
    finally:
        if not keep:
            shutil.rmtree(data, ignore_errors=True)
        else:
            print(f"data kept in {data}")


def _du(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/bench")
    ap.add_argument("--workload", action="append", choices=sorted(WORKLOADS))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config override, e.g. store.gzip_level=1 "
                         "(TOML value: true, 3, 0.5, \"text\")")
    ap.add_argument("--web", action="append", default=[], metavar="KEY=VALUE",
                    help="a webfarm config override on top of the workload, "
                         "e.g. hosts=2000 or page_bytes=30000 (TOML value)")
    ap.add_argument("--report", type=float, default=60.0, metavar="SECONDS",
                    help="print a progress line this often (0: never)")
    args = ap.parse_args()
    settings = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        settings[key] = json.loads(value)
    web = {}
    for kv in args.web:
        key, _, value = kv.partition("=")
        web[key] = json.loads(value)
    for w in args.workload or ["small"]:
        run(w, args.build, args.keep, settings, args.report, web)


if __name__ == "__main__":
    main()
