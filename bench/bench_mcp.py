"""The cost of an MCP call in orkeon (issue 15), against calling the same server through the
SDK's client directly (`Client.call_tool`, the very client the hub holds, so every variant
goes over one connection), timed in turn; the `echo` tool of the test server
(tests/kit/fakes/mcp_server.py), over stdio and over streamable HTTP on 127.0.0.1:

- the pipeline's overhead per call: `Pipeline.call` as a run wires it (the role's catalog
  from its crew entry, the hub's check at stage 2, a gate and a rule set naming MCP tools,
  the tool.start and tool.call events written to events.jsonl, the ledger) minus the
  direct call. Target: under 1 ms.
- the hub's share of it: `McpHub.call` minus the direct call.
- for information: starting a hub with a stdio and an http server, and stopping them.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.calls import CallContext
from orkeon_run.environ import scrubbed
from orkeon_run.events import EventLog
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.pipeline import Pipeline
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.rules import RuleSet
from orkeon_run.tools import ToolEnv
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub
from orkeon_run.tools.mcp.tool import role_tools, run_catalog

from .bench_pipeline import interleaved
from .common import PY, header, row

CALLS = 400
SERVER = Path(__file__).parent.parent / "tests" / "kit" / "fakes" / "mcp_server.py"
ECHO = {"text": "hello"}


def pipeline(hub: McpHub, cwd: Path) -> Pipeline:
    """The pipeline as a step wires it, with rules that name MCP tools."""
    return Pipeline(
        workspace=cwd,
        step="dev-batches",
        ledger=Ledger(BudgetLimits(seconds=None)),
        events=EventLog(cwd / "events.jsonl"),
        tool_env=ToolEnv(workspace=cwd, shell_rules=ShellRules(), mcp=hub),
        gate=Gate(deny=["Bash(git push *)", "mcp__local__die", "mcp__web__die"]),
        rule_sets=[RuleSet.parse("crew", allow=["Read(src/**)", "mcp__local", "mcp__web__*"])],
    )


async def overhead(hub: McpHub, server: str, cwd: Path) -> dict[str, float]:
    """Median seconds per call: direct, through the hub, through the pipeline."""
    client = hub.client(server)
    name = f"mcp__{server}__echo"
    _, catalog = role_tools([f"mcp__{server}__*"], run_catalog(hub), hub)
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=cwd, catalog=catalog)
    pipe = pipeline(hub, cwd)

    async def direct() -> Any:
        return await client.call_tool("echo", ECHO)

    async def hubbed() -> Any:
        return await hub.call(name, ECHO, 600.0)

    async def piped() -> Any:
        out = await pipe.call(ctx, name, ECHO, "c1")
        assert out.result == "hello", out.result

    fns = {"direct": direct, "hub": hubbed, "pipeline": piped}
    await interleaved(fns, 50)  # warm up
    return await interleaved(fns, CALLS)


async def measure(url: str, cwd: Path) -> None:
    servers = parse_servers({"local": {"command": [PY, str(SERVER), "stdio"]}, "web": {"url": url}})
    started = time.perf_counter()
    async with McpHub(servers, environ=scrubbed(), cwd=cwd) as hub:
        start = time.perf_counter() - started
        assert not hub.failed(), hub.failed()
        results = {s: await overhead(hub, s, cwd) for s in ("local", "web")}
        stopping = time.perf_counter()
    stop = time.perf_counter() - stopping

    header()
    for server, label in (("local", "stdio"), ("web", "streamable HTTP")):
        t = results[server]
        direct = f"{t['direct'] * 1e6:.0f} µs"
        for what, key in (("pipeline", "pipeline"), ("hub", "hub")):
            over = (t[key] - t["direct"]) * 1e6
            row(f"{what} overhead per MCP call ({label})", f"{over:.1f} µs", direct, None,
                "< 1 ms", over < 1000)  # fmt: skip
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
