"""One ordered feed (issue 14 part 7): an indexer reading the feed of a
2-node x 2-worker crawl over a real redis-server, killed (SIGKILL) and
restarted from its cursor mid-crawl, sees every record exactly once, in
ascending feed ID order. Judged from the WARC files of both nodes (parsed
here, member by member), never from crawld's counters.

The indexer is this file run as a script: it reads with `crawlctl feed`,
one --node per node (the node's supervisor API while its admin.url is
there, its data directory once the node has stopped), and keeps its state
(the records seen and the cursor: one number) in one file replaced by
rename after each batch, so a kill at any point loses or repeats nothing
of its own."""
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

import harness

FARM = """
seed = 23
hosts = 16
pages = 50
page_bytes = 1200
links = 5
cross_host_share = 0.3
relative_share = 0.5
seeds = "all"
"""

MIN_DELAY_MS = 120


def node_sources(data_dirs):
    """--node values: the API of a running node, else its data dir."""
    out = []
    for d in data_dirs:
        try:
            with open(os.path.join(d, "run", "admin.url")) as f:
                url = f.read().strip()
        except FileNotFoundError:
            url = ""
        out.append(url if url.startswith("http") else d)
    return out


def load_state(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"cursor": "", "seen": [], "batches": 0, "via_api": 0}


def save_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def indexer(state_path, max_seconds, drain, data_dirs):
    """The indexer process: batches until killed, `max_seconds`, or (with
    drain) the first empty batch."""
    deadline = time.time() + max_seconds
    while time.time() < deadline:
        state = load_state(state_path)
        sources = node_sources(data_dirs)
        cmd = [harness.binary("crawlctl"), "feed", "--once", "--json",
               "--limit", "50", "--timeout-ms", "3000"]
        if state["cursor"]:
            cmd += ["--since", state["cursor"]]
        for s in sources:
            cmd += ["--node", s]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and not drain:
            # A node stopping (3: its API gone; its dir next time).
            sys.stderr.write(r.stderr)
            time.sleep(0.2)
            continue
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            sys.exit(1)
        lines = [json.loads(line) for line in r.stdout.splitlines()]
        for e in lines:
            node = sources.index(e["source"])
            state["seen"].append([e["id"], node, e["warc"], e["offset"],
                                  e["url"]])
            if e["source"].startswith("http"):
                state["via_api"] += 1
        if lines:
            state["cursor"] = lines[-1]["id"]
            state["batches"] += 1
            save_state(state_path, state)
        elif drain:
            return
        else:
            time.sleep(0.1)


def warc_records(path):
    """[(offset, headers)] of every record of a record-at-a-time .warc.gz:
    each gzip member is one record."""
    with open(path, "rb") as f:
        raw = f.read()
    out = []
    view = memoryview(raw)
    offset = 0
    while len(view):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = d.decompress(view)
        if not d.eof:
            raise ValueError(f"{path}: truncated gzip member at {offset}")
        used = len(view) - len(d.unused_data)
        head = data[:data.index(b"\r\n\r\n")].decode("utf-8", "replace")
        headers = {}
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        out.append((offset, headers))
        offset += used
        view = view[used:]
    return out


