"""The hub with a real streamable-HTTP server on 127.0.0.1: tests/kit/fakes/mcp_server.py,
built with the SDK's own server side and served by uvicorn in a subprocess, which says
`ready URL` once it listens."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import FAKES
from kit.fakes.mcp_server import ODD_SCHEMA
from kit.mcp import Events, with_hub

from orkeon_run.tools.mcp.hub import McpHub
from orkeon_run.tools.mcp.results import RESULT_CHARS

SERVER = FAKES / "mcp_server.py"


class HttpServer:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), "http", *args], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # uvicorn listens once this line is written
        assert line.startswith("ready http://127.0.0.1:"), line
        self.url = line.split()[1]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    server = HttpServer()
    yield server.url
    server.stop()


def test_tools_are_listed_with_their_schemas_as_declared(web: str, tmp_path: Path) -> None:
    from kit.fakes.mcp_server import LEFT_OUT, TOOLS

    async def body(hub: McpHub, events: Events) -> None:
        listed = [t.name for t in TOOLS]
        assert [t.tool for t in hub.tools] == listed[: -len(LEFT_OUT)]
        odd = next(t for t in hub.tools if t.name == "mcp__web__odd")
        assert json.dumps(odd.input_schema) == json.dumps(ODD_SCHEMA)
        assert odd.description == "A schema to pass on as it is."
        started = await events.wait(server="web", state="started")
        assert (started["transport"], started["pid"]) == ("http", None)

    with_hub({"web": {"url": web}}, tmp_path, body)


def test_structured_and_text_results_errors_and_the_size_cap(web: str, tmp_path: Path) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        async def call(name: str, args: dict[str, Any]) -> Any:
            reply = await hub.call(f"mcp__web__{name}", args, 30)
            assert not reply.refused
            return reply.result

        assert await call("echo", {"text": "über"}) == "über"
        assert await call("structured", {"n": 4}) == {"n": 4, "squares": [0, 1, 4, 9]}
        assert await call("fail", {}) == "error: the thing is broken"
        cut = await call("big", {"n": RESULT_CHARS + 1})
        assert cut.endswith(f"cut at {RESULT_CHARS} characters; 1 more were dropped]")
        assert len(cut.split("\n")[0]) == RESULT_CHARS
        assert await call("big", {"n": RESULT_CHARS, "structured": True}) == (
            "a big object (see the structured content)"
        )
        assert (await hub.call("mcp__web__nope", {}, 30)).result == (
            "error: there is no tool named 'mcp__web__nope'"
        )

    with_hub({"web": {"type": "http", "url": web}}, tmp_path, body)


def test_a_call_that_runs_out_of_time_is_cancelled_and_the_server_goes_on(
    web: str, tmp_path: Path
) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        reply = await hub.call("mcp__web__slow", {"seconds": 600}, 0.5)
        assert reply.result == (
            "error: MCP server web did not answer within 0.5 s; the call was cancelled"
        )
        assert (await hub.call("mcp__web__echo", {"text": "on"}, 30)).result == "on"

    with_hub({"web": {"url": web}}, tmp_path, body)


def test_headers_are_sent_and_a_refusal_names_the_status(tmp_path: Path) -> None:
    server = HttpServer("--require-header", "Authorization=Bearer t0k")
    try:
        servers = {
            "good": {"url": server.url, "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}},
            "bad": {"url": server.url, "headers": {"Authorization": "Bearer wrong"}},
        }

        async def body(hub: McpHub, events: Events) -> None:
            assert (await hub.call("mcp__good__echo", {"text": "in"}, 30)).result == "in"
            reason = f"POST {server.url}: answered 401 Unauthorized"
            assert hub.failed() == {"bad": reason}
            reply = await hub.call("mcp__bad__echo", {}, 30)
            assert reply.refused
            assert reply.result == f"[refused: MCP server bad is not running: {reason}]"

        with_hub(servers, tmp_path, body, expand_from={"MCP_TEST_TOKEN": "t0k"})
    finally:
        server.stop()


def test_a_server_that_is_not_there_fails_to_start(tmp_path: Path) -> None:
    with socket.socket() as taken:  # bound and not listening: connections are refused
        taken.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{taken.getsockname()[1]}/mcp"

        async def body(hub: McpHub, events: Events) -> None:
            assert hub.failed() == {
                "gone": f"POST {url}: ConnectError: All connection attempts failed"
            }
            assert hub.tools == []

        with_hub({"gone": {"url": url}}, tmp_path, body)


def test_servers_of_both_transports_run_side_by_side(web: str, tmp_path: Path) -> None:
    local = {"command": [sys.executable, str(SERVER), "stdio"]}

    async def body(hub: McpHub, events: Events) -> None:
        results = {}
        async with anyio.create_task_group() as tg:
            for name in ("web", "local"):

                async def one(name: str = name) -> None:
                    results[name] = (
                        await hub.call(f"mcp__{name}__echo", {"text": name}, 30)
                    ).result

                tg.start_soon(one)
        assert results == {"web": "web", "local": "local"}

    with_hub({"web": {"url": web}, "local": local}, tmp_path, body)
