"""orkeon's egress proxy on its own (docs/security.md, "Network"): HTTP CONNECT and plain
HTTP forwarding only, anything else answered 400; one Unix socket per command, gone with
it; the proxy's folder gone when it closes. Talked to directly over its socket, as the
forwarder inside a sandbox does."""

from __future__ import annotations

import os
import socket
import threading

from orkeon_run.policy.hosts import AllowList
from orkeon_run.tools.sandbox.proxy import EgressProxy, mapped_hosts


def ask(path: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_other_traffic_is_answered_400_and_connects_nowhere() -> None:
    upstream = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Event()

    def accept() -> None:
        try:
            upstream.accept()
        except OSError:  # closed at the end of the test: nothing connected
            return
        accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    port = upstream.getsockname()[1]
    refused: list[dict[str, object]] = []
    proxy = EgressProxy(
        AllowList.parse(["allowed.test"]), on_refused=refused.append,
        hosts={"allowed.test": "127.0.0.1"},
    )  # fmt: skip
    try:
        with proxy.session("a command") as path:
            for junk in (
                b"\x16\x03\x01\x02\x00garbage-tls-hello\r\n\r\n",  # TLS straight at the proxy
                f"GET https://allowed.test:{port}/ HTTP/1.1\r\n\r\n".encode(),  # not http://
                b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
            ):
                assert ask(path, junk).startswith(b"HTTP/1.1 400 "), junk
            answer = ask(path, f"GET http://evil.test:{port}/ HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 403 ") and b"evil.test" in answer
        assert not os.path.exists(path)  # the command's socket is gone with it
        folder = os.path.dirname(path)
    finally:
        proxy.close()
        upstream.close()
    assert not os.path.exists(folder)
    assert not accepted.is_set()
    assert refused == [{"command": "a command", "host": "evil.test", "port": port}]


def test_the_test_resolver_maps_names_to_loopback_addresses_only() -> None:
    env = {"ORKEON_TEST_HOSTS": "a.test=127.0.0.1, B.test=::1,c.test=10.0.0.1,d.test=x"}
    assert mapped_hosts(env) == {"a.test": "127.0.0.1", "b.test": "::1"}
