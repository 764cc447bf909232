"""The Debian package (issue 18): built, installed into a throwaway root by
dpkg, run as its systemd unit would run it, reinstalled, removed, purged.
As an ordinary user (no root, no sudo), offline, on loopback.

The package: `cpack -G DEB` on the build tree under test, with the
packaging rules of cmake/crawld-package.cmake (in CI that tree is the ASan
build, so the packaged binaries are the sanitized ones and Depends also
names libasan8 and libubsan1). CRAWLD_DEB=path/to/crawld_*.deb tests a
given package instead, e.g. the Release one from packaging/build-deb.sh.

Steps (one root, shared; the tests run in their numbered order):
  1. dpkg-deb: the control fields, the exact file list with modes, the
     conffiles, the maintainer scripts; lintian finds no error or warning
     (skipped where lintian is not installed);
  2. `apt-get --simulate install ./crawld_*.deb` on this machine (the one
     that built it) resolves every Depends;
  3. `dpkg --root=ROOT --force-not-root --force-script-chrootless -i`: the
     real dpkg unpacks it and runs the real maintainer scripts, which name
     files under $DPKG_ROOT. The commands they run that need root or a
     running systemd are stand-ins first on PATH (standin.py): adduser and
     getent act on ROOT's /etc/passwd, chown records owners, systemctl and
     deb-systemd-invoke are recorded, and install, chmod and rmdir refuse
     a path outside ROOT; deb-systemd-helper and dpkg-statoverride are the
     real ones. Checked: the crawld system user, /var/lib/crawld 0750
     crawld:crawld, crawl.toml 0640 root:crawld, the service neither
     enabled nor started; the packaged config is conf/crawler.toml with
     data_dir = /var/lib/crawld, and the packaged crawld reads it
     (--print-config) as the built-in defaults but for data_dir; the
     unit's command line names the packaged files, its user is the one
     postinst made; the man pages name every option and command --help
     lists;
  4. the unit's ExecStart (paths moved into ROOT) refuses the shipped seeds
     file: exit 2, which the unit does not restart;
  5. with an operator's edits (user_agent, seeds; for a loopback web also
     dns.servers and network.allow_private) the same command line crawls
     the webfarm: every manifest URL, with that User-Agent, robots.txt
     first, the packaged politeness.min_delay_ms (1000) apart per host;
     the packaged crawlctl answers `status` while it runs and verifies the
     WARCs in /var/lib/crawld;
  6. a reinstall keeps the edited conffiles and restarts a running unit
     (try-restart); remove stops it; purge removes the conffiles and the
     links `systemctl enable` made, and keeps the crawl data; a second
     install finds the user, and a purge with an empty /var/lib/crawld
     removes it.

What it does not prove: that systemd starts the unit (no systemd runs
here, so its sandboxing and StateDirectory= are not exercised), that the
real adduser and chown accept what the scripts give them, nor anything on
another Debian release or architecture.
"""
import difflib
import glob
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import crawl_util  # noqa: E402
import harness  # noqa: E402

UNIT = "/lib/systemd/system/crawld.service"
CONF = "/etc/crawld/crawl.toml"
SEEDS = "/etc/crawld/seeds.txt"
DATA = "/var/lib/crawld"
STANDINS = ("getent", "adduser", "chown", "systemctl", "deb-systemd-invoke",
            "install", "chmod", "rmdir")
CRAWL_TIMEOUT = 120
FARM = """
seed = 3
hosts = 3
pages = 6
page_bytes = 1200
links = 4
cross_host_share = 0.2
relative_share = 0.5
ips = 2
seeds = "all"
"""
USER_AGENT = "crawld-package-test/1.0 (+http://127.0.0.1/operator)"


