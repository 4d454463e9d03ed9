#!/usr/bin/env python3
"""A PostToolUse hook for the MCP tests: have an MCP server of the run killed from outside.

kill_server.py EVENTS SERVER REQUEST

A hook runs where orkeon's processes, its servers among them, are not visible (a PID
namespace of its own: docs/security.md, "Hooks"), so it cannot signal the server
itself: it writes REQUEST, where the test (which can) waits for it and sends SIGKILL to
the pid of SERVER's `mcp.server` started event. The hook then waits until the run recorded
that the server ended (its `mcp.server` exited event, in EVENTS, the run's events.jsonl),
so the call after this one meets a server the run knows is gone. Exits 1 when either event
does not come within 60 s.
"""

import json
import sys
import time


def find(path, server, state):
    with open(path, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            wanted = ("mcp.server", server, state)
            if (event.get("type"), event.get("server"), event.get("state")) == wanted:
                return event
    return None


def wait(path, server, state):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        event = find(path, server, state)
        if event is not None:
            return event
        time.sleep(0.01)
    sys.stderr.write(f"no {state} event of {server}\n")
    sys.exit(1)


events, server, request = sys.argv[1], sys.argv[2], sys.argv[3]
sys.stdin.read()
wait(events, server, "started")
with open(request, "w", encoding="utf-8") as f:
    f.write(server)
wait(events, server, "exited")
