"""What `--progress plain` costs a run (issue 14): target under 5 % on a 1,000-call run.

Each run is a fresh `orkeon run dev-batches` process: an inline plan of one role whose
scripted model asks for CALLS `file_read` calls of a small file, PER_TURN a turn, with no
hook (the cheapest calls there are, so the view's share is as large as it gets). stderr is
a pipe the benchmark reads, as a CI runner's is; a plain run prints a line per call
(checked). In each of REPEAT rounds: a run with no call (`empty`), then the 1,000-call
run with `--progress none` and with `--progress plain`, in turn order and reverse order.

Two measures of what plain adds, against the `none` run of the same round:

- its own work, measured directly: the `none` run's events (its events.jsonl, the same
  dicts the view is handed during a run) fed to the plain view writing into a pipe that
  a `cat` process drains, timed from the first event to the view's `close()` (its timer
  thread's writes included), over the run's own time (its `run.start` to `result`
  events). Precise, and what the target is checked on.
- end to end, CPU time (user + system, `os.wait4`) of the processes: `cpu(plain) -
  cpu(none)` over the work of the calls, `cpu(none) - cpu(empty)`. On a shared, loaded
  machine a process's CPU time varies by ±15 % from one run to the next, more than the
  effect: shown for information, with `--progress live` on a pseudo-terminal likewise.

Medians over the rounds of each round's ratio.
"""

from __future__ import annotations

import json
import os
import pty
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .common import header, row, run_argv, run_environ

CALLS = 1_000
PER_TURN = 10
REPEAT = 11
TARGET = 0.05


