"""Scale stays flat (issue 22, item 4): orkeon's own CPU time per call in one role's
session of 10, 50, 200 and 1,000 calls, each within 1.2× of the 10-call figure.

Measured in process, so the interpreter's start-up (a fixed cost, bench_startup) does
not drown the 10-call figure: a scripted model (its script file read as the run reads
it) asks for `file_read` of a small file, ten calls a turn, and each call passes the
whole pipeline as a step runs it (gate and rule-set rules, roots, every event appended
to a real events.jsonl, the transcript written). The CPU time is the process's own
(user and system: `time.process_time`), from the agent's start to its result; the
conversation the model is sent each turn is the model's cost and is not sent anywhere
here. Each size is run ROUNDS times, interleaved with the others; medians.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from orkeon_run.agent.loop import Agent, RoleSpec
from orkeon_run.calls import CallContext
from orkeon_run.config.inputs import ScriptedModel
from orkeon_run.models import build_provider

from .bench_pipeline import pipeline
from .common import header, row

SIZES = (10, 50, 200, 1_000)
ROUNDS = 5
FLAT = 1.2
PER_TURN = 10
READ = {"tool": "file_read", "input": {"file_path": "src/api/x.py"}}


def session_cpu(root: Path, calls: int, k: int) -> float:
    """CPU seconds of one role's session of `calls` calls, start to result."""
    script = root / f"script{calls}.json"
    if not script.exists():
        turns = [{"tool_calls": [READ] * PER_TURN} for _ in range(calls // PER_TURN)]
        script.write_text(json.dumps({"b1/api": turns}))
    ws = root / "ws"
    run_dir = root / f"run{k}"
    provider = build_provider(ScriptedModel(provider="scripted", script=str(script)))
    piped = pipeline(ws, realistic=True, events_path=run_dir / "events.jsonl")
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=ws, batch="b1",
                      roots=("src/api/",))  # fmt: skip
    agent = Agent(
        RoleSpec("b1/api", "You build the API.", ("file_read",), ctx),
        provider=provider, pipeline=piped, ledger=piped.ledger, events=piped.events,
        transcript_path=run_dir / "transcripts" / "b1" / "api.jsonl",
    )  # fmt: skip
    start = time.process_time()
    result = anyio.run(agent.run, "Read src/api/x.py.")
    took = time.process_time() - start
    anyio.run(agent.close)
    piped.events.close()
    assert (result.status, result.calls) == ("succeeded", calls), result
    return took


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "ws" / "src" / "api").mkdir(parents=True)
        (root / "ws" / "src" / "api" / "x.py").write_text("x = 1\n" * 20)
        session_cpu(root, 50, 0)  # first-use costs (imports, caches) out of the way
        cpu: dict[int, list[float]] = {n: [] for n in SIZES}
        k = 0
        for _ in range(ROUNDS):
            for n in SIZES:
                k += 1
                cpu[n].append(session_cpu(root, n, k) / n)
    per_call = {n: statistics.median(v) for n, v in cpu.items()}
    base = per_call[SIZES[0]]
    header()
    for n in SIZES:
        ratio = per_call[n] / base
        row(f"orkeon's CPU per call, {n:,} calls", f"{per_call[n] * 1e6:.0f} µs",
            f"{base * 1e6:.0f} µs", ratio, f"≤ {FLAT:g}× (flat)" if n != SIZES[0] else "",
            ratio <= FLAT if n != SIZES[0] else None)  # fmt: skip
    print(
        f"(CPU time of this process a call, one role's session start to result, medians of "
        f"{ROUNDS} sessions of each size; baseline: the {SIZES[0]}-call session's)"
    )


if __name__ == "__main__":
    main()
