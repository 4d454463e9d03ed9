"""Settings-shape hooks run in parallel (issue 7, item 3): four PreToolUse hooks on one
event, each sleeping 0.2 s; target under 0.3 s for all four.

Measured through the real stack: `Pipeline.call` of a cheap tool (file_read of a small
file) with a real `SettingsHooks` holding the hooks, each one a real `$SHELL -c` process.
The four commands differ (identical commands on one event run once, by contract). Each
round times, in turn, the call with the four hooks and the same call with one of them
(the baseline: the least a 0.2 s hook can cost), so a passing load weighs on both alike.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
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

SLEEP = 0.2
HOOKS = 4
REPEAT = 12
TARGET = 0.3
READ = {"file_path": "src/x.py"}
_CONFIG = TypeAdapter(dict[str, list[MatcherGroup]])


def commands(n: int) -> list[str]:
    # The trailing comment makes each command distinct without changing what it runs.
    return [f"sleep {SLEEP} # hook {i}" for i in range(1, n + 1)]


def pipeline(ws: Path, n: int) -> Pipeline:
    config = {"PreToolUse": [{"hooks": [{"type": "command", "command": c} for c in commands(n)]}]}
    hooks = SettingsHooks(_CONFIG.validate_python(config), workspace=ws, events=NullLog())
    return Pipeline(
        workspace=ws,
        step="dev-batches",
        ledger=Ledger(BudgetLimits(seconds=None)),
        events=NullLog(),
        tool_env=ToolEnv(workspace=ws, shell_rules=ShellRules()),
        gate=Gate(),
        rule_sets=[],
        hooks=hooks,
    )


async def measure(ws: Path) -> dict[str, Any]:
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=ws, batch="b1")
    four, one = pipeline(ws, HOOKS), pipeline(ws, 1)
    samples: dict[str, list[float]] = {"four": [], "one": []}
    hook_seconds: list[float] = []
    await one.call(ctx, "file_read", READ, "warm")  # warm up: thread pool, page cache
    for _ in range(REPEAT):
        for name, p in (("four", four), ("one", one)):
            start = time.perf_counter()
            out = await p.call(ctx, "file_read", READ, "c")
            samples[name].append(time.perf_counter() - start)
            assert out.outcome == "ran" and len(out.hooks) == (HOOKS if name == "four" else 1)
            if name == "four":
                hook_seconds.append(out.hook_seconds)
    return {
        "four": statistics.median(samples["four"]),
        "one": statistics.median(samples["one"]),
        "charged": statistics.median(hook_seconds),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp, "ws").resolve()
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "x.py").write_text("x = 1\n")
        got = asyncio.run(measure(ws))
    four, one = got["four"], got["one"]
    header()
    row(f"{HOOKS} PreToolUse hooks of {SLEEP:g} s, one call", f"{four * 1000:.1f} ms",
        f"{one * 1000:.1f} ms", four / one, f"< {TARGET:g} s", four < TARGET)  # fmt: skip
    print(f"(baseline: the same call with one of the hooks; medians of {REPEAT} calls each; "
          f"run one after another they would take {HOOKS * SLEEP:g} s; the budget is charged "
          f"each hook's own time, {got['charged']:.2f} s a call)")  # fmt: skip


if __name__ == "__main__":
    main()
