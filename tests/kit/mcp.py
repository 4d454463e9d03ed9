"""Shared by the MCP tests: the test servers, the hub in a test, and what runs in /proc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub

from . import DATA, FAKES, git

FAKE = {"command": [sys.executable, str(FAKES / "mcp_server.py"), "stdio"]}


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]}


class Events:
    """The hub's `mcp.server` events, and a way to await one."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._waiters: list[tuple[Callable[[dict[str, Any]], bool], anyio.Event]] = []

    def __call__(self, type: str, **fields: Any) -> None:
        assert type == "mcp.server"
        self.seen.append(fields)
        for match, event in self._waiters:
            if match(fields):
                event.set()

    async def wait(self, **want: Any) -> dict[str, Any]:
        def match(e: dict[str, Any]) -> bool:
            return all(e.get(k) == v for k, v in want.items())

        event = anyio.Event()
        self._waiters.append((match, event))
        if not any(match(e) for e in self.seen):
            with anyio.fail_after(60):
                await event.wait()
        return next(e for e in self.seen if match(e))


def with_hub(
    servers: dict[str, Any], cwd: Path, body: Callable[[McpHub, Events], Awaitable[Any]], **kw: Any
) -> Any:
    events = Events()
    kw.setdefault("environ", scrubbed())
    kw.setdefault("start_timeout", 60.0)  # a loaded machine is slow, not broken

    async def go() -> Any:
        async with McpHub(parse_servers(servers), cwd=cwd, emit=events, **kw) as hub:
            return await body(hub, events)

    return anyio.run(go)


def state(pid: int) -> str | None:
    """A process's state letter (R, S, Z, ...), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def running(pid: int) -> bool:
    return state(pid) not in (None, "Z", "X")


def namespaced(pid: int, cwd: Path | None = None) -> list[int]:
    """The host's pids of the processes that are `pid` in a PID namespace below ours (a
    sandbox's, a hook's veil: what they write as their own pid, or a child's, is the
    namespace's): the first of each NSpid whose last is `pid`. Many namespaces have a pid
    2 on a busy machine: `cwd` keeps those whose working folder is that one (a hook's is
    its workspace, and its children inherit it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
                if cwd is not None and os.readlink(f"/proc/{entry}/cwd") != os.fspath(cwd):
                    continue
            except OSError:
                continue
            for line in status.splitlines():
                ids = line.split()[1:] if line.startswith("NSpid:") else []
                if len(ids) > 1 and int(ids[-1]) == pid:
                    found.append(int(ids[0]))
    return found


def group_running(pgid: int) -> list[int]:
    """The processes of a group that still run (zombies no one reaps do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                found.append(int(entry))
    return found


# --- runs with MCP servers (tests/run/test_mcp.py, tests/commands/test_mcp.py) ---------

KILL_SERVER = DATA / "mcp" / "kill_server.py"


def spec_crew(analyst: list[str], allow: list[str], deny: list[str] = ()) -> str:  # type: ignore[assignment]
    """A dev-spec crew whose analyst is offered `analyst` under one rule set (`allow`,
    `deny`), and whose writer gets the file tools, no MCP tool and no rule set."""

    def toml(items: Any) -> str:
        return json.dumps(list(items))

    return (
        'step = "dev-spec"\n'
        "[[roles]]\n"
        'name = "analyst"\n'
        'prompt = "prompts/analyst.md"\n'
        f"tools = {toml(analyst)}\n"
        'rule_sets = ["analyst"]\n'
        "[[roles]]\n"
        'name = "writer"\n'
        'prompt = "prompts/writer.md"\n'
        'tools = ["file_read", "file_write"]\n'
        "rule_sets = []\n"
        "[[rule_sets]]\n"
        'name = "analyst"\n'
        f"allow = {toml(allow)}\n"
        f"deny = {toml(deny)}\n"
    )


def worker_crew(tools: list[str]) -> str:
    """A dev-batches crew whose one role, `worker`, is offered `tools`, every one allowed
    under its one rule set."""
    return (
        'step = "dev-batches"\n'
        "[[roles]]\n"
        'name = "worker"\n'
        'prompt = "prompts/worker.md"\n'
        f"tools = {json.dumps(tools)}\n"
        'rule_sets = ["w"]\n'
        "[[rule_sets]]\n"
        'name = "w"\n'
        f"allow = {json.dumps(tools)}\n"
    )


def use_crew(ws: Path, step: str, text: str) -> None:
    """`text` as the workspace's crew for `step`, trusted (ORKEON_CONFIG_DIR must be set)."""
    from orkeon_run.config.trust import record_crews_trust

    folder = ws / ".orkeon" / "crews"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{step}.toml").write_text(text)
    record_crews_trust(ws)


def commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


class HttpServer:
    """The SDK-built test server over streamable HTTP on 127.0.0.1, for a `with` block
    (its URL); `restart()` starts it again on its port once it is stopped."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> str:
        self._start(self.args)
        return self.url

    def _start(self, args: tuple[str, ...]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKES / "mcp_server.py"), "http", *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # uvicorn listens once this line is written
        assert line.startswith("ready "), line
        self.url = line.split()[1]

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def restart(self) -> None:
        """Stopped if it runs, started again on the same port (the same URL)."""
        self.stop()
        port = self.url.rsplit(":", 1)[1].split("/")[0]
        self._start((*self.args, "--port", port))

    def __exit__(self, *exc: Any) -> None:
        self.stop()
