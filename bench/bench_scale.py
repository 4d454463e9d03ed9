"""A long scripted run (issue 7, item 5): 10,000 tool calls with one native pre-tool hook;
calls per second and peak memory (target: at most 50 MB, issue 22, and flat in the number
of calls).

Each run is a fresh `orkeon run dev-batches` process: an inline plan of one role whose
scripted model asks for SIZE calls (`file_read` of a small file), PER_TURN calls a turn,
each call passing the whole pipeline and the native pre-tool hook `true` (a process per
call: the cheapest real hook). Runs of SMALL and LARGE calls are measured in turn, REPEAT
times each:

- calls per second: the calls over the run's own time (its `run.start` to `result`
  events, so the interpreter's start-up is left out), against spawning `true` with
  `subprocess.run` in a loop (the hook alone; no call can be cheaper);
- peak memory: the process's peak resident set, `ru_maxrss` of `os.wait4` on it, taken by
  a small intermediate process (`PEAK`): a child's `ru_maxrss` starts from the peak of the
  process it was forked from, which here (the benchmark runner, after the other
  benchmarks) can be far larger than orkeon. The hook processes orkeon reaps count only as
  a maximum, and are small. Compared with an empty script's run (what orkeon costs before
  any call) and with the SMALL run; flat means the LARGE run's peak is within FLAT of the
  SMALL run's.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from .common import PY, header, median_seconds, row, run_argv, run_environ

SMALL, LARGE = 2_500, 10_000
PER_TURN = 10
REPEAT = 3
MB_TARGET = 50.0
FLAT = 1.10  # the LARGE run's peak at most 10 % over the SMALL run's


def script(path: Path, calls: int) -> None:
    call = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
    turns = [{"tool_calls": [call] * PER_TURN} for _ in range(calls // PER_TURN)]
    path.write_text(json.dumps({"b1/r": turns}))


def inputs(script_path: Path) -> dict[str, object]:
    plan = {"batches": [{"name": "b1", "roles": [
        {"name": "r", "roots": ["src/"], "task": "Read src/a.py."}]}]}  # fmt: skip
    return {
        "model": {"provider": "scripted", "script": str(script_path)},
        "plan": plan,
        "hooks": [{"event": "pre-tool", "command": "true"}],
        "budget": {"seconds": 3600},
    }


# Runs argv[1:], then writes its peak RSS (KiB, as Linux gives `ru_maxrss`) as the last
# line of stderr and exits with its code. Started with -S, it stays a few MB.
PEAK = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\npeak_kib {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_once(
    argv: list[str], env: dict[str, str], run_dir: Path, calls: int
) -> tuple[float, float]:
    """(seconds of the run's own work, peak RSS in MB) of one `orkeon run`."""
    done = subprocess.run(
        [PY, "-S", "-c", PEAK, *argv, "--run-dir", str(run_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    result = json.loads((run_dir / "result.json").read_text())
    if done.returncode != 0 or result["roles"][0]["calls"] != calls:
        raise RuntimeError(f"the {calls}-call run failed: {done.stderr[-2000:]}")
    peak_kib = int(done.stderr.rsplit("peak_kib ", 1)[1])
    ts = [json.loads(line)["ts"] for line in (run_dir / "events.jsonl").open()]
    return ts[-1] - ts[0], peak_kib / 1024


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        ws = root / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "a.py").write_text("x = 1\n")
        env = run_environ(root)
        argvs: dict[int, list[str]] = {}
        for n in (0, SMALL, LARGE):
            script(root / f"script{n}.json", n)
            doc = root / f"inputs{n}.json"
            doc.write_text(json.dumps(inputs(root / f"script{n}.json")))
            argvs[n] = run_argv(doc, ws)
        seconds: dict[int, list[float]] = {SMALL: [], LARGE: []}
        peak: dict[int, list[float]] = {0: [], SMALL: [], LARGE: []}
        k = 0
        for _ in range(REPEAT):
            for n in (0, SMALL, LARGE):
                k += 1
                s, mb = run_once(argvs[n], env, root / f"run{k}", n)
                peak[n].append(mb)
                if n:
                    seconds[n].append(s)
        true = median_seconds(lambda: subprocess.run(["true"]), 300)

    rate = {n: n / statistics.median(v) for n, v in seconds.items()}
    mb = {n: statistics.median(v) for n, v in peak.items()}
    header()
    row(f"calls per second, {SMALL:,} calls", f"{rate[SMALL]:.0f}/s", f"{1 / true:.0f}/s",
        rate[SMALL] * true, "", None)  # fmt: skip
    row(f"calls per second, {LARGE:,} calls", f"{rate[LARGE]:.0f}/s", f"{rate[SMALL]:.0f}/s",
        rate[LARGE] / rate[SMALL], "≥ 0.9× (flat)", rate[LARGE] >= 0.9 * rate[SMALL])  # fmt: skip
    row(f"peak RSS, {SMALL:,} calls", f"{mb[SMALL]:.1f} MB", f"{mb[0]:.1f} MB",
        mb[SMALL] / mb[0], f"≤ {MB_TARGET:g} MB", mb[SMALL] <= MB_TARGET)  # fmt: skip
    row(f"peak RSS, {LARGE:,} calls", f"{mb[LARGE]:.1f} MB", f"{mb[SMALL]:.1f} MB",
        mb[LARGE] / mb[SMALL], f"≤ {MB_TARGET:g} MB, ≤ {FLAT:g}×",
        mb[LARGE] <= MB_TARGET and mb[LARGE] <= FLAT * mb[SMALL])  # fmt: skip
    per_call = (mb[LARGE] - mb[SMALL]) * 1024 * 1024 / (LARGE - SMALL)
    print(f"(medians of {REPEAT} runs of each size, {PER_TURN} calls a turn; baselines: "
          f"subprocess.run(['true']) in a loop, a run of an empty script, the {SMALL:,}-call "
          f"run; memory added per call: {per_call:.0f} bytes)")  # fmt: skip


if __name__ == "__main__":
    main()
