"""tests/hostile/driver.py: runs hostile.py for a test and judges a crawl
from the two things a test may trust: the server's request log and the WARC
files (parsed here, independently of crawld's reader). Never from crawld's
counters.

Used by tests/integration/test_hostile*.py (which put this folder on
sys.path). Python 3.11 standard library only.
"""

from __future__ import annotations

import collections
import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Iterable

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTILE = os.path.join(HERE, "hostile.py")
PENDING = os.path.join(HERE, "pending.txt")

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


# ---------------------------------------------------------------- pending

def load_pending(path: str = PENDING) -> dict[str, str]:
    """test id -> why it is pending ("issue 19 item 2: ..."), from
    pending.txt: one test per line, `<test id> <reason...>`, # comments."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                tid, _, why = line.partition(" ")
                out[tid] = why.strip() or "pending"
    except FileNotFoundError:
        pass
    return out


def run_pending() -> bool:
    """CRAWLD_HOSTILE_RUN_PENDING=1 runs pending tests too (to check a
    fix before removing its line)."""
    return os.environ.get("CRAWLD_HOSTILE_RUN_PENDING", "") not in ("", "0")


def pending_reason(test_id: str) -> str | None:
    """Why `test_id` (module.Class.method) is pending: its own line, or a
    line naming its class (module.Class) as a whole."""
    pending = load_pending()
    return pending.get(test_id) or pending.get(test_id.rsplit(".", 1)[0])


def skip_if_pending(test: unittest.TestCase) -> None:
    why = pending_reason(test.id())
    if why and not run_pending():
        test.skipTest(f"pending, {why} (tests/hostile/pending.txt)")


def all_pending(cls: type, prefix: str) -> bool:
    """True when every test method of `cls` is pending (its setUpClass can
    then skip the crawl)."""
    if run_pending():
        return False
    names = [n for n in dir(cls) if n.startswith("test")]
    return bool(names) and all(
        pending_reason(f"{prefix}.{cls.__name__}.{n}") for n in names)


# ---------------------------------------------------------------- server

class HostileServer:
    """hostile.py in a temporary directory (context manager), stopped by
    PID. After __enter__: .port, .dir, .meta (hosts.json), .hosts_file."""

    def __init__(self, max_seconds: float = 300, ticks: int = 120,
                 fat_pages: int = 40, fat_bytes: int = 100000):
        self.args = ["--max-seconds", str(max_seconds), "--ticks", str(ticks),
                     "--fat-pages", str(fat_pages), "--fat-bytes",
                     str(fat_bytes)]
        self.proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.dir = ""
        self.port = 0
        self.meta: dict[str, Any] = {}

    def __enter__(self) -> "HostileServer":
        self._tmp = tempfile.TemporaryDirectory(prefix="hostile-")
        self.dir = self._tmp.name
        err = open(os.path.join(self.dir, "stderr.txt"), "wb")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, HOSTILE, "--dir", self.dir, *self.args],
                stdout=subprocess.DEVNULL, stderr=err)
        finally:
            err.close()
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        port_file = os.path.join(self.dir, "port")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    self.port = int(f.read())
                with open(os.path.join(self.dir, "hosts.json")) as f:
                    self.meta = json.load(f)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"hostile.py exited with "
                                   f"{self.proc.returncode}: {self.stderr()}")
            time.sleep(0.05)
        raise TimeoutError("hostile.py not ready")

    def stop(self) -> int | None:
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=STOP_TIMEOUT_S)
        return p.returncode

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._tmp is not None:
            if os.environ.get("CRAWLD_HOSTILE_KEEP", "") in ("", "0"):
                self._tmp.cleanup()
            else:
                print(f"kept {self.dir}", file=sys.stderr)
                self._tmp._finalizer.detach()
            self._tmp = None

    def stderr(self) -> str:
        try:
            with open(os.path.join(self.dir, "stderr.txt"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    @property
    def hosts_file(self) -> str:
        return os.path.join(self.dir, "hosts")

    def seeds_file(self, group: str) -> str:
        return os.path.join(self.dir, f"seeds-{group}.txt")

    def hosts(self, group: str | None = None) -> dict[str, dict]:
        return {h: m for h, m in self.meta["hosts"].items()
                if group is None or group in m["groups"]}

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def log(self) -> list[dict[str, Any]]:
        out = []
        try:
            with open(os.path.join(self.dir, "requests.jsonl")) as f:
                for line in f:
                    if line.endswith("\n"):
                        out.append(json.loads(line))
        except FileNotFoundError:
            pass
        return out

    def requests(self) -> list[dict[str, Any]]:
        return [e for e in self.log() if e["ev"] == "request"]

    def final_requests(self) -> list[dict[str, Any]]:
        """Stops the server (in-progress exchanges are logged as aborted),
        then returns every request."""
        self.stop()
        return self.requests()


# ---------------------------------------------------------------- WARC

def read_warc(path: str) -> list[dict[str, Any]]:
    """The records of one .warc.gz (one gzip member per record)."""
    import zlib
    with open(path, "rb") as f:
        raw = f.read()
    parts = []
    view = memoryview(raw)
    while len(view):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts.append(d.decompress(view))
        if not d.eof:
            raise ValueError(f"{path}: truncated gzip member")
        view = view[len(view) - len(d.unused_data):]
    data = b"".join(parts)
    records, pos = [], 0
    while pos < len(data):
        end = data.index(b"\r\n\r\n", pos)
        head = data[pos:end].decode("utf-8", "replace").split("\r\n")
        if not head[0].startswith("WARC/"):
            raise ValueError(f"{path}: bad version line {head[0]!r}")
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers["content-length"])
        block = data[end + 4:end + 4 + n]
        if data[end + 4 + n:end + 8 + n] != b"\r\n\r\n":
            raise ValueError(f"{path}: record not followed by CRLFCRLF")
        records.append({"headers": headers, "block": block,
                        "file": os.path.basename(path)})
        pos = end + 8 + n
    return records


def warc_files(data_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(data_dir, "warc", "*.warc.gz")))


def records(data_dir: str) -> list[dict[str, Any]]:
    out = []
    for p in warc_files(data_dir):
        out.extend(read_warc(p))
    return out


def split_url(uri: str) -> tuple[str, str]:
    """http://host:port/path -> (host, path); host keeps IPv6 brackets."""
    m = re.match(r"^https?://(\[[^\]]*\]|[^/:]*)(?::\d+)?(/.*)?$", uri)
    if not m:
        return "", ""
    return m.group(1).lower(), m.group(2) or "/"


