"""`orkeon report RUN_DIR [--format md|html|junit|json|patch] [-o FILE]` (docs/output.md,
"Reports")."""

from __future__ import annotations


def main(run_dir: str, fmt: str, out: str | None) -> int:
    from ..report import write_report

    return write_report(run_dir, fmt, out)
