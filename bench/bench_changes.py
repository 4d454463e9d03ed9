"""What recording a batch's changes for the reports costs (run/changes.py): after the
roles, the comparison with the batch's start and each changed file's content before (from
git) and after, stored by digest; on the audit benchmark's git workspace of 2,000 tracked
files with 20 files changed and 20 added.

Baseline, in the same run and alternating: the audit's own comparison of the same change
(what the batch pays anyway). Target: the record under 2.5x the comparison (it is one more
comparison, three git commands whatever the number of files, and 40 small reads and
writes) and under 250 ms, next to a batch's minutes.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from orkeon_run.run import audit, changes

from .bench_audit import change, workspace
from .common import header, row

ROUNDS = 15


def main() -> None:
    took: dict[str, list[float]] = {"compare": [], "record": []}
    with tempfile.TemporaryDirectory(prefix="orkeon-bench-changes-") as tmp:
        ws = workspace(Path(tmp), False)
        git = audit.AuditGit.default(ws)
        for n in range(ROUNDS + 1):
            before = audit.snapshot(ws, tools=git)
            change(ws, n)
            start = time.perf_counter()
            paths, _ = audit.compare(ws, before, git)
            compared = time.perf_counter() - start
            run_dir = Path(tmp) / f"run{n}"
            run_dir.mkdir()
            start = time.perf_counter()
            doc = changes.record_batch(
                run_dir, ws, "dev-batches", "b1", {"b1/r": ["."]}, before, git,
                changes.Store(run_dir),
            )  # fmt: skip
            recorded = time.perf_counter() - start
            assert len(doc["files"]) == len(paths) == 40, len(doc["files"])
            if n:  # the first round warms the page cache
                took["compare"].append(compared)
                took["record"].append(recorded)
    med = {k: statistics.median(v) * 1000 for k, v in took.items()}
    header()
    row("audit's comparison (the baseline)", f"{med['compare']:.1f} ms", "", None, "", None)
    ratio = med["record"] / med["compare"]
    row("changes recorded for the reports", f"{med['record']:.1f} ms",
        f"{med['compare']:.1f} ms", ratio, "< 2.5x and < 250 ms",
        ratio < 2.5 and med["record"] < 250)  # fmt: skip
