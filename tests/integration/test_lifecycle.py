"""crawld's process lifecycle with several workers, as an operator meets it:
SIGHUP to the supervisor (`systemctl reload`, issue 14), a full disk
(issue 19 item 3) and a second crawld on a data directory in use (issue 19
item 6). Judged from the webfarm's request log, crawld's exit code, its
summary.json and the files in the data directory."""
import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import crawl_util
import harness

CHAIN = """
seed = 5
hosts = 4
pages = 40
page_bytes = 800
links = 1
cross_host_share = 0.2
relative_share = 0.5
"""

BIG = """
seed = 7
hosts = 24
pages = 40
page_bytes = 1500
links = 6
cross_host_share = 0.3
relative_share = 0.5
seeds = "all"
"""


def write(path, text):
    # Written whole, then renamed: a reload never reads a half-written file.
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def wait_for(pred, timeout):
    """Polls pred() until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    return pred()


def events(path, name):
    """The complete JSON lines of one log file whose event is `name`."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    obj = json.loads(line)
                    if obj.get("event") == name:
                        out.append(obj)
    except FileNotFoundError:
        pass
    return out


def worker_log(data, worker):
    return os.path.join(data, "logs", f"crawld-{worker}.jsonl")


def supervisor_log(data):
    return os.path.join(data, "logs", "supervisor.jsonl")


class SighupReload(unittest.TestCase):
    """Issue 14: SIGHUP to the supervisor reloads the rules in every worker,
    all or nothing, and the crawl goes on."""

    def test_sighup_with_two_workers_reloads_rules_everywhere_14(self):
        # links = 1: each page links only to the next, so /p/<n>.html is
        # discovered only after /p/<n-1>.html is fetched; at 300 ms per
        # request /p/30.html is about 9 s away when the reload happens.
        with harness.Webfarm(CHAIN) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-hup-")
            rules = os.path.join(d, "rules.txt")
            write(rules, "reject regex /never/\n")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(d, "data"),
                **{"workers.count": 2, "crawl.rules_file": rules,
                   "politeness.min_delay_ms": 300})
            try:
                self.assertTrue(farm.wait_requests(
                    lambda rs: any(r["path"] == "/p/3.html" for r in rs),
                    timeout=60), "the crawl did not start")

                # A bad file: reported, the old rules stay in every worker.
                write(rules, "reject regex /never/\nreject hostname x\n")
                os.kill(proc.pid, signal.SIGHUP)
                failed = wait_for(lambda: events(
                    supervisor_log(data), "rules_reload_failed"), 20)
                self.assertTrue(failed, "no rules_reload_failed event")
                self.assertIn("rules.txt:2", str(failed[0]))
                self.assertIsNone(proc.poll(), "crawld exited on SIGHUP")
                for w in (0, 1):
                    self.assertEqual(
                        events(worker_log(data, w), "rules_reloaded"), [],
                        f"worker {w} took a bad rules file")
                seen = len(farm.requests())
                self.assertTrue(farm.wait_requests(
                    lambda rs: len(rs) > seen + 2, timeout=20),
                    "the crawl stopped after a failed reload")

                # A good file: every worker has it.
                write(rules, "reject regex /never/\n"
                             r"reject regex /p/3[0-9]\.html$" "\n")
                os.kill(proc.pid, signal.SIGHUP)
                self.assertTrue(wait_for(lambda: all(
                    events(worker_log(data, w), "rules_reloaded")
                    for w in (0, 1)), 20), "a worker did not reload")
                self.assertTrue(wait_for(lambda: events(
                    supervisor_log(data), "rules_reloaded"), 20))
                before = [r for r in farm.requests()
                          if re.match(r"/p/3[0-9]\.html$", r["path"])]
                self.assertEqual(before, [], "reload came too late")
                self.assertIsNone(proc.poll(), "crawld exited on SIGHUP")
                result = crawl_util.finish_crawl(proc, data, timeout=180)
            finally:
                harness.stop_process(proc)
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            self.assertEqual(result.summary["stop_reason"], "done")
            self.assertEqual(result.count("worker_restarts"), 0)
            reqs = farm.final_requests()
            late = [f"{r['host']}{r['path']}" for r in reqs
                    if re.match(r"/p/3[0-9]\.html$", r["path"])]
            self.assertEqual(late, [])
            # Up to the rejected part, every host's chain was crawled, and
            # the hosts were shared by both workers: the reload reached the
            # two processes that discover links.
            hosts = {r["host"] for r in reqs}
            self.assertEqual(len(hosts), 4)
            for h in hosts:
                self.assertIn("/p/29.html", {r["path"] for r in reqs
                                             if r["host"] == h}, h)
            workers = {w for w, _ in crawl_util.page_records_by_worker(data)}
            self.assertEqual(workers, {0, 1})


