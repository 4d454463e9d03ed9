"""A small MCP server for the tests, written with the SDK's own server side.

    python mcp_server.py stdio
    python mcp_server.py http [--require-header NAME=VALUE] [--port PORT] [--legacy]

Over http it serves streamable HTTP on 127.0.0.1 at a free port (or PORT, to restart one)
and, once uvicorn is listening, prints `ready URL` on stdout (the tests wait for that line);
`--legacy` makes it a server of the 2025 protocol, with sessions (`guarded`). Its tools cover what
the hub must pass on: a schema with every unusual keyword, structured and text results,
sizes, errors, a slow tool, a tool that kills the server, one that leaves a process in
the server's group, and an HTTP GET (the network a confined server is given).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

# Declared with keywords a client could be tempted to rewrite: $defs and $ref, enum,
# additionalProperties, a custom x- keyword, a property order that is not sorted.
ODD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"level": {"type": "string", "enum": ["low", "high"]}},
    "properties": {
        "zeta": {"$ref": "#/$defs/level"},
        "alpha": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    },
    "required": ["zeta"],
    "additionalProperties": False,
    "x-orkeon-test": {"kept": True},
}

TOOLS = [
    types.Tool(
        name="echo",
        description="Return the text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
    types.Tool(name="odd", description="A schema to pass on as it is.", input_schema=ODD_SCHEMA),
    types.Tool(
        name="structured",
        description="Structured content, and its text form.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    types.Tool(
        name="big",
        description="n characters of text (structured: as a field of an object).",
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}, "structured": {"type": "boolean"}},
        },
    ),
    types.Tool(name="fail", description="An error result.", input_schema={"type": "object"}),
    types.Tool(name="image", description="An image and a text.", input_schema={"type": "object"}),
    types.Tool(
        name="slow",
        description="Answer after `seconds`.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
    ),
    types.Tool(
        name="die", description="The server exits at once.", input_schema={"type": "object"}
    ),
    types.Tool(
        name="spawn",
        description="Start a process that stays in the server's group; return its pid.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="spawn_stubborn",
        description="As spawn, but the process ignores SIGTERM.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="env",
        description="The value of an environment variable, or null.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
    types.Tool(
        name="write",
        description="Write `text` to the file `path`; the error when the OS refuses.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        },
    ),
    types.Tool(
        name="roots",
        description="The roots the client gives when asked (roots/list), as a JSON list.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="fetch",
        description="GET `url` (through HTTP_PROXY when set): its body, or why it failed.",
        input_schema={"type": "object", "properties": {"url": {"type": "string"}}},
    ),
    types.Tool(
        name="weird.name with spaces",
        description="A tool name Claude Code would normalize.",
        input_schema={"type": "object"},
    ),
    # Left out by the hub: a name too long for model APIs, and a name another tool's takes.
    types.Tool(name="x" * 60, description="Too long.", input_schema={"type": "object"}),
    types.Tool(
        name="weird_name_with_spaces", description="Taken.", input_schema={"type": "object"}
    ),
]
LEFT_OUT = ("x" * 60, "weird_name_with_spaces")


def text(value: str, *, error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=value)],
        structured_content=structured,
        is_error=error,
    )


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return text(str(args.get("text", "")))
    if name == "odd":
        return text(f"zeta={args.get('zeta')}")
    if name == "structured":
        n = int(args.get("n", 1))
        value = {"n": n, "squares": [i * i for i in range(n)]}
        return text(f"{n} squares", structured=value)
    if name == "big":
        n = int(args.get("n", 10))
        if args.get("structured"):
            return text("a big object (see the structured content)", structured={"data": "x" * n})
        return text("y" * n)
    if name == "fail":
        return text("the thing is broken", error=True)
    if name == "image":
        return types.CallToolResult(
            content=[
                types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
                types.TextContent(type="text", text="a picture"),
            ]
        )
    if name == "slow":
        await anyio.sleep(float(args.get("seconds", 60)))
        return text("slept")
    if name == "die":
        if "mark" in args:  # a line per call that reached the server
            with open(str(args["mark"]), "a", encoding="utf-8") as f:
                f.write("die\n")
        os._exit(7)
    if name == "spawn":
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
        return text(str(child.pid))
    if name == "spawn_stubborn":
        # An ignored signal stays ignored across exec: `sleep` ignores SIGTERM too.
        argv = ["sh", "-c", "trap '' TERM; exec sleep 300"]
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        return text(str(child.pid))
    if name == "env":
        return text(repr(os.environ.get(str(args.get("name")))))
    if name == "write":
        try:
            with open(str(args["path"]), "w", encoding="utf-8") as f:
                f.write(str(args.get("text", "")))
        except OSError as exc:
            return text(f"{type(exc).__name__}: {exc.strerror}", error=True)
        return text("wrote")
    if name == "roots":  # the protocol of 2026-07-28 asks in an input-required result
        import json

        answered = (params.input_responses or {}).get("roots")
        if answered is None:
            return types.InputRequiredResult(input_requests={"roots": types.ListRootsRequest()})
        assert isinstance(answered, types.ListRootsResult), answered
        return text(json.dumps([{"uri": str(r.uri), "name": r.name} for r in answered.roots]))
    if name == "fetch":
        return await anyio.to_thread.run_sync(fetch, str(args.get("url")))
    if name == "weird.name with spaces":
        return text("weird")
    raise ValueError(f"no tool {name}")


def fetch(url: str) -> types.CallToolResult:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return text(reply.read().decode())
    except urllib.error.HTTPError as exc:
        return text(f"fetch failed: HTTP {exc.code}: {exc.read().decode().strip()}", error=True)
    except OSError as exc:
        return text(f"fetch failed: {exc}", error=True)


def make_server() -> Server[Any]:
    return Server("orkeon-test", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = make_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def guarded(app: Any, require: tuple[str, str] | None, legacy: bool) -> Any:
    """`app` behind the options' checks: a request without the `require`d header is
    answered 401; with `legacy`, the probe of the 2026 protocol (`server/discover`) is
    answered 404, as a server of the 2025 protocol does, so a client falls back to the
    initialize handshake and a session id (which a restarted server answers 404 for)."""
    if require is None and not legacy:
        return app

    async def outer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            status = 0
            if require is not None and headers.get(require[0].lower()) != require[1]:
                status = 401
            elif legacy and headers.get("mcp-method") == "server/discover":
                status = 404
            if status:
                await send({"type": "http.response.start", "status": status, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return outer


async def serve_http(require: tuple[str, str] | None, port: int, legacy: bool) -> None:
    import uvicorn

    app = guarded(make_server().streamable_http_app(), require, legacy)
    sock = socket.socket()
    # A server restarted on its port (--port) binds it again while old connections linger.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.01)
        print(f"ready http://127.0.0.1:{port}/mcp", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])


def main(argv: list[str]) -> None:
    if argv[:1] == ["stdio"]:
        anyio.run(serve_stdio)
        return
    require = None
    if "--require-header" in argv:
        name, _, value = argv[argv.index("--require-header") + 1].partition("=")
        require = (name, value)
    port = int(argv[argv.index("--port") + 1]) if "--port" in argv else 0
    anyio.run(serve_http, require, port, "--legacy" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
