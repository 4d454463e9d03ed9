"""Small helpers shared by the benchmarks: timing and a table row."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def command_seconds(argv: list[str], repeat: int, **kw: object) -> float:
    def once() -> None:
        subprocess.run(argv, check=True, capture_output=True, **kw)  # type: ignore[call-overload]

    once()  # warm the page cache
    return median_seconds(once, repeat)


PY = sys.executable

# The CPU accounting controller of cgroup v1, where this machine has one and the bench may
# make groups in it (root): the CPU of every process a group held, waited for or not.
# wait4 counts only the children a process waited for, and bubblewrap's outer process
# never waits for its namespace's init (the hooks in orkeon's veil, the commands of its
# kept-up sandboxes).
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def new_group(label: str) -> Path | None:
    """A new, empty cpuacct group; None where none can be made here."""
    if not os.access(CPUACCT / "cgroup.procs", os.W_OK):
        return None
    group = CPUACCT / f"orkeon-bench-{label}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def group_cpu(group: Path) -> float:
    """CPU seconds, user and system, of every process that has been in `group`."""
    return int((group / "cpuacct.usage").read_text()) / 1e9


def remove_group(group: Path) -> None:
    """Remove `group` once its last process has gone (a server closing, a daemon a peer left
    behind: their CPU was already read)."""
    for _ in range(200):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.01)


def run_environ(root: Path, **more: str) -> dict[str, str]:
    """The environment of a benchmarked `orkeon` process: PATH, `root` as HOME, a
    configuration folder of its own under it (no user settings file), warnings only."""
    config = root / "config"
    config.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "ORKEON_CONFIG_DIR": str(config),
        "ORKEON_LOG_LEVEL": "warning",
        **more,
    }


def run_argv(doc: Path, ws: Path, *more: str) -> list[str]:
    """`orkeon run dev-batches` of the inputs file `doc` in `ws`, the result on stdout."""
    return [PY, "-m", "orkeon_run", "run", "dev-batches", "--inputs", f"@{doc}",
            "--workspace", str(ws), "--output", "json", *more]  # fmt: skip


NAME, TARGET = 48, 18  # column widths


def row(
    name: str, value: str, baseline: str, ratio: float | None, target: str, ok: bool | None
) -> None:
    """One measure: its value, the baseline measured in the same run, value / baseline
    (unless the benchmark says otherwise), the target, and whether it was met (None: a row
    for information, with no target)."""
    r = "" if ratio is None else f"{ratio:.2f}x"
    mark = "" if ok is None else "ok" if ok else "MISSED"
    print(
        f"| {name:<{NAME}} | {value:>12} | {baseline:>12} | {r:>7} | {target:<{TARGET}} | {mark:<6} |"
    )


def header() -> None:
    print(
        f"| {'measure':<{NAME}} | {'value':>12} | {'baseline':>12} | {'ratio':>7} "
        f"| {'target':<{TARGET}} |        |"
    )
    print(f"|{'-' * (NAME + 2)}|{'-' * 14}|{'-' * 14}|{'-' * 9}|{'-' * (TARGET + 2)}|--------|")
