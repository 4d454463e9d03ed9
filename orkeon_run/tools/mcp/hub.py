"""The MCP servers of one run: each started once, its tools listed, called with a time
limit, and all stopped at the end.

    async with McpHub(servers, environ=scrubbed_env, cwd=workspace, emit=events.emit) as hub:
        specs = [t.spec for t in select_tools(role_tools, hub.tools)]
        reply = await hub.call("mcp__git__git_status", {"repo_path": "."}, timeout=left)

or, in a task group the run already has, `await tg.start(hub.serve)` and `hub.stop()` at the
end. Either way the SDK's client of each server is entered and left in one task the hub
starts for that server (anyio's rule for cancel scopes), and calls may come from any task.

Contract:
- Servers start in parallel; entering the hub (or `serve` reporting started) waits until
  each is running or has failed, for at most `start_timeout` seconds each. A server that
  fails is no error: its tools are missing, `failed()` says why, and a call to any
  `mcp__SERVER__…` name is refused with `[refused: MCP server SERVER is not running: …]`.
- A stdio server runs with `environ` (the caller's scrubbed environment) plus its own
  `env`, in `cwd`, in a process group of its own (`stdio.py`); its stderr goes to
  `log_dir/SERVER.stderr.log` (a temporary file without `log_dir`), whose last line is
  part of the reason when the server fails. An http server gets its `headers` on every
  request. `${VAR}` in the configuration is expanded from `expand_from` (default: orkeon's
  environment), so an operator can hand a server a credential the scrub removed.
- With `sandbox` (the step's policy for its roles), a stdio server not `"sandbox": "off"`
  runs confined (server.py): the one started with the hub has no roots (it lists the
  tools, and serves the roles without roots); a call with `roots` goes to the server's
  process for those roots, started at the first such call (one process per set of roots,
  stopped with the others). An unconfined server serves every role from one process.
  A confined server whose `network` is an allow-list reaches the hosts through the proxy
  `egress(list)` gives (the run's, `StepRun.egress`); without one it has no network.
- With `pins` (the run's pinned files), each start of a stdio server (the hub's, and a
  role's process mid-run) is refused when a file its command names, or its workspace
  file of `origins` (server -> `.mcp.json`, say), changed since the run started: it
  fails, its reason naming the file (confined.py).
- `call` never raises for anything a server does (`results.py` has the texts). A stdio
  server that ends while the run goes on is marked so once, with an `mcp.server` event.
- An http server whose session broke (connection refused, 404 for its session id) is
  `dropped`; a call that finds it so, before anything ran there, has a new session made
  (server.py, `reconnect`; calls at once share one) and is sent once more on it (send.py:
  a call that reached the server is never sent again); a second failure refuses the call
  with `[refused: MCP server S is unreachable (one new session was tried): REASON]`.
- Leaving the hub (or `stop()`) stops every server, a stdio one with its whole process
  group, also when the run is cancelled (SIGINT/SIGTERM cancel the run's task group).

Events (`emit(type, **fields)`, e.g. `EventLog.emit`), one `mcp.server` per change:
`{server, transport, state, pid, tools, reason, seconds}`, state `started` (tools: how
many; seconds: the start-up time), `failed` (reason), `exited` (reason: it ended mid-run)
or `stopped` (a running server stopped at the end; seconds: how long it ran); for http,
`dropped` (reason), `reconnected` (seconds) and `unreachable` (reason, seconds).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ...catalog import ToolSpec
from ...config.mcp import McpServer
from ...policy.mcpnames import MAX_NAME_CHARS, PREFIX, SEPARATOR, normalize, tool_name
from .results import Result, no_tool, not_running, stopped_during, timed_out, unreachable
from .send import Broken, send
from .server import ServerRun
from .settings import Emit, Settings

if TYPE_CHECKING:
    from ...config.pins import Pins
    from ..sandbox import SandboxPolicy
    from ..sandbox.proxy import EgressProxy


@dataclass(frozen=True)
class McpTool:
    """One tool of one server. `name` is what the model, rules and hooks see."""

    name: str  # mcp__SERVER__TOOL
    server: str  # the server's name as configured
    tool: str  # the tool's name as the server lists it
    description: str
    input_schema: dict[str, Any]  # exactly as the server declares it

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema)


@dataclass(frozen=True)
class McpReply:
    """What one call came to, `result` being what the model reads. `refused`: nothing ran
    on a server: it is not running (`[refused: MCP server S is not running: …]`), or it is
    unreachable after one new session (`[refused: MCP server S is unreachable …]`), or
    the call names no tool it lists, or its input is not an object (`error: …`, the texts
    the pipeline gives any call it cannot run). Otherwise the call ran and `result` is the
    server's result or an `error: …` text."""

    result: Result
    refused: bool = False


