"""A real redis-server on 127.0.0.1 for cluster tests, bounded in time:
started on a free port in a temporary directory, with append-only-file
persistence, and stopped (by its PID) when the test is done."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import harness


def redis_server_binary():
    for path in ("/usr/bin/redis-server", "/usr/local/bin/redis-server",
                 "/usr/sbin/redis-server"):
        if os.access(path, os.X_OK):
            return path
    return shutil.which("redis-server")


class RedisServer:
    def __init__(self, persistent=True, max_seconds=900):
        self.port = harness.free_port()
        self.dir = tempfile.mkdtemp(prefix="crawld-redis-")
        self.persistent = persistent
        self.max_seconds = max_seconds
        self.proc = None

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def start(self):
        args = [redis_server_binary(), "--port", str(self.port),
                "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
                "--logfile", os.path.join(self.dir, "redis.log"),
                "--daemonize", "no"]
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        # `timeout` bounds the server even if the test dies without cleanup.
        self.proc = subprocess.Popen(["timeout", str(self.max_seconds),
                                      *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.ping():
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def ping(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port),
                                          timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self):
        """SIGTERM: redis-server finishes its append-only file and exits."""
        if self.proc is not None:
            harness.stop_process(self.proc)
            self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
