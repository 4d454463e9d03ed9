"""End to end (issue 7, item 7): `orkeon run` from process start to exit, a session of N
tool calls through the anthropic provider against a loopback fake Messages API
(tests/kit/fakes), with one settings-shape PreToolUse hook `echo x >> FILE` on every call.
Targets: under 0.35 s fixed cost, under 10 ms a call.

The run is `dev-batches` with an inline plan of one role; the fake answers each request
with one `file_read` call until the session has N results, then with a final text: N + 1
model round trips, N hook processes, N tool runs. Sessions of SHORT and LONG calls are run
in turn, each a fresh process; from their medians, the cost of a call is
`(t_LONG - t_SHORT) / (LONG - SHORT)` and the fixed cost `t_SHORT - SHORT * per_call`.
Baselines measured in the same run: `python -c pass` for the fixed cost, and the hook's
own process (`$SHELL -c 'echo x >> FILE'` run by `subprocess.run`) for the cost of a call.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from orkeon_run.hooks.claude.run import user_shell
from tests.kit.fakes import anthropic_api
from tests.kit.fakes.server import Recorded, Reply

from .common import PY, command_seconds, header, row, run_argv, run_environ

SHORT, LONG = 10, 50
REPEAT = 9
KEY = "sk-ant-test"
MODEL = "claude-sonnet-4-6"
FIXED_TARGET = 0.35
CALL_TARGET = 0.010


class SessionFake(anthropic_api.AnthropicFake):
    """Answers one `file_read` call per request until the conversation holds `calls`
    tool results, then a final text."""

    def __init__(self) -> None:
        super().__init__(api_key=KEY, models=(MODEL,))
        self.calls = 0
        self.fallback = self._answer

    def _answer(self, req: Recorded) -> Reply:
        done = sum(
            1
            for m in req.body["messages"]
            if m["role"] == "user" and not isinstance(m["content"], str)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        if done >= self.calls:
            return anthropic_api.message("done", usage=(1200, 5), model=MODEL)
        call = (f"toolu_{done + 1:04d}", "file_read", {"file_path": "src/x.py"})
        return anthropic_api.message("Reading.", [call], usage=(1200 + 60 * done, 30), model=MODEL)


def inputs(url: str, marks: Path) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [
        {"name": "api", "roots": ["src/"], "task": "Read src/x.py."}]}]}  # fmt: skip
    hook = {"type": "command", "command": f"echo x >> {marks}"}
    return {
        "model": {"provider": "anthropic", "model": MODEL, "base_url": url},
        "plan": plan,
        "hooks": {"PreToolUse": [{"hooks": [hook]}]},
        "budget": {"seconds": 600},
    }


def session(
    server: SessionFake, calls: int, argv: list[str], env: dict[str, str], marks: Path
) -> float:
    server.calls = calls
    before = marks.stat().st_size if marks.exists() else 0
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    result = json.loads(done.stdout) if done.stdout.strip() else {}
    role = (result.get("roles") or [{}])[0]
    if done.returncode != 0 or role.get("calls") != calls:
        raise RuntimeError(f"the {calls}-call session failed: {done.stderr[-4000:]}")
    if marks.stat().st_size - before != 2 * calls:  # "x\n" per call
        raise RuntimeError(f"the hook did not run once per call ({calls} calls)")
    return seconds


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, SessionFake() as server:
        root = Path(tmp).resolve()
        ws = root / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "x.py").write_text("".join(f"line_{i} = {i}\n" for i in range(40)))
        marks = root / "marks.txt"
        doc = root / "inputs.json"
        doc.write_text(json.dumps(inputs(server.url, marks)))
        env = run_environ(root, ANTHROPIC_API_KEY=KEY)
        argv = run_argv(doc, ws)
        session(server, SHORT, argv, env, marks)  # warm the page cache
        times: dict[int, list[float]] = {SHORT: [], LONG: []}
        for _ in range(REPEAT):
            for n in (SHORT, LONG):
                times[n].append(session(server, n, argv, env, marks))
        t_short, t_long = statistics.median(times[SHORT]), statistics.median(times[LONG])
        base = command_seconds([PY, "-c", "pass"], 15)
        hook_alone = command_seconds([user_shell(os.environ), "-c", f"echo x >> {marks}"], 50)

    per_call = (t_long - t_short) / (LONG - SHORT)
    fixed = t_short - SHORT * per_call
    header()
    row(f"{LONG}-call session, process start to exit", f"{t_long:.3f} s", "", None, "", None)
    row(f"{SHORT}-call session, process start to exit", f"{t_short:.3f} s", "", None, "", None)
    row("fixed cost (fit)", f"{fixed * 1000:.0f} ms", f"{base * 1000:.1f} ms", fixed / base,
        f"< {FIXED_TARGET:g} s", fixed < FIXED_TARGET)  # fmt: skip
    row("cost per call (fit)", f"{per_call * 1000:.2f} ms", f"{hook_alone * 1000:.2f} ms",
        per_call / hook_alone, f"< {CALL_TARGET * 1000:g} ms", per_call < CALL_TARGET)  # fmt: skip
    print(f"(medians of {REPEAT} runs of each length; baselines: `python -c pass`, and the "
          "hook's own process run by subprocess.run; a call = a model round trip, the hook, "
          "the tool)")  # fmt: skip


if __name__ == "__main__":
    main()