def run(cmd, timeout=60, check=True, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{shlex.join(cmd)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}")
    return proc


def set_key(text, table, key, value):
    """Replaces `key = ...` in [table] of TOML text, as an operator's edit
    of the conffile would; fails if there is no such line."""
    out, current, done = [], None, False
    for line in text.splitlines(keepends=True):
        m = re.match(r"^\[([A-Za-z0-9_.]+)\]\s*$", line)
        if m:
            current = m.group(1)
        elif current == table and re.match(rf"^{key}\s*=", line):
            line, done = f"{key} = {value}\n", True
        out.append(line)
    if not done:
        raise AssertionError(f"no [{table}] {key} in the config")
    return "".join(out)


def unit_keys(text):
    """First value of every Key=value line of a unit file."""
    keys = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and not line.startswith(("#", ";")):
            keys.setdefault(k.strip(), v.strip())
    return keys


def build_deb(work):
    """The .deb under test: $CRAWLD_DEB, or cpack on the build tree."""
    given = os.environ.get("CRAWLD_DEB")
    if given:
        return os.path.abspath(given)
    build = harness.build_dir()
    out = os.path.join(work, "cpack")
    run(["cpack", "-G", "DEB", "--config",
         os.path.join(build, "CPackConfig.cmake"), "-B", out], timeout=300)
    debs = glob.glob(os.path.join(out, "crawld_*.deb"))
    if len(debs) != 1:
        raise AssertionError(f"cpack made {debs}")
    return debs[0]


class DebianPackage(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="crawld-package-")
        cls.root = os.path.realpath(os.path.join(cls.work, "root"))
        cls.deb = build_deb(cls.work)
        # An empty dpkg database: ROOT holds this package and nothing else.
        admin = os.path.join(cls.root, "var/lib/dpkg")
        for d in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(admin, d))
        open(os.path.join(admin, "status"), "w").close()
        os.makedirs(os.path.join(cls.root, "etc"))
        with open(os.path.join(cls.root, "etc/passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/bash\n")
        with open(os.path.join(cls.root, "etc/group"), "w") as f:
            f.write("root:x:0:\n")
        bin_dir = os.path.join(cls.work, "standin-bin")
        os.makedirs(bin_dir)
        for name in STANDINS:
            os.symlink(os.path.join(HERE, "standin.py"),
                       os.path.join(bin_dir, name))
        cls.env = {"PATH": f"{bin_dir}:/usr/local/sbin:/usr/local/bin:"
                           "/usr/sbin:/usr/bin:/sbin:/bin",
                   "LANG": "C.UTF-8", "STANDIN_ROOT": cls.root}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def read(self, p):
        with open(self.path(p)) as f:
            return f.read()

    def write(self, p, text):
        with open(self.path(p), "w") as f:
            f.write(text)

    def dpkg(self, *args):
        """dpkg on ROOT as an ordinary user, maintainer scripts outside a
        chroot; ROOT has no other package, so Depends are not checked here
        (test 2 checks them against this machine)."""
        return run(["dpkg", f"--root={self.root}", "--log=/dev/null",
                    "--force-not-root", "--force-script-chrootless",
                    "--force-depends", *args], env=self.env, timeout=120)

    def calls(self):
        """The stand-ins' calls since the last calls(): [(cmd, args)]."""
        log = os.path.join(self.work, "standin.log")
        try:
            with open(log) as f:
                out = [(c["cmd"], c["args"]) for c in map(json.loads, f)]
        except FileNotFoundError:
            return []
        os.remove(log)
        return out

    def owners(self, calls):
        """{path in ROOT: owner} from the recorded chown calls."""
        out = {}
        for cmd, args in calls:
            if cmd == "chown":
                for p in args[1:]:
                    out["/" + os.path.relpath(p, self.root)] = args[0]
        return out

    def user(self, name):
        """(uid, gid, home, shell) from ROOT's /etc/passwd, or None."""
        for line in self.read("/etc/passwd").splitlines():
            f = line.split(":")
            if f[0] == name:
                return int(f[2]), int(f[3]), f[5], f[6]
        return None

    def systemd_running(self, running):
        """What the maintainer scripts take as a running systemd."""
        d = self.path("/run/systemd/system")
        if running:
            os.makedirs(d, exist_ok=True)
        elif os.path.isdir(d):
            os.rmdir(d)

    def unit_argv(self, extra=()):
        """The unit's ExecStart with every absolute path moved into ROOT,
        and the environment systemd gives a service."""
        keys = unit_keys(self.read(UNIT))
        argv = [self.path(a) if a.startswith("/") else a
                for a in shlex.split(keys["ExecStart"])]
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
               "LANG": "C.UTF-8", "HOME": self.path(DATA)}
        # The CI build's binaries are sanitized: keep its settings.
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        return argv + list(extra), env

    def require_installed(self):
        if not os.path.exists(self.path("/usr/bin/crawld")):
            self.fail("the package is not installed (test 3 failed)")

    # ------------------------------------------------------------ tests

    def test_1_control_files_and_scripts(self):
        info = run(["dpkg-deb", "-f", self.deb]).stdout
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", info, re.M))
        self.assertEqual(fields["Package"], "crawld")
        with open(os.path.join(SRC, "CMakeLists.txt")) as f:
            version = re.search(r"project\(crawld VERSION ([0-9.]+)",
                                f.read()).group(1)
        self.assertEqual(fields["Version"], f"{version}-1")
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(fields["Architecture"], arch)
        self.assertEqual(os.path.basename(self.deb),
                         f"crawld_{version}-1_{arch}.deb")
        depends = {d.split()[0] for d in fields["Depends"].split(", ")}
        # dpkg-shlibdeps filled in the libraries; adduser is for postinst,
        # procps for the unit's ExecReload=/bin/kill.
        for pkg in ("adduser", "procps", "libc6", "libcurl4", "libc-ares2",
                    "libuv1", "libleveldb1d", "libgumbo1", "libre2-9"):
            self.assertIn(pkg, depends)

        listing = run(["dpkg-deb", "-c", self.deb]).stdout
        files = {}
        for line in listing.splitlines():
            mode, owner = line.split()[:2]
            name = line.split()[-1].lstrip(".")
            if not mode.startswith("d"):
                files[name] = (mode, owner)
        docs = {"/usr/share/doc/crawld/docs/" + os.path.basename(p)
                for p in glob.glob(os.path.join(SRC, "docs", "*.md")) +
                glob.glob(os.path.join(SRC, "docs", "*.png"))}
        want = {"/usr/bin/crawld", "/usr/bin/crawlctl", UNIT, CONF, SEEDS,
                "/usr/share/crawld/crawler.toml",
                "/usr/share/doc/crawld/README.md",
                "/usr/share/doc/crawld/copyright",
                "/usr/share/doc/crawld/changelog.Debian.gz",
                "/usr/share/doc/crawld/grafana/crawld.json",
                "/usr/share/man/man8/crawld.8.gz",
                "/usr/share/man/man1/crawlctl.1.gz",
                "/usr/share/lintian/overrides/crawld"} | docs
        # Exactly these: nothing for /usr/local, no second unit, no test
        # binary.
        self.assertEqual(set(files), want)
        for name, (mode, owner) in files.items():
            self.assertEqual(owner, "root/root", name)
            self.assertEqual(mode, "-rwxr-xr-x" if name.startswith(
                "/usr/bin/") else "-rw-r--r--", name)

        with tempfile.TemporaryDirectory() as ctrl:
            run(["dpkg-deb", "-e", self.deb, ctrl])
            with open(os.path.join(ctrl, "conffiles")) as f:
                self.assertEqual(f.read().split(), [CONF, SEEDS])
            for script in ("postinst", "prerm", "postrm"):
                path = os.path.join(ctrl, script)
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o755)
                run(["sh", "-n", path])
                with open(path) as f:
                    self.assertEqual(f.readline(), "#!/bin/sh\n")

    def test_1b_lintian_finds_no_error_or_warning(self):
        # Info tags (I:) are allowed; packaging/lintian-overrides says why
        # for the tags it overrides.
        if not shutil.which("lintian"):
            self.skipTest("lintian is not installed (Debian package lintian)")
        out = run(["lintian", "--fail-on", "error,warning", self.deb],
                  timeout=300, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertNotRegex(out.stdout, r"(?m)^[EW]: ")

    def test_2_depends_resolve_on_this_machine(self):
        # What `apt-get install ./crawld_*.deb` would do here, simulated
        # (no root needed, nothing downloaded or changed).
        out = run(["apt-get", "--simulate", "-o", "Debug::NoLocking=1",
                   "install", "--no-install-recommends", self.deb],
                  env={**os.environ, "LANG": "C"}, timeout=120, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r"(?m)^Inst crawld ")
        self.assertNotRegex(out.stdout, r"(?m)^Remv ")

    def test_3_install_into_a_throwaway_root(self):
        self.calls()
        self.systemd_running(True)
        self.dpkg("-i", self.deb)
        calls = self.calls()
        status = run(["dpkg-query", f"--root={self.root}", "-W",
                      "-f=${Status} ${Version}", "crawld"]).stdout
        self.assertRegex(status, r"^install ok installed ")

        # postinst: the system user, its data directory, the config's
        # owner and mode; never enabled or started, even with systemd.
        user = self.user("crawld")
        self.assertIsNotNone(user, f"no crawld user: {calls}")
        uid, gid, home, shell = user
        self.assertTrue(100 <= uid < 1000, "not a system user")
        self.assertEqual((home, shell), (DATA, "/usr/sbin/nologin"))
        self.assertIn(("adduser", ["--quiet", "--system", "--group", "--home",
                                   DATA, "--no-create-home", "crawld"]),
                      calls)
        st = os.stat(self.path(DATA))
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o750)
        self.assertEqual(stat.S_IMODE(os.stat(self.path(CONF)).st_mode),
                         0o640)
        self.assertEqual(stat.S_IMODE(os.stat(self.path(SEEDS)).st_mode),
                         0o644)
        self.assertEqual(self.owners(calls),
                         {DATA: "crawld:crawld", CONF: "root:crawld"})
        self.assertEqual([c for c in calls if c[0] in
                          ("systemctl", "deb-systemd-invoke")],
                         [("systemctl", ["--system", "daemon-reload"])])
        # deb-systemd-helper (the real one) recorded what `systemctl enable
        # crawld` would link, for purge; nothing is enabled.
        also = self.read("/var/lib/systemd/deb-systemd-helper-enabled/"
                         "crawld.service.dsh-also")
        self.assertIn("/etc/systemd/system/multi-user.target.wants/"
                      "crawld.service", also)
        self.assertFalse(os.path.lexists(self.path(
            "/etc/systemd/system/multi-user.target.wants/crawld.service")))

        # The packaged config: a comment header, then conf/crawler.toml
        # with the service's data directory.
        with open(os.path.join(SRC, "conf", "crawler.toml")) as f:
            defaults = f.read()
        with open(os.path.join(SRC, "packaging", "crawler.toml.head")) as f:
            head = f.read()
        self.assertTrue(all(l.startswith("#") for l in head.splitlines()))
        self.assertIn(CONF, head)
        self.assertEqual(self.read(CONF), head + defaults.replace(
            '\ndata_dir = "data"\n', f'\ndata_dir = "{DATA}"\n'))
        self.assertNotEqual(self.read(CONF), head + defaults)
        self.assertEqual(self.read("/usr/share/crawld/crawler.toml"),
                         defaults)

        # The packaged crawld reads it: the effective config is the
        # built-in defaults but for data_dir.
        crawld = self.path("/usr/bin/crawld")
        packaged = run([crawld, "--config", self.path(CONF),
                        "--print-config"]).stdout
        builtin = run([crawld, "--print-config"]).stdout
        self.assertRegex(packaged, rf'(?m)^data_dir = "{DATA}"$')
        # The only differences: the file it was read from, and data_dir
        # (noted with its default).
        changed = [l for l in difflib.ndiff(builtin.splitlines(),
                                            packaged.splitlines())
                   if l[:2] in ("- ", "+ ")]
        self.assertEqual(sorted(changed), sorted([
            f"+ # Frozen from {self.path(CONF)}",
            '+ # Default: "data"', '- data_dir = "data"',
            f'+ data_dir = "{DATA}"']))
        # ... and so does the unit's command line (--data wins).
        argv, env = self.unit_argv(["--print-config"])
        out = run(argv, env=env).stdout
        self.assertEqual(out, packaged.replace(
            f'data_dir = "{DATA}"', f'data_dir = "{self.path(DATA)}"'))

        # The unit: the packaged binary and conffiles, the user postinst
        # made, a config error not restarted, reload by SIGHUP through
        # /bin/kill (procps, in Depends), writes only to the data dir.
        keys = unit_keys(self.read(UNIT))
        self.assertEqual(shlex.split(keys["ExecStart"]),
                         ["/usr/bin/crawld", "--config", CONF, "--seeds",
                          SEEDS, "--data", DATA, "--quiet"])
        self.assertEqual((keys["User"], keys["Group"]), ("crawld", "crawld"))
        self.assertEqual(keys["ExecReload"], "/bin/kill -HUP $MAINPID")
        self.assertEqual(run(["dpkg", "-S", "/bin/kill"]).stdout.split(":")[0],
                         "procps")
        self.assertIn("2", keys["RestartPreventExitStatus"].split())
        self.assertEqual(keys["ReadWritePaths"], DATA)
        self.assertEqual(keys["StateDirectory"], os.path.basename(DATA))
        self.assertEqual(keys["WantedBy"], "multi-user.target")

        # Every binary's libraries resolve.
        for b in ("crawld", "crawlctl"):
            ldd = run(["ldd", self.path(f"/usr/bin/{b}")]).stdout
            self.assertNotIn("not found", ldd)

    def test_3b_man_pages_name_every_option_and_command(self):
        self.require_installed()
        man = run(["zcat", self.path("/usr/share/man/man8/crawld.8.gz")])
        man = man.stdout.replace("\\-", "-")
        usage = run([self.path("/usr/bin/crawld"), "--help"], check=False)
        options = set(re.findall(r"(?m)^\s+(--[a-z-]+)",
                                 usage.stdout + usage.stderr))
        self.assertGreater(len(options), 8, usage.stdout + usage.stderr)
        for opt in options:
            self.assertIn(opt, man, f"crawld.8 lacks {opt}")
        man = run(["zcat", self.path("/usr/share/man/man1/crawlctl.1.gz")])
        man = man.stdout.replace("\\-", "-")
        usage = run([self.path("/usr/bin/crawlctl"), "--help"], check=False)
        text = usage.stdout + usage.stderr
        commands = set(re.findall(r"(?m)^  ([a-z][a-z-]+)\b", text))
        self.assertGreater(len(commands), 8, text)
        for cmd in commands:
            self.assertIn(cmd, man, f"crawlctl.1 lacks {cmd}")

    def test_4_unit_refuses_the_shipped_seeds(self):
        self.require_installed()
        argv, env = self.unit_argv()
        out = run(argv, env=env, check=False)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("no valid seed URLs", out.stderr)
        self.assertEqual(os.listdir(self.path(DATA)), [])

    def test_5_unit_crawls_the_webfarm(self):
        self.require_installed()
        with harness.Webfarm(FARM, max_seconds=CRAWL_TIMEOUT + 30) as farm, \
                harness.Dnsmasq(farm.hosts_file,
                                max_seconds=CRAWL_TIMEOUT + 30) as dns:
            # The operator's edits: who we are, what to crawl and, because
            # this web lives on loopback, its name server and the private
            # address guard. Everything else is the packaged config.
            conf = self.read(CONF)
            conf = set_key(conf, "crawl", "user_agent", json.dumps(USER_AGENT))
            conf = set_key(conf, "dns", "servers", json.dumps([dns.server]))
            conf = set_key(conf, "network", "allow_private", "true")
            self.write(CONF, conf)
            self.write(SEEDS, self.read(SEEDS) +
                       "".join(u + "\n" for u in farm.seeds()))

            argv, env = self.unit_argv()
            log_path = os.path.join(self.work, "unit.log")
            with open(log_path, "w") as log:
                proc = subprocess.Popen(argv, env=env, stdout=log,
                                        stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
            try:
                url_file = self.path(f"{DATA}/run/admin.url")
                deadline = time.monotonic() + 30
                while not os.path.exists(url_file):
                    self.assertIsNone(proc.poll(), self.unit_log())
                    self.assertLess(time.monotonic(), deadline,
                                    "no admin.url: " + self.unit_log())
                    time.sleep(0.1)
                status = run([self.path("/usr/bin/crawlctl"), "status",
                              "--data", self.path(DATA), "--json"],
                             check=False)
                proc.wait(timeout=CRAWL_TIMEOUT)
            finally:
                harness.stop_process(proc)
            self.assertEqual(proc.returncode, 0, self.unit_log())
            self.assertEqual(status.returncode, 0, status.stderr)
            self.assertIn("state", json.loads(status.stdout))
            # Started again (systemctl start), the ended crawl ends at once
            # with exit 0 and fetches nothing: the seeds are not new.
            time.sleep(0.3)  # the farm flushes its log every 100 ms
            before = len(farm.requests())
            again = run(argv, env=env, timeout=60, check=False)
            self.assertEqual(again.returncode, 0, again.stderr)
            time.sleep(0.3)
            self.assertEqual(len(farm.requests()), before)
            reqs = farm.final_requests()
            manifest = set(farm.manifest())

        fetched = harness.fetched_urls(reqs, farm.port)
        self.assertEqual(manifest - fetched, set(), "manifest URLs missed")
        self.assertEqual({r["ua"] for r in reqs}, {USER_AGENT})
        for host, r in harness.first_request_per_host(reqs).items():
            self.assertEqual(r["path"], "/robots.txt", host)
        # The packaged politeness.min_delay_ms = 1000 between two requests
        # to one host (by the webfarm's clock; a margin for its stamps).
        for host, gap in harness.min_gap_per_host(reqs).items():
            if gap is not None:
                self.assertGreaterEqual(gap, 990_000, host)

        warcs = glob.glob(self.path(f"{DATA}/warc/*.warc.gz"))
        self.assertTrue(warcs)
        uris = set()
        for w in warcs:
            for r in crawl_util.read_warc(w):
                if r["headers"].get("warc-type") == "response":
                    uris.add(r["headers"]["warc-target-uri"])
        self.assertLessEqual(manifest, uris)
        run([self.path("/usr/bin/crawlctl"), "warc", "verify", *warcs],
            timeout=120)

    def test_6_reinstall_remove_purge(self):
        self.require_installed()
        conf, seeds = self.read(CONF), self.read(SEEDS)
        self.assertIn(USER_AGENT, conf, "test 5 did not edit the config")
        self.calls()

        # A reinstall (as an upgrade): the edited conffiles stay, the
        # config's mode too, and a running crawl restarts on the new binary.
        self.dpkg("-i", self.deb)
        calls = self.calls()
        self.assertEqual((self.read(CONF), self.read(SEEDS)), (conf, seeds))
        self.assertEqual(stat.S_IMODE(os.stat(self.path(CONF)).st_mode),
                         0o640)
        self.assertNotIn("adduser", [c for c, _ in calls])
        self.assertEqual([c for c in calls if c[0] in
                          ("systemctl", "deb-systemd-invoke")],
                         [("systemctl", ["--system", "daemon-reload"]),
                          ("deb-systemd-invoke",
                           ["try-restart", "crawld.service"])])

        # The operator enabled the service: `systemctl enable crawld`.
        wants = self.path("/etc/systemd/system/multi-user.target.wants")
        os.makedirs(wants)
        os.symlink(UNIT, os.path.join(wants, "crawld.service"))

        # remove: the crawl is stopped; conffiles and data stay.
        self.dpkg("-r", "crawld")
        calls = self.calls()
        self.assertEqual([c for c in calls if c[0] in
                          ("systemctl", "deb-systemd-invoke")],
                         [("deb-systemd-invoke", ["stop", "crawld.service"]),
                          ("systemctl", ["--system", "daemon-reload"])])
        for p in ("/usr/bin/crawld", "/usr/bin/crawlctl", UNIT):
            self.assertFalse(os.path.exists(self.path(p)), p)
        self.assertEqual(self.read(CONF), conf)
        self.assertTrue(glob.glob(self.path(f"{DATA}/warc/*.warc.gz")))

        # purge: conffiles and enablement go; the crawl's WARCs stay.
        self.dpkg("-P", "crawld")
        for p in ("/etc/crawld", "/usr/share/doc/crawld",
                  "/etc/systemd/system/multi-user.target.wants/"
                  "crawld.service"):
            self.assertFalse(os.path.lexists(self.path(p)), p)
        self.assertTrue(glob.glob(self.path(f"{DATA}/warc/*.warc.gz")))
        self.assertIsNotNone(self.user("crawld"))

        # The operator moves the crawl away; a new install (the user
        # exists: no adduser) and a purge leave no /var/lib/crawld.
        os.rename(self.path(DATA), self.path(DATA + ".old"))
        self.systemd_running(False)
        self.calls()
        self.dpkg("-i", self.deb)
        calls = self.calls()
        self.assertNotIn("adduser", [c for c, _ in calls])
        self.assertEqual([c for c in calls if c[0] in
                          ("systemctl", "deb-systemd-invoke")], [])
        self.assertTrue(os.path.isdir(self.path(DATA)))
        self.assertIn(DATA, self.owners(calls))
        self.dpkg("-P", "crawld")
        self.assertFalse(os.path.exists(self.path(DATA)))
        self.assertFalse(os.path.exists(self.path("/usr/bin/crawld")))

    def unit_log(self):
        try:
            with open(os.path.join(self.work, "unit.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""


if __name__ == "__main__":
    unittest.main(verbosity=2)
