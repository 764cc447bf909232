#!/usr/bin/env python3
"""Stand-ins for the commands crawld's maintainer scripts run, used by
test_package.py when it installs the package into a throwaway root as an
ordinary user (dpkg --root ... --force-script-chrootless).

Installed as symlinks named after the command, in a directory put first on
PATH; every call is appended as a JSON line to <root>/../standin.log.

- getent, adduser, chown: need root, or act on the running system's user
  database. Here they act on the throwaway root's /etc/passwd and
  /etc/group, as the real ones would on a real root; chown records the
  owner instead of setting it, and refuses a path outside the root (a
  script that forgot $DPKG_ROOT).
- systemctl, deb-systemd-invoke: talk to a running systemd; recorded only.
- install, chmod, rmdir: the real commands, once every absolute path they
  are given is checked to be inside the root.

The root is $STANDIN_ROOT (set by the test; dpkg passes the environment to
the scripts).
"""
import json
import os
import sys

ROOT = os.environ["STANDIN_ROOT"]
LOG = os.path.join(os.path.dirname(ROOT), "standin.log")
REAL = {"install": "/usr/bin/install", "chmod": "/bin/chmod",
        "rmdir": "/bin/rmdir"}


def fail(msg):
    sys.stderr.write(f"{os.path.basename(sys.argv[0])} (stand-in): {msg}\n")
    sys.exit(1)


def entries(db):
    """{name: fields} of <root>/etc/passwd or group."""
    out = {}
    try:
        with open(os.path.join(ROOT, "etc", db)) as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                out[fields[0]] = fields
    except FileNotFoundError:
        pass
    return out


def inside_root(path):
    real = os.path.realpath(path)
    return real == ROOT or real.startswith(ROOT + "/")


def getent(args):
    if len(args) != 2 or args[0] not in ("passwd", "group"):
        fail(f"unsupported: {args}")
    fields = entries(args[0]).get(args[1])
    if fields is None:
        sys.exit(2)  # getent: key not found
    print(":".join(fields))


def adduser(args):
    """adduser --system [--group] [--home DIR] [--no-create-home]
    [--shell SHELL] [--quiet] NAME, as Debian 12's adduser does it: a uid
    and gid from 100-999, shell /usr/sbin/nologin."""
    flags = {"--quiet", "--system", "--group", "--no-create-home",
             "--disabled-password", "--disabled-login"}
    valued = {"--home", "--shell", "--gecos", "--uid", "--gid"}
    opts, names, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a in flags:
            opts[a] = True
        elif a in valued and i + 1 < len(args):
            opts[a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            fail(f"unknown option {a}")
        else:
            names.append(a)
        i += 1
    if "--system" not in opts or len(names) != 1:
        fail(f"expected adduser --system ... NAME: {args}")
    name = names[0]
    users, groups = entries("passwd"), entries("group")
    if name in users:
        return  # adduser --system: an existing system user is fine
    used = {int(f[2]) for f in users.values()} | \
        {int(f[2]) for f in groups.values()}
    uid = next(n for n in range(100, 1000) if n not in used)
    gid = uid if "--group" in opts else 65534
    home = opts.get("--home", "/nonexistent")
    shell = opts.get("--shell", "/usr/sbin/nologin")
    if "--group" in opts:
        with open(os.path.join(ROOT, "etc", "group"), "a") as f:
            f.write(f"{name}:x:{gid}:\n")
    with open(os.path.join(ROOT, "etc", "passwd"), "a") as f:
        f.write(f"{name}:x:{uid}:{gid}::{home}:{shell}\n")
    if "--no-create-home" not in opts:
        os.makedirs(os.path.join(ROOT, home.lstrip("/")), exist_ok=True)


def chown(args):
    if len(args) < 2 or args[0].startswith("-"):
        fail(f"expected chown OWNER[:GROUP] PATH...: {args}")
    user, _, group = args[0].partition(":")
    if user != "root" and user not in entries("passwd"):
        fail(f"invalid user: {user!r}")
    if group and group != "root" and group not in entries("group"):
        fail(f"invalid group: {group!r}")
    for path in args[1:]:
        if not inside_root(path):
            fail(f"{path} is outside the root {ROOT}")
        if not os.path.lexists(path):
            fail(f"cannot access {path!r}: No such file or directory")


def guarded(name, args):
    for a in args:
        if a.startswith("/") and not inside_root(a):
            fail(f"{a} is outside the root {ROOT}")
    os.execv(REAL[name], [name] + args)


def main():
    name = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    with open(LOG, "a") as f:
        f.write(json.dumps({"cmd": name, "args": args}) + "\n")
    if name == "getent":
        getent(args)
    elif name == "adduser":
        adduser(args)
    elif name == "chown":
        chown(args)
    elif name in REAL:
        guarded(name, args)
    elif name not in ("systemctl", "deb-systemd-invoke"):
        fail("not a stand-in")


if __name__ == "__main__":
    main()