class IndexerKilledMidCrawl(unittest.TestCase):

    def start_indexer(self, state, dirs, max_seconds=120, drain=False):
        args = [sys.executable, os.path.abspath(__file__), "--indexer", state,
                str(max_seconds), "1" if drain else "0", *dirs]
        with open(state + ".err", "a") as err:
            return subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                    stderr=err)

    def indexer_errors(self, state):
        try:
            with open(state + ".err") as f:
                return f.read()[-3000:]
        except FileNotFoundError:
            return ""

    def kill_indexer(self, proc):
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def wait_seen(self, state, count, nodes, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(load_state(state)["seen"]) >= count:
                return True
            if any(n.proc.poll() is not None for n in nodes):
                return False
            time.sleep(0.05)
        return False

    def test_every_record_once_in_id_order_across_indexer_kills(self):
        # Imported here: test_cluster imports this module's neighbours, and
        # the indexer process needs none of it.
        import redis_util
        from test_cluster import Node
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns, \
                redis_util.RedisServer() as redis:
            base = tempfile.mkdtemp(prefix="crawld-feed-cluster-")
            work = tempfile.mkdtemp(prefix="crawld-indexer-")
            state = os.path.join(work, "state.json")
            nodes = [Node(farm, dns, redis, i,
                          os.path.join(base, f"node-{i}"))
                     for i in range(2)]
            for n in nodes:
                n.start(nodes=2, **{"politeness.min_delay_ms": MIN_DELAY_MS})
            dirs = [n.data for n in nodes]
            proc = None
            kills_mid_crawl = 0
            try:
                # Both supervisors' APIs up before the indexer starts.
                deadline = time.time() + 60
                while time.time() < deadline and not all(
                        s.startswith("http") for s in node_sources(dirs)):
                    time.sleep(0.1)
                self.assertTrue(all(s.startswith("http")
                                    for s in node_sources(dirs)))
                total = len(farm.manifest())
                # Three indexer runs during the crawl, each killed -9 once
                # it has read a little more.
                for target in (total // 8, total // 4, total // 2):
                    proc = self.start_indexer(state, dirs)
                    reached = self.wait_seen(state, target, nodes)
                    if reached and all(n.proc.poll() is None for n in nodes):
                        kills_mid_crawl += 1
                    self.kill_indexer(proc)
                    proc = None
                    if not reached:
                        break
                # A fourth follows to the end of the crawl.
                proc = self.start_indexer(state, dirs, max_seconds=300)
                codes = [n.wait(timeout=300) for n in nodes]
                self.kill_indexer(proc)
                proc = None
            finally:
                if proc is not None:
                    self.kill_indexer(proc)
                for n in nodes:
                    if n.proc.poll() is None:
                        harness.stop_process(n.proc)
            for n, code in zip(nodes, codes):
                self.assertEqual(code, 0, f"node {n.node_id}: {n.stderr()}")
            self.assertGreaterEqual(
                kills_mid_crawl, 2,
                "the crawl ended before the kills: " +
                self.indexer_errors(state))
            # The last indexer run drains what is left from the data dirs.
            drain = self.start_indexer(state, dirs, max_seconds=120,
                                       drain=True)
            drain.wait(timeout=180)
            self.assertEqual(drain.returncode, 0, self.indexer_errors(state))

            st = load_state(state)
            seen = st["seen"]
            ids = [int(s[0]) for s in seen]
            # In ascending ID order, every ID once.
            self.assertEqual(ids, sorted(ids))
            self.assertEqual(len(ids), len(set(ids)))
            self.assertGreater(st["via_api"], 0, "no record through an API")

            # The WARCs' response and revisit records of both nodes, each
            # with the feed ID in its Crawld-Feed-ID field.
            stored = {}
            for i, d in enumerate(dirs):
                for path in glob.glob(os.path.join(d, "warc", "*.warc.gz")):
                    name = os.path.basename(path)
                    worker = int(name.split("-")[-2])
                    for off, h in warc_records(path):
                        if h.get("warc-type") not in ("response", "revisit"):
                            continue
                        fid = h.get("crawld-feed-id")
                        self.assertIsNotNone(fid, f"{name}@{off}")
                        stored[(i, name, off)] = (int(fid), worker,
                                                  h["warc-target-uri"])
            self.assertGreater(len(stored), total // 2)
            got = collections.Counter((s[1], s[2], s[3]) for s in seen)
            self.assertEqual({k: c for k, c in got.items() if c > 1}, {},
                             "a record seen twice")
            self.assertEqual(set(got) - set(stored), set(),
                             "seen, but not in the WARCs")
            self.assertEqual(set(stored) - set(got), set(),
                             "in the WARCs, never seen")
            for s in seen:
                fid, worker, uri = stored[(s[1], s[2], s[3])]
                self.assertEqual(int(s[0]), fid)
                self.assertEqual(s[4], uri)
                # The ID names the node and the worker that wrote it.
                node_bits = (fid >> 12) & 0x3ff
                worker_bits = (fid >> 4) & 0xff
                self.assertEqual(node_bits, s[1])
                self.assertEqual(worker_bits, worker % 256)
            print(f"\nfeed of 2 nodes x 2 workers: {len(seen)} records in "
                  f"{st['batches']} batches, {st['via_api']} through the "
                  f"supervisors' APIs, {kills_mid_crawl} indexer kills "
                  f"mid-crawl")
            # Every page of the farm is in there (the crawl is whole).
            uris = {v[2] for v in stored.values()}
            self.assertEqual(set(farm.manifest()) - uris, set())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--indexer":
        indexer(sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1",
                sys.argv[5:])
    else:
        unittest.main()
