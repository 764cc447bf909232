#!/usr/bin/env python3
"""hostile: an HTTP server on loopback that misbehaves on purpose.

One behaviour per host name (virtual hosts by the Host header), each host on
its own loopback address so that per-IP politeness never couples two of them.
Python 3.11 standard library only; asyncio on raw TCP, because the point is
byte-exact misbehaviour (lying lengths, broken chunks, 1 MB header lines,
dripping heads), not speed. Every host is documented in README.md beside
this file; the tests that use it are tests/integration/test_hostile*.py.

    hostile.py --dir OUT [--port 0] [--max-seconds 300] [--ticks 150]
               [--fat-pages 40] [--fat-bytes 100000]

Files written to OUT, `port` last (atomically, so its presence means every
other file is complete and every listener accepts):

    hosts          "IP name" per line, for dnsmasq --addn-hosts
    hosts.json     per host: ip, groups, doc, seeds, must, never (paths)
    seeds-<group>.txt  seed URLs of the hosts of one group
    requests.jsonl the log (below), one JSON object per line, flushed per line
    port           the port and a newline

Log lines ("ev" field):
    accept   conn, ip (local address), t_us
    close    conn, t_us, requests
    request  conn, host, ip, method, path, start_us, end_us, status, bytes,
             sha1, complete, cut, aborted, known, ua
All times are CLOCK_MONOTONIC microseconds (time.monotonic_ns() // 1000,
the clock of Python's time.monotonic()). `start_us`: the request head fully
read; `end_us`: the last byte handed to the kernel (taken just before the
final write when that write went out whole), or when the exchange ended
otherwise; for an exchange the client left (cut "client") that is when
this server noticed, which may be later than the client's going.
`sent_us`: the last moment the kernel still held the connection
established (TCP_INFO), looked at around each write (the client left after
it). `status`: the status code sent (0: no parseable status line).
`bytes`/`sha1`: the entity body as the message framed it (chunked decoded,
Content-Encoding kept), so it can be compared with a WARC payload.
`complete`: the server sent a whole, well-framed HTTP/1.1 message; false for
every lie (cut body, invalid chunk, two Content-Lengths, bad status line).
`cut`: how an incomplete body ended: "close" (server closed), "rst"
(connection reset), "stall" (server stopped sending and waited), "client"
(the client went away first), or null. `known`: the path is one this host
serves (a crawler that asks for an unknown path followed something it should
not have).

Lifetime: the server exits by itself after --max-seconds, and on SIGTERM or
SIGINT, logging every exchange still in progress as aborted. Each endless or
held response is also bounded on its own (bytes and seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import signal
import socket
import struct
import sys
import time
import zlib
from typing import Awaitable, Callable

DOMAIN = "hostile.test"
MAX_HEAD_BYTES = 64 * 1024     # request heads above this get 431
HOLD_MAX_S = 60.0              # a held (silent) response waits at most this
ENDLESS_MAX_BYTES = 256 << 20  # an endless body stops after this many bytes
ROBOTS_CAP = 500 * 1024        # robots.txt parsing limit (RFC 9309 2.5)
MIB = 1 << 20


def now_us() -> int:
    return time.monotonic_ns() // 1000


class ClientGone(Exception):
    """The client closed or reset the connection."""


# ---------------------------------------------------------------- the log

class Log:
    def __init__(self, path: str):
        self._f = open(path, "a", encoding="ascii")

    def write(self, obj: dict) -> None:
        # ensure_ascii: bytes outside ASCII in paths arrive as \uXXXX.
        self._f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


# ---------------------------------------------------------------- connection

class Conn:
    """One accepted TCP connection: a byte buffer over the stream reader,
    and writes that notice a client that has gone."""

    def __init__(self, cid: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.id = cid
        self.reader = reader
        self.writer = writer
        self.buf = bytearray()
        self.eof = False
        self.closed = False
        sock = writer.get_extra_info("sockname")
        self.ip = sock[0] if sock else ""
        # drain() returns only once every byte is in the kernel, so end_us
        # (taken after it) is never earlier than the last byte's hand-over.
        writer.transport.set_write_buffer_limits(high=0, low=0)

    async def _fill(self, timeout: float | None) -> bool:
        """Reads more into buf; False on EOF (or timeout when given)."""
        if self.eof:
            return False
        try:
            data = await asyncio.wait_for(self.reader.read(65536), timeout)
        except asyncio.TimeoutError:
            return False
        except (ConnectionError, OSError):
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    async def read_head(self, idle_s: float) -> bytes | None:
        """The next request head (through its blank line), b"" when it is
        too long, None at EOF or after idle_s without a complete head."""
        deadline = time.monotonic() + idle_s
        while True:
            for sep in (b"\r\n\r\n", b"\n\n"):
                i = self.buf.find(sep)
                if i >= 0:
                    head = bytes(self.buf[:i + len(sep)])
                    del self.buf[:i + len(sep)]
                    return head
            if len(self.buf) > MAX_HEAD_BYTES:
                return b""
            left = deadline - time.monotonic()
            if left <= 0 or not await self._fill(left):
                return None

    async def client_left(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds; True as soon as the client has
        closed its side (what it sends meanwhile is kept for later)."""
        if self.eof:
            return True
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if not await self._fill(left):
                return self.eof

    def gone(self) -> bool:
        return self.closed or self.writer.transport.is_closing()

    def established_us(self) -> int | None:
        """now_us() if the kernel still holds the connection established,
        i.e. the client has neither closed nor reset it; None otherwise.
        The kernel updates tcpi_state (TCP_INFO) when the FIN or RST
        arrives, whatever this event loop is busy with."""
        t = now_us()
        sock = self.writer.get_extra_info("socket")
        try:
            state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)
        except (OSError, AttributeError):
            return None
        return t if state and state[0] == 1 else None  # TCP_ESTABLISHED

    async def write(self, data: bytes) -> None:
        if self.gone():
            raise ClientGone()
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, OSError) as e:
            raise ClientGone() from e

    def write_nowait(self, data: bytes) -> bool:
        """Hands data to the transport; True when all of it reached the
        kernel at once (nothing left buffered)."""
        if self.gone():
            raise ClientGone()
        self.writer.write(data)
        return self.writer.transport.get_write_buffer_size() == 0

    def close(self, rst: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        if rst:
            sock = self.writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                except OSError:
                    pass
            self.writer.transport.abort()
        else:
            self.writer.close()


# ---------------------------------------------------------------- exchange

class Exchange:
    """One request and what the server did about it."""

    def __init__(self, server: "Server", conn: Conn, method: str,
                 path: str, version: str, headers: dict[str, str]):
        self.server = server
        self.conn = conn
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.host = ""
        self.start_us = now_us()
        self.end_us = 0
        self.sent_us = 0  # the last moment the connection was established
        self.status = 0
        self.nbytes = 0
        self._sha = hashlib.sha1()
        self.complete = False
        self.cut: str | None = None
        self.aborted = False
        self.known = True
        # Keep the connection for another request after this one?
        self.keep_alive = (version == "HTTP/1.1" and
                           headers.get("connection", "").lower() != "close")

    # Entity accounting: what the message framed as its body.
    def entity(self, data: bytes) -> None:
        self.nbytes += len(data)
        self._sha.update(data)

    def sha1(self) -> str:
        return self._sha.hexdigest()

    async def send(self, data: bytes, entity: bytes = b"") -> None:
        self.entity(entity)
        # sent_us is the last moment the kernel still held the connection
        # established, looked at before and after each write: the client
        # left after it. Not "when a write returned": asyncio keeps what the
        # kernel does not take in a buffer of its own, and drain() returns
        # once that is low, also when the client is gone and this loop has
        # not noticed yet. On a loaded machine a write that began 20 ms
        # after the client left was stamped, and a politeness gap looked
        # 20 ms shorter than it was.
        t = self.conn.established_us()
        if t is not None:
            self.sent_us = t
        await self.conn.write(data)
        t = self.conn.established_us()
        if t is not None:
            self.sent_us = t

    async def finish(self, data: bytes, entity: bytes = b"") -> None:
        """The last write of the exchange; stamps end_us just before it when
        it goes out whole (so a politeness gap is never overstated)."""
        self.entity(entity)
        t = now_us()
        if self.conn.write_nowait(data):
            self.end_us = t
            return
        try:
            await self.conn.writer.drain()
        except (ConnectionError, OSError) as e:
            raise ClientGone() from e
        self.end_us = now_us()

    async def respond(self, status: int, body: bytes,
                      ctype: str = "text/html; charset=utf-8",
                      extra: tuple[str, ...] = (), reason: str = "") -> None:
        """A well-formed response with an exact Content-Length."""
        self.status = status
        lines = [f"HTTP/1.1 {status} {reason or REASONS.get(status, 'X')}"]
        if ctype:
            lines.append(f"Content-Type: {ctype}")
        lines.append(f"Content-Length: {len(body)}")
        lines.extend(extra)
        lines.append("Connection: " +
                     ("keep-alive" if self.keep_alive else "close"))
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        await self.finish(head + body, body)
        self.complete = True

    async def hold(self, seconds: float) -> None:
        """Sends nothing for `seconds` (at most HOLD_MAX_S) or until the
        client leaves; then closes."""
        left = await self.conn.client_left(min(seconds, HOLD_MAX_S))
        self.cut = "client" if left else "stall"
        self.aborted = self.aborted or left
        self.keep_alive = False


REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found",
           404: "Not Found", 400: "Bad Request", 431: "Too Large",
           500: "Internal Server Error"}

