#!/usr/bin/env python3
"""The demo crawl: the bundled webfarm on loopback, crawled by crawld.

Starts the webfarm and a dnsmasq that answers its host names, writes a crawl
config into the data directory, runs crawld in the foreground (its live
progress line shows on the terminal), then checks the result the way the
tests do: every manifest URL is in the WARCs exactly once and
`crawlctl warc verify` accepts every file.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release",
                    help="build directory with crawld, crawlctl, webfarm")
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--pages", type=int, default=100, help="pages per host")
    ap.add_argument("--min-delay-ms", type=int, default=100,
                    help="politeness delay between requests to one host")
    ap.add_argument("--data", default="demo-data",
                    help="data directory (emptied first)")
    args = ap.parse_args()
    os.environ["CRAWLD_BUILD_DIR"] = os.path.abspath(args.build)

    import crawl_util
    import harness

    farm_cfg = f"""
seed = 1
hosts = {args.hosts}
pages = {args.pages}
page_bytes = 3000
links = 8
cross_host_share = 0.2
relative_share = 0.5
seeds = "all"
"""
    data = os.path.abspath(args.data)
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    with harness.Webfarm(farm_cfg) as farm, \
            harness.Dnsmasq(farm.hosts_file) as dns:
        print(f"demo: webfarm of {args.hosts} hosts x {args.pages} pages on "
              f"127.1.x.x:{farm.port}, dnsmasq on {dns.server}")
        config = os.path.join(data, "demo.toml")
        with open(config, "w") as f:
            f.write(crawl_util.crawl_config(
                dns.server, data,
                **{"politeness.min_delay_ms": args.min_delay_ms,
                   "politeness.delay_factor": 1.0,
                   "fetch.max_connections": 64,
                   # The default: one worker process per core.
                   "workers.count": 0}))
        cmd = [harness.binary("crawld"), "--config", config,
               "--seeds", farm.seeds_file]
        print("demo: " + " ".join(cmd))
        rc = subprocess.call(cmd, timeout=1800)
        if rc != 0:
            print(f"demo: crawld exited with {rc}")
            return 1
        result = crawl_util.CrawlResult(
            subprocess.CompletedProcess(cmd, rc, "", ""), data)
        manifest = set(farm.manifest())
        uris = collections.Counter(result.response_uris())
        once = sum(1 for u in manifest if uris.get(u) == 1)
        extra = set(uris) - manifest
        verify = crawl_util.crawlctl("warc", "verify", *result.warc_files())
        print(verify.stdout.strip())
        print(f"demo: {once}/{len(manifest)} manifest URLs in the WARCs "
              f"exactly once; {len(extra)} unexpected URLs; "
              f"WARC verify {'OK' if verify.returncode == 0 else 'FAILED'}")
        print(f"demo: data in {data} (warc/, logs/, summary.json)")
        ok = once == len(manifest) and not extra and verify.returncode == 0
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
