"""Per-IP politeness across worker processes and nodes (issue 14, part 1;
docs/CLUSTER.md, "Per-IP politeness across workers and nodes").

A web of 200 hosts on 8 loopback addresses: hosts are placed on workers by
name, so every worker (and every node) owns hosts on every address. Judged
from the webfarm's request log alone (the server's side, never crawld's
counters): on each address never two requests in flight at once, every gap
from the end of one response to the start of the next request on that
address at least politeness.ip_min_delay_ms, and every manifest URL fetched
exactly once. Every response waits first_byte_ms before its head, so that
requests in flight last long enough for an overlap to show in the log: the
control crawl with per_ip off shows one, so the judge can fail.
"""
import collections
import os
import tempfile
import unittest

import crawl_util
import harness
import redis_util
import test_cluster

HOSTS = 200
IPS = 8
FIRST_BYTE_MS = 10
IP_MIN_DELAY_MS = 40

FARM = f"""
seed = 14
hosts = {HOSTS}
pages = 5
page_bytes = 800
links = 4
cross_host_share = 0.3
relative_share = 0.5
ips = {IPS}
seeds = "all"

[[profile]]
hosts = "0-{HOSTS - 1}"
first_byte_ms = {FIRST_BYTE_MS}
"""

SETTINGS = {
    "politeness.per_ip": True,
    "politeness.ip_min_delay_ms": IP_MIN_DELAY_MS,
    "politeness.min_delay_ms": 0,
    "politeness.delay_factor": 0.0,
}


def min_gap_per_ip(reqs):
    """ip -> the smallest gap (us) from the end of one response to the start
    of the next request on that address, in the order the server took them
    up (negative: an overlap)."""
    out = {}
    by_ip = collections.defaultdict(list)
    for r in reqs:
        by_ip[r["ip"]].append(r)
    for ip, rs in by_ip.items():
        rs.sort(key=lambda r: r["start_us"])
        gaps = [b["start_us"] - a["end_us"] for a, b in zip(rs, rs[1:])]
        out[ip] = min(gaps) if gaps else None
    return out


def fetch_counts(reqs, port):
    """Canonical URL (as in manifest.txt) -> GET requests logged for it."""
    return collections.Counter(f"http://{r['host']}:{port}{r['path']}"
                               for r in reqs if r["method"] == "GET")


class Judge:

    def assert_polite_and_complete(self, farm, reqs):
        per_ip = harness.max_in_flight_per_ip(reqs)
        self.assertEqual(len(per_ip), IPS, per_ip)
        self.assertEqual({ip: n for ip, n in per_ip.items() if n > 1}, {},
                         "two requests in flight on one address")
        gaps = min_gap_per_ip(reqs)
        short = {ip: g for ip, g in gaps.items()
                 if g is not None and g < IP_MIN_DELAY_MS * 1000}
        self.assertEqual(short, {}, "a gap shorter than ip_min_delay_ms")
        counts = fetch_counts(reqs, farm.port)
        manifest = farm.manifest()
        self.assertEqual(len(manifest), HOSTS * 5)
        self.assertEqual({u: counts[u] for u in manifest if counts[u] != 1},
                         {}, "a manifest URL not fetched exactly once")


class FourWorkers(unittest.TestCase, Judge):
    """One node, 4 worker processes: the machine's table of address slots
    (frontier/ip_slots.h) is what keeps them apart."""

    def test_four_workers_share_each_address(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            result = crawl_util.run_crawl(
                farm, dns, timeout=400,
                **{"workers.count": 4, **SETTINGS})
            self.assertEqual(result.returncode, 0, result.stderr)
            reqs = farm.final_requests()
            self.assert_polite_and_complete(farm, reqs)
            # Every worker fetched: the hosts of each address were spread.
            workers = {w for w, _ in
                       crawl_util.page_records_by_worker(result.data_dir)}
            self.assertEqual(workers, {0, 1, 2, 3})

    def test_control_per_ip_off_overlaps(self):
        """The same web with per_ip off: the log shows requests in flight
        together on one address (so the judge above can fail)."""
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            settings = {**SETTINGS, "politeness.per_ip": False}
            result = crawl_util.run_crawl(
                farm, dns, timeout=400, **{"workers.count": 4, **settings})
            self.assertEqual(result.returncode, 0, result.stderr)
            per_ip = harness.max_in_flight_per_ip(farm.final_requests())
            self.assertGreater(max(per_ip.values()), 1, per_ip)


class TwoNodes(unittest.TestCase, Judge):
    """2 nodes x 2 workers over a real redis-server: the node's leases on
    addresses (cluster/ip_leases.h) keep the nodes apart."""

    def test_two_nodes_of_two_workers_share_each_address(self):
        with harness.Webfarm(FARM) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns, \
                redis_util.RedisServer() as redis:
            base = tempfile.mkdtemp(prefix="crawld-ipnodes-")
            nodes = [test_cluster.Node(farm, dns, redis, i,
                                       os.path.join(base, f"node-{i}"))
                     for i in range(2)]
            try:
                for n in nodes:
                    n.start(nodes=2, **{"workers.count": 2, **SETTINGS})
                codes = [n.wait(timeout=400) for n in nodes]
            finally:
                for n in nodes:
                    if n.proc.poll() is None:
                        harness.stop_process(n.proc)
            for n, code in zip(nodes, codes):
                self.assertEqual(code, 0, f"node {n.node_id}: {n.stderr()}")
                self.assertEqual(n.summary().get("stop_reason"), "done",
                                 f"node {n.node_id}: {n.stderr()}")
            reqs = farm.final_requests()
            self.assert_polite_and_complete(farm, reqs)
            # Both nodes fetched hosts of every address: each address was
            # shared between the nodes, not kept by one.
            node_of_host = {}
            for worker, uri in test_cluster.records(nodes):
                node_of_host[uri.split("/")[2].split(":")[0]] = worker // 2
            nodes_of_ip = collections.defaultdict(set)
            for r in reqs:
                if r["host"] in node_of_host:
                    nodes_of_ip[r["ip"]].add(node_of_host[r["host"]])
            self.assertEqual(
                {ip: s for ip, s in nodes_of_ip.items() if s != {0, 1}}, {})


if __name__ == "__main__":
    unittest.main()