def write_inputs(root: Path, calls: int) -> Path:
    call = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
    script = {"b1/r": [{"tool_calls": [call] * PER_TURN} for _ in range(calls // PER_TURN)]}
    plan = {"batches": [{"name": "b1", "roles": [
        {"name": "r", "roots": ["src/"], "task": "Read src/a.py."}]}]}  # fmt: skip
    doc = root / f"inputs{calls}.json"
    doc.write_text(
        json.dumps(
            {
                "model": {"provider": "scripted", "script": script},
                "plan": plan,
                "budget": {"seconds": 3600},
            }
        )
    )
    return doc


def run_seconds(run_dir: Path, calls: int) -> float:
    result = json.loads((run_dir / "result.json").read_text())
    if result["exit_code"] != 0 or result["roles"][0]["calls"] != calls:
        raise RuntimeError(f"the {calls}-call run failed: {result.get('error')}")
    ts = [json.loads(line)["ts"] for line in (run_dir / "events.jsonl").open()]
    return ts[-1] - ts[0]


def once(
    argv: list[str], env: dict[str, str], run_dir: Path, mode: str, calls: int, *, tty: bool
) -> tuple[float, float]:
    """(CPU seconds of the process, wall-clock seconds of its run) of one `orkeon run`,
    stderr on a pipe (read here) or on a pseudo-terminal."""
    if tty:
        reader, writer = pty.openpty()
    else:
        reader, writer = os.pipe()
    proc = subprocess.Popen(
        [*argv, "--progress", mode, "--run-dir", str(run_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=writer,
    )
    os.close(writer)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # a terminal's other side closed: the run ended
                return
            if not chunk:
                return
            chunks.append(chunk)

    thread = threading.Thread(target=drain)
    thread.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    thread.join()
    os.close(reader)
    if mode == "plain":
        lines = b"".join(chunks).count(b"\nb1/r: #")
        if lines != calls:
            raise RuntimeError(f"plain progress printed {lines} call lines, not {calls}")
    return usage.ru_utime + usage.ru_stime, run_seconds(run_dir, calls)


def replay(run_dir: Path) -> float:
    """Seconds the plain view takes over the events of the run in `run_dir`."""
    from orkeon_run.run.progress.plain import PlainProgress

    events = [json.loads(line) for line in (run_dir / "events.jsonl").open()]
    reader, writer = os.pipe()
    cat = subprocess.Popen(["cat"], stdin=reader, stdout=subprocess.DEVNULL)
    os.close(reader)
    with os.fdopen(writer, "w") as stream:
        start = time.perf_counter()
        view = PlainProgress(stream, github=False, color=False)
        for event in events:
            view(event)
        view.close()
        seconds = time.perf_counter() - start
    cat.wait()
    return seconds


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        ws = root / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "a.py").write_text("x = 1\n")
        env = run_environ(root, TERM="xterm-256color")

        def argv(calls: int) -> list[str]:
            return run_argv(write_inputs(root, calls), ws)

        full, empty = argv(CALLS), argv(0)
        k = 0

        def go(mode: str, *, calls: int = CALLS, tty: bool = False) -> tuple[float, float]:
            nonlocal k
            k += 1
            return once(full if calls else empty, env, root / f"run{k}", mode, calls, tty=tty)

        go("plain")  # warm the page cache
        cpu: dict[str, list[float]] = {m: [] for m in ("empty", "none", "plain", "tnone", "live")}
        wall: dict[str, list[float]] = {m: [] for m in cpu}
        own: list[float] = []
        for i in range(REPEAT):
            order = (1, -1)[i % 2]
            runs = [("empty", "none", 0, False)]
            runs += [(m, m, CALLS, False) for m in ("none", "plain")[::order]]
            runs += [(m, m.removeprefix("t"), CALLS, True) for m in ("tnone", "live")[::order]]
            for name, mode, calls, tty in runs:
                c, w = go(mode, calls=calls, tty=tty)
                cpu[name].append(c)
                wall[name].append(w)
                if name == "none":
                    own.append(replay(root / f"run{k}") / w)

    def ratios(mode: str, base: str) -> list[float]:
        return sorted(
            (c - n) / (n - e) for c, n, e in zip(cpu[mode], cpu[base], cpu["empty"], strict=True)
        )

    def added(mode: str, base: str) -> float:
        return statistics.median(ratios(mode, base))

    def spread(mode: str, base: str) -> str:
        """The middle half of the rounds' ratios: how far the noise reaches."""
        r = ratios(mode, base)
        return f"{r[len(r) // 4]:+.0%} to {r[(3 * len(r)) // 4]:+.0%}"

    med = {name: statistics.median(v) for name, v in cpu.items()}
    walls = {name: statistics.median(v) for name, v in wall.items()}
    share = statistics.median(own)
    header()
    row(f"plain view's own time, {CALLS}-call run", f"{share:.1%}",
        f"{walls['none']:.3f} s", None, f"< {TARGET:.0%}", share < TARGET)  # fmt: skip
    row("  per call", f"{share * walls['none'] / CALLS * 1e6:.1f} µs", "", None, "", None)
    row("CPU added end to end: plain", f"{added('plain', 'none'):+.1%}",
        f"{med['none'] - med['empty']:.3f} s", None, "", None)  # fmt: skip
    row("CPU added end to end: live (pty)", f"{added('live', 'tnone'):+.1%}",
        f"{med['tnone'] - med['empty']:.3f} s", None, "", None)  # fmt: skip
    row("CPU of a whole process: none, plain", f"{med['plain']:.3f} s", f"{med['none']:.3f} s",
        med["plain"] / med["none"], "", None)  # fmt: skip
    row("run.start to result: none, plain", f"{walls['plain']:.3f} s",
        f"{walls['none']:.3f} s", walls["plain"] / walls["none"], "", None)  # fmt: skip
    print(f"(end to end, the middle half of the rounds' CPU added: plain {spread('plain', 'none')}, "
          f"live {spread('live', 'tnone')})")  # fmt: skip
    print(f"(medians of {REPEAT} rounds. Own time: the view fed the none run's events, over "
          "that run's run.start-to-result time (the baseline column). CPU added: (plain - "
          "none) / (none - empty) per round; baseline column: none - empty, the calls' own "
          "CPU time)")  # fmt: skip


if __name__ == "__main__":
    main()
