#!/usr/bin/env python3
"""A PostToolUse hook for the MCP tests: kill an MCP server of the run from outside.

kill_server.py EVENTS SERVER

Finds SERVER's pid in the run's `mcp.server` started event (EVENTS is its events.jsonl),
sends it SIGKILL, then waits until the run recorded that the server ended (its `mcp.server`
exited event), so the call after this one meets a server the run knows is gone. Exits 1
when either event does not come within 60 s.
"""

import json
import os
import signal
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


events, server = sys.argv[1], sys.argv[2]
sys.stdin.read()
os.kill(wait(events, server, "started")["pid"], signal.SIGKILL)
wait(events, server, "exited")