_STATUS = re.compile(rb"^HTTP/\d(?:\.\d)? (\d{3})(?: [^\r\n]*)?\r?\n")


def parse_http_block(block: bytes) -> tuple[int, bytes, bytes] | None:
    """(status, head, payload) of an application/http response block, None
    when it is not an HTTP/1.x response message."""
    m = _STATUS.match(block)
    if not m:
        return None
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = block.find(sep)
        if i >= 0:
            return int(m.group(1)), block[:i + len(sep)], block[i + len(sep):]
    return None


def stored(recs: Iterable[dict], types=("response", "revisit")) -> list[dict]:
    """Response/revisit records with host, path, status, payload, and the
    worker id from the file name (<prefix>-<time>-<worker>-<n>.warc.gz)."""
    out = []
    for r in recs:
        h = r["headers"]
        if h.get("warc-type") not in types:
            continue
        host, path = split_url(h.get("warc-target-uri", ""))
        parsed = parse_http_block(r["block"])
        out.append({
            "type": h["warc-type"], "uri": h.get("warc-target-uri", ""),
            "host": host, "path": path, "headers": h,
            "http": parsed is not None,
            "status": parsed[0] if parsed else None,
            "payload": parsed[2] if parsed else b"",
            "truncated": h.get("warc-truncated"),
            "worker": int(r["file"].split("-")[2]),
            "block_len": len(r["block"]),
        })
    return out


# ---------------------------------------------------------------- checks

def by_host(reqs: Iterable[dict]) -> dict[str, list[dict]]:
    g = collections.defaultdict(list)
    for r in reqs:
        g[r["host"]].append(r)
    for rs in g.values():
        rs.sort(key=lambda r: r["start_us"])
    return g


def not_http(stored_recs: Iterable[dict]) -> list[str]:
    """Records whose block is not an HTTP response message."""
    return [f"{s['type']} {s['uri']} ({s['block_len']} bytes)"
            for s in stored_recs if not s["http"]]


def misdescribed(stored_recs: Iterable[dict], reqs: Iterable[dict],
                 hosts: set[str] | None = None) -> list[str]:
    """Response records without WARC-Truncated whose status and payload do
    not match any complete, well-framed message the server sent for that
    URL: something stored as complete that was not."""
    sent = collections.defaultdict(list)
    for r in reqs:
        sent[(r["host"], r["path"])].append(r)
    out = []
    for s in stored_recs:
        if s["type"] != "response" or not s["http"] or s["truncated"]:
            continue
        if hosts is not None and s["host"] not in hosts:
            continue
        sha = hashlib.sha1(s["payload"]).hexdigest()
        cands = sent.get((s["host"], s["path"]), [])
        if not any(r["complete"] and r["status"] == s["status"] and
                   r["sha1"] == sha for r in cands):
            what = sorted({(r["status"], r["complete"], r["bytes"])
                           for r in cands})
            out.append(f"{s['uri']}: stored {s['status']} with "
                       f"{len(s['payload'])} bytes as complete; the server "
                       f"sent (status, complete, bytes) {what}")
    return out


