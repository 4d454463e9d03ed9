"""orkeon's egress proxy (docs/security.md, "Network"): the only way out of a sandbox whose
network is an allow-list. It speaks HTTP CONNECT (`CONNECT host:443`, what HTTPS clients
send through a proxy) and plain HTTP forwarding (`GET http://host/path`); anything else is
answered 400 and closed. A host on the allow-list is connected to (the proxy resolves the
name itself, so the sandbox never picks the address); any other is answered 403, and
counted and reported once per command (`on_refused`).

    proxy = EgressProxy(AllowList.parse(["pypi.org"]), on_refused=record)
    with proxy.session("pip install x") as socket_path:   # one Unix socket per command
        ...                                                # the sandbox runs, then ends
    proxy.close()                                          # with the run

Nothing is started until the first session: a folder of its own (mode 0700) in the
system's temporary folder, one listening Unix socket per session in it, and a thread per
connection. `close` stops every session and removes the folder.

Tests map names to loopback addresses with `ORKEON_TEST_HOSTS` ("name=127.0.0.1,…"): a
test-only knob, honoured for 127.0.0.0/8 and ::1 only, so a test never uses real DNS.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import select
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...policy.hosts import AllowList, normal_host

TEST_HOSTS_VAR = "ORKEON_TEST_HOSTS"
HEAD_LIMIT = 64 * 1024  # an HTTP request head larger than this is not a client's
IO_TIMEOUT = 60.0  # seconds to read a request head or to connect upstream
_HOP = (b"proxy-connection:", b"proxy-authorization:", b"connection:", b"keep-alive:")


def mapped_hosts(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `ORKEON_TEST_HOSTS` mapping: names to loopback addresses only."""
    text = (os.environ if environ is None else environ).get(TEST_HOSTS_VAR, "")
    out: dict[str, str] = {}
    for item in text.split(","):
        name, _, addr = item.partition("=")
        with contextlib.suppress(ValueError):
            if name.strip() and ipaddress.ip_address(addr.strip()).is_loopback:
                out[normal_host(name)] = addr.strip()
    return out


class EgressProxy:
    """The proxy of one allow-list, for a run (or a role). Thread-safe. `on_refused` is
    called, in a proxy thread, with `{"command", "host", "port"}` the first time a
    command's connection to that host and port is refused; `refused` counts those."""

    def __init__(
        self,
        allow: AllowList,
        *,
        on_refused: Callable[[dict[str, Any]], None] | None = None,
        hosts: Mapping[str, str] | None = None,
    ) -> None:
        self.allow = allow
        self.on_refused = on_refused
        self.hosts = dict(mapped_hosts() if hosts is None else hosts)
        self.refused = 0
        self._lock = threading.Lock()
        self._folder: str | None = None
        self._count = 0
        self._sessions: set[_Session] = set()

    @contextlib.contextmanager
    def session(self, command: str) -> Iterator[str]:
        """A Unix socket for one command's sandbox (its path); closed when the block ends."""
        with self._lock:
            if self._folder is None:
                self._folder = tempfile.mkdtemp(prefix="orkeon-egress-")
            self._count += 1
            path = os.path.join(self._folder, f"{self._count}.sock")
            s = _Session(self, command, path)
            self._sessions.add(s)
        try:
            yield path
        finally:
            s.close()
            with self._lock:
                self._sessions.discard(s)

    def close(self) -> None:
        """Stop every session and remove the proxy's folder. The proxy can start again."""
        with self._lock:
            sessions, self._sessions = list(self._sessions), set()
            folder, self._folder = self._folder, None
        for s in sessions:
            s.close()
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)

    def _refuse(self, session: _Session, host: str, port: int) -> None:
        with self._lock:
            if (host, port) in session.refused:
                return
            session.refused.add((host, port))
            self.refused += 1
        if self.on_refused is not None:
            # An event that cannot be written breaks the run's log, which stops the run at
            # its next event: nothing for the proxy's thread to do about it.
            with contextlib.suppress(Exception):
                self.on_refused({"command": session.command, "host": host, "port": port})

    def _resolve(self, host: str) -> str:
        return self.hosts.get(normal_host(host), host)


class _Session:
    def __init__(self, proxy: EgressProxy, command: str, path: str) -> None:
        self.proxy, self.command, self.path = proxy, command, path
        self.refused: set[tuple[str, int]] = set()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self._conns: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="orkeon-egress").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        except OSError:
            pass
        finally:
            self._conns.discard(conn)
            conn.close()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(IO_TIMEOUT)
        head, rest = _read_head(conn)
        if head is None:
            return _answer(conn, 400, "not an HTTP proxy request")
        line, _, headers = head.partition(b"\r\n")
        parts = line.decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return _answer(conn, 400, "not an HTTP proxy request")
        method, target, version = parts
        found = _target(method, target)
        if found is None:
            return _answer(conn, 400, "only CONNECT host:port and http:// requests are proxied")
        host, port, path = found
        name = normal_host(host)
        if not self.proxy.allow.allows(name, port):
            self.proxy._refuse(self, name, port)
            return _answer(conn, 403, f"{name}:{port} is not on the network allow-list")
        try:
            up = socket.create_connection((self.proxy._resolve(name), port), IO_TIMEOUT)
        except OSError as exc:
            return _answer(conn, 502, f"cannot connect to {name}:{port}: {exc.strerror or exc}")
        self._conns.add(up)  # shut down with the session too
        with up:
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                kept = [h for h in headers.split(b"\r\n") if h and not h.lower().startswith(_HOP)]
                first = f"{method} {path} {version}".encode("latin-1")
                up.sendall(b"\r\n".join([first, *kept, b"Connection: close", b"", b""]))
            if rest:
                up.sendall(rest)
            conn.settimeout(None)
            try:
                _pump(conn, up)
            finally:
                self._conns.discard(up)


def _read_head(conn: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            return None, b""
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _target(method: str, target: str) -> tuple[str, int, str] | None:
    """(host, port, origin-form path) of a proxy request, or None."""
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        return (host, int(port), "") if sep and port.isdigit() and host else None
    if not target.lower().startswith("http://"):
        return None
    authority, slash, path = target[7:].partition("/")
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):  # [::1]:8080
        host, _, after = authority[1:].partition("]")
        port = after[1:] if after.startswith(":") else "80"
    else:
        host, sep, port = authority.partition(":")
        port = port if sep else "80"
    if not host or not port.isdigit():
        return None
    return host, int(port), slash + path if slash else "/"


def _answer(conn: socket.socket, code: int, why: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
    body = f"orkeon egress proxy: {why}\n".encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(OSError):
        conn.sendall(head + body)


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides have ended (a half-close passed on)."""
    peer = {a: b, b: a}
    while peer:
        ready, _, _ = select.select(list(peer), [], [])
        for r in ready:
            data = r.recv(65536)
            if data:
                peer[r].sendall(data)
            else:
                other = peer.pop(r)
                with contextlib.suppress(OSError):
                    other.shutdown(socket.SHUT_WR)
