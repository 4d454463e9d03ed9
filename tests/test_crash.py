"""Crash safety: a dev-batches run killed with SIGKILL at seeded random points, then resumed
with `orkeon run dev-batches --resume RUN_DIR` until it succeeds.

docs/output.md: "Files are written so that a killed run leaves every finished line
intact." batches.py: "Each batch that passes is recorded in state.json at once, so
`--resume` continues from the first batch that did not pass and never runs a finished
batch again."
"""

from __future__ import annotations

import json
import random
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kit import DATA, ROOT
from kit.steps import environ, make_workspace

FAULTS = DATA / "faults"
SLOW_OK = str(FAULTS / "slow_ok.sh")
BATCHES = ("b1", "b2", "b3")
ROLES = ("api", "web")
TURNS, CALLS = 4, 2  # per role: four turns of two writes each


def content(batch: str, role: str, turn: int, k: int) -> str:
    return f"{batch}/{role} turn {turn} call {k}\n"


def plan_and_script() -> tuple[dict[str, Any], dict[str, Any]]:
    """Three batches of two concurrent roles; every write has its own file and content."""
    batches, script = [], {}
    for b in BATCHES:
        roles = []
        for r in ROLES:
            roles.append({"name": r, "roots": [f"src/{b}/{r}/"], "task": f"build {b} {r}"})
            script[f"{b}/{r}"] = [
                {
                    "tool_calls": [
                        {
                            "tool": "file_write",
                            "input": {
                                "file_path": f"src/{b}/{r}/t{t}_{k}.txt",
                                "content": content(b, r, t, k),
                            },
                        }
                        for k in range(CALLS)
                    ]
                }
                for t in range(TURNS)
            ] + [{"text": f"{b}/{r} done"}]
        batches.append({"name": b, "roles": roles})
    return {"title": "crash", "batches": batches}, script


@dataclass
class Kill:
    """What the run directory and the workspace held right after one SIGKILL."""

    events: bytes
    passed: list[str]
    files: dict[str, str]


def strict_lines(raw: bytes) -> list[dict[str, Any]]:
    """Every line whole (the file ends with a newline) and strict JSON."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    assert raw == b"" or raw.endswith(b"\n"), raw[-200:]
    return [json.loads(line, parse_constant=refuse) for line in raw.split(b"\n")[:-1]]


def files_of(ws: Path) -> dict[str, str]:
    return {p.relative_to(ws).as_posix(): p.read_text() for p in (ws / "src").rglob("*.txt")}


def read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def attempts(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The events split by process: each attempt begins with its `run.start`."""
    out: list[list[dict[str, Any]]] = []
    for e in events:
        if e["type"] == "run.start":
            out.append([])
        out[-1].append(e)
    return out