Handler = Callable[[Exchange], Awaitable[None]]


# ---------------------------------------------------------------- handlers

def page(body: bytes | str, ctype: str = "text/html; charset=utf-8",
         extra: tuple[str, ...] = ()) -> Handler:
    data = body.encode() if isinstance(body, str) else body

    async def h(ex: Exchange) -> None:
        await ex.respond(200, data, ctype, extra)
    return h


def lazy_page(build: Callable[[], bytes],
              ctype: str = "text/html; charset=utf-8",
              extra: tuple[str, ...] = ()) -> Handler:
    """page() of a body built off the loop (a gzip bomb takes seconds of
    CRC work), before the server announces its port (warm_up). A request that comes before the body is ready waits, watching
    for the client to leave, so the log never shows an exchange the client
    has given up as in progress."""
    state: dict[str, object] = {}

    def start() -> asyncio.Future:
        if "future" not in state:
            state["future"] = asyncio.get_running_loop().run_in_executor(
                None, build)
        return state["future"]  # type: ignore[return-value]

    async def h(ex: Exchange) -> None:
        start()
        fut = state["future"]
        while not fut.done():
            if await ex.conn.client_left(0.05):
                ex.cut = "client"
                ex.aborted = True
                ex.keep_alive = False
                return
        await ex.respond(200, fut.result(), ctype, extra)
    h.warm_up = start  # type: ignore[attr-defined]
    return h


def redirect(location: bytes | str, status: int = 301) -> Handler:
    loc = location.encode("latin-1") if isinstance(location, str) else location

    async def h(ex: Exchange) -> None:
        ex.status = status
        head = (b"HTTP/1.1 %d Moved\r\nLocation: " % status + loc +
                b"\r\nContent-Length: 0\r\nConnection: " +
                (b"keep-alive" if ex.keep_alive else b"close") + b"\r\n\r\n")
        await ex.finish(head)
        ex.complete = True
    return h


def raw(data: bytes, status: int, entity: bytes = b"",
        complete: bool = False, end: str = "close") -> Handler:
    """Sends `data` as it is, then ends the connection: "close" (FIN),
    "rst" (reset) or "stall" (keeps it open, silent, until the client
    leaves). `entity` is what the message framed as its body."""

    async def h(ex: Exchange) -> None:
        ex.status = status
        ex.keep_alive = False
        if end == "stall":
            await ex.send(data, entity)
            ex.complete = complete
            await ex.hold(HOLD_MAX_S)
            ex.end_us = now_us()
            return
        await ex.finish(data, entity)
        ex.complete = complete
        if not complete:
            ex.cut = end
        if end == "rst":
            ex.conn.close(rst=True)
    return h


def html(title: str, links: list[str] = (), extra: str = "") -> str:
    items = "".join(f'<li><a href="{u}">{u}</a></li>\n' for u in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<ul>\n{items}</ul>\n{extra}"
            "</body></html>\n")


async def not_found(ex: Exchange) -> None:
    ex.known = False
    await ex.respond(404, b"not here\n", "text/plain")


# ---------------------------------------------------------------- bodies

