"""What confining a stdio MCP server costs (issue 21, items 6 and 13; docs/tools.md, "How
servers run"): the test server's `echo` (tests/kit/fakes/mcp_server.py) through
`McpHub.call`, confined (in a role's sandbox, for roots `src/`) against unconfined
(`"sandbox": "off"`), the calls alternating so a passing load weighs on both alike; and,
for information, the start of a confined server's process for a role (the first call of
a role with roots: bubblewrap, then the server's start and handshake) against the start
of an unconfined one.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import anyio

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub
from orkeon_run.tools.sandbox import SandboxPolicy, probe

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


def main() -> None:
    header()
    avail = probe()
    if not avail.ok:
        print(f"(no sandbox here: {avail.reason})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp).resolve()
        (ws / "src").mkdir()
        got = anyio.run(measure, ws)
    row("an MCP call, confined vs unconfined (stdio echo)", f"{got['boxed'] * 1e3:.2f} ms",
        f"{got['free'] * 1e3:.2f} ms", got["boxed"] / got["free"], "info", None)  # fmt: skip
    print(f"(medians of {CALLS} calls each, alternating; a role's own confined process started "
          f"at its first call in {got['role_start'] * 1e3:.0f} ms; the hub with both servers "
          f"started in {got['start'] * 1e3:.0f} ms)")  # fmt: skip


if __name__ == "__main__":
    main()
