"""One call sent on a server's session: its time limit, the idle watchdog, and what came of
it: the server's answer (a result, or an `error: …` text), or a broken transport (`Broken`,
for the hub to reconnect or to say why).

A call is sent again (on a new session) only when its request provably ran nothing on the
server (`Broken.unsent`, httpclient.py): a tool call that reached the server may have done
its work before the connection broke, and a tool need not be idempotent (a commit, a
payment, a message sent), so it is never repeated. An answer, even an error, is the call's
result, never a reason to send it again.

The transport sees requests, not calls: a session the server answered 404 for ran nothing
of any call on it, but a connection that could not be made is known to be this call's only
when no other call was under way beside it (`_Flight.shared`); otherwise it is not sent
again (the next call makes the new session).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import Idle
from .results import Result, call_error, timed_out, to_result

if TYPE_CHECKING:
    from .hub import McpTool
    from .server import ServerRun


@dataclass(frozen=True)
class Broken:
    """The transport broke before an answer (`exc`, None: no exception says more) on
    session `generation`; `problem`: what the http transport saw (`POST URL: …`);
    `unsent`: nothing ran on the server."""

    exc: BaseException | None
    generation: int
    problem: str | None = None
    unsent: bool = False


async def send(
    s: ServerRun,
    tool: McpTool,
    arguments: Mapping[str, Any],
    *,
    deadline: float,
    timeout: float,
    idle: float | None,
) -> Result | Broken:
    """Call `tool` on `s`'s session until `deadline` (`timeout`: the limit, for the text),
    with the idle watchdog (`McpHub.call`): raises errors.Idle when it fires."""
    from httpx2 import TransportError  # the SDK and its client: loaded by a started server
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, INVALID_REQUEST, REQUEST_TIMEOUT

    generation, watch, client = s.generation, s.watch, s.client
    me = _Flight(shared=bool(s.flights))
    for other in s.flights:
        other.shared = True
    watchdog = anyio.CancelScope(deadline=_watch_deadline(deadline, idle))

    async def heard(*_: Any) -> None:  # a progress notification: the server works
        watchdog.deadline = _watch_deadline(deadline, idle)

    def broken(exc: BaseException | None) -> Broken:
        if watch is None:
            return Broken(exc, generation)
        unsent = watch.lost or (watch.unsent and not me.shared)
        return Broken(exc, generation, watch.problem, unsent)

    s.flights.add(me)
    try:
        with watchdog:
            reply = await client.call_tool(
                tool.tool, dict(arguments), progress_callback=heard if idle else None
            )
        if watchdog.cancelled_caught:
            if idle is not None and watchdog.deadline < deadline:
                silent = {"kind": "mcp", "name": s.name, "command": tool.tool}
                raise Idle({**silent, "seconds": idle})
            return timed_out(s.name, timeout)
        return to_result(reply, tool.name)
    except Idle:
        raise
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT:
            return timed_out(s.name, timeout)
        if exc.code == CONNECTION_CLOSED:
            return broken(None)
        if exc.code == INVALID_REQUEST and watch is not None and watch.lost:
            return broken(None)  # the server answered 404 for the session: it ran nothing
        return call_error(tool.name, exc.message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, TransportError) as exc:
        return broken(exc)
    except Exception as exc:  # the SDK's or the server's bug must not end the step
        return f"error: {tool.name} failed: {type(exc).__name__}: {exc}"
    finally:
        s.flights.discard(me)


@dataclass(eq=False)  # hashed by identity: one per call, in a set
class _Flight:
    """One call under way; `shared`: another call was under way on the server beside it."""

    shared: bool


def _watch_deadline(deadline: float, idle: float | None) -> float:
    """When a call's watch ends: at its time limit, or `idle` seconds from now if sooner."""
    return deadline if idle is None else min(deadline, anyio.current_time() + idle)


__all__ = ["Broken", "send"]
