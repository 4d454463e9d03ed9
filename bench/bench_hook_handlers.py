"""Settings-shape handler types (issue 24): an `http` hook against a `command` hook doing
the same, and what an `async: true` hook costs the call it rides on (target: < 0.2 ms on
the call's critical path).

Measured through the real stack: `Pipeline.call` of a cheap tool (file_read of a small
file) with a real `SettingsHooks`. The http hook POSTs to a server on 127.0.0.1 that
answers `{}` at once; the command hook is `printf '{}'`, a real `$SHELL -c` process: both
allow the call. The async row times the call with one async command hook (`true`) against
the same call with no hook; each round awaits the async hook (outside the timing) before
the next call, so none piles up. Medians of REPEAT calls each, taken in turn.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from orkeon_run.calls import CallContext
from orkeon_run.config.inputs import MatcherGroup
from orkeon_run.events import NullLog
from orkeon_run.hooks.claude.settings import SettingsHooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.pipeline import Pipeline
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.programs import ShellRules
from orkeon_run.tools import ToolEnv

from .common import header, row

REPEAT = 30
ASYNC_TARGET = 0.0002
READ = {"file_path": "src/x.py"}
_CONFIG = TypeAdapter(dict[str, list[MatcherGroup]])


class _Allow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


def pipeline(ws: Path, hooks: list[dict[str, Any]]) -> tuple[Pipeline, SettingsHooks]:
    config = {"PreToolUse": [{"hooks": hooks}]} if hooks else {}
    settings = SettingsHooks(_CONFIG.validate_python(config), workspace=ws, events=NullLog())
    p = Pipeline(
        workspace=ws,
        step="dev-batches",
        ledger=Ledger(BudgetLimits(seconds=None)),
        events=NullLog(),
        tool_env=ToolEnv(workspace=ws, shell_rules=ShellRules()),
        gate=Gate(),
        rule_sets=[],
        hooks=settings,
    )
    return p, settings


async def measure(ws: Path, url: str) -> dict[str, float]:
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=ws, batch="b1")
    runs = {
        "http": pipeline(ws, [{"type": "http", "url": url}]),
        "command": pipeline(ws, [{"type": "command", "command": "printf '{}'"}]),
        "async": pipeline(ws, [{"type": "command", "command": "true", "async": True}]),
        "none": pipeline(ws, []),
    }
    samples: dict[str, list[float]] = {k: [] for k in runs}
    for p, _ in runs.values():  # warm up: thread pool, page cache, the http client's import
        await p.call(ctx, "file_read", READ, "warm")
    for _, s in runs.values():
        await s.drain()
    for _ in range(REPEAT):
        for name, (p, settings) in runs.items():
            start = time.perf_counter()
            out = await p.call(ctx, "file_read", READ, "c")
            samples[name].append(time.perf_counter() - start)
            assert out.outcome == "ran"
            if name == "async":
                await settings.drain()  # the others keep their connections, as in a run
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Allow)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        host, port = server.server_address[:2]
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp, "ws").resolve()
            (ws / "src").mkdir(parents=True)
            (ws / "src" / "x.py").write_text("x = 1\n")
            got = asyncio.run(measure(ws, f"http://{host}:{port}/hook"))
    finally:
        server.shutdown()
        server.server_close()
    header()
    row("http hook (127.0.0.1), one call", f"{got['http'] * 1000:.2f} ms",
        f"{got['command'] * 1000:.2f} ms", got["http"] / got["command"], "(information)",
        None)  # fmt: skip
    extra = got["async"] - got["none"]
    row("async hook's cost on its call", f"{extra * 1000:.3f} ms",
        f"{got['none'] * 1000:.3f} ms", got["async"] / got["none"],
        f"< {ASYNC_TARGET * 1000:g} ms", extra < ASYNC_TARGET)  # fmt: skip
    print(f"(http row's baseline: a command hook printing the same answer; async row's: the "
          f"same call with no hook, its value the difference; medians of {REPEAT} calls)")  # fmt: skip


if __name__ == "__main__":
    main()
