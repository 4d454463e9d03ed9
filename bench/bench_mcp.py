"""The MCP hub's own cost (issue 15):

- overhead per call: the median of `McpHub.call` minus the median of calling the same
  server through the SDK's client directly (`Client.call_tool`, the very client the hub
  holds, so both go over one connection), timed in turn; the `echo` tool of the test server
  (tests/fakes/mcp_server.py), over stdio and over streamable HTTP on 127.0.0.1. Target:
  under 1 ms (the pipeline's budget for an MCP call).
- for information: starting a hub with one stdio server, and stopping it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub

from .bench_pipeline import interleaved
from .common import PY, header, row

CALLS = 400
SERVER = Path(__file__).parent.parent / "tests" / "fakes" / "mcp_server.py"
ECHO = {"text": "hello"}


async def overhead(hub: McpHub, server: str) -> tuple[float, float]:
    """(direct, through the hub): median seconds per call."""
    client = hub.client(server)
    name = f"mcp__{server}__echo"

    async def direct() -> Any:
        return await client.call_tool("echo", ECHO)

    async def hubbed() -> Any:
        return await hub.call(name, ECHO, 600.0)

    await interleaved({"direct": direct, "hub": hubbed}, 50)  # warm up
    t = await interleaved({"direct": direct, "hub": hubbed}, CALLS)
    return t["direct"], t["hub"]


async def measure(url: str, cwd: Path) -> None:
    servers = parse_servers({"local": {"command": [PY, str(SERVER), "stdio"]}, "web": {"url": url}})
    started = time.perf_counter()
    async with McpHub(servers, environ=scrubbed(), cwd=cwd) as hub:
        start = time.perf_counter() - started
        assert not hub.failed(), hub.failed()
        results = {s: await overhead(hub, s) for s in ("local", "web")}
        stopping = time.perf_counter()
    stop = time.perf_counter() - stopping

    header()
    for server, label in (("local", "stdio"), ("web", "streamable HTTP")):
        direct, hubbed = results[server]
        over = (hubbed - direct) * 1e6
        row(f"hub overhead per call ({label})", f"{over:.1f} µs", f"{direct * 1e6:.0f} µs",
            None, "< 1 ms", over < 1000)  # fmt: skip
    row("start a stdio and an http server (parallel)", f"{start:.2f} s", "", None, "", None)
    row("stop both", f"{stop:.2f} s", "", None, "", None)
    print(f"(baseline: the SDK's Client.call_tool on the hub's own connection; medians of "
          f"{CALLS} calls each, interleaved)")  # fmt: skip


def main() -> None:
    web = subprocess.Popen([sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True)
    try:
        assert web.stdout is not None
        line = web.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError(f"the test server did not start: {line!r}")
        with tempfile.TemporaryDirectory() as tmp:
            anyio.run(measure, line.split()[1], Path(tmp))
    finally:
        web.kill()
        web.wait()
        if web.stdout is not None:
            web.stdout.close()


if __name__ == "__main__":
    main()
