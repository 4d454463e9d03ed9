"""The start-up floor (issue 22; docs/performance.md, "Start-up, the floor"): how much of a
run's CPU the libraries it loads cost by themselves, and so how much room each P5 target
leaves to orkeon's own code. Each session is run once with `-X importtime` to learn which
modules it imports; the modules that are not orkeon's (the standard library's and the
dependencies', lazy ones included, in the order they finished loading) are then imported
by a bare interpreter with the collector off, and that process's CPU is a floor no change
to orkeon's own code goes under. Paired and interleaved like `bench p5` (round 0 dropped;
ORKEON_BENCH_ROUNDS, default 5); CPU as `wait4` counts it.

Sessions: the P5 session of 10 calls through the scripted provider, and through the
anthropic one (against the loopback fake) with `file_read` calls and with `shell` calls,
and `orkeon validate`. Where the session a target is set against can be run here (Codex
CLI, ORKEON_BENCH_BASELINE, ORKEON_BENCH_BEFORE; as `bench p5` finds them), it runs in
the same rounds, and a row says what the target leaves for the rest once the libraries are
paid: target × that session − the libraries, against what the rest costs now. All rows are
for information.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import peers
from .bench_p5 import _validate, timed_rounds
from .common import header, row

# Imports every module named in the file argv[1], in order, with the collector off as
# orkeon's start-up has it; a module that cannot load alone is skipped.
IMPORTER = (
    "import gc, importlib, sys\n"
    "gc.disable()\n"
    "for name in open(sys.argv[1]).read().split():\n"
    "    if name not in sys.modules:\n"
    "        try:\n"
    "            importlib.import_module(name)\n"
    "        except Exception:\n"
    "            pass\n"
)
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.M)


def library_modules(importtime: str) -> list[str]:
    """The modules an `-X importtime` report names, orkeon's left out, in its order."""
    names = _LINE.findall(importtime)
    return [n for n in names if n != "orkeon_run" and not n.startswith("orkeon_run.")]


def _importtime(session: Callable[[], peers.Timed]) -> str:
    """The session's `-X importtime` report (peers.session passes os.environ on)."""
    os.environ["PYTHONPROFILEIMPORTTIME"] = "1"
    try:
        return session().stderr
    finally:
        del os.environ["PYTHONPROFILEIMPORTTIME"]


def _libraries(python: str, names: Path) -> peers.Timed:
    timed, rc, err = peers.launch([python, "-c", IMPORTER, str(names)], str(names.parent), {})
    if rc != 0:
        raise RuntimeError(f"importing the libraries alone: exit {rc}: {err.strip()[-400:]}")
    return timed


def _sessions(me: str) -> dict[str, Callable[[], peers.Timed]]:
    return {
        "run scripted 10": lambda: peers.session("orkeon", me, 10, "scripted"),
        "run Anthropic 10": lambda: peers.session("orkeon", me, 10, "read"),
        "run shell 10": lambda: peers.session("orkeon", me, 10, "shell"),
        # validate gets an environment of its own: the report's variable must be in it.
        "validate": lambda: _validate(me, _importtime_variable()),
    }


def _targets() -> dict[str, tuple[str, Callable[[], peers.Timed], float]]:
    """By session: its P5 target's (name of what it is set against, that session, factor),
    for those whose reference can run here."""
    found: dict[str, tuple[str, Callable[[], peers.Timed], float]] = {}
    codex = peers.find("codex")
    if codex:
        found["run shell 10"] = ("Codex", lambda: peers.session("codex", str(codex), 10, "shell"), 0.45)  # fmt: skip
    base = os.environ.get("ORKEON_BENCH_BASELINE")
    if base and os.access(base, os.X_OK):
        found["run scripted 10"] = ("baseline", lambda: peers.session("orkeon", base, 10, "scripted"), 1.0)  # fmt: skip
        found["run Anthropic 10"] = ("baseline", lambda: peers.session("orkeon", base, 10, "read"), 1.0)  # fmt: skip
    before = os.environ.get("ORKEON_BENCH_BEFORE")
    if before and os.access(before, os.X_OK):
        found["validate"] = ("before", lambda: _validate(before), 0.8)
    return found


def _importtime_variable() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k == "PYTHONPROFILEIMPORTTIME"}


def _cpu(todo: dict[str, Callable[[], peers.Timed]], rounds: int) -> dict[str, list[float]]:
    """Each session's CPU seconds, a figure a round, in `bench p5`'s order of rounds."""
    per_round, _ = timed_rounds(todo, rounds)
    return {k: [r[k] for r in per_round] for k in todo}


def main() -> None:
    me = str(Path(sys.executable).with_name("orkeon"))
    python = sys.executable  # the interpreter of this checkout's `orkeon`
    runs, targets = _sessions(me), _targets()
    rounds = int(os.environ.get("ORKEON_BENCH_ROUNDS") or 5)
    with tempfile.TemporaryDirectory(prefix="orkeon-floor-") as tmp:
        todo: dict[str, Callable[[], peers.Timed]] = {}
        for name, session in runs.items():
            listed = Path(tmp, f"{len(todo)}.txt")
            listed.write_text("\n".join(library_modules(_importtime(session))))
            todo[name] = session
            todo[f"{name}: libraries"] = lambda listed=listed: _libraries(python, listed)
            if name in targets:
                todo[f"{name}: target's session"] = targets[name][1]
        todo["python -c pass"] = lambda: peers.launch([python, "-c", "pass"], tmp, {})[0]
        cpu = _cpu(todo, rounds)
    header()
    for name in runs:
        whole, libs = cpu[name], cpu[f"{name}: libraries"]
        share = statistics.median(x / y for x, y in zip(libs, whole, strict=True))
        w, lib = statistics.median(whole), statistics.median(libs)
        row(f"{name}: its libraries alone / it", f"{lib * 1000:.0f} ms",
            f"{w * 1000:.0f} ms", share, "info", None)  # fmt: skip
        row(f"{name}: the rest, orkeon's own", f"{(w - lib) * 1000:.0f} ms",
            f"{w * 1000:.0f} ms", None, "info", None)  # fmt: skip
        if name in targets:
            against, _, factor = targets[name]
            room = factor * statistics.median(cpu[f"{name}: target's session"]) - lib
            row(f"  room: {factor:g} × {against} − libraries", f"{room * 1000:.0f} ms",
                f"{(w - lib) * 1000:.0f} ms", None, "info", None)  # fmt: skip
    bare = statistics.median(cpu["python -c pass"])
    row("python -c pass", f"{bare * 1000:.1f} ms", "", None, "info", None)
    print(f"(CPU, wait4; medians of {rounds} interleaved rounds; the libraries imported "
          "by a bare interpreter with the collector off; a room row's baseline column is "
          "the rest as it is now)")  # fmt: skip
