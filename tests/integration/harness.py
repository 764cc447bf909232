"""Integration-test harness for crawld (Python 3.11 stdlib only).

Starts the real processes a crawl test needs, each bounded in time and
stopped by PID:

  Webfarm   the synthetic multi-host web (tests/webfarm, docs/WEBFARM.md)
  Dnsmasq   a real /usr/sbin/dnsmasq on a loopback port answering the
            webfarm's host names

and offers checkers over the webfarm request log, which is the only evidence
crawler tests judge by (never the crawler's own claims).
"""

from __future__ import annotations

import atexit
import collections
import glob
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterable

# Every temporary file and directory of a test process (its data
# directories, configs, webfarm dirs) goes below one directory of its own,
# removed when the process ends: a crawl's data directory holds a 96 MiB
# document-claim table, and a suite that left them behind filled the disk.
# CRAWLD_KEEP_TMP=1 keeps it (the path is printed) to look at a failure.
_TEST_TMP = tempfile.mkdtemp(prefix="crawld-test-")
tempfile.tempdir = _TEST_TMP
os.environ["TMPDIR"] = _TEST_TMP  # the processes a test starts, too
_TEST_TMP_OWNER = os.getpid()


def _remove_test_tmp() -> None:
    if os.getpid() != _TEST_TMP_OWNER:
        return  # a forked child: the parent's directory is not its own
    if os.environ.get("CRAWLD_KEEP_TMP") == "1":
        print(f"harness: kept {_TEST_TMP}", file=sys.stderr)
        return
    shutil.rmtree(_TEST_TMP, ignore_errors=True)


atexit.register(_remove_test_tmp)

# Bounds. Every wait in this module ends by itself.
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_dir() -> str:
    """The CMake build directory, from $CRAWLD_BUILD_DIR (set by ctest)."""
    d = os.environ.get("CRAWLD_BUILD_DIR")
    if not d:
        raise RuntimeError("CRAWLD_BUILD_DIR is not set (run through ctest "
                           "or export it to your build directory)")
    return d


_BINARIES = {
    "webfarm": "tests/webfarm/webfarm",
    "crawld": "daemon/crawld",
    "crawlctl": "cli/crawlctl",
}


def binary(name: str) -> str:
    """Path of a built executable: webfarm, crawld or crawlctl."""
    path = os.path.join(build_dir(), _BINARIES.get(name, name))
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{name}: {path} is not built")
    return path


def stop_process(proc: subprocess.Popen | None,
                 timeout: float = STOP_TIMEOUT_S) -> int | None:
    """SIGTERM by PID, then SIGKILL after `timeout`; returns the exit code."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=timeout)
    return proc.returncode


def group_pids(pgid: int) -> list[int]:
    """The PIDs of the live processes of process group `pgid`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            pids.append(int(entry))
    return sorted(pids)


