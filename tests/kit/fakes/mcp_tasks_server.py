"""A stdio MCP server of the 2025-11-25 protocol, written by hand (JSON-RPC lines), that
lists a tool runnable only as an MCP Task beside a plain one, as server-everything lists
`simulate-research-query` beside `echo`.

    python mcp_tasks_server.py

The SDK's client keeps a tool's `execution` only on the 2025 protocol, and the SDK's own
server speaks the 2026 one when asked (`server/discover`); this server answers that probe
"method not found", as a server of 2025 does, so the client falls back to `initialize`.
A plain call of `research` fails -32601, as it does on server-everything.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2025-11-25"
TOOLS = [
    {
        "name": "echo",
        "description": "Return the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {
        "name": "research",
        "description": "A long research task: runs only as an MCP Task.",
        "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}},
        "execution": {"taskSupport": "required"},
    },
]


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:  # a notification (initialized, cancelled): no answer
        return None
    ok = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        info = {"name": "orkeon-tasks-test", "version": "1"}
        return {**ok, "result": {"protocolVersion": VERSION, "capabilities": {"tools": {}},
                                 "serverInfo": info}}  # fmt: skip
    if method == "ping":
        return {**ok, "result": {}}
    if method == "tools/list":
        return {**ok, "result": {"tools": TOOLS}}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {**ok, "result": {"content": [{"type": "text", "text": text}], "isError": False}}
    what = f"tool {params.get('name')} requires a task" if method == "tools/call" else method
    return {**ok, "error": {"code": -32601, "message": f"Method not found: {what}"}}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
