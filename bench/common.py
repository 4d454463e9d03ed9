"""Small helpers shared by the benchmarks: timing and a table row."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable


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


def row(name: str, value: str, baseline: str, ratio: float | None, target: str, ok: bool) -> None:
    r = "" if ratio is None else f"{ratio:.2f}x"
    mark = "ok" if ok else "MISSED"
    print(f"| {name:<44} | {value:>12} | {baseline:>12} | {r:>7} | {target:<16} | {mark} |")


def header() -> None:
    print(
        f"| {'measure':<44} | {'value':>12} | {'baseline':>12} | {'ratio':>7} | {'target':<16} | |"
    )
    print(f"|{'-' * 46}|{'-' * 14}|{'-' * 14}|{'-' * 9}|{'-' * 18}|---|")


PY = sys.executable
