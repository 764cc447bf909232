#!/usr/bin/env python3
"""End-to-end crawl benchmark against the webfarm: crawld as users get it,
and GNU wget on the same web in the same run (issue 16; after LevelDB's
db_bench: named workloads, one line of figures per run).

Each run starts a fresh webfarm (so its request log holds that run alone)
and crawls it to the end with one crawler:

  crawld    the default configuration (workers.count = 0: one worker per
            core), politeness delay 0, defaults otherwise
  crawld-1  the same with one worker (for scaling)
  wget      GNU wget --warc-file, recursive, robots on, no delay, one
            process (the command line is WGET_ARGS below); names come from
            a private /etc/hosts bind-mounted in a mount namespace
            (`unshare --mount`, needs root), since wget has no DNS-server
            option

Rounds alternate the crawlers (`--repeat N`; each round starts with the
next crawler) so that a machine shared with other work disturbs them alike.

Per run: pages/s (pages = the webfarm's successful page responses over the
crawler's wall time), CPU per page over all the crawler's processes (user +
sys, from wait4, which includes every reaped descendant), peak RSS (the sum
of each process's VmHWM, sampled from /proc), peak PSS (the largest sampled
sum of each process's Pss: a page shared by the workers, such as the mapped
claim table, counted once), the webfarm's CPU share (to
show the server is not the bottleneck), the rest of the machine's busy
CPU (the neighbours: near 0 on a quiet machine) and the seconds the
crawler's threads waited, runnable, for a CPU (/proc schedstat: large on a
shared machine, where wall-clock figures are then the neighbours' as much
as the crawler's). Every run is checked
against the manifest from the webfarm's log: every manifest URL fetched
exactly once, or the run is marked INCOMPLETE and the script exits 1.

The floor beside each workload: bench/gumbo_floor on the first crawld
run's WARCs, i.e. Gumbo's bare parse plus libdeflate's gzip (at the
configured store.gzip_level) of the very pages crawled (the first 5,000;
the fastest of three passes, CPU time).

Ratios: crawld pages/s over wget's (paired within a round), crawld CPU per
page over the floor, and crawld (default) pages/s over crawld-1's.

`--deciles` adds, for crawld runs, whether the crawl keeps its speed (issue
5, "scale"): the crawl's time line from the webfarm's log cut into ten
deciles of pages, each with its pages/s, the crawler's CPU per page, its
RSS and the machine's load average.

usage: bench/e2e.py [--build build/bench] [--workload 21k]...
                    [--crawlers crawld,crawld-1,wget] [--repeat N]
                    [--web hosts=2000 --web pages=10 ...] [--set KEY=VALUE]...
                    [--deciles] [--markdown] [--json FILE] [--keep]
                    [--wrap 'PROFILER ARGS']
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

WORKLOADS = {
    # name: (hosts, pages per host, page bytes, links per page)
    # smoke: seconds per crawler, to check the script and the tools.
    "smoke": (20, 25, 8000, 10),
    # Issue 16's shapes: 20,000 pages each, on 200 hosts or on 2,000.
    "4k": (200, 100, 4000, 10),
    "16k": (200, 100, 16000, 20),
    "21k": (200, 100, 21000, 30),
    "50k": (200, 100, 50000, 40),
    "4k-2000h": (2000, 10, 4000, 10),
    "16k-2000h": (2000, 10, 16000, 20),
    "21k-2000h": (2000, 10, 21000, 30),
    "50k-2000h": (2000, 10, 50000, 40),
    # Earlier workloads (docs/BENCHMARKS.md history; "large" is the
    # 1 M-page scale run).
    "small": (200, 100, 16000, 20),     # 20,000 pages, = "16k"
    "small8k": (200, 100, 8000, 10),    # 20,000 smaller pages
    "medium": (1000, 100, 16000, 20),   # 100,000 pages
    "large": (10000, 100, 8000, 10),    # 1,000,000 pages
}

CRAWLERS = ("crawld", "crawld-1", "wget")

# wget's command line, besides --warc-file, --directory-prefix (per run)
# and the start URL (a page linking to every seed: StartPage). Recursive without a depth limit (the
# default is 5), across the farm's hosts only, robots.txt obeyed (wget's
# default, said explicitly), no delay (the default), pages deleted once
# parsed (only the WARC is kept, like crawld), a CDX index beside the WARC
# (crawld writes CDXJ), quiet (crawld logs no line per page either). WARC
# records are gzipped one by one with zlib's default level (6) and carry
# SHA-1 digests, as crawld's do (libdeflate, store.gzip_level).
WGET_ARGS = ["--recursive", "--level=inf", "--span-hosts",
             "--domains=farm.test", "--execute", "robots=on",
             "--delete-after", "--warc-cdx", "--quiet"]

# The sampler's period: short enough to catch the peak RSS of a 20 s run
# and resolve a decile of the 20,000-page webs, long enough to cost the
# crawl nothing measurable (one /proc scan, about 1 ms).
SAMPLE_PERIOD_S = 0.5
# The floor is per page and the webfarm's pages of one web are alike: the
# first 5,000 pages serve (three passes of Gumbo and of libdeflate over
# them take seconds, not minutes, on a loaded machine). gumbo_floor holds
# them in memory: above this many bytes of WARC files only the first files
# are given.
FLOOR_PAGES = 5000
FLOOR_MAX_WARC_BYTES = 400 << 20
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------ /proc

def _proc_table():
    """pid -> (ppid, CPU seconds incl. reaped children, RSS bytes)."""
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
    return procs


def _tree(procs, root):
    """Pids of `root` and its descendants in `procs`."""
    if root not in procs:
        return set()
    tree, todo = {root}, [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, _, _) in procs.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                todo.append(pid)
    return tree


def _status_bytes(pid, key):
    """A kB field of /proc/PID/status (VmHWM:, RssAnon:) in bytes; None
    once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _hwm(pid):
    """VmHWM (peak RSS) of a process in bytes; None once it is gone."""
    return _status_bytes(pid, "VmHWM:")


