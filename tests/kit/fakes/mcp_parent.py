"""An orkeon-like parent for the SIGTERM test: the run's structure (`runner.py`: a task
group whose signal watcher cancels it on SIGINT/SIGTERM) around an McpHub.

    python mcp_parent.py context|taskgroup SERVERS_JSON CWD

`context` enters the hub around the run's task group; `taskgroup` starts it in that task
group (`tg.start(hub.serve)`). Once the servers run and the `fake` server has started a
process of its own, prints one JSON line {"pids": {SERVER: PID}, "spawned": PID}, then
waits for a signal; exits 130 when one came.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import anyio
import anyio.abc

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub


async def main(mode: str, servers_json: str, cwd: str) -> int:
    servers = parse_servers(json.loads(servers_json))
    hub = McpHub(servers, environ=scrubbed(), cwd=Path(cwd))
    interrupted = False

    async def watch_signals(
        tg: anyio.abc.TaskGroup, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        nonlocal interrupted
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            async for _ in signals:
                interrupted = True
                tg.cancel_scope.cancel()
                return

    async def body() -> None:
        spawned = await hub.call("mcp__fake__spawn", {}, 60)
        pids = {name: hub.pid(name) for name in servers}
        print(json.dumps({"pids": pids, "spawned": int(str(spawned.result))}), flush=True)
        await anyio.sleep_forever()

    if mode == "context":
        async with hub, anyio.create_task_group() as tg:
            await tg.start(watch_signals, tg)
            tg.start_soon(body)
    else:
        async with anyio.create_task_group() as tg:
            await tg.start(watch_signals, tg)
            await tg.start(hub.serve)
            tg.start_soon(body)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, *sys.argv[1:4]))