def hang_report(pgid: int, log_dir: str, lines: int = 15,
                limit: int = 24000) -> str:
    """What a process group that did not end was doing, for a test's failure
    message (the test's directories are removed when it ends): each
    process's state, kernel wait channel and, where gdb can attach, its
    threads' stacks; then the last `lines` lines of each log in `log_dir`.
    Bounded: gdb gets 20 s per process."""
    out = []
    for pid in group_pids(pgid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/wchan") as f:
                wchan = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(")") + 2:].split()[0]
        out.append(f"== pid {pid} state {state} wchan {wchan}: {cmd[:200]}")
        if shutil.which("gdb"):
            try:
                bt = subprocess.run(
                    ["gdb", "-p", str(pid), "-batch", "-nx",
                     "-ex", "thread apply all bt 12"],
                    capture_output=True, text=True, timeout=20)
                out += [line for line in bt.stdout.splitlines()
                        if line.startswith(("#", "Thread "))]
            except (subprocess.TimeoutExpired, OSError) as e:
                out.append(f"(gdb: {e})")
    for log in sorted(glob.glob(os.path.join(log_dir, "*"))):
        try:
            with open(log, errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
        except OSError:
            continue
        out.append(f"== {os.path.basename(log)}")
        out += tail
    return "\n".join(out)[-limit:]


# ---------------------------------------------------------------- TOML

def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string for our ASCII values
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(settings: dict[str, Any],
            profiles: Iterable[dict[str, Any]] = ()) -> str:
    """Top-level settings plus [[profile]] tables, as webfarm TOML."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in settings.items()
             if k != "profile"]
    for p in list(settings.get("profile", [])) + list(profiles):
        lines.append("")
        lines.append("[[profile]]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in p.items())
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Webfarm

class Webfarm:
    """A running webfarm (context manager).

    config: TOML text, or a dict of top-level settings (a "profile" key may
    hold a list of profile dicts); profiles: extra profile dicts.
    After __enter__: .port, .dir, .seeds_file, .hosts_file, .proc.
    """

    def __init__(self, config: str | dict[str, Any],
                 profiles: Iterable[dict[str, Any]] = (),
                 max_seconds: int = 600, port: int = 0,
                 start_timeout: float = START_TIMEOUT_S):
        self.toml = config if isinstance(config, str) else to_toml(
            config, profiles)
        self.max_seconds = max_seconds
        self.want_port = port
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.dir = ""
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._stderr = None

    # Files in the output directory.
    @property
    def seeds_file(self) -> str:
        return os.path.join(self.dir, "seeds.txt")

    @property
    def hosts_file(self) -> str:
        return os.path.join(self.dir, "hosts")

    @property
    def log_file(self) -> str:
        return os.path.join(self.dir, "requests.jsonl")

    def __enter__(self) -> "Webfarm":
        self._tmp = tempfile.TemporaryDirectory(prefix="webfarm-")
        self.dir = self._tmp.name
        cfg = os.path.join(self.dir, "farm.toml")
        with open(cfg, "w") as f:
            f.write(self.toml)
        self._stderr = open(os.path.join(self.dir, "stderr.txt"), "wb")
        try:
            self.proc = subprocess.Popen(
                [binary("webfarm"), "--config", cfg, "--dir", self.dir,
                 "--port", str(self.want_port),
                 "--max-seconds", str(self.max_seconds)],
                stdout=subprocess.DEVNULL, stderr=self._stderr)
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        port_file = os.path.join(self.dir, "port")
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    self.port = int(f.read().strip())
                return
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"webfarm exited with {self.proc.returncode}: "
                    f"{self.stderr()}")
            time.sleep(0.02)
        raise TimeoutError(f"webfarm not ready in {self.start_timeout} s")

    def stop(self) -> int | None:
        """Stops the process (SIGTERM, then SIGKILL); returns its exit code.
        The log stays readable until __exit__."""
        code = stop_process(self.proc)
        return code

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def stderr(self) -> str:
        try:
            with open(os.path.join(self.dir, "stderr.txt"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _lines(self, name: str) -> list[str]:
        with open(os.path.join(self.dir, name)) as f:
            return [l for l in f.read().splitlines() if l]

    def manifest(self) -> list[str]:
        return self._lines("manifest.txt")

    def disallowed(self) -> list[str]:
        return self._lines("disallowed.txt")

    def seeds(self) -> list[str]:
        return self._lines("seeds.txt")

    def sitemap_listing(self, name: str) -> list[str]:
        """sitemap_only.txt, sitemap_never.txt or sitemaps.txt (docs/
        WEBFARM.md, "Sitemaps"), as sorted URLs."""
        return self._lines(name)

    def link_farm_hosts(self) -> set[str]:
        """Names of the link-farm (spam) hosts, from link_farm.txt."""
        return set(self._lines("link_farm.txt"))

    def hosts(self) -> dict[str, str]:
        """name -> IP, from the hosts file."""
        out = {}
        for line in self._lines("hosts"):
            ip, name = line.split()
            out[name] = ip
        return out

    def ip_of(self, host: str) -> str:
        return self.hosts()[host]

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def requests(self) -> list[dict[str, Any]]:
        """The request log so far (flushed at least every 200 ms)."""
        out = []
        try:
            with open(self.log_file) as f:
                for line in f:
                    if line.endswith("\n"):  # skip a partial last line
                        out.append(json.loads(line))
        except FileNotFoundError:
            pass
        return out

    def final_requests(self) -> list[dict[str, Any]]:
        """Stops the farm, then returns the whole request log. The farm
        flushes its log only every 100 ms while running, so a test that
        judges a finished crawl must read it after the stop."""
        self.stop()
        return self.requests()

    def wait_requests(self, pred, timeout: float = 5.0) -> list[dict]:
        """Polls the log until pred(requests) is true (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            reqs = self.requests()
            if pred(reqs) or time.monotonic() >= deadline:
                return reqs
            time.sleep(0.05)


# ---------------------------------------------------------------- Dnsmasq

def dns_query(server: tuple[str, int], name: str, qtype: int = 1,
              timeout: float = 1.0) -> tuple[int, list[str]]:
    """One raw DNS query over UDP; returns (rcode, [A addresses])."""
    qid = random.randrange(65536)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode("ascii")
    q += b"\x00" + struct.pack(">HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(q, server)
        data, _ = s.recvfrom(4096)
    rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
    if rid != qid:
        raise ValueError("DNS id mismatch")
    pos = 12

    def skip_name(p: int) -> int:
        while True:
            n = data[p]
            if n == 0:
                return p + 1
            if n & 0xC0 == 0xC0:
                return p + 2
            p += 1 + n

    for _ in range(qd):
        pos = skip_name(pos) + 4
    addrs = []
    for _ in range(an):
        pos = skip_name(pos)
        rtype, _, _, rdlen = struct.unpack(">HHIH", data[pos:pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            addrs.append(socket.inet_ntoa(data[pos:pos + 4]))
        pos += rdlen
    return flags & 0xF, addrs


class Dnsmasq:
    """A real dnsmasq on 127.0.0.1:<free port> answering `hosts_file`
    (context manager). .server is "127.0.0.1:P"; .port is P."""

    DNSMASQ = "/usr/sbin/dnsmasq"

    def __init__(self, hosts_file: str, max_seconds: int = 600,
                 start_timeout: float = START_TIMEOUT_S):
        self.hosts_file = hosts_file
        self.max_seconds = max_seconds
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.server = ""

    def __enter__(self) -> "Dnsmasq":
        # dnsmasq has no lifetime bound of its own: `timeout` gives it one,
        # so a crashed test never leaves it running.
        for _ in range(5):
            self.port = free_udp_port()
            cmd = [shutil.which("timeout") or "/usr/bin/timeout",
                   "--signal=TERM", "--kill-after=5", str(self.max_seconds),
                   self.DNSMASQ, "--no-daemon", "--conf-file=/dev/null",
                   "--no-hosts", "--no-resolv",
                   f"--addn-hosts={self.hosts_file}",
                   "--listen-address=127.0.0.1", "--bind-interfaces",
                   f"--port={self.port}", "--log-facility=-",
                   "--pid-file="]
            if os.geteuid() == 0:
                cmd.append("--user=root")
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            if self._wait_ready():
                self.server = f"127.0.0.1:{self.port}"
                return self
            stop_process(self.proc)
        raise RuntimeError("dnsmasq did not start")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # e.g. the port was taken meanwhile
            try:
                dns_query(("127.0.0.1", self.port), "ready.invalid",
                          timeout=0.2)
                return True
            except (OSError, ValueError):
                time.sleep(0.05)
        return False

    def resolve(self, name: str) -> list[str]:
        rcode, addrs = dns_query(("127.0.0.1", self.port), name)
        return addrs

    def __exit__(self, *exc) -> None:
        stop_process(self.proc)


# ---------------------------------------------------------------- checkers
# All take the parsed request log (Webfarm.requests()). Aborted exchanges
# (client gave up, "aborted": true) count: the request was in flight.

def _by(requests, key):
    groups = collections.defaultdict(list)
    for r in requests:
        groups[r[key]].append(r)
    return groups


def _max_overlap(reqs) -> int:
    events = []
    for r in reqs:
        events.append((r["start_us"], 1))
        events.append((r["end_us"], -1))
    # An end at the same instant as a start is not an overlap.
    events.sort(key=lambda e: (e[0], e[1]))
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def max_in_flight_per_host(requests) -> dict[str, int]:
    """host -> the largest number of its requests in flight at once."""
    return {h: _max_overlap(rs) for h, rs in _by(requests, "host").items()}


def max_in_flight_per_ip(requests) -> dict[str, int]:
    """ip -> the largest number of requests in flight at once on it."""
    return {ip: _max_overlap(rs) for ip, rs in _by(requests, "ip").items()}


def min_gap_per_host(requests) -> dict[str, int | None]:
    """host -> the smallest gap in microseconds between one response's end
    and the next request's start on that host (negative: overlap); None for
    a host with a single request."""
    out = {}
    for h, rs in _by(requests, "host").items():
        rs = sorted(rs, key=lambda r: r["start_us"])
        gaps = [b["start_us"] - a["end_us"] for a, b in zip(rs, rs[1:])]
        out[h] = min(gaps) if gaps else None
    return out


def first_request_per_host(requests) -> dict[str, dict[str, Any]]:
    """host -> its earliest request (by start_us)."""
    out = {}
    for h, rs in _by(requests, "host").items():
        out[h] = min(rs, key=lambda r: r["start_us"])
    return out


def fetched_urls(requests, port: int, methods=("GET",)) -> set[str]:
    """Canonical URLs (as in manifest.txt) of the logged requests."""
    return {f"http://{r['host']}:{port}{r['path']}" for r in requests
            if r["method"] in methods}


def link_farm_report(requests, port: int, manifest: Iterable[str],
                     farm_hosts: Iterable[str]) -> dict[str, Any]:
    """How a crawl fared against a link farm, from the request log alone.

    Requests are taken in the order the server took them up (start_us).
    "Until" means up to and including the first request of the manifest URL
    that was fetched last; every logged request counts as a fetch
    (robots.txt, errors and aborted ones too: each took a connection).
    Returns: missing (manifest URLs never requested, sorted), total, farm
    (farm requests in the whole log), until, farm_until, share (farm_until
    / until; None while a manifest URL is missing), normal_done_s (seconds
    from the first request's start to the end of that last manifest fetch;
    None while one is missing).
    """
    farm_hosts = set(farm_hosts)
    reqs = sorted(requests, key=lambda r: (r["start_us"], r["end_us"]))
    want = set(manifest)
    first: dict[str, int] = {}
    for i, r in enumerate(reqs):
        if r["method"] != "GET":
            continue
        url = f"http://{r['host']}:{port}{r['path']}"
        if url in want and url not in first:
            first[url] = i
    out: dict[str, Any] = {
        "missing": sorted(want - set(first)),
        "total": len(reqs),
        "farm": sum(1 for r in reqs if r["host"] in farm_hosts),
        "until": None, "farm_until": None, "share": None,
        "normal_done_s": None,
    }
    if out["missing"] or not reqs:
        return out
    last = max(first.values()) if first else -1
    head = reqs[:last + 1]
    out["until"] = len(head)
    out["farm_until"] = sum(1 for r in head if r["host"] in farm_hosts)
    out["share"] = out["farm_until"] / max(1, out["until"])
    if last >= 0:
        out["normal_done_s"] = (reqs[last]["end_us"] -
                                reqs[0]["start_us"]) / 1e6
    return out
