#!/usr/bin/env python3
# The loopback fake of the Anthropic Messages API that Claude Code and orkeon both talk
# to in bench/bench_p5.py, run as a process by bench/peers/__init__.py.
"""Fake Anthropic Messages API server with scripted assistant turns.

Binds to 127.0.0.1 only.  Usage:

    fake_anthropic.py --scenario SCENARIO.json --log requests.jsonl [--port 0] [--port-file F]

Turn selection: for a POST /v1/messages request that carries a non-empty
`tools` list (the main agent loop), the turn index is the number of
`assistant` messages already present in `messages`.  turns[index] from the
scenario is returned; past the end of the script a plain text "done." is
returned.  Requests without tools (auxiliary calls such as title/summary
generation) get a short text answer and do not consume a turn.  Optional
scenario "routes": [{"contains": S, "turns": [...]}] serve a different
script to conversations whose first message contains S (subagents).

Every request (any method, any path) is appended to the JSONL log with its
parsed body, and the answer we sent is logged as well.
"""

import argparse
import contextlib
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

_lock = threading.Lock()
_ids = itertools.count(1)


def _next_id(prefix):
    return f"{prefix}_{next(_ids):024d}"


class State:
    scenario: ClassVar[dict] = {}
    log_path = None


def log_line(obj):
    obj["ts"] = time.time()
    with _lock, open(State.log_path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def build_blocks(spec_blocks):
    blocks = []
    for b in spec_blocks:
        if b["type"] == "text":
            blocks.append({"type": "text", "text": b["text"]})
        elif b["type"] == "tool_use":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": b.get("id") or _next_id("toolu_fake"),
                    "name": b["name"],
                    "input": b.get("input", {}),
                }
            )
        else:
            raise ValueError("unknown block type {!r}".format(b["type"]))
    return blocks


def choose_reply(body):
    msgs = body.get("messages") or []
    tools = body.get("tools") or []
    if tools:
        n_assist = sum(1 for m in msgs if m.get("role") == "assistant")
        turns = State.scenario.get("turns", [])
        first = json.dumps(msgs[0], ensure_ascii=False) if msgs else ""
        for route in State.scenario.get("routes", []):
            # e.g. a subagent conversation whose first user message carries a marker
            if route["contains"] in first:
                rturns = route["turns"]
                if n_assist < len(rturns):
                    return "route:" + route["contains"], n_assist, build_blocks(rturns[n_assist])
                return "route_past_script", n_assist, [{"type": "text", "text": "done."}]
        if n_assist < len(turns):
            return "scripted", n_assist, build_blocks(turns[n_assist])
        return (
            "past_script",
            n_assist,
            [{"type": "text", "text": State.scenario.get("default_text", "done.")}],
        )
    return "auxiliary", None, [{"type": "text", "text": State.scenario.get("aux_text", "ok")}]


def sse(event, data):
    return (f"event: {event}\ndata: {json.dumps(data)}\n\n").encode()


def stream_body(msg):
    out = []
    start = dict(msg)
    start["content"] = []
    start["stop_reason"] = None
    start["usage"] = {
        "input_tokens": msg["usage"]["input_tokens"],
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    out.append(sse("message_start", {"type": "message_start", "message": start}))
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            out.append(
                sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            out.append(
                sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": b["text"]},
                    },
                )
            )
        else:
            out.append(
                sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {
                            "type": "tool_use",
                            "id": b["id"],
                            "name": b["name"],
                            "input": {},
                        },
                    },
                )
            )
            out.append(
                sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(b["input"]),
                        },
                    },
                )
            )
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": msg["usage"]["output_tokens"]},
            },
        )
    )
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # silence default stderr logging
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return raw, json.loads(raw) if raw else None
        except Exception:
            return raw, None

    def _send(self, code, payload, ctype="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", _next_id("req_fake"))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _generic(self, method):
        raw, body = self._read_body()
        path = self.path.split("?")[0]
        hdrs = {
            k.lower(): v
            for k, v in self.headers.items()
            if k.lower()
            in ("anthropic-beta", "anthropic-version", "user-agent", "x-app", "content-type")
        }
        entry = {"method": method, "path": self.path, "headers": hdrs}
        if body is not None:
            entry["body"] = body
        elif raw:
            entry["raw"] = raw.decode("utf-8", "replace")[:2000]

        if method == "POST" and path == "/v1/messages":
            kind, turn, blocks = choose_reply(body or {})
            has_tool = any(b["type"] == "tool_use" for b in blocks)
            msg = {
                "id": _next_id("msg_fake"),
                "type": "message",
                "role": "assistant",
                "model": (body or {}).get("model", "claude-fake"),
                "content": blocks,
                "stop_reason": "tool_use" if has_tool else "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 5,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            }
            entry.update(
                {
                    "reply_kind": kind,
                    "turn": turn,
                    "reply": msg,
                    "stream": bool((body or {}).get("stream")),
                }
            )
            log_line(entry)
            if (body or {}).get("stream"):
                self._send(200, stream_body(msg), "text/event-stream")
            else:
                self._send(200, msg)
            return
        if method == "POST" and path == "/v1/messages/count_tokens":
            entry["reply_kind"] = "count_tokens"
            log_line(entry)
            self._send(200, {"input_tokens": 100})
            return
        if path.startswith("/v1/models"):
            entry["reply_kind"] = "models"
            log_line(entry)
            self._send(
                200,
                {
                    "data": [
                        {
                            "type": "model",
                            "id": "claude-sonnet-4-5-20250929",
                            "display_name": "Claude Sonnet 4.5",
                            "created_at": "2025-09-29T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": None,
                    "last_id": None,
                },
            )
            return
        entry["reply_kind"] = "other"
        log_line(entry)
        self._send(200, {})

    def do_POST(self):
        self._generic("POST")

    def do_GET(self):
        self._generic("GET")

    def do_PUT(self):
        self._generic("PUT")

    def do_DELETE(self):
        self._generic("DELETE")

    def do_HEAD(self):
        entry = {"method": "HEAD", "path": self.path, "reply_kind": "head"}
        log_line(entry)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    a = ap.parse_args()
    with open(a.scenario, encoding="utf-8") as f:
        State.scenario = json.load(f)
    State.log_path = a.log
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os

        os.replace(a.port_file + ".tmp", a.port_file)
    print(port, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