def bad_truncation(stored_recs: Iterable[dict], reqs: Iterable[dict],
                   max_body: int, hosts: set[str] | None = None) -> list[str]:
    """Truncated records whose WARC-Truncated reason contradicts what the
    server did: "length" (our cap) below the cap; more payload than was
    sent; an unknown reason."""
    sent = collections.defaultdict(list)
    for r in reqs:
        sent[(r["host"], r["path"])].append(r)
    out = []
    for s in stored_recs:
        if s["type"] != "response" or not s["truncated"]:
            continue
        if hosts is not None and s["host"] not in hosts:
            continue
        reason, n = s["truncated"], len(s["payload"])
        most = max((r["bytes"] for r in sent.get((s["host"], s["path"]), [])),
                   default=0)
        if reason not in ("length", "time", "disconnect", "unspecified"):
            out.append(f"{s['uri']}: WARC-Truncated: {reason}")
        elif n > most:
            out.append(f"{s['uri']}: {n} payload bytes, only {most} sent")
        elif reason == "length" and n < max_body:
            cuts = sorted({str(r["cut"]) for r in
                           sent.get((s["host"], s["path"]), [])})
            out.append(f"{s['uri']}: WARC-Truncated: length with {n} < "
                       f"{max_body} bytes (server cut: {cuts})")
    return out


def politeness(reqs: Iterable[dict], min_gap_us: int,
               hosts: Iterable[str]) -> tuple[dict, dict]:
    """({host: max in flight} over 1, {host: [gaps below min_gap_us]}) for
    the given hosts. A gap runs from one exchange's end to the next one's
    start on the same host (robots.txt and redirect hops included).

    An exchange the client left (cut "client": a body cut at the size cap,
    a timeout) ended when the client went, which the server only notices
    some time later: between the last moment the kernel still held the
    connection established (sent_us) and end_us.
    Only what is certain counts: such an exchange ends at sent_us here."""
    hosts = set(hosts)
    over, short = {}, {}

    def end(r: dict) -> int:
        if r.get("cut") == "client":
            return min(r["end_us"], r.get("sent_us", r["end_us"]))
        return r["end_us"]

    for h, rs in by_host(reqs).items():
        if h not in hosts:
            continue
        events = sorted([(r["start_us"], 1) for r in rs] +
                        [(end(r), -1) for r in rs],
                        key=lambda e: (e[0], e[1]))
        cur = best = 0
        for _, d in events:
            cur += d
            best = max(best, cur)
        if best > 1:
            over[h] = best
        gaps = [b["start_us"] - end(a) for a, b in zip(rs, rs[1:])]
        bad = [g for g in gaps if g < min_gap_us]
        if bad:
            short[h] = bad
    return over, short


def owners(stored_recs: Iterable[dict]) -> dict[str, set[int]]:
    """host -> worker ids whose WARC files hold its records."""
    out = collections.defaultdict(set)
    for s in stored_recs:
        out[s["host"]].add(s["worker"])
    return out


def stalls(reqs: Iterable[dict], tick_hosts: Iterable[str],
           host_worker: dict[str, int], limit_us: int,
           alone_limit_us: int = 10_000_000) -> list[str]:
    """Per worker, the gaps longer than limit_us between consecutive
    request starts of its tick hosts (from its first tick to its last)
    during which the other workers' ticks went on (at least 2 starts): the
    machine was running, this worker was not. A worker whose loop is held
    starts no request at all, while a machine starved by other load slows
    every worker alike. With a single worker there is no such control, and
    only gaps over alone_limit_us count."""
    per_worker = collections.defaultdict(list)
    for r in reqs:
        if r["host"] in tick_hosts and r["host"] in host_worker:
            per_worker[host_worker[r["host"]]].append(r["start_us"])
    for starts in per_worker.values():
        starts.sort()
    out = []
    for w, starts in sorted(per_worker.items()):
        others = sorted(t for v, ts in per_worker.items() if v != w
                        for t in ts)
        for a, b in zip(starts, starts[1:]):
            if not others:
                if b - a > alone_limit_us:
                    out.append(f"worker {w}: no tick request for "
                               f"{(b - a) / 1e6:.1f} s")
                continue
            if b - a <= limit_us:
                continue
            went_on = sum(1 for t in others if a < t < b)
            if went_on >= 2:
                out.append(f"worker {w}: no tick request for "
                           f"{(b - a) / 1e6:.1f} s while the others made "
                           f"{went_on}")
    return out


def falsely_truncated(stored_recs: Iterable[dict], reqs: Iterable[dict],
                      quick_us: int = 1_000_000) -> list[str]:
    """Records cut by "time", "disconnect" or "unspecified" although the
    server sent that URL a complete message within quick_us: it had
    arrived whole, the crawler's own clock cut it."""
    quick = {(r["host"], r["path"]) for r in reqs if r["complete"] and
             r["end_us"] - r["start_us"] < quick_us}
    return [f"{s['uri']}: WARC-Truncated: {s['truncated']}"
            for s in stored_recs
            if s["type"] == "response" and
            s["truncated"] in ("time", "disconnect", "unspecified") and
            (s["host"], s["path"]) in quick]
