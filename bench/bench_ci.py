"""CI's shape of a run (issue 14, items 5 and 7): `orkeon run pipeline` against the three
`orkeon run` processes a CI script ran before (the same scripted work, the same
workspace), and what a knob given in the environment costs `orkeon validate` (the
pydantic-settings merge, loaded only when a flag, an ORKEON_* variable or a settings file
gives a knob) against the same command without one. CPU time of the child processes,
median of fresh runs, each pair measured in turn so load falls on both alike."""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from .common import PY, header, row

SCRIPT = {
    "analyst": [{"text": "ok"}],
    "writer": [{"tool_calls": [{"tool": "file_write",
                                "input": {"file_path": ".orkeon/spec.md", "content": "# S\n"}}]}],
    "planner": [{"tool_calls": [{"tool": "file_write", "input": {
        "file_path": ".orkeon/plan.json",
        "content": json.dumps({"batches": [{"name": "b1", "roles": [
            {"name": "api", "roots": ["src/"], "task": "t"}]}]})}}]}],
    "b1/api": [{"tool_calls": [{"tool": "file_write",
                                "input": {"file_path": "src/x.txt", "content": "x\n"}}]}],
}  # fmt: skip
DOC = {"request": "x", "model": {"provider": "scripted", "script": SCRIPT}}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argvs: list[list[str]], env: dict[str, str], cwd: Path) -> float:
    before = _cpu()
    for argv in argvs:
        subprocess.run([PY, "-m", "orkeon_run", *argv], env=env, cwd=cwd, capture_output=True)
    return _cpu() - before


def main() -> None:
    repeat = 9
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        env = {"PATH": "/usr/bin:/bin", "ORKEON_CONFIG_DIR": str(root)}
        inputs = ["--inputs", json.dumps(DOC), "--workspace", str(ws), "--progress", "none"]
        one = [["run", "pipeline", *inputs]]
        three = [["run", step, *inputs] for step in ("dev-spec", "dev-plan", "dev-batches")]
        validate = [["validate", "--inputs", "{}", "--workspace", str(root)]]
        times: dict[str, list[float]] = {k: [] for k in ("one", "three", "plain", "knob")}
        for _ in range(repeat):
            for key, argvs in (("one", one), ("three", three)):
                shutil.rmtree(ws, ignore_errors=True)
                ws.mkdir()
                times[key].append(_run(argvs, env, root))
            times["plain"].append(_run(validate, env, root))
            times["knob"].append(_run(validate, {**env, "ORKEON_MAX_USD": "5"}, root))
        assert (ws / "src" / "x.txt").is_file(), "the steps did not run"
    med = {k: statistics.median(v) for k, v in times.items()}
    header()
    row("run pipeline (CPU)", f"{med['one'] * 1000:.0f} ms",
        f"{med['three'] * 1000:.0f} ms", med["one"] / med["three"], "< 1× (3 processes)",
        med["one"] < med["three"])  # fmt: skip
    row("validate with ORKEON_MAX_USD set (CPU)", f"{med['knob'] * 1000:.0f} ms",
        f"{med['plain'] * 1000:.0f} ms", med["knob"] / med["plain"], "info", None)  # fmt: skip
