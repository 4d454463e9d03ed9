"""`orkeon report RUN_DIR [--format md|html|junit|json|patch] [-o FILE]` (docs/output.md,
"Reports")."""

from __future__ import annotations

from ..report import write_report


def main(run_dir: str, fmt: str, out: str | None) -> int:
    return write_report(run_dir, fmt, out)