class DiskFull(unittest.TestCase):
    """Issue 19 item 3: a worker's fatal store error ends the whole crawl:
    every worker stops, crawld exits 1 with stop_reason store_error, and no
    worker is started again."""

    def test_disk_full_with_two_workers_ends_the_crawl_19(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        with harness.Webfarm(BIG) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            data = tempfile.mkdtemp(prefix="crawld-full-")
            warc = os.path.join(data, "warc")
            os.makedirs(warc)
            # A real full disk for the WARCs (about a tenth of the crawl);
            # the rest of the data directory stays writable, so the
            # summary can tell what happened.
            mount = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=96k,mode=0755", "tmpfs",
                 warc], capture_output=True, text=True, timeout=30)
            if mount.returncode != 0:
                self.skipTest(f"cannot mount tmpfs: {mount.stderr.strip()}")
            try:
                proc, _ = crawl_util.start_crawl(
                    farm, dns, data_dir=data, **{"workers.count": 2})
                result = crawl_util.finish_crawl(proc, data, timeout=120)
            finally:
                subprocess.run(["umount", warc], capture_output=True,
                               timeout=30)
            msg = result.stderr[-3000:]
            self.assertEqual(result.returncode, 1, msg)
            self.assertEqual(result.summary["stop_reason"], "store_error",
                             msg)
            # Each worker started once: no restart loop.
            for w in (0, 1):
                self.assertEqual(
                    len(events(worker_log(data, w), "crawl_start")), 1,
                    f"worker {w}: {msg}")
            self.assertEqual(result.count("worker_restarts"), 0)
            failed = crawl_util.log_events(data, "warc_write_failed")
            self.assertTrue(failed, "no WARC write failed")
            self.assertIn("No space left on device", str(failed))
            # The crawl stopped soon after: far from the whole farm.
            self.assertLess(len(farm.final_requests()),
                            len(farm.manifest()))


class DataDirLock(unittest.TestCase):
    """Issue 19 item 6: a second crawld on a data directory in use is
    refused (exit 2, nothing touched), whatever the worker count of the
    crawl that holds it."""

    def check(self, workers):
        with harness.Webfarm(CHAIN) as farm, \
                harness.Dnsmasq(farm.hosts_file) as dns:
            d = tempfile.mkdtemp(prefix="crawld-lock-")
            proc, data = crawl_util.start_crawl(
                farm, dns, data_dir=os.path.join(d, "data"),
                **{"workers.count": workers,
                   "politeness.min_delay_ms": 50})
            admin_url = os.path.join(data, "run", "admin.url")
            try:
                self.assertTrue(wait_for(
                    lambda: os.path.exists(admin_url) and farm.requests(),
                    60), "the first crawl did not start")
                with open(admin_url) as f:
                    url_before = f.read()
                with open(os.path.join(data, "crawl.toml")) as f:
                    frozen_before = f.read()
                # The second one: same data directory, another config.
                other = os.path.join(d, "other.toml")
                with open(other, "w") as f:
                    f.write(crawl_util.crawl_config(
                        dns.server, data, **{"workers.count": 2,
                                             "politeness.min_delay_ms": 7}))
                second = subprocess.run(
                    [harness.binary("crawld"), "--config", other, "--seeds",
                     farm.seeds_file], capture_output=True, text=True,
                    timeout=60)
                self.assertEqual(second.returncode, 2, second.stderr)
                self.assertIn("in use", second.stderr)
                self.assertIn(f"pid {proc.pid}", second.stderr)
                # Nothing of the running crawl was touched.
                self.assertIsNone(proc.poll())
                with open(admin_url) as f:
                    self.assertEqual(f.read(), url_before)
                with open(os.path.join(data, "crawl.toml")) as f:
                    self.assertEqual(f.read(), frozen_before)
                status = crawl_util.crawlctl("status", "--data", data)
                self.assertEqual(status.returncode, 0,
                                 status.stdout + status.stderr)
                result = crawl_util.finish_crawl(proc, data, timeout=180)
            finally:
                harness.stop_process(proc)
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            self.assertEqual(result.summary["stop_reason"], "done")
            self.assertEqual(result.count("worker_restarts"), 0)
            # Free again once the crawl ended: a resume is accepted.
            again = subprocess.run(
                [harness.binary("crawld"), "--config",
                 os.path.join(data, "test-config.toml"), "--seeds",
                 farm.seeds_file, "--quiet"], capture_output=True,
                text=True, timeout=120)
            self.assertEqual(again.returncode, 0, again.stderr)

    def test_second_crawld_refused_by_a_single_worker_crawl_19(self):
        self.check(workers=1)

    def test_second_crawld_refused_by_a_supervisor_19(self):
        self.check(workers=2)


if __name__ == "__main__":
    unittest.main()