def gzip_bomb(prefix: bytes, spaces: int) -> bytes:
    """A gzip member that inflates to prefix + `spaces` spaces (a multiple
    of 1 MiB), built without compressing them all: after a full flush the
    deflate history is empty, so every further 1 MiB block of spaces
    compresses to the same bytes, which are repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"]
    out.append(c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH))
    chunk = b" " * MIB
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    n = spaces // MIB
    out.append(block * n)
    out.append(c.flush())
    crc = zlib.crc32(prefix)
    for _ in range(n):
        crc = zlib.crc32(chunk, crc)
    out.append(struct.pack("<II", crc, (len(prefix) + n * MIB) & 0xFFFFFFFF))
    return b"".join(out)


def noisy_text(rng: random.Random, n: int) -> str:
    """n bytes that gzip cannot shrink much (base64 of random bytes)."""
    import base64
    raw_bytes = rng.getrandbits(8 * (n * 3 // 4 + 3)).to_bytes(
        n * 3 // 4 + 3, "little")
    return base64.b64encode(raw_bytes).decode()[:n]


# ---------------------------------------------------------------- sites

class Site:
    """One host name: its address, routes, robots.txt, and what a correct
    crawler does with it (paths: seeds, must be fetched, never requested)."""

    def __init__(self, name: str, groups: tuple[str, ...], doc: str):
        self.name = name
        self.groups = groups
        self.doc = doc
        self.ip = ""
        self.listen = True       # False: the name resolves, nothing answers
        self.routes: dict[str, Handler] = {}
        self.robots: Handler = page("User-agent: *\nDisallow: /private/\n",
                                    "text/plain")
        self.seeds: list[str] = ["/"]
        self.must: list[str] = []
        self.never: list[str] = []
        # Pages only: no page request at all is expected (robots.txt bars
        # everything or cannot be read).
        self.robots_only = False

    def route(self, path: str, h: Handler, must: bool = True) -> None:
        self.routes[path] = h
        if must:
            self.must.append(path)

    def root(self, links: list[str], title: str | None = None) -> None:
        self.route("/", page(html(title or self.name, links)))


def build_sites(port: int, ticks: int, fat_pages: int, fat_bytes: int,
                ipv6: bool) -> list[Site]:
    sites: list[Site] = []

    def site(label: str, groups: tuple[str, ...], doc: str) -> Site:
        s = Site(f"{label}.{DOMAIN}", groups, doc)
        sites.append(s)
        return s

    def url(host: str, path: str) -> str:
        return f"http://{host}:{port}{path}"

    def after(s: Site) -> Handler:
        return page(html(f"{s.name}: after", [],
                         "<p>the host still answers</p>"))

    def bad(label: str, doc: str, path: str, h: Handler, stored: bool,
            groups: tuple[str, ...] = ("web",)) -> Site:
        """A host with one bad URL: / links to `path`, then /after.html.
        `stored`: a correct crawler records `path` (whole or cut) in a
        WARC; otherwise it may record nothing for it."""
        s = site(label, groups, doc)
        s.root([path, "/after.html"])
        s.route(path, h, must=stored)
        s.route("/after.html", after(s))
        return s

    # ---- control hosts: steady work whose gaps show a stall ----
    for i in range(6):
        s = site(f"tick{i}", ("web", "heavy", "robots-redir", "parse",
                               "admin"),
                 f"control: /t/0.html .. /t/{ticks - 1}.html, a chain of "
                 "small pages; any long gap between two of them is a stall")
        s.seeds = ["/t/0.html"]
        for n in range(ticks):
            links = [f"/t/{n + 1}.html"] if n + 1 < ticks else []
            s.route(f"/t/{n}.html", page(html(f"{s.name}: tick {n}", links)))

    s = site("plain", ("web",), "control: a small ordinary site of 8 pages")
    s.root([f"/p/{n}.html" for n in range(8)])
    for n in range(8):
        s.route(f"/p/{n}.html", page(html(f"{s.name}: {n}", ["/"])))

    # ---- bodies ----
    s = bad("bomb",
            "/bomb.html: gzip bomb (about 1 MiB on the wire, 1 GiB of "
            "spaces inflated) whose first bytes link to /bomb-link.html; "
            "sent with Content-Encoding: gzip whatever was asked",
            "/bomb.html", lazy_page(
                lambda: gzip_bomb(b'<html><body><a href="/bomb-link.html">in '
                                  b"the bomb</a><p>", 1024 * MIB),
                extra=("Content-Encoding: gzip",)), True, ("heavy",))
    s.route("/bomb-link.html", page(html(f"{s.name}: found in the bomb")))

    bad("endless", "/endless.bin: 200 application/octet-stream without a "
        "length; the body never ends (close-delimited) until the client "
        "leaves or 256 MiB", "/endless.bin",
        endless(chunked=False, ctype="application/octet-stream"), True,
        ("heavy",))
    bad("endless-chunked", "/endless.bin: as endless, chunked",
        "/endless.bin",
        endless(chunked=True, ctype="application/octet-stream"), True,
        ("heavy",))

    # ---- framing ----
    body1k = (b"<html><body><p>" + b"x" * 980 + b"</p>")[:1000]
    head_long = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                 b"Content-Length: 100000\r\n\r\n")
    for end in ("close", "rst", "stall"):
        # After an RST the client's kernel drops what it has not read yet:
        # the page may never arrive whole or cut, so it need not be stored.
        bad(f"cl-long-{end}",
            f"/page: Content-Length: 100000, 999 bytes sent, then "
            f"{dict(close='FIN', rst='RST', stall='silence')[end]}", "/page",
            raw(head_long + body1k, 200, body1k, end=end), end != "rst")
    short_body = (b"<html><body><p>fifty bytes" + b"." * 50)[:44] + b"</p>\n\n"
    assert len(short_body) == 50
    smuggled = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                b"Content-Length: 34\r\n\r\n"
                b"<html><body>SMUGGLED</body></html>")
    bad("cl-short", "/page: Content-Length: 50 and 50 bytes, then a second, "
        "unrequested response ('SMUGGLED') on the same keep-alive "
        "connection; /after.html is asked next", "/page",
        cl_short(short_body, smuggled), True)
    chunk_head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
    good = b"<html><body><p>" + b"y" * 85 + b"</p>"
    bad("chunk-bad", "/page: chunked, first chunk size 'zz'", "/page",
        raw(chunk_head + b"zz\r\nhello\r\n0\r\n\r\n", 200, end="close"), False)
    bad("chunk-bad-late", "/page: chunked, one good chunk of 100 bytes, then "
        "chunk size 'zz'", "/page",
        raw(chunk_head + b"%x\r\n" % len(good) + good +
            b"\r\nzz\r\nmore\r\n0\r\n\r\n", 200, good, end="close"), True)
    bad("chunk-huge", "/page: chunked, a chunk size of 21 hex digits",
        "/page", raw(chunk_head + b"fffffffffffffffffffff\r\nab\r\n", 200,
                     end="close"), False)
    bad("chunk-cut", "/page: chunked, one good chunk, then FIN before the "
        "last chunk", "/page",
        raw(chunk_head + b"%x\r\n" % len(good) + good + b"\r\n", 200, good,
            end="close"), True)
    bad("two-cl", "/page: 'Content-Length: 266' and 'Content-Length: 7', 7 "
        "bytes, FIN (RFC 9112 6.3: invalid framing)", "/page",
        raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            b"Content-Length: 266\r\nContent-Length: 7\r\n"
            b"Connection: close\r\n\r\n<p>7by\n", 200, b"<p>7by\n",
            end="close"),
        False)
    te_body = b"<html><body><p>chunked wins</p></body></html>"
    bad("cl-te", "/page: Content-Length: 3 and Transfer-Encoding: chunked "
        "(chunked wins, RFC 9112 6.3: a valid message)", "/page",
        raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" + b"%x\r\n" % len(te_body) + te_body +
            b"\r\n0\r\n\r\n", 200, te_body, complete=True, end="close"), True)

    # ---- status lines ----
    tail = b"Content-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"
    for label, data, doc in (
            ("s-garbage", b"GARBAGE\r\n" + tail, "'GARBAGE'"),
            ("s-http09", b"<html><body>no status line</body></html>\n",
             "a body and no status line (HTTP/0.9)"),
            ("s-nocode", b"HTTP/1.1 OK\r\n" + tail, "'HTTP/1.1 OK'"),
            ("s-bigcode", b"HTTP/1.1 99999 Big\r\n" + tail,
             "'HTTP/1.1 99999 Big'"),
            ("s-negative", b"HTTP/1.1 -200 Neg\r\n" + tail,
             "'HTTP/1.1 -200 Neg'"),
            ("s-nul", b"HTTP/1.1 200\x00OK\r\n" + tail,
             "a NUL inside the status line"),
            ("s-empty", b"", "closed without a byte"),
            ("s-interim", b"HTTP/1.1 100 Continue\r\n\r\n",
             "'100 Continue', then FIN")):
        bad(label, f"/page: {doc}", "/page", raw(data, 0), False)
    bad("s-v2", "/page: 'HTTP/2.0 200 OK' on an HTTP/1.1 connection, "
        "otherwise a valid 200 (may be stored as it arrived)", "/page",
        raw(b"HTTP/2.0 200 OK\r\n" + tail, 200, b"hello", complete=True),
        False)
    lf_body = b"<p>lf</p>"
    bad("s-lf", "/page: bare LF line ends, otherwise a valid 200 (may be "
        "stored)", "/page",
        raw(b"HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: 9\n"
            b"Connection: close\n\n" + lf_body, 200, lf_body, complete=True),
        False)

    # ---- header floods ----
    fl = "".join(f"X-Flood-{n}: {'v' * 24}\r\n" for n in range(5000))
    bad("h-flood", "/page: 5000 header lines (about 200 KB of head), a "
        "valid 200", "/page", raw_response(200, fl.encode(), b"<p>flood</p>"),
        False)
    bad("h-longline", "/page: one header line of 1 MB, a valid 200", "/page",
        raw_response(200, b"X-Long: " + b"a" * MIB + b"\r\n",
                     b"<p>long line</p>"), False)
    ms = "".join(f"{chr(97 + n % 26)}: 1\r\n" for n in range(20000))
    bad("h-many", "/page: 20,000 one-letter header fields, a valid 200",
        "/page", raw_response(200, ms.encode(), b"<p>many</p>"), False)

    # ---- slow and silent ----
    bad("drip", "/page: Content-Length: 10000, one body byte every 250 ms "
        "(the low-speed limit cuts it)", "/page", drip_body(10000, 0.25), True)
    bad("driphead", "/page: the status line, then one header byte every "
        "250 ms, never a blank line", "/page", drip_head(0.25), False)
    bad("silent", "/page: the request is read, nothing is ever sent (held "
        "up to 60 s or until the client leaves)", "/page", silent, False)
    bad("hangup", "/page: the request is read, then the connection is reset "
        "without a byte", "/page", raw(b"", 0, end="rst"), False)

    # ---- redirects and bad Locations ----
    s = site("redir", ("web",),
             "redirect loops and bad Locations, all 301: /loop/a <-> /loop/b; "
             "/self -> /self; /chain/0 .. /chain/9 -> /target/chain.html (10 "
             "hops: past fetch.max_redirects = 5); /chain5/0 .. /chain5/4 -> "
             "/target/chain5.html (5 hops, followed); /rel -> "
             "'../target/rel.html'; /schemeless -> '//redir.hostile.test:"
             "PORT/target/schemeless.html'; /js -> 'javascript:alert(1)'; "
             "/data -> 'data:text/html,x'; /mailto -> 'mailto:a@b'; /huge -> "
             "a 64 KiB path; /empty -> 'Location: ' (empty); /none -> a 301 "
             "without Location; /space -> '/target/has space.html'; "
             "/utf8 -> '/target/caf\\xc3\\xa9.html' (raw UTF-8); /to-ip, "
             "/to-int, /to-hex, /to-v6, /to-mapped -> http://127.0.0.1, "
             "http://2130706433, http://0x7f.0.0.1, http://[::1], "
             "http://[::ffff:127.0.0.1] (same port) /landing/<name>.html")
    links = ["/loop/a", "/self", "/chain/0", "/chain5/0", "/rel",
             "/schemeless",
           "/js", "/data", "/mailto", "/huge", "/empty", "/none", "/space",
           "/utf8", "/to-ip", "/to-int", "/to-hex"]
    if ipv6:
        links += ["/to-v6", "/to-mapped"]
    s.root(links + ["/after.html"])
    s.route("/loop/a", redirect(url(s.name, "/loop/b")))
    s.route("/loop/b", redirect(url(s.name, "/loop/a")))
    s.route("/self", redirect("/self"))
    for n in range(10):
        nxt = f"/chain/{n + 1}" if n < 9 else "/target/chain.html"
        # Hops past max_redirects (5) must not be requested.
        s.route(f"/chain/{n}", redirect(nxt), must=n <= 5)
    s.never += [f"/chain/{n}" for n in range(6, 10)] + ["/target/chain.html"]
    s.route("/target/chain.html", page(html("end of a long chain")),
            must=False)
    for n in range(5):
        nxt = f"/chain5/{n + 1}" if n < 4 else "/target/chain5.html"
        s.route(f"/chain5/{n}", redirect(nxt))
    s.route("/target/chain5.html", page(html("end of a five-hop chain")))
    s.route("/rel", redirect("../target/rel.html"))
    s.route("/target/rel.html", page(html("relative target")))
    s.route("/schemeless",
            redirect(f"//{s.name}:{port}/target/schemeless.html"))
    s.route("/target/schemeless.html", page(html("schemeless target")))
    s.route("/js", redirect("javascript:alert(1)"))
    s.route("/data", redirect("data:text/html,<a href=/evil>x</a>"))
    s.route("/mailto", redirect("mailto:a@b.example"))
    s.route("/huge", redirect("/h/" + "a" * 65536))
    s.route("/empty", redirect(""))
    s.route("/none", raw_response(301, b"", b"", keep=True))
    s.route("/space", redirect("/target/has space.html"))
    s.route("/target/has%20space.html", page(html("space target")))
    s.route("/utf8", redirect(b"/target/caf\xc3\xa9.html"))
    s.route("/target/caf%C3%A9.html", page(html("utf8 target")))
    s.route("/to-ip", redirect(f"http://127.0.0.1:{port}/landing/ip.html"))
    s.route("/to-int", redirect(f"http://2130706433:{port}/landing/int.html"))
    s.route("/to-hex", redirect(f"http://0x7f.0.0.1:{port}/landing/hex.html"))
    s.route("/to-v6", redirect(f"http://[::1]:{port}/landing/v6.html"),
            must=ipv6)
    s.route("/to-mapped", redirect(
        f"http://[::ffff:127.0.0.1]:{port}/landing/mapped.html"), must=ipv6)
    s.route("/after.html", after(s))

    # The loopback spellings land on these hosts (after WHATWG
    # canonicalization: 2130706433 and 0x7f.0.0.1 are 127.0.0.1, and
    # [::ffff:127.0.0.1] is [::ffff:7f00:1]).
    for name, paths, on in (
            ("127.0.0.1", ["/landing/ip.html", "/landing/int.html",
                           "/landing/hex.html"], True),
            ("[::1]", ["/landing/v6.html"], ipv6),
            ("[::ffff:7f00:1]", ["/landing/mapped.html"], ipv6)):
        t = Site(name, ("web",),
                 f"a redirect target by IP literal: {', '.join(paths)}")
        t.ip = name.strip("[]")
        t.seeds = []
        for p in paths:
            t.route(p, page(html(f"landing {p}")), must=on)
        sites.append(t)

    # ---- robots.txt ----
    def robots_site(label: str, doc: str, robots: Handler,
                    robots_only: bool, private: bool = True,
                    groups: tuple[str, ...] = ("web",)) -> Site:
        """/ links to /pub.html and /other.html (and /private/x.html when
        `private`: robots.txt disallows /private/ there)."""
        s = site(label, groups, doc)
        s.robots = robots
        pages = ["/pub.html", "/other.html"]
        s.root(pages + (["/private/x.html"] if private else []))
        for p in pages:
            s.route(p, page(html(f"{s.name}: {p}", ["/"])))
        if private:
            s.route("/private/x.html", page(html(f"{s.name}: private")),
                    must=False)
            s.never.append("/private/x.html")
        s.robots_only = robots_only
        if robots_only:
            s.must = []
            s.never = ["/"] + pages + (["/private/x.html"] if private else [])
        return s

    robots_site(
        "robots-gzbomb",
        "robots.txt is a gzip bomb (256 MiB of spaces inflated) that starts "
        "'User-agent: *\\nDisallow: /private/\\n': the rules in the first "
        "500 KiB hold",
        lazy_page(lambda: gzip_bomb(b"User-agent: *\nDisallow: /private/\n",
                                    256 * MIB),
                  "text/plain", ("Content-Encoding: gzip",)), False,
        groups=("heavy",))

    def big_rules() -> bytes:
        return (b"User-agent: *\nDisallow: /private/\n" +
                b"".join(b"Disallow: /z%07d/\n" % n for n in range(600000)))

    robots_site(
        "robots-huge",
        "robots.txt of 13 MB ('Disallow: /private/' first, then 600,000 "
        "'Disallow: /zNNNNNNN/' lines): more than fetch.max_body_bytes; the "
        "rules in the first 500 KiB hold",
        lazy_page(big_rules, "text/plain"), False, groups=("heavy",))
    robots_site(
        "robots-endless",
        "robots.txt that never ends ('User-agent: *\\nDisallow: /private/"
        "\\n', then 'Disallow: /zzz' lines, close-delimited, until the "
        "client leaves): the rules in the first 500 KiB hold",
        endless(chunked=False, ctype="text/plain",
                prefix=b"User-agent: *\nDisallow: /private/\n",
                pattern=b"Disallow: /zzz\n"), False, groups=("heavy",))

    # Issue 19 item 2: the line cut by the 500 KiB limit must be ignored.
    robots_site(
        "robots-cut-allow",
        "robots.txt 'User-agent: *\\nDisallow: /\\n', comment padding, then "
        "'Allow: /pub/page.html' placed so that byte 512,000 (500 KiB) falls "
        "right after 'Allow: /': the cut line must be ignored, so nothing "
        "but robots.txt is fetched",
        page(cut_robots(b"User-agent: *\nDisallow: /\n",
                        b"Allow: /", b"pub/page.html\n"), "text/plain"),
        True, private=False)
    robots_site(
        "robots-cut-disallow",
        "robots.txt 'User-agent: *\\nDisallow: /cgi-bin/\\n', comment "
        "padding, then 'Disallow: /private' cut at byte 512,000 right after "
        "'Disallow: /': the cut line must be ignored, so the whole site is "
        "fetched",
        page(cut_robots(b"User-agent: *\nDisallow: /cgi-bin/\n",
                        b"Disallow: /", b"private\n"), "text/plain"),
        False, private=False)
    robots_site(
        "robots-cut-net",
        "robots.txt 'User-agent: *\\nDisallow: /\\nAllow: /' with "
        "Content-Length 200, the connection closed right after 'Allow: /' "
        "(the rest would have been 'pub/page.html'): an incomplete "
        "robots.txt must not open the site",
        raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 200\r\n\r\nUser-agent: *\nDisallow: /\nAllow: /",
            200, b"User-agent: *\nDisallow: /\nAllow: /", end="close"),
        True, private=False)

    # Issue 19 item 7: robots.txt redirect hops keep the host's delay.
    def robots_chain(s: Site, hops: int, final: str) -> None:
        s.robots = redirect("/rr/1")
        for n in range(1, hops):
            s.route(f"/rr/{n}", redirect(f"/rr/{n + 1}" if n + 1 < hops
                                         else "/rr/real.txt"), must=False)
        s.route("/rr/real.txt", page(final, "text/plain"), must=False)

    s = robots_site(
        "robots-redir5",
        "robots.txt -> /rr/1 -> /rr/2 -> /rr/3 -> /rr/4 -> /rr/real.txt (5 "
        "redirects, RFC 9309 2.3.1.2: followed), which disallows /private/",
        silent, False, groups=("robots-redir",))
    robots_chain(s, 5, "User-agent: *\nDisallow: /private/\n")
    s.must.append("/rr/real.txt")

    s = robots_site(
        "robots-redir6",
        "robots.txt -> /rr/1 -> ... -> /rr/5 -> /rr/real.txt (6 redirects, "
        "one more than crawld follows): /rr/real.txt is never asked for; "
        "the pages are either all fetched (robots.txt 'unavailable', RFC "
        "9309 2.3.1.2 allows it) or none; every hop waits the host's delay",
        silent, False, private=False, groups=("robots-redir",))
    robots_chain(s, 6, "User-agent: *\nDisallow:\n")
    s.must = []
    s.never.append("/rr/real.txt")

    robots_site(
        "robots-br",
        "robots.txt with 'Content-Encoding: br' and a body that is no "
        "Brotli stream (crawld offers gzip, deflate): rules that cannot be "
        "read are not 'no rules', so nothing but robots.txt is fetched, as "
        "`crawlctl robots show` reports ('disallow all')",
        page(b"\xff\xfe garbage, not brotli \x00\x01", "text/plain",
             ("Content-Encoding: br",)), True)
    robots_site(
        "robots-badgzip",
        "robots.txt with 'Content-Encoding: gzip' and a damaged stream (a "
        "gzip header, then garbage): as robots-br",
        page(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xffgarbage-not-deflate",
             "text/plain", ("Content-Encoding: gzip",)), True)
    robots_site(
        "robots-silent",
        "robots.txt never answers (request read, nothing sent): "
        "unreachable (RFC 9309 2.3.1.4), nothing else fetched",
        silent, True)
    robots_site(
        "robots-reset",
        "robots.txt request answered by a connection reset: unreachable",
        raw(b"", 0, end="rst"), True)
    s = robots_site(
        "robots-unreach",
        "the name resolves to an address where nothing listens (connection "
        "refused): nothing can be fetched, the crawl still ends",
        silent, True)
    s.listen = False

    # ---- parse-time bombs (issue 19 item 1) ----
    s = site("attrs", ("parse",),
             "/attrs.html: one element with 90,000 attributes (about 800 KB), "
             "after a link to /attrs-link.html")
    attrs = " ".join(f"a{n}" for n in range(90000))
    s.root(["/attrs.html", "/after.html"])
    s.route("/attrs.html", page(
        '<html><body><a href="/attrs-link.html">first</a>\n'
        f"<div {attrs}>x</div></body></html>\n"))
    s.route("/attrs-link.html", page(html("after the attributes")))
    s.route("/after.html", after(s))

    s = site("big", ("parse",),
             "/big.html: exactly 10 MiB (= fetch.max_body_bytes) of HTML, "
             "a link to /big-link.html first, then 10 MiB of paragraphs and "
             "links; /big-over.html: the same plus one byte (truncated)")
    s.root(["/big.html", "/big-over.html", "/after.html"])
    s.route("/big.html", lazy_page(lambda: big_html(10 * MIB)))
    s.route("/big-over.html", lazy_page(lambda: big_html(10 * MIB) + b"\n"))
    s.route("/big-link.html", page(html("linked from the big page")))
    s.route("/after.html", after(s))

    s = site("endless-html", ("parse",),
             "/endless.html: text/html that never ends (close-delimited), "
             "a link to /endless-link.html first")
    s.root(["/endless.html", "/after.html"])
    s.route("/endless.html", endless(
        chunked=False, ctype="text/html",
        prefix=b'<html><body><a href="/endless-link.html">x</a>\n',
        pattern=b"<p>endless <b>html</b> <i>text</i> and more</p>\n"))
    s.route("/endless-link.html", page(html("linked from endless")))
    s.route("/after.html", after(s))

    # ---- content ----
    s = site("nul", ("web",),
             "/nul.html: text/html with NUL bytes in text (a browser parses "
             "it, NUL as U+FFFD) linking to /nul-link.html")
    s.root(["/nul.html"])
    s.route("/nul.html", page(
        b"<!DOCTYPE html><html><head><title>nul\x00</title></head><body>"
        b"<p>a\x00b</p><a href=\"/nul-link.html\">link</a>\x00</body></html>"))
    s.route("/nul-link.html", page(html("found behind NUL bytes")))

    # ---- duplicate bodies (issue 19 item 4) ----
    for i in range(3):
        s = site(f"mirror{i}", ("web",),
                 "three mirrors of one 10-page site: /m/0.html .. /m/9.html "
                 "with relative links only, byte-identical across the "
                 "mirrors; every page of every mirror must be fetched")
        s.seeds = ["/m/0.html"]
        for n in range(10):
            links = [f"{(n + 1) % 10}.html", f"{(n + 3) % 10}.html"]
            s.route(f"/m/{n}.html", page(html(f"mirrored page {n}", links)))

    s = site("dirs", ("web",),
             "the same page at /dir1/ and /dir2/ (byte-identical) with the "
             "relative link 'child.html': /dir1/child.html and "
             "/dir2/child.html (which differ) must both be fetched")
    s.root(["/dir1/", "/dir2/"])
    same = page(html("same page in two places", ["child.html"]))
    s.route("/dir1/", same)
    s.route("/dir2/", same)
    s.route("/dir1/child.html", page(html("child of dir1")))
    s.route("/dir2/child.html", page(html("child of dir2")))

    # ---- store faults: fat pages ----
    rng = random.Random(19)
    for i in range(4):
        s = site(f"fat{i}", ("store",),
                 f"fat pages: / links to /f/0.html .. "
                 f"/f/{fat_pages - 1}.html, "
                 f"{fat_bytes} bytes each of base64 noise (gzip barely "
                 "shrinks it), to fill a small disk")
        s.root([f"/f/{n}.html" for n in range(fat_pages)])
        for n in range(fat_pages):
            s.route(f"/f/{n}.html", page(html(
                f"fat {i}/{n}", [], f"<p>{noisy_text(rng, fat_bytes)}</p>")))

    s = site("ssrf", ("ssrf",),
             "a name that resolves to a loopback address; with "
             "network.allow_private = false nothing may reach it")
    s.root(["/in.html"])
    s.route("/in.html", page(html("inside")))

    # Addresses: one per host, 127.2.0.N; hosts that do not listen get
    # 127.2.1.N.
    n_on = n_off = 0
    for s in sites:
        if s.ip:
            continue
        if s.listen:
            n_on += 1
            s.ip = f"127.2.{n_on // 250}.{n_on % 250 + 1}"
        else:
            n_off += 1
            s.ip = f"127.2.100.{n_off}"
    return sites


def cut_robots(head: bytes, before: bytes, after: bytes) -> bytes:
    """head + comment lines + `before` + `after`, padded so that
    len(everything up to `before`'s end) == ROBOTS_CAP exactly, plus a
    little more after it."""
    body = bytearray(head)
    target = ROBOTS_CAP - len(before)
    while len(body) < target:
        room = target - len(body)
        if room >= 100:
            body += b"# " + b"p" * 96 + b"\n"
        else:
            body += b"#" + b"p" * (room - 2) + b"\n" if room >= 2 else b"\n"
    assert len(body) == target, (len(body), target)
    body += before
    assert len(body) == ROBOTS_CAP
    body += after + b"# the end\n"
    return bytes(body)


def big_html(size: int) -> bytes:
    head = b'<html><body><a href="/big-link.html">first link</a>\n'
    para = (b"<p>big page <b>bold</b> <i>it</i> "
            b"<a href=\"/big-link.html\">l</a></p>\n")
    n = (size - len(head)) // len(para)
    body = bytearray(head + para * n)
    body += b" " * (size - len(body))
    assert len(body) == size
    return bytes(body)


def raw_response(status: int, header_block: bytes, body: bytes,
                 keep: bool = False) -> Handler:
    """A valid response with arbitrary extra header lines."""

    async def h(ex: Exchange) -> None:
        ex.status = status
        if not keep:
            ex.keep_alive = False
        head = (b"HTTP/1.1 %d X\r\nContent-Type: text/html\r\n" % status +
                header_block + b"Content-Length: %d\r\nConnection: %s\r\n\r\n"
                % (len(body), b"keep-alive" if ex.keep_alive else b"close"))
        await ex.finish(head + body, body)
        ex.complete = True
    return h


def cl_short(body: bytes, smuggled: bytes) -> Handler:
    """Content-Length says len(body); a second, unrequested response follows
    on the same connection. The exchange is complete as framed."""

    async def h(ex: Exchange) -> None:
        ex.status = 200
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body))
        await ex.finish(head + body + smuggled, body)
        ex.complete = True
    return h


def endless(chunked: bool, ctype: str, prefix: bytes = b"",
            pattern: bytes = b"endless ") -> Handler:
    async def h(ex: Exchange) -> None:
        ex.status = 200
        ex.keep_alive = False
        head = [b"HTTP/1.1 200 OK", b"Content-Type: " + ctype.encode(),
                b"Connection: close"]
        if chunked:
            head.append(b"Transfer-Encoding: chunked")
        block = (pattern * (65536 // len(pattern) + 1))[:65536]
        await ex.send(b"\r\n".join(head) + b"\r\n\r\n")
        first = prefix + block[len(prefix):]
        sent = 0
        deadline = time.monotonic() + HOLD_MAX_S
        while sent < ENDLESS_MAX_BYTES and time.monotonic() < deadline:
            data = first if sent == 0 else block
            frame = b"%x\r\n" % len(data) + data + b"\r\n" if chunked else data
            await ex.send(frame, data)
            sent += len(data)
        ex.cut = "close"
    return h


def drip_body(length: int, every_s: float) -> Handler:
    async def h(ex: Exchange) -> None:
        ex.status = 200
        ex.keep_alive = False
        await ex.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                      b"Content-Length: %d\r\n\r\n" % length)
        deadline = time.monotonic() + HOLD_MAX_S
        for _ in range(length):
            if time.monotonic() >= deadline:
                ex.cut = "close"
                return
            if await ex.conn.client_left(every_s):
                ex.cut = "client"
                ex.aborted = True
                return
            await ex.send(b"d", b"d")
        ex.complete = True
    return h


def drip_head(every_s: float) -> Handler:
    async def h(ex: Exchange) -> None:
        ex.status = 200
        ex.keep_alive = False
        await ex.send(b"HTTP/1.1 200 OK\r\nX-Drip: ")
        for _ in range(int(HOLD_MAX_S / every_s)):
            if await ex.conn.client_left(every_s):
                ex.cut = "client"
                ex.aborted = True
                return
            await ex.send(b"h")
        ex.cut = "close"
    return h


async def silent(ex: Exchange) -> None:
    await ex.hold(HOLD_MAX_S)


# ---------------------------------------------------------------- server

class Server:
    def __init__(self, out_dir: str, sites: list[Site], port: int):
        self.dir = out_dir
        self.sites = {s.name: s for s in sites}
        self.port = port
        self.log = Log(os.path.join(out_dir, "requests.jsonl"))
        self.next_conn = 1
        self.conns: set[asyncio.Task] = set()

    def lookup(self, host: str) -> Site | None:
        return self.sites.get(host)

    async def on_conn(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        conn = Conn(self.next_conn, reader, writer)
        self.next_conn += 1
        task = asyncio.current_task()
        self.conns.add(task)
        self.log.write({"ev": "accept", "conn": conn.id, "ip": conn.ip,
                        "t_us": now_us()})
        served = 0
        try:
            while not conn.gone():
                head = await conn.read_head(idle_s=30.0)
                if head is None:
                    break
                ex = self.parse(conn, head)
                served += 1
                try:
                    await self.dispatch(ex)
                except ClientGone:
                    ex.aborted = True
                    ex.cut = ex.cut or "client"
                except asyncio.CancelledError:
                    ex.aborted = True
                    self.log_request(ex)
                    raise
                self.log_request(ex)
                if ex.aborted or not ex.keep_alive:
                    break
        except asyncio.CancelledError:
            pass
        finally:
            conn.close()
            self.log.write({"ev": "close", "conn": conn.id, "t_us": now_us(),
                            "requests": served})
            self.conns.discard(task)

    def parse(self, conn: Conn, head: bytes) -> Exchange:
        text = head.decode("latin-1")
        lines = text.replace("\r\n", "\n").split("\n")
        parts = lines[0].split(" ")
        method, path, version = (parts + ["", "", ""])[:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, _, v = line.partition(":")
                headers.setdefault(k.strip().lower(), v.strip())
        ex = Exchange(self, conn, method, path, version, headers)
        host = headers.get("host", "").lower()
        if host.startswith("["):
            host = host[:host.find("]") + 1]
        else:
            host = host.rsplit(":", 1)[0] if ":" in host else host
        ex.host = host.rstrip(".")
        if len(head) > MAX_HEAD_BYTES or not head:
            ex.method = "BAD"
        return ex

    async def dispatch(self, ex: Exchange) -> None:
        site = self.lookup(ex.host)
        if ex.method != "GET" or site is None:
            ex.known = False
            ex.keep_alive = False
            await ex.respond(400 if ex.method != "GET" else 404,
                             b"no such host or method\n", "text/plain")
            return
        if ex.path == "/robots.txt":
            await site.robots(ex)
            return
        h = site.routes.get(ex.path)
        if h is None:
            await not_found(ex)
            return
        await h(ex)

    def log_request(self, ex: Exchange) -> None:
        if ex.end_us == 0:
            ex.end_us = now_us()
        self.log.write({
            "ev": "request", "conn": ex.conn.id, "host": ex.host,
            "ip": ex.conn.ip, "method": ex.method, "path": ex.path,
            "start_us": ex.start_us, "end_us": ex.end_us,
            "sent_us": ex.sent_us or ex.start_us,
            "status": ex.status, "bytes": ex.nbytes, "sha1": ex.sha1(),
            "complete": ex.complete and not ex.aborted, "cut": ex.cut,
            "aborted": ex.aborted, "known": ex.known,
            "ua": ex.headers.get("user-agent", "")})


# ---------------------------------------------------------------- main

def ipv6_loopback() -> bool:
    """True when ::1 can be bound here (some containers have no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


async def serve(args: argparse.Namespace) -> int:
    out = args.dir
    os.makedirs(out, exist_ok=True)
    ipv6 = ipv6_loopback()
    servers: list[asyncio.base_events.Server] = []
    srv_obj: Server | None = None

    for _ in range(20):
        port = args.port
        if port == 0:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        sites = build_sites(port, args.ticks, args.fat_pages, args.fat_bytes,
                            ipv6=ipv6)
        srv_obj = Server(out, sites, port)
        addrs = ["127.0.0.1"] + sorted(
            {s.ip for s in sites if s.listen and s.ip not in
             ("127.0.0.1", "::1", "::ffff:7f00:1")})
        if ipv6:
            addrs.append("::1")
        try:
            for a in addrs:
                servers.append(await asyncio.start_server(
                    srv_obj.on_conn, host=a, port=port, reuse_address=True,
                    limit=1 << 20))
            break
        except OSError as e:
            for s in servers:
                s.close()
            servers = []
            srv_obj.log.close()
            if args.port != 0:
                print(f"hostile: cannot listen on port {port}: {e}",
                      file=sys.stderr)
                return 2
    else:
        print("hostile: no port free on every address", file=sys.stderr)
        return 2

    sites = list(srv_obj.sites.values())
    with open(os.path.join(out, "hosts"), "w") as f:
        for s in sites:
            if not s.name[0].isdigit() and not s.name.startswith("["):
                f.write(f"{s.ip} {s.name}\n")
    groups: dict[str, list[str]] = {}
    meta = {}
    for s in sites:
        for g in s.groups:
            groups.setdefault(g, [])
            groups[g].extend(f"http://{s.name}:{port}{p}" for p in s.seeds)
        meta[s.name] = {"ip": s.ip, "groups": list(s.groups), "doc": s.doc,
                        "listen": s.listen, "seeds": s.seeds, "must": s.must,
                        "never": s.never, "robots_only": s.robots_only,
                        "paths": sorted(s.routes)}
    with open(os.path.join(out, "hosts.json"), "w") as f:
        json.dump({"port": port, "ipv6": ipv6, "ticks": args.ticks,
                   "hosts": meta}, f, indent=1)
    for g, seeds in groups.items():
        with open(os.path.join(out, f"seeds-{g}.txt"), "w") as f:
            f.write("".join(u + "\n" for u in seeds))
    # Every big body is built before the port is announced: a request that
    # had to wait for one (seconds of CRC work on a loaded machine) could be
    # given up by the client, and the log can only stamp the end of an
    # exchange the client left when this loop notices, which may be long
    # after the client went away (and its next request came in).
    warm = [h.warm_up() for s in sites for h in [s.robots, *s.routes.values()]
            if hasattr(h, "warm_up")]
    await asyncio.gather(*[w for w in warm if w is not None])
    with open(os.path.join(out, "port.tmp"), "w") as f:
        f.write(f"{port}\n")
    os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), args.max_seconds)
    except asyncio.TimeoutError:
        pass
    for s in servers:
        s.close()
    for t in list(srv_obj.conns):
        t.cancel()
    await asyncio.gather(*srv_obj.conns, return_exceptions=True)
    srv_obj.log.close()
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="output directory")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=300.0,
                   help="lifetime; the server exits by itself after it")
    p.add_argument("--ticks", type=int, default=150,
                   help="pages of each tick (control) host")
    p.add_argument("--fat-pages", type=int, default=40)
    p.add_argument("--fat-bytes", type=int, default=100000)
    args = p.parse_args()
    if not 0 < args.max_seconds <= 3600:
        p.error("--max-seconds must be in (0, 3600]")
    if not 1 <= args.ticks <= 100000:
        p.error("--ticks must be in [1, 100000]")
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