# The suite's 120 s time-out is its hang guard: 10x its quiet 12 s (five processes).
@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/__init__.py": ""})
    rd = tmp_path / "run"
    plan, script = plan_and_script()
    inputs = {
        "model": {"provider": "scripted", "script": script},
        "plan": plan,
        "hooks": [{"event": "pre-tool", "command": f"{shlex.quote(SLOW_OK)} 0.03"}],
        "shell": {"extra_allowed_commands": [SLOW_OK]},
    }
    doc = tmp_path / "inputs.json"
    doc.write_text(json.dumps(inputs))
    env = environ(tmp_path)
    env["PYTHONPATH"] = str(ROOT)
    env["ORKEON_LOG_LEVEL"] = "warning"
    # killed mid-run, then run again: Popen, not kit.process
    orkeon = [sys.executable, "-m", "orkeon_run", "run", "dev-batches", "--output", "json"]
    first = [*orkeon, "--inputs", f"@{doc}", "--workspace", str(ws), "--run-dir", str(rd)]
    again = [*orkeon, "--resume", str(rd)]
    events_path = rd / "events.jsonl"

    # A full run writes about 90 lines (every attempt appends to the same file). Two
    # attempts are killed a random 2-25 lines after they start, a few milliseconds after
    # the line, so kills land in hooks, tools and model turns; two right after the next
    # `audit` or `batch.end` line, so they land between a batch's end and state.json.
    plan_of_kills = ["lines", "lines", "audit", "batch.end"]
    rng.shuffle(plan_of_kills)
    kills: list[Kill] = []
    finished_early = False
    for n, kind in enumerate(plan_of_kills):
        start = read(events_path)
        target = start.count(b"\n") + rng.randint(2, 25)
        marker = f'{{"type":"{kind}",'.encode()
        proc = subprocess.Popen(
            first if n == 0 else again,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # No deadline: the run ending first is seen below, and the test's time-out is
        # the hang guard.
        while proc.poll() is None:
            raw = read(events_path)
            if kind == "lines" and raw.count(b"\n") >= target:
                break
            if kind != "lines" and marker in raw[len(start) :]:
                break
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.02) if kind == "lines" else rng.uniform(0, 0.004))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=10)
        if proc.returncode != -signal.SIGKILL:  # it finished first: no kill to check
            assert proc.returncode == 0, err.decode()
            finished_early = True
            break
        state_path = rd / "state.json"
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
        raw = events_path.read_bytes()
        strict_lines(raw)  # nothing torn by the kill
        kills.append(Kill(raw, list(state.get("batches_passed", [])), files_of(ws)))
    assert len(kills) >= 3, "the run finished before it could be killed three times"

    # Resume until it succeeds (one resume is enough: nothing kills it now). Resuming a
    # run that already succeeded runs nothing again.
    proc = subprocess.run(again, cwd=tmp_path, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded", result["error"]
    assert result == json.loads((rd / "result.json").read_text())
    assert [r["name"] for r in result["roles"]] == [f"{b}/{r}" for b in BATCHES for r in ROLES]
    assert all(r["status"] == "succeeded" for r in result["roles"])
    assert json.loads((rd / "state.json").read_text())["batches_passed"] == list(BATCHES)

    raw = events_path.read_bytes()
    events = strict_lines(raw)
    runs = attempts(events)
    assert len(runs) == len(kills) + 1 + finished_early
    assert [r[0]["resume"] for r in runs] == [False] + [True] * (len(runs) - 1)
    if finished_early:
        assert [e["batch"] for e in runs[-1] if e["type"] == "batch.skipped"] == list(BATCHES)
        assert not [e for e in runs[-1] if e["type"] in ("tool.call", "batch.start")]

    for i, kill in enumerate(kills):
        # No line lost: what the file held at the kill is still its beginning, the
        # tool.call events of the calls that finished before it included.
        assert raw.startswith(kill.events)
        # No finished batch re-run: a batch whose pass state.json recorded at this kill is
        # skipped by every later attempt, and none of its roles runs there again.
        for later in runs[i + 1 :]:
            skipped = [e["batch"] for e in later if e["type"] == "batch.skipped"]
            for b in kill.passed:
                assert b in skipped
                ran = [e for e in later if e.get("batch") == b and e["type"] != "batch.skipped"]
                assert ran == [], (b, ran[:2])
        # The files finished calls wrote are intact.
        final = files_of(ws)
        for path, text in kill.files.items():
            assert final.get(path) == text, path

    # No call ran twice, across all attempts, and every call that ran left its file.
    ran = [e for e in events if e["type"] == "tool.call" and e["outcome"] == "ran"]
    paths = [e["input"]["file_path"] for e in ran]
    assert len(paths) == len(set(paths))
    final = files_of(ws)
    for e in ran:
        assert e["result"].startswith("created ")
        assert final[e["input"]["file_path"]] == e["input"]["content"]
    # Calls cut by a kill are not re-run: at most one per role per kill is missing.
    assert len(ran) >= len(BATCHES) * len(ROLES) * TURNS * CALLS - 2 * len(kills) * CALLS
    # Every batch passed, in order (twice only when a kill fell between its pass and state.json).
    passes = [e["batch"] for e in events if e["type"] == "batch.end" and e["passed"]]
    assert [b for b in BATCHES if b in passes] == list(BATCHES)
    assert all(passes.count(b) >= 1 for b in BATCHES)