def _rss_anon(pid):
    """RssAnon of a process in bytes (its heap and other private memory,
    without file mappings such as the claim table); 0 once it is gone."""
    return _status_bytes(pid, "RssAnon:") or 0


def _pss(pid):
    """Pss (proportional set size) of a process in bytes; None once gone.
    RSS counts a page shared by N processes N times (the workers' mapped
    claim table, libraries); Pss counts 1/N of it in each, so the sum over
    a tree is the memory the tree really holds."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _run_delay(pid):
    """Seconds the process's threads have waited, runnable, for a CPU
    (/proc/PID/task/*/schedstat, second field); None once it is gone. On a
    shared machine this tells a crawler slowed by its neighbours (long
    waits) from one idle on its own account (short waits, low CPU)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def _proc_cpu(pid):
    """utime + stime of one process in seconds (None once gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _machine_busy():
    """Busy CPU seconds of the whole machine (all cores) so far."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (sum(v[:8]) - v[3] - v[4]) / _TICK


def _load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


class Sampler(threading.Thread):
    """Samples the crawler's process tree (CPU, RSS, each process's peak
    RSS) and the load average every SAMPLE_PERIOD_S, on CLOCK_REALTIME like
    the webfarm's log stamps; every `report_s` prints a progress line (for
    long runs watched from a log)."""

    def __init__(self, pid, farm_log, err_path, report_s):
        super().__init__(daemon=True)
        self.pid, self.farm_log, self.err_path = pid, farm_log, err_path
        self.report_s = report_s
        # (unix time, cpu s, rss bytes, load 1 min, anonymous rss bytes)
        self.samples = []
        self.hwm = {}      # pid -> peak RSS bytes (VmHWM), last seen
        self.delay = {}    # pid -> seconds waited for a CPU, last seen
        self.pss_peak = 0  # the largest sum of Pss over the tree
        self.done = threading.Event()

    def sample(self):
        procs = _proc_table()
        tree = _tree(procs, self.pid)
        if not tree:
            return
        for p in tree:
            h = _hwm(p)
            if h is not None:
                self.hwm[p] = max(h, self.hwm.get(p, 0))
            d = _run_delay(p)
            if d is not None:
                self.delay[p] = max(d, self.delay.get(p, 0.0))
        self.pss_peak = max(self.pss_peak,
                            sum(_pss(p) or 0 for p in tree))
        self.samples.append((time.time(), sum(procs[p][1] for p in tree),
                             sum(procs[p][2] for p in tree), _load(),
                             sum(_rss_anon(p) for p in tree)))

    def run(self):
        t0 = time.time()
        next_report = t0 + self.report_s
        while not self.done.is_set():
            self.sample()
            now = time.time()
            if self.report_s and now >= next_report and self.samples:
                next_report += self.report_s
                self._report(now - t0)
            self.done.wait(SAMPLE_PERIOD_S)

    def _report(self, elapsed):
        _, cpu, rss, load, _ = self.samples[-1]
        try:
            log_mb = os.path.getsize(self.farm_log) / 1e6
        except OSError:
            log_mb = 0.0
        last = ""
        try:
            with open(self.err_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.err_path) - 400))
                tail = f.read().decode("utf-8", "replace")
            lines = [l for l in tail.replace("\r", "\n").split("\n")
                     if l.strip()]
            last = lines[-1].strip() if lines else ""
        except OSError:
            pass
        print(f"[{elapsed:6.0f} s] load {load:5.2f}  CPU {cpu:7.1f} s"
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
        """(peak RSS bytes, mean load, peak anonymous RSS bytes) of the
        samples in [t0, t1]."""
        inside = [x for x in self.samples if t0 <= x[0] <= t1]
        if not inside:  # a window shorter than the period
            inside = [min(self.samples, key=lambda x: abs(x[0] - t1))]
        return (max(x[2] for x in inside),
                sum(x[3] for x in inside) / len(inside),
                max(x[4] for x in inside))


# ------------------------------------------------------------ the log

def read_log(log_file, port, manifest):
    """From the webfarm's request log: the first request's start (s), the
    sorted end times (s) of the successful page responses (a GET answered
    200 that is not robots.txt), and the completeness check against the
    manifest. Streams the file: the large web's log is about 1 M lines."""
    first_start, ends, seen, again, robots = None, [], set(), 0, 0
    with open(log_file) as f:
        for line in f:
            if not line.endswith("\n"):
                continue  # a partial last line
            r = json.loads(line)
            if first_start is None or r["start_us"] < first_start:
                first_start = r["start_us"]
            if r["path"] == "/robots.txt":
                robots += 1
                continue
            if r["method"] != "GET" or r["status"] != 200:
                continue
            url = f"http://{r['host']}:{port}{r['path']}"
            if url in seen:
                again += 1
            seen.add(url)
            ends.append(r["end_us"])
    ends.sort()
    manifest = set(manifest)
    return {
        "first_start": (first_start or 0) / 1e6,
        "ends": [e / 1e6 for e in ends],
        "pages": len(ends),
        "distinct": len(seen),
        "again": again,
        "missing": len(manifest - seen),
        "extra": len(seen - manifest),
        "robots": robots,
    }


def deciles(first_start, ends, sampler):
    """Ten rows (pages, seconds, pages/s, CPU ms/page, peak RSS MB, mean
    load, peak anonymous RSS MB): decile d holds pages d*N/10 .. (d+1)*N/10 - 1 and runs from the
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
        rss, load, anon = sampler.window(prev_t, t1)
        rows.append((hi - lo, secs, (hi - lo) / secs,
                     cpu * 1000 / (hi - lo), rss / 2**20, load, anon / 2**20))
        prev_t = t1
    return rows


def print_deciles(log, sampler):
    rows = deciles(log["first_start"], log["ends"], sampler)
    print("  decile    pages   seconds   pages/s  CPU ms/page  "
          "peak RSS MB  anon MB  load")
    for d, (n, secs, rate, ms, rss, load, anon) in enumerate(rows):
        print(f"  {d + 1:6d} {n:8d} {secs:9.1f} {rate:9.0f} "
              f"{ms:12.3f} {rss:12.0f} {anon:8.0f} {load:5.2f}")
    if len(rows) == 10:
        first, last = rows[0][2], rows[-1][2]
        print(f"  pages/s first 10% {first:.0f}, last 10% "
              f"{last:.0f}: last/first {last / first:.2f} "
              f"(issue 5 wants >= 0.80); CPU ms/page first "
              f"{rows[0][3]:.3f}, last {rows[-1][3]:.3f}")


# ------------------------------------------------------------ configs

def farm_config(workload, web=None):
    """The webfarm's config for a workload, with --web overrides (any key of
    tests/webfarm's config: hosts, pages, page_bytes, links, seed, ...)."""
    hosts, pages, page_bytes, links = WORKLOADS[workload]
    keys = {"seed": 3, "hosts": hosts, "pages": pages,
            "page_bytes": page_bytes, "links": links,
            "cross_host_share": 0.3, "relative_share": 0.5, "ips": 64,
            "seeds": "all", **(web or {})}
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


def crawld_config(dns_server, data_dir, workers, settings):
    """crawld's TOML: its defaults but for what a loopback benchmark needs
    (no politeness delay, private addresses allowed, our dnsmasq) and the
    worker count (0: one per core), plus --set overrides."""
    import crawl_util
    values = {
        "crawl.user_agent": "crawld-bench/0.1 (+http://127.0.0.1/contact)",
        "crawl.data_dir": data_dir,
        "crawl.progress_interval_s": 10.0,
        "politeness.min_delay_ms": 0,
        "politeness.delay_factor": 0.0,
        "dns.servers": [dns_server],
        "network.allow_private": True,
        "workers.count": workers,
        **settings,
    }
    tables = {}
    for key, value in values.items():
        table, name = key.split(".", 1)
        tables.setdefault(table, {})[name] = value
    lines = []
    for table, kv in tables.items():
        lines.append(f"[{table}]")
        lines.extend(f"{k} = {crawl_util.toml_value(v)}"
                     for k, v in kv.items())
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------ one run

class Run:
    """One crawl of one fresh webfarm by one crawler."""

    def __init__(self, crawler, workload, rnd):
        self.crawler, self.workload, self.round = crawler, workload, rnd
        self.wall = self.cpu = 0.0
        self.rss_sum = self.rss_max = 0
        self.rss_each = []  # each process's peak RSS, largest first
        self.pss_peak = 0  # the largest sampled sum of Pss
        self.run_delay = 0.0  # seconds runnable but waiting for a CPU
        self.farm_cpu = self.busy = self.load = 0.0
        self.log = {}
        self.exit_code = 0
        self.warc_bytes = 0

    @property
    def pages(self):
        return self.log["pages"]

    @property
    def complete(self):
        return (self.exit_code == 0 and self.log["missing"] == 0
                and self.log["again"] == 0)

    @property
    def rate(self):
        return self.pages / self.wall

    @property
    def cpu_ms(self):
        return self.cpu * 1000 / max(1, self.pages)

    def line(self):
        lg = self.log
        others = max(0.0, self.busy - self.cpu - self.farm_cpu) / self.wall
        state = "complete" if self.complete else (
            f"INCOMPLETE (exit {self.exit_code}, {lg['missing']} manifest "
            f"URLs never fetched, {lg['again']} fetched again)")
        return (f"{self.workload:9s} {self.crawler:8s} round {self.round}: "
                f"{lg['pages']} pages ({state}), wall {self.wall:6.1f} s, "
                f"{self.rate:6.0f} pages/s, CPU {self.cpu_ms:.3f} ms/page, "
                f"peak RSS {self.rss_sum / 2**20:.0f} MB ("
                f"{'+'.join(f'{x / 2**20:.0f}' for x in self.rss_each)}), "
                f"peak PSS {self.pss_peak / 2**20:.0f} MB, webfarm "
                f"{self.farm_cpu / self.wall:.2f} core "
                f"({self.farm_cpu * 1000 / max(1, lg['pages']):.3f} "
                f"ms/page), others {others:.2f} core, load {self.load:.1f}, "
                f"waited for a CPU {self.run_delay:.1f} s")

    def to_json(self):
        lg = {k: v for k, v in self.log.items()
              if k not in ("ends", "first_start")}
        return {"crawler": self.crawler, "workload": self.workload,
                "round": self.round, "wall_s": self.wall, "cpu_s": self.cpu,
                "pages_per_s": self.rate, "cpu_ms_per_page": self.cpu_ms,
                "peak_rss_sum": self.rss_sum, "peak_rss_max": self.rss_max,
                "peak_rss_each": self.rss_each, "peak_pss": self.pss_peak,
                "farm_cpu_s": self.farm_cpu, "machine_busy_s": self.busy,
                "load": self.load, "exit_code": self.exit_code,
                "run_delay_s": self.run_delay,
                "warc_bytes": self.warc_bytes, "complete": self.complete,
                **lg}


def _measure(run, cmd, farm, work, report_s, **popen):
    """Runs `cmd` to its end with the sampler; fills `run`. Returns the
    sampler (for deciles)."""
    out_path = os.path.join(work, "stdout")
    err_path = os.path.join(work, "stderr")
    farm_cpu0 = _proc_cpu(farm.proc.pid)
    busy0, load0 = _machine_busy(), _load()
    # Files, not pipes: an unread pipe would stall a long crawl once its
    # progress lines filled the pipe buffer.
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, **popen)
    sampler = Sampler(proc.pid, farm.log_file, err_path, report_s)
    # Anchors at both ends (no CPU yet at the start, wait4's total at the
    # exit), so deciles shorter than the sampling period are interpolated,
    # not read as zero.
    sampler.samples.append((time.time(), 0.0, 0, load0, 0))
    sampler.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM): the crawler is ours to stop.
        import harness
        harness.stop_process(proc)
        raise
    run.wall = time.monotonic() - t0
    run.busy = _machine_busy() - busy0
    run.farm_cpu = _proc_cpu(farm.proc.pid) - farm_cpu0
    sampler.done.set()
    sampler.join()
    run.cpu = usage.ru_utime + usage.ru_stime
    last = sampler.samples[-1]
    sampler.samples.append((time.time(), run.cpu, last[2], last[3], last[4]))
    run.load = sum(s[3] for s in sampler.samples) / len(sampler.samples)
    # ru_maxrss: the largest of the process and its reaped descendants.
    run.rss_max = usage.ru_maxrss * 1024
    run.rss_each = sorted(sampler.hwm.values(), reverse=True)
    # A process may peak after its last sample: ru_maxrss (exact) is the
    # largest process's peak.
    if not run.rss_each or run.rss_each[0] < run.rss_max:
        run.rss_each[:1] = [run.rss_max]
    run.rss_sum = sum(run.rss_each)
    run.pss_peak = sampler.pss_peak
    run.run_delay = sum(sampler.delay.values())
    run.exit_code = os.waitstatus_to_exitcode(status)
    if run.exit_code != 0:
        with open(err_path, errors="replace") as f:
            tail = f.read()[-2000:]
        print(f"  {run.crawler} exited with {run.exit_code}; stderr "
              f"tail:\n{tail}", flush=True)
    # The farm flushes its log every 100 ms: read it after the stop.
    farm.stop()
    run.log = read_log(farm.log_file, farm.port, farm.manifest())
    return sampler


def run_crawld(workers, run, args, settings, farm_cfg, floor_cb):
    import harness
    work = tempfile.mkdtemp(prefix=f"crawld-bench-{run.workload}-")
    try:
        with harness.Webfarm(farm_cfg, max_seconds=7200,
                             start_timeout=600) as farm, \
                harness.Dnsmasq(farm.hosts_file, max_seconds=7200) as dns:
            config = os.path.join(work, "bench.toml")
            with open(config, "w") as f:
                f.write(crawld_config(dns.server, work, workers, settings))
            cmd = [harness.binary("crawld"), "--config", config,
                   "--seeds", farm.seeds_file]
            if args.wrap:
                cmd = shlex.split(args.wrap) + cmd
            sampler = _measure(run, cmd, farm, work, args.report, text=True)
            warc_dir = os.path.join(work, "warc")
            warcs = sorted(os.path.join(warc_dir, f)
                           for f in os.listdir(warc_dir)
                           if f.endswith(".warc.gz")) \
                if os.path.isdir(warc_dir) else []
            run.warc_bytes = sum(os.path.getsize(w) for w in warcs)
            print(run.line(), flush=True)
            if args.deciles:
                print_deciles(run.log, sampler)
            floor_cb(warcs)
    finally:
        if args.keep:
            print(f"  data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


class StartPage:
    """One page on 127.0.0.1 linking to every seed, wget's one start URL
    (context manager; a thread of this process serves it).

    `wget -r -i SEEDS` crawls each input URL as a tree of its own with a
    fresh list of what it has seen, and --delete-after makes it forget what
    it downloaded, so every seed would crawl the whole web again (20 x the
    pages on the smoke web). One start page makes one tree: each URL once,
    as crawld does with its seeds."""

    NAME = "seeds.farm.test"

    def __init__(self, seeds):
        import http.server
        links = "".join(f'<a href="{u}">{u}</a>\n' for u in seeds)
        body = (f"<!DOCTYPE html><title>seeds</title>\n{links}").encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_error(404)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = f"http://{self.NAME}:{self.server.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def run_wget(run, args, farm_cfg):
    import harness
    work = tempfile.mkdtemp(prefix=f"wget-bench-{run.workload}-")
    try:
        with harness.Webfarm(farm_cfg, max_seconds=7200,
                             start_timeout=600) as farm, \
                StartPage(farm.seeds()) as start:
            hosts = os.path.join(work, "hosts")
            with open(farm.hosts_file) as src, open(hosts, "w") as dst:
                dst.write(f"127.0.0.1 localhost {StartPage.NAME}\n")
                dst.write(src.read())
            # The bind mount lives in the new mount namespace only
            # (unshare makes its mounts private): the machine's /etc/hosts
            # is untouched. `exec` keeps one process: the pid we wait for
            # becomes wget's.
            cmd = ["unshare", "--mount", "--", "sh", "-c",
                   'mount --bind "$0" /etc/hosts && exec "$@"', hosts,
                   "wget", *WGET_ARGS,
                   f"--warc-file={os.path.join(work, 'wget')}",
                   f"--directory-prefix={os.path.join(work, 'files')}",
                   start.url]
            _measure(run, cmd, farm, work, args.report)
            # wget exits 8 when any response was an error (4xx, 5xx: the
            # start page's robots.txt is a 404): the log check below is
            # the judge of completeness.
            if run.exit_code == 8:
                run.exit_code = 0
            run.warc_bytes = sum(
                os.path.getsize(os.path.join(work, f))
                for f in os.listdir(work) if f.endswith(".warc.gz"))
            print(run.line(), flush=True)
    finally:
        if args.keep:
            print(f"  data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def check_wget():
    """Why wget cannot run here, or None."""
    if shutil.which("wget") is None:
        return "wget is not installed"
    if os.geteuid() != 0:
        return ("wget's names come from a private /etc/hosts bind-mounted "
                "in a mount namespace, which needs root (run as root, or "
                "leave wget out: --crawlers crawld,crawld-1)")
    probe = subprocess.run(["unshare", "--mount", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount fails: {probe.stderr.strip()}"
    return None


# ------------------------------------------------------------ the floor

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


def measure_floor(build, warcs, level):
    """gumbo_floor's figures (dict of floats) on the WARCs."""
    out = subprocess.run(
        [os.path.join(build, "bench", "gumbo_floor"), "--level", str(level),
         "--max-pages", str(FLOOR_PAGES), *floor_files(warcs)],
        capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in
            (kv.split("=") for kv in out.split("\n")[0].split())}


# ------------------------------------------------------------ summary

def _range(values, fmt):
    lo, hi = min(values), max(values)
    if fmt.format(lo) == fmt.format(hi):
        return fmt.format(lo)
    return f"{fmt.format(lo)}-{fmt.format(hi)}"


def ratios(runs, floor):
    """{name: [values]} of the issue's ratios over complete runs; pairs
    are taken within a round."""
    by_round = {}
    for r in runs:
        if r.complete:
            by_round.setdefault(r.round, {})[r.crawler] = r
    out = {"crawld/wget pages/s": [], "crawld-1/wget pages/s": [],
           "crawld/crawld-1 pages/s": [], "crawld CPU/floor": [],
           "crawld-1 CPU/floor": [], "wget CPU/floor": [],
           "crawld CPU/wget CPU": []}
    for rr in by_round.values():
        d, one, w = rr.get("crawld"), rr.get("crawld-1"), rr.get("wget")
        if d and w:
            out["crawld/wget pages/s"].append(d.rate / w.rate)
            out["crawld CPU/wget CPU"].append(d.cpu_ms / w.cpu_ms)
        if one and w:
            out["crawld-1/wget pages/s"].append(one.rate / w.rate)
        if d and one:
            out["crawld/crawld-1 pages/s"].append(d.rate / one.rate)
    if floor:
        for r in runs:
            if r.complete:
                out[f"{r.crawler} CPU/floor"].append(
                    r.cpu_ms / floor["floor_ms"])
    return {k: v for k, v in out.items() if v}


def summarize(workload, runs, floor, farm_cfg, markdown):
    hosts, pages, page_bytes, links = WORKLOADS[workload]
    print(f"\n== {workload}: {farm_cfg.strip().replace(chr(10), '; ')}")
    if floor:
        print(f"   floor: Gumbo {floor['gumbo_ms']:.3f} + libdeflate level "
              f"{floor['level']:.0f} {floor['deflate_ms']:.3f} = "
              f"{floor['floor_ms']:.3f} ms/page ({floor['pages']:.0f} "
              f"pages of {floor['page_bytes']:.0f} bytes)")
    rows = []
    for c in CRAWLERS:
        rs = [r for r in runs if r.crawler == c and r.complete]
        if not rs:
            continue
        rows.append((c, len(rs), _range([r.rate for r in rs], "{:.0f}"),
                     _range([r.cpu_ms for r in rs], "{:.3f}"),
                     _range([r.rss_sum / 2**20 for r in rs], "{:.0f}"),
                     _range([r.pss_peak / 2**20 for r in rs], "{:.0f}"),
                     _range([r.farm_cpu / r.wall for r in rs], "{:.2f}"),
                     _range([max(0.0, r.busy - r.cpu - r.farm_cpu) / r.wall
                             for r in rs], "{:.2f}")))
    print(f"   {'crawler':9s} {'runs':>4s} {'pages/s':>11s} "
          f"{'CPU ms/page':>13s} {'peak RSS MB':>11s} {'peak PSS MB':>11s}"
          f" {'webfarm core':>12s} {'others core':>11s}")
    for c, n, rate, cpu, rss, pss, farm, others in rows:
        print(f"   {c:9s} {n:4d} {rate:>11s} {cpu:>13s} {rss:>11s} "
              f"{pss:>11s} {farm:>12s} {others:>11s}")
    rt = ratios(runs, floor)
    for k, v in rt.items():
        print(f"   {k:24s} {_range(v, '{:.2f}')}x")
    bad = [r for r in runs if not r.complete]
    if bad:
        print(f"   {len(bad)} INCOMPLETE run(s), left out above: "
              + ", ".join(f"{r.crawler} round {r.round}" for r in bad))
    if markdown:
        print("\n| crawler | runs | pages/s | CPU per page | peak RSS | "
              "peak PSS | webfarm (cores) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c, n, rate, cpu, rss, pss, farm, _ in rows:
            print(f"| {c} | {n} | {rate} | {cpu} ms | {rss} MB | {pss} MB "
                  f"| {farm} |")
        if floor:
            print(f"| floor (Gumbo + libdeflate {floor['level']:.0f}) | | | "
                  f"{floor['gumbo_ms']:.3f} + {floor['deflate_ms']:.3f} = "
                  f"{floor['floor_ms']:.3f} ms | | | |")
        print("\n| ratio | range |\n| --- | ---: |")
        for k, v in rt.items():
            print(f"| {k} | {_range(v, '{:.2f}')}x |")
    return rt


def head_commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                              "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/bench")
    ap.add_argument("--workload", action="append", choices=list(WORKLOADS),
                    help="named web shape (default 21k); repeatable")
    ap.add_argument("--crawlers", default=",".join(CRAWLERS),
                    help="comma-separated, of " + ", ".join(CRAWLERS))
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="rounds of all crawlers, alternating")
    ap.add_argument("--keep", action="store_true",
                    help="keep each run's data directory")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a crawld config override, e.g. store.gzip_level=1 "
                         "(TOML value: true, 3, 0.5, \"text\")")
    ap.add_argument("--web", action="append", default=[], metavar="KEY=VALUE",
                    help="a webfarm config override on top of the workload, "
                         "e.g. hosts=2000 or page_bytes=30000 (TOML value)")
    ap.add_argument("--report", type=float, default=60.0, metavar="SECONDS",
                    help="print a progress line this often (0: never)")
    ap.add_argument("--deciles", action="store_true",
                    help="per-decile rate, CPU and RSS of crawld runs")
    ap.add_argument("--markdown", action="store_true",
                    help="also print each workload's summary as tables")
    ap.add_argument("--wrap", metavar="CMD",
                    help="run crawld under CMD (a profiler: 'perf record "
                         "-o F', 'strace -c -f -o F', 'valgrind "
                         "--tool=callgrind --trace-children=yes'); its "
                         "figures then include the profiler's cost")
    ap.add_argument("--json", metavar="FILE",
                    help="append every run and summary as JSON lines")
    args = ap.parse_args()
    # SIGTERM unwinds like Ctrl-C: the webfarm, dnsmasq and the crawler in
    # progress are stopped by their context managers, not left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    crawlers = [c for c in args.crawlers.split(",") if c]
    for c in crawlers:
        if c not in CRAWLERS:
            ap.error(f"unknown crawler {c!r} (of {', '.join(CRAWLERS)})")
    if "wget" in crawlers:
        why = check_wget()
        if why:
            raise SystemExit(f"e2e.py: cannot run wget: {why}")
    settings = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        settings[key] = json.loads(value)
    web = {}
    for kv in args.web:
        key, _, value = kv.partition("=")
        web[key] = json.loads(value)
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(args.build)
    level = int(settings.get("store.gzip_level", 6))
    print(f"e2e.py: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
          f"{os.cpu_count()} CPUs, load {_load():.2f}, build "
          f"{os.path.abspath(args.build)} at {head_commit()}; crawlers "
          f"{', '.join(crawlers)} x {args.repeat}", flush=True)
    if "wget" in crawlers:
        print("wget " + " ".join(WGET_ARGS) + " --warc-file=DIR/wget "
              "--directory-prefix=DIR/files http://seeds.farm.test:PORT/",
              flush=True)
    failed = False
    json_out = open(args.json, "a") if args.json else None
    try:
        for w in args.workload or ["21k"]:
            farm_cfg = farm_config(w, web)
            runs, floor = [], {}

            def floor_cb(warcs):
                if not floor and warcs:
                    floor.update(measure_floor(args.build, warcs, level))

            for rnd in range(1, args.repeat + 1):
                k = (rnd - 1) % len(crawlers)
                for c in crawlers[k:] + crawlers[:k]:
                    run = Run(c, w, rnd)
                    if c == "wget":
                        run_wget(run, args, farm_cfg)
                    else:
                        run_crawld(0 if c == "crawld" else 1, run, args,
                                   settings, farm_cfg, floor_cb)
                    runs.append(run)
                    failed = failed or not run.complete
                    if json_out:
                        json_out.write(json.dumps(
                            {"run": run.to_json(), "web": farm_cfg,
                             "settings": settings}) + "\n")
                        json_out.flush()
            rt = summarize(w, runs, floor, farm_cfg, args.markdown)
            if json_out:
                json_out.write(json.dumps(
                    {"summary": w, "floor": floor, "ratios": rt,
                     "web": farm_cfg, "settings": settings}) + "\n")
    finally:
        if json_out:
            json_out.close()
    if failed:
        raise SystemExit("e2e.py: a run was INCOMPLETE (see above)")


if __name__ == "__main__":
    main()
