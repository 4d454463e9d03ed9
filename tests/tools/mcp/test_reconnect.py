"""An http server whose connection or session breaks mid-run: the call makes one new session
and is sent once more when nothing ran there, else it is refused with the reason
(docs/tools.md, "When a server fails"). The server is tests/kit/fakes/mcp_server.py over
streamable HTTP on 127.0.0.1, stopped and started again on its port (each start awaits its
`ready` line); `--legacy` makes it a server of the 2025 protocol, whose sessions a restart
forgets (it answers 404 for the old session id)."""

from __future__ import annotations

from pathlib import Path

import anyio
from kit.mcp import Events, HttpServer, with_hub

from orkeon_run.tools.mcp.hub import McpHub

DOWN = "ConnectError: All connection attempts failed"


def _states(events: Events) -> list[str]:
    return [e["state"] for e in events.seen]


def test_a_session_the_server_forgot_is_made_again_and_the_call_sent_once_more(
    tmp_path: Path,
) -> None:
    """docs/tools.md: 'the server answered 404 for the session (it expired, or the server
    restarted ...). A new session is made, once for this call, and the call sent once
    more on it'."""
    server = HttpServer("--legacy")
    with server as url:

        async def body(hub: McpHub, events: Events) -> None:
            assert (await hub.call("mcp__web__echo", {"text": "before"}, 30)).result == "before"
            server.restart()  # the new process knows no session: 404 for the old id
            reply = await hub.call("mcp__web__echo", {"text": "after"}, 30)
            assert (reply.result, reply.refused) == ("after", False)
            dropped = await events.wait(server="web", state="dropped")
            assert dropped["reason"] == f"POST {url}: answered 404 Not Found"
            again = await events.wait(server="web", state="reconnected")
            assert again["seconds"] >= 0 and again["transport"] == "http"
            # The new session serves the calls after it without another.
            assert (await hub.call("mcp__web__echo", {"text": "on"}, 30)).result == "on"
            assert _states(events) == ["started", "dropped", "reconnected"]

        with_hub({"web": {"url": url}}, tmp_path, body)


def test_calls_that_find_one_broken_session_share_one_new_session(tmp_path: Path) -> None:
    """docs/tools.md: 'calls that find the session broken at once share one new session'."""
    server = HttpServer("--legacy")
    with server as url:

        async def body(hub: McpHub, events: Events) -> None:
            assert (await hub.call("mcp__web__echo", {"text": "x"}, 30)).result == "x"
            server.restart()
            results: dict[int, object] = {}
            async with anyio.create_task_group() as tg:
                for i in range(3):

                    async def one(i: int = i) -> None:
                        results[i] = (await hub.call("mcp__web__echo", {"text": str(i)}, 30)).result

                    tg.start_soon(one)
            assert results == {0: "0", 1: "1", 2: "2"}
            assert _states(events) == ["started", "dropped", "reconnected"]

        with_hub({"web": {"url": url}}, tmp_path, body)


def test_a_server_that_stays_down_refuses_each_call_after_one_try_and_comes_back(
    tmp_path: Path,
) -> None:
    """docs/tools.md: 'it could not be reached, and one new session did not help:
    `[refused: MCP server tracker is unreachable (one new session was tried): REASON]`
    ... The next call tries once more, so a server started again at its address serves
    the calls after that'."""
    server = HttpServer()
    with server as url:

        async def body(hub: McpHub, events: Events) -> None:
            assert (await hub.call("mcp__web__echo", {"text": "up"}, 30)).result == "up"
            server.stop()
            text = f"[refused: MCP server web is unreachable (one new session was tried): POST {url}: {DOWN}]"
            for tries in (1, 2):
                reply = await hub.call("mcp__web__echo", {"text": "down"}, 30)
                assert (reply.result, reply.refused) == (text, True)
                # One new session tried per call, never more.
                assert _states(events).count("unreachable") == tries
            # The hub does not refuse it up front: the call is what tries again.
            assert hub.unavailable("mcp__web__echo") is None
            assert events.seen[1]["state"] == "dropped"
            assert events.seen[1]["reason"] == f"POST {url}: {DOWN}"
            assert events.seen[2]["reason"] == f"POST {url}: {DOWN}"
            server.restart()
            assert (await hub.call("mcp__web__echo", {"text": "back"}, 30)).result == "back"
            assert _states(events) == [
                "started",
                "dropped",
                "unreachable",
                "unreachable",
                "reconnected",
            ]

        with_hub({"web": {"url": url}}, tmp_path, body)


def test_a_call_that_reached_the_server_is_not_sent_again(tmp_path: Path) -> None:
    """docs/tools.md: 'a call that reached the server is never sent again: the tool may
    have done its work (it need not be idempotent ...) ... the next call makes the new
    session'. The tool `die` notes each call in a file, then the server exits before it
    answers."""
    server = HttpServer()
    mark = tmp_path / "calls"
    with server as url:

        async def body(hub: McpHub, events: Events) -> None:
            reply = await hub.call("mcp__web__die", {"mark": str(mark)}, 30)
            assert not reply.refused
            assert reply.result.startswith(
                f"error: MCP server web stopped during the call: POST {url}: "
            )
            assert mark.read_text() == "die\n"  # one call reached it, and no second
            assert "reconnected" not in _states(events)
            server.restart()
            # The next call makes the new session (its own one try).
            assert (await hub.call("mcp__web__echo", {"text": "next"}, 30)).result == "next"
            assert mark.read_text() == "die\n"
            assert _states(events) == ["started", "dropped", "reconnected"]

        with_hub({"web": {"url": url}}, tmp_path, body)
