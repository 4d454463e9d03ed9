"""Run every benchmark module (`bench/bench_*.py`, each with a `main()`), or those named:

python -m bench               # all
python -m bench startup e2e   # bench_startup.py and bench_e2e.py
"""

from __future__ import annotations

import importlib
import platform
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    print(
        f"# orkeon benchmarks: {platform.platform()}, Python {platform.python_version()}, "
        f"{__import__('os').cpu_count()} cores"
    )
    failed = 0
    for name in names:
        print(f"\n## {name}")
        start = time.perf_counter()
        try:
            importlib.import_module(f"bench.bench_{name}").main()
        except Exception as exc:  # one broken benchmark must not hide the others
            failed += 1
            print(f"FAILED: {type(exc).__name__}: {exc}")
        print(f"({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
