"""A real HTTP server on 127.0.0.1, in a thread, that answers from a queue of replies.

Tests and the bench push `Reply` objects (status, JSON body or raw bytes, headers, a delay)
and read back what the client really sent (`requests`). The protocol modules
(`openai_api.py`, `anthropic_api.py`) add the wire format: the path, the auth header, the
request checks a real provider makes (a tool result without its call is a 400), and
helpers that build replies.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless `raw` is given
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow server)
    # Never answer: a server still generating, as llama.cpp's does until the client goes
    # away. The handler waits for the client to close the connection and records it.
    hang: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client: tuple[str, int] = ("", 0)  # the client's address: one per connection
    at: float = 0.0  # time.monotonic() when it arrived: the gaps a client waited between tries


class FakeServer:
    """Serve `replies` in order; when the queue is empty, `fallback(request)` answers.

    `check(request) -> Reply | None` runs first on every request: a protocol module uses it
    to answer 401 on a wrong key or 400 on a malformed conversation, as the real API would.
    """

    def __init__(
        self,
        check: Callable[[Recorded], Reply | None] | None = None,
        fallback: Callable[[Recorded], Reply] | None = None,
    ) -> None:
        self.replies: deque[Reply | Callable[[Recorded], Reply]] = deque()
        self.requests: list[Recorded] = []
        self.check = check
        self.fallback = fallback
        # Applied to every 200 JSON reply before it is sent (a protocol module's usage).
        self.transform: Callable[[Recorded, Reply], Reply] | None = None
        self.handler_seconds: list[float] = []
        # Hanging replies whose client closed the connection (`Reply.hang`), in order.
        self.hung_up: list[Recorded] = []
        self.hang_up = threading.Event()  # set at each such close
        self._hanging: set[Any] = set()
        self._stopping = False
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._url = ""

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do
            # Headers and body go out as two writes; with Nagle on, the second waits for
            # the client's delayed ACK (~40 ms a turn on Linux loopback).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._handle(self)

            def do_GET(self) -> None:
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self._url = f"http://{host}:{port}"
        # A short poll: shutdown() waits up to one poll interval (0.5 s by default).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            hanging, self._hanging = set(self._hanging), set()
        for sock in hanging:  # release handlers still waiting for their client
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Still readable after stop(), for tests of a server that is gone."""
        return self._url

    def push(self, *replies: Reply | Callable[[Recorded], Reply]) -> None:
        with self._lock:
            self.replies.extend(replies)

    def answer_always(self, reply: Reply) -> None:
        """Once the queued replies are used up, answer every request with `reply` (a 429
        or a 500 that outlasts any number of retries)."""
        self.fallback = lambda _req: reply

    # -- serving ----------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        t0 = time.perf_counter()
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in h.headers.items()}
        req = Recorded(
            h.command, h.path, headers, body, tuple(h.client_address[:2]), time.monotonic()
        )
        with self._lock:
            self.requests.append(req)
        reply = self.check(req) if self.check else None
        if reply is None:
            with self._lock:
                item = self.replies.popleft() if self.replies else None
            if item is None:
                reply = self.fallback(req) if self.fallback else Reply(500, {"error": "no reply"})
            else:
                reply = item(req) if callable(item) else item
        if self.transform and reply.status == 200 and reply.raw is None:
            reply = self.transform(req, reply)
        if reply.hang:
            self._wait_for_hang_up(h, req)
            return
        if reply.delay:
            time.sleep(reply.delay)
        data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        try:
            h.send_response(reply.status)
            ctype = "application/json" if reply.raw is None else "text/plain"
            h.send_header("content-type", reply.headers.get("content-type", ctype))
            for k, v in reply.headers.items():
                if k.lower() != "content-type":
                    h.send_header(k, v)
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)
        self.handler_seconds.append(time.perf_counter() - t0 - reply.delay)

    def _wait_for_hang_up(self, h: BaseHTTPRequestHandler, req: Recorded) -> None:
        """Answer nothing; return when the client closes the connection (a read sees its
        end) or the server stops."""
        sock = h.connection
        with self._lock:
            self._hanging.add(sock)
        try:
            while True:
                try:
                    data = sock.recv(4096)
                except OSError:
                    break
                if not data:
                    with self._lock:
                        if self._stopping:
                            break
                        self.hung_up.append(req)
                    self.hang_up.set()
                    break
        finally:
            with self._lock:
                self._hanging.discard(sock)
            h.close_connection = True


def unreachable_url() -> str:
    """`http://127.0.0.1:PORT` of a port bound and closed again: nothing listens there, so
    a connection is refused at once (a server that cannot be reached)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