class McpHub:
    def __init__(
        self,
        servers: Mapping[str, McpServer],
        *,
        environ: Mapping[str, str],
        cwd: Path,
        expand_from: Mapping[str, str] | None = None,
        emit: Emit | None = None,
        log_dir: Path | None = None,
        start_timeout: float = 30.0,
        grace: float = 2.0,
        sandbox: SandboxPolicy | None = None,
        egress: Callable[[tuple[str, ...]], EgressProxy | None] | None = None,
        pins: Pins | None = None,
        origins: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        settings = Settings(
            environ=dict(environ),
            cwd=cwd,
            expand_from=os.environ if expand_from is None else expand_from,
            emit=emit,
            log_dir=log_dir,
            start_timeout=start_timeout,
            grace=grace,
            sandbox=sandbox,
            egress=egress,
            pins=pins,
            origins=dict(origins or {}),
        )
        self._servers = {name: ServerRun(name, cfg, settings) for name, cfg in servers.items()}
        # Confined servers' processes for roles with roots: (server, resolved roots) -> run.
        self._by_roots: dict[tuple[str, tuple[Path, ...]], ServerRun] = {}
        self._serving: anyio.abc.TaskGroup | None = None
        self._by_prefix = {normalize(name): s for name, s in self._servers.items()}
        self._tools: dict[str, McpTool] = {}
        # Tools left out (a name too long for model APIs, a name taken): for the log.
        self.warnings: list[str] = []
        self._stop: anyio.Event | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    # --- what the run sees ----------------------------------------------------------

    @property
    def tools(self) -> list[McpTool]:
        """Every tool of every server that started, in configuration order."""
        return list(self._tools.values())

    def state(self, server: str) -> tuple[str, str | None]:
        """(state, reason) of a configured server: `starting`, `running`, `failed`,
        `exited` or `stopped`, and why when it is not running."""
        s = self._servers[server]
        return s.state, s.reason

    def failed(self) -> dict[str, str]:
        """Server name -> why it did not start, for the servers that did not."""
        return {n: s.reason or "" for n, s in self._servers.items() if s.state == "failed"}

    def pid(self, server: str) -> int | None:
        """The process (and process group) id of a stdio server that started."""
        return self._servers[server].pid

    def processes(self, server: str) -> dict[tuple[str, ...] | None, int | None]:
        """Every process of a stdio server, by the roots it serves (None: the one started
        with the hub)."""
        found: dict[tuple[str, ...] | None, int | None] = {None: self._servers[server].pid}
        found.update({s.roots: s.pid for (n, _), s in self._by_roots.items() if n == server})
        return found

    def client(self, server: str) -> Any:
        """The SDK's client of a running server, None otherwise (for benchmarks and tests:
        calls go through `call`)."""
        s = self._servers[server]
        return s.client if s.state == "running" else None

    def unavailable(self, name: str) -> str | None:
        """The text a call of `name` is refused with before anything else looks at it, when
        its server is configured and not running (it failed to start, or ended; an http
        server whose session dropped is tried again by the call); else None.
        `calls.Catalog`'s check for the run's MCP tools."""
        s = self._server_of(name)
        if s is None or s.state in ("running", "dropped"):  # a dropped one: the call reconnects
            return None
        return not_running(s.name, s.reason or "it was stopped")

    def owns(self, name: str) -> bool:
        """`name` is `mcp__SERVER__…` for a configured SERVER: the hub answers the call."""
        return self._server_of(name) is not None

    async def call(
        self,
        name: str,
        arguments: Any,
        timeout: float,
        idle: float | None = None,
        roots: Sequence[str] | None = None,
    ) -> McpReply:
        """Call tool `name` (`mcp__SERVER__TOOL`) with `arguments`, for at most `timeout`
        seconds (the tool limit, or what is left of the step's budget if less), for a role
        whose roots are `roots` (a confined server's process for them answers). With
        `idle` (the watchdog, docs/inputs.md, "The no-progress watchdog"): a call the server neither
        answers nor reports progress on for that long is cancelled and errors.Idle
        raised; each progress notification gives it `idle` seconds more. The server, which
        other roles share, keeps running."""
        s = self._server_of(name)
        if s is None:
            return McpReply(no_tool(name), refused=True)
        if s.state == "running" and s.confined and roots:
            with anyio.move_on_after(timeout) as scope:
                s = await self._for_roots(s, tuple(roots))
            if scope.cancelled_caught:
                return McpReply(timed_out(s.name, timeout))
        deadline = anyio.current_time() + timeout
        again = s.state == "dropped"  # an http session that broke: this call's one new one
        if again:
            why = await self._reconnect(s, s.generation, None, deadline, timeout)
            if why is not None:
                return McpReply(why, refused=True)
        if s.state != "running":
            return McpReply(not_running(s.name, s.reason or "it was stopped"), refused=True)
        tool = self._tools.get(name)
        if tool is None:
            return McpReply(no_tool(name), refused=True)
        if not isinstance(arguments, Mapping):
            return McpReply(f"error: {name}: the input must be a JSON object", refused=True)
        outcome = await send(s, tool, arguments, deadline=deadline, timeout=timeout, idle=idle)
        if isinstance(outcome, Broken) and outcome.unsent and s.reconnectable and not again:
            # Nothing ran there: a new session, and the call sent once more on it.
            broke = outcome.problem or "the connection broke"
            why = await self._reconnect(s, outcome.generation, broke, deadline, timeout)
            if why is not None:
                return McpReply(why, refused=True)
            outcome = await send(s, tool, arguments, deadline=deadline, timeout=timeout, idle=idle)
        if isinstance(outcome, Broken):
            reason = await s.gone(outcome.exc, outcome.generation, outcome.problem)
            if outcome.unsent and s.reconnectable:
                return McpReply(unreachable(s.name, reason), refused=True)
            return McpReply(stopped_during(s.name, reason))
        return McpReply(outcome)

    async def _reconnect(
        self, s: ServerRun, generation: int, why: str | None, deadline: float, timeout: float
    ) -> str | None:
        """A new session in place of session `generation`, which broke (`why`; None: the
        call found it dropped), made by `deadline`: None once it runs, else the text the
        call is refused with."""
        with anyio.CancelScope(deadline=deadline) as scope:
            problem = await s.reconnect(generation, why)
        if scope.cancelled_caught:
            return timed_out(s.name, timeout)
        return None if problem is None else unreachable(s.name, problem)

    async def _for_roots(self, base: ServerRun, roots: tuple[str, ...]) -> ServerRun:
        """The confined server's process for `roots`, started now when there is none (the
        base one when they grant nothing); returns once it runs or failed."""
        policy = base.settings.sandbox
        assert policy is not None
        key = (base.name, policy.with_roots(roots).writable)
        if not key[1]:
            return base
        s = self._by_roots.get(key)
        if s is None:
            s = self._by_roots[key] = ServerRun(base.name, base.config, base.settings, roots)
            s.ready = anyio.Event()
            assert self._serving is not None and self._stop is not None
            self._serving.start_soon(s.run, self._stop)
        assert s.ready is not None
        await s.ready.wait()
        return s

    # --- start and stop -------------------------------------------------------------

    async def __aenter__(self) -> McpHub:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            await self._tg.start(self.serve)
        except BaseException:
            self.stop()
            await self._tg.__aexit__(*sys.exc_info())
            raise
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self.stop()
        assert self._tg is not None
        return await self._tg.__aexit__(*exc)

    def stop(self) -> None:
        """Ask every server to stop; `serve` returns once they all have."""
        if self._stop is not None:
            self._stop.set()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Start every server; report started once each is running or has failed; keep
        them until `stop()` (or cancellation); stop them all."""
        if self._stop is not None:
            raise RuntimeError("an McpHub serves once")
        stop = self._stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            self._serving = tg
            for s in self._servers.values():
                s.ready = anyio.Event()
                tg.start_soon(s.run, stop)
            for s in self._servers.values():
                assert s.ready is not None
                await s.ready.wait()
            self._index()
            task_status.started()

    def _index(self) -> None:
        """The tool names of the servers that started; a name too long for model APIs,
        a tool that can only run as an MCP Task, or a name two tools share, is left out with
        a warning (so the model is never offered a tool whose every call fails)."""
        for s in self._servers.values():
            for t in s.tools:
                name = tool_name(s.name, t.name)
                if len(name) > MAX_NAME_CHARS:
                    self.warnings.append(
                        f"MCP tool {name} is left out: model APIs refuse tool names longer "
                        f"than {MAX_NAME_CHARS} characters"
                    )
                elif _needs_tasks(t):
                    self.warnings.append(
                        f"MCP tool {name} is left out: it requires MCP Tasks "
                        "(execution.taskSupport: required), which orkeon does not support"
                    )
                elif name in self._tools:
                    self.warnings.append(
                        f"MCP server {s.name} lists two tools named {name}; the second is left out"
                    )
                else:
                    schema = t.input_schema if isinstance(t.input_schema, dict) else {}
                    self._tools[name] = McpTool(name, s.name, t.name, t.description or "", schema)

    def _server_of(self, name: str) -> ServerRun | None:
        if not name.startswith(PREFIX):
            return None
        server, sep, _ = name[len(PREFIX) :].partition(SEPARATOR)
        return self._by_prefix.get(server) if sep else None


__all__ = ["McpHub", "McpReply", "McpTool"]


def _needs_tasks(tool: Any) -> bool:
    """A tool whose `execution.taskSupport` is `required`: it answers a plain call with
    -32601, and orkeon does not run MCP Tasks."""
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"
