"""What confining a stdio MCP server costs (issue 21, items 6 and 13; docs/tools.md, "How
servers run"): the test server's `echo` (tests/kit/fakes/mcp_server.py) through
`McpHub.call`, confined (in a role's sandbox, for roots `src/`) against unconfined
(`"sandbox": "off"`), the calls alternating so a passing load weighs on both alike; and,
for information, the start of a confined server's process for a role (the first call of
a role with roots: bubblewrap, then the server's start and handshake) against the start
of an unconfined one.

A second pair (issue 21, item 11): the server's `fetch` of a loopback HTTP server from a
confined server whose `network` is an allow-list (its own network namespace, the
forwarder, orkeon's proxy, which maps `allowed.test` to 127.0.0.1 itself: no DNS) against
the same confined server with `"network": true` (the host's network), alternating.
"""

from __future__ import annotations

import http.server
import statistics
import tempfile
import threading
import time
from pathlib import Path

import anyio

from orkeon_run.environ import scrubbed
from orkeon_run.policy.hosts import AllowList
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub
from orkeon_run.tools.sandbox import SandboxPolicy, probe
from orkeon_run.tools.sandbox.proxy import EgressProxy

from .common import PY, header, row

CALLS = 200
SERVER = Path(__file__).parent.parent / "tests" / "kit" / "fakes" / "mcp_server.py"
ECHO = {"text": "hello"}
ROOTS = ("src/",)


async def measure(ws: Path) -> dict[str, float]:
    argv = [PY, str(SERVER), "stdio"]
    servers = parse_servers(
        {"boxed": {"command": argv}, "free": {"command": argv, "sandbox": "off"}}
    )
    policy = SandboxPolicy.for_role(ws, None, run_dir=None)
    t0 = time.perf_counter()
    async with McpHub(servers, environ=scrubbed(), cwd=ws, sandbox=policy) as hub:
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        first = await hub.call("mcp__boxed__echo", ECHO, 60, roots=ROOTS)  # starts its process
        role_start = time.perf_counter() - t1
        assert first.result == "hello", first.result
        samples: dict[str, list[float]] = {"boxed": [], "free": []}
        for _ in range(CALLS):
            for name in ("boxed", "free"):
                t = time.perf_counter()
                reply = await hub.call(f"mcp__{name}__echo", ECHO, 60, roots=ROOTS)
                samples[name].append(time.perf_counter() - t)
                assert reply.result == "hello", reply.result
        assert len(hub.processes("boxed")) == 2 and len(hub.processes("free")) == 1
    return {
        "boxed": statistics.median(samples["boxed"]),
        "free": statistics.median(samples["free"]),
        "start": started,
        "role_start": role_start,
    }


FETCHES = 60
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


async def measure_fetch(ws: Path, port: int) -> dict[str, float]:
    """Medians of the server's `fetch`: proxied (an allow-list) and direct (`true`)."""
    argv = [PY, str(SERVER), "stdio"]
    servers = parse_servers(
        {
            "proxied": {"command": argv, "network": ["allowed.test"]},
            "direct": {"command": argv, "network": True},
        }
    )
    proxy = EgressProxy(AllowList.parse(["allowed.test"]), hosts={"allowed.test": "127.0.0.1"})
    env = {k: v for k, v in scrubbed().items() if k.lower() not in PROXY_VARS}
    policy = SandboxPolicy.for_role(ws, None, run_dir=None)
    urls = {"proxied": f"http://allowed.test:{port}/", "direct": f"http://127.0.0.1:{port}/"}
    samples: dict[str, list[float]] = {"proxied": [], "direct": []}
    try:
        hub = McpHub(servers, environ=env, cwd=ws, sandbox=policy, egress=lambda _: proxy)
        async with hub:
            for i in range(FETCHES + 1):
                for name, url in urls.items():
                    t = time.perf_counter()
                    reply = await hub.call(f"mcp__{name}__fetch", {"url": url}, 60, roots=ROOTS)
                    if i:  # the first round warms both (their roots' processes start)
                        samples[name].append(time.perf_counter() - t)
                    assert reply.result == "hello", reply.result
    finally:
        proxy.close()
    assert proxy.refused == 0
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    header()
    avail = probe()
    if not avail.ok:
        print(f"(no sandbox here: {avail.reason})")
        return
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp).resolve()
            (ws / "src").mkdir()
            got = anyio.run(measure, ws)
            fetched = anyio.run(measure_fetch, ws, httpd.server_address[1])
    finally:
        httpd.shutdown()
    row("an MCP call, confined vs unconfined (stdio echo)", f"{got['boxed'] * 1e3:.2f} ms",
        f"{got['free'] * 1e3:.2f} ms", got["boxed"] / got["free"], "info", None)  # fmt: skip
    print(f"(medians of {CALLS} calls each, alternating; a role's own confined process started "
          f"at its first call in {got['role_start'] * 1e3:.0f} ms; the hub with both servers "
          f"started in {got['start'] * 1e3:.0f} ms)")  # fmt: skip
    proxied, direct = fetched["proxied"], fetched["direct"]
    row("a confined server's GET, proxied vs direct", f"{proxied * 1e3:.2f} ms",
        f"{direct * 1e3:.2f} ms", proxied / direct, "info", None)  # fmt: skip
    print(f"(medians of {FETCHES} `fetch` calls each of a loopback HTTP server, alternating: "
          f"an allow-list through orkeon's proxy against `\"network\": true`)")  # fmt: skip


if __name__ == "__main__":
    main()
