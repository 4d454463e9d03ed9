#!/usr/bin/env python3
# The loopback fake of the OpenAI Responses API (streamed) that Codex CLI talks to in
# bench/bench_p5.py, run as a process by bench/peers/__init__.py.
"""Loopback fake of the OpenAI Responses API (streamed), for timing Codex CLI in p5ab.py.

usage: fake_responses.py --calls N [--command "cat README.md"] [--tool exec_command] --log LOG --port-file F

Binds 127.0.0.1 only. Every POST .../responses is answered as an event stream (response.created,
response.output_item.done, response.completed; Connection: close): one function call of --tool with
{"cmd": COMMAND, ...} while fewer than N function_call_output items are in the request's input,
then an assistant message "done". Any other request gets 404. Each request is logged as one JSON
line: method, path, bytes, outputs (function_call_output items seen).
"""

import argparse
import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)
_lock = threading.Lock()
A = None


def log(obj):
    with _lock, open(A.log, "a") as f:
        f.write(json.dumps(obj) + "\n")


def sse(handler, events):
    body = b"".join(
        b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events
    )
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(body)


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n)
        if not self.path.rstrip("/").endswith("/responses"):
            log({"method": "POST", "path": self.path, "bytes": n})
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        items = body.get("input") or []
        outputs = sum(
            1 for it in items if isinstance(it, dict) and it.get("type") == "function_call_output"
        )
        k = next(_ids)
        rid = f"resp_{k}"
        if outputs < A.calls:
            args = {"cmd": A.command, "login": False, "tty": False}
            item = {
                "type": "function_call",
                "id": f"fc_{k}",
                "call_id": f"call_{k}",
                "name": A.tool,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{k}",
                "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}],
            }
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        sse(
            self,
            [
                {
                    "type": "response.created",
                    "response": {"id": rid, "object": "response", "status": "in_progress"},
                },
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {
                    "type": "response.completed",
                    "response": {
                        "id": rid,
                        "object": "response",
                        "status": "completed",
                        "usage": usage,
                    },
                },
            ],
        )
        outs = [
            it for it in items if isinstance(it, dict) and it.get("type") == "function_call_output"
        ]
        last = outs[-1].get("output") if outs else None
        log(
            {
                "method": "POST",
                "path": self.path,
                "bytes": n,
                "outputs": outputs,
                "last_output": (last if isinstance(last, str) else json.dumps(last))[:200]
                if last is not None
                else None,
                "tools": [t.get("name") or t.get("type") for t in body.get("tools") or []][:40],
            }
        )


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--command", default="cat README.md")
    ap.add_argument("--tool", default="exec_command")
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    A = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", A.port), H)
    with open(A.port_file, "w") as f:
        f.write(str(srv.server_address[1]))
    srv.serve_forever()


if __name__ == "__main__":
    main()
