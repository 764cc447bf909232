"""Helpers for tests that run crawld against the webfarm.

Everything here judges the crawler from the outside: the webfarm's request
log, the WARC files (parsed here independently of crawld's own reader), and
crawld's exit code and summary.
"""
import base64
import glob
import gzip
import hashlib
import json
import os
import subprocess
import tempfile
import zlib

import harness


def crawl_config(dns_server, data_dir, **overrides):
    """A crawld TOML config for a loopback test crawl.

    overrides: {"politeness.min_delay_ms": 0, ...} (dotted table.key).
    """
    values = {
        "crawl.user_agent": "crawld-test/0.1 (+http://127.0.0.1/contact)",
        "crawl.data_dir": data_dir,
        "crawl.progress_interval_s": 1.0,
        "fetch.connect_timeout_ms": 2000,
        "fetch.total_timeout_ms": 5000,
        "fetch.max_connections": 32,
        "politeness.min_delay_ms": 0,
        "politeness.delay_factor": 0.0,
        "dns.servers": [dns_server],
        "dns.timeout_ms": 1000,
        "network.allow_private": True,
        # One worker unless a test asks for more (the default is one per
        # core): most tests judge one process's behaviour.
        "workers.count": 1,
    }
    values.update(overrides)
    tables = {}
    for key, value in values.items():
        table, name = key.split(".", 1)
        tables.setdefault(table, {})[name] = value
    lines = []
    for table, kv in tables.items():
        lines.append(f"[{table}]")
        for name, value in kv.items():
            lines.append(f"{name} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


class CrawlResult:
    def __init__(self, proc, data_dir):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.data_dir = data_dir
        path = os.path.join(data_dir, "summary.json")
        self.summary = None
        if os.path.exists(path):
            with open(path) as f:
                self.summary = json.load(f)

    def count(self, name):
        return (self.summary or {}).get("counts", {}).get(name, 0)

    def warc_files(self):
        warc_dir = os.path.join(self.data_dir, "warc")
        if not os.path.isdir(warc_dir):
            return []
        return sorted(os.path.join(warc_dir, f) for f in os.listdir(warc_dir)
                      if f.endswith(".warc.gz"))

    def records(self):
        out = []
        for path in self.warc_files():
            out.extend(read_warc(path))
        return out

    def response_uris(self, include_robots=False):
        uris = [r["headers"].get("warc-target-uri") for r in self.records()
                if r["headers"].get("warc-type") == "response"]
        if not include_robots:
            uris = [u for u in uris if not u.endswith("/robots.txt")]
        return uris


def run_crawl(farm, dns, timeout=300, seeds_file=None, extra_args=(),
              data_dir=None, **overrides):
    """Runs crawld to completion against farm; returns a CrawlResult."""
    if data_dir is None:
        data_dir = tempfile.mkdtemp(prefix="crawld-data-")
    config_path = os.path.join(data_dir, "test-config.toml")
    with open(config_path, "w") as f:
        f.write(crawl_config(dns.server, data_dir, **overrides))
    cmd = [harness.binary("crawld"), "--config", config_path,
           "--seeds", seeds_file or farm.seeds_file, *extra_args]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)
    return CrawlResult(proc, data_dir)


def read_warc(path):
    """Parses a .warc.gz file record by record (independent of crawld)."""
    with open(path, "rb") as f:
        raw = f.read()
    parts = []
    # Each record is its own gzip member: inflate member by member. The
    # pieces are joined once at the end (appending to bytes is quadratic).
    view = memoryview(raw)
    while len(view):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts.append(d.decompress(view))
        if not d.eof:
            raise ValueError(f"{path}: truncated gzip member")
        view = view[len(view) - len(d.unused_data):]
    data = b"".join(parts)
    records = []
    pos = 0
    while pos < len(data):
        end = data.index(b"\r\n\r\n", pos)
        head = data[pos:end].decode("utf-8", "replace").split("\r\n")
        if not head[0].startswith("WARC/"):
            raise ValueError(f"{path}: bad version line {head[0]!r}")
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers["content-length"])
        block = data[end + 4:end + 4 + length]
        if data[end + 4 + length:end + 8 + length] != b"\r\n\r\n":
            raise ValueError(f"{path}: record not followed by CRLFCRLF")
        records.append({"headers": headers, "block": block})
        pos = end + 8 + length
    return records


def payload_digest(block):
    """sha1:<BASE32> of the HTTP body in a response block, as WARC writes
    it; computed here, so that it does not rest on crawld's header."""
    head_end = block.index(b"\r\n\r\n") + 4
    return "sha1:" + base64.b32encode(
        hashlib.sha1(block[head_end:]).digest()).decode()


def status_of(block):
    """The HTTP status code of a response block."""
    return int(block.split(b" ", 2)[1])


