"""Roles running concurrently (issue 7, item 6): two roles at once against one at a time,
when their hooks are slow; target: a speed-up of at least 1.8×.

Two real `orkeon run dev-batches` runs with the same two roles and the same calls (CALLS
`file_read` calls each, one a turn, scripted), each call passing the native pre-tool hook
`sleep 0.1`:

- concurrent: a plan of one batch holding both roles (a batch's roles run concurrently);
- one at a time (the baseline): a plan of two batches of one role each.

Each is timed by the run's own events (`run.start` to `result`: the step, both roles, the
audits) and, for information, from process start to exit (which adds the interpreter's
start-up to both). Medians of REPEAT runs of each, in turn.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import header, row, run_argv, run_environ

CALLS = 10
HOOK = "sleep 0.1"
REPEAT = 5
TARGET = 1.8


def plan(together: bool) -> dict[str, Any]:
    roles = [
        {"name": r, "roots": [f"src/{r}/"], "task": f"Read src/{r}/a.py."} for r in ("r1", "r2")
    ]
    if together:
        return {"batches": [{"name": "b1", "roles": roles}]}
    return {"batches": [{"name": "b1", "roles": roles[:1]}, {"name": "b2", "roles": roles[1:]}]}


def inputs(together: bool) -> dict[str, Any]:
    names = ("b1/r1", "b1/r2") if together else ("b1/r1", "b2/r2")
    script = {
        name: [
            {"tool_calls": [{"tool": "file_read", "input": {"file_path": f"src/{name[-2:]}/a.py"}}]}
        ]
        * CALLS
        for name in names
    }
    return {
        "model": {"provider": "scripted", "script": script},
        "plan": plan(together),
        "hooks": [{"event": "pre-tool", "command": HOOK}],
        "budget": {"seconds": 600},
    }


def run_once(argv: list[str], env: dict[str, str], run_dir: Path) -> tuple[float, float]:
    """(the run's own seconds, process seconds) of one `orkeon run`."""
    start = time.perf_counter()
    done = subprocess.run([*argv, "--run-dir", str(run_dir)], env=env, capture_output=True)
    wall = time.perf_counter() - start
    result = json.loads((run_dir / "result.json").read_text())
    if done.returncode != 0 or [r["calls"] for r in result["roles"]] != [CALLS, CALLS]:
        raise RuntimeError(f"the run failed: {done.stderr[-2000:].decode(errors='replace')}")
    ts = [json.loads(line)["ts"] for line in (run_dir / "events.jsonl").open()]
    return ts[-1] - ts[0], wall


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        ws = root / "ws"
        for r in ("r1", "r2"):
            (ws / "src" / r).mkdir(parents=True)
            (ws / "src" / r / "a.py").write_text("x = 1\n")
        env = run_environ(root)
        argvs = {}
        for together in (True, False):
            doc = root / f"inputs-{together}.json"
            doc.write_text(json.dumps(inputs(together)))
            argvs[together] = run_argv(doc, ws)
        run_once(argvs[True], env, root / "warm")  # warm the page cache
        step: dict[bool, list[float]] = {True: [], False: []}
        wall: dict[bool, list[float]] = {True: [], False: []}
        k = 0
        for _ in range(REPEAT):
            for together in (True, False):
                k += 1
                s, w = run_once(argvs[together], env, root / f"run{k}")
                step[together].append(s)
                wall[together].append(w)

    conc, seq = statistics.median(step[True]), statistics.median(step[False])
    conc_w, seq_w = statistics.median(wall[True]), statistics.median(wall[False])
    header()
    row("two roles concurrently: speed-up of the step", f"{conc:.3f} s", f"{seq:.3f} s",
        seq / conc, f"≥ {TARGET:g}× faster", seq / conc >= TARGET)  # fmt: skip
    row("  the same, process start to exit", f"{conc_w:.3f} s", f"{seq_w:.3f} s",
        seq_w / conc_w, "", None)  # fmt: skip
    print(f"(ratio = baseline / value; baseline: the same roles and calls as two batches of "
          f"one role; {CALLS} calls a role, each with the native pre-tool hook `{HOOK}`; "
          f"medians of {REPEAT} runs)")  # fmt: skip


if __name__ == "__main__":
    main()