def crawlctl(*args, input_text=None, timeout=120):
    return subprocess.run([harness.binary("crawlctl"), *args],
                          capture_output=True, text=True, input=input_text,
                          timeout=timeout)


_WARCIO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "..", "warcio")


def warcio_check(*files, timeout=300):
    """Reads the WARC files with warcio.js (tests/warcio/check.mjs), a reader
    independent of crawld's: every record parsed, block and payload digests
    recomputed, HTTP messages parsed, revisits' references resolved among
    `files`. Returns (ok, summary dict, output). Node.js and the locked
    packages come from scripts/setup.sh; their absence is a failure, not a
    skip."""
    script = os.path.join(_WARCIO_DIR, "check.mjs")
    if not os.path.isdir(os.path.join(_WARCIO_DIR, "node_modules", "warcio")):
        return False, {}, "tests/warcio/node_modules missing: run scripts/setup.sh"
    proc = subprocess.run(["node", script, *files], capture_output=True,
                          text=True, timeout=timeout)
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        summary = {}
    return proc.returncode == 0, summary, proc.stdout + proc.stderr


# ---------------------------------------------------------------- additions
# (issues 3 and 4: the event log, crawls to signal, start-up failures)

def log_events(data_dir, event=None):
    """The parsed lines of <data>/logs/crawld.jsonl and, with several
    workers, crawld-<worker>.jsonl (complete lines only), optionally only
    those whose "event" is `event`."""
    logs = os.path.join(data_dir, "logs")
    paths = [os.path.join(logs, "crawld.jsonl")] + sorted(
        glob.glob(os.path.join(logs, "crawld-*.jsonl")))
    out = []
    for path in paths:
        try:
            with open(path) as f:
                for line in f:
                    if not line.endswith("\n"):
                        continue  # a partial last line of a running crawl
                    obj = json.loads(line)
                    if event is None or obj.get("event") == event:
                        out.append(obj)
        except FileNotFoundError:
            pass
    return out


def write_config(dns_server, data_dir, **overrides):
    """Writes the test config into data_dir; returns its path."""
    path = os.path.join(data_dir, "test-config.toml")
    with open(path, "w") as f:
        f.write(crawl_config(dns_server, data_dir, **overrides))
    return path


def start_crawl(farm, dns, data_dir=None, **overrides):
    """Starts crawld without waiting (for tests that signal it); returns
    (Popen, data_dir). Stdout and stderr go to files in data_dir. The caller
    must end it with finish_crawl() or harness.stop_process()."""
    if data_dir is None:
        data_dir = tempfile.mkdtemp(prefix="crawld-data-")
    os.makedirs(data_dir, exist_ok=True)
    config_path = write_config(dns.server, data_dir, **overrides)
    out = open(os.path.join(data_dir, "stdout.txt"), "w")
    err = open(os.path.join(data_dir, "stderr.txt"), "w")
    try:
        proc = subprocess.Popen(
            [harness.binary("crawld"), "--config", config_path, "--seeds",
             farm.seeds_file], stdout=out, stderr=err, text=True)
    finally:
        out.close()
        err.close()
    return proc, data_dir


class _Finished:
    def __init__(self, returncode, data_dir):
        self.returncode = returncode
        with open(os.path.join(data_dir, "stdout.txt")) as f:
            self.stdout = f.read()
        with open(os.path.join(data_dir, "stderr.txt")) as f:
            self.stderr = f.read()


def finish_crawl(proc, data_dir, timeout=120):
    """Waits (bounded) for a crawl from start_crawl(); stops it by PID if
    it overruns. Returns a CrawlResult."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        harness.stop_process(proc)
    return CrawlResult(_Finished(proc.returncode, data_dir), data_dir)


def run_crawld_bad_start(work_dir, seed="http://127.0.0.1:1/", **overrides):
    """Runs crawld with a config that should make it refuse to start (bad
    rules or overrides file); returns the CompletedProcess. DNS points at a
    closed loopback port: nothing may be fetched anyway."""
    data_dir = os.path.join(work_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    config_path = write_config("127.0.0.1:9", data_dir, **overrides)
    return subprocess.run([harness.binary("crawld"), "--config", config_path,
                           "--seed", seed], capture_output=True, text=True,
                          timeout=60)


def page_records_by_worker(*data_dirs):
    """[(worker id, uri)] of every response/revisit record (robots.txt
    excluded) in the WARCs of the data directories; the worker id comes from
    the file name (<prefix>-<time>-<worker>-<n>.warc.gz)."""
    out = []
    for data in data_dirs:
        for path in sorted(glob.glob(os.path.join(data, "warc",
                                                  "*.warc.gz"))):
            worker = int(os.path.basename(path).split("-")[2])
            for r in read_warc(path):
                h = r["headers"]
                if h.get("warc-type") in ("response", "revisit"):
                    uri = h["warc-target-uri"]
                    if not uri.endswith("/robots.txt"):
                        out.append((worker, uri))
    return out
