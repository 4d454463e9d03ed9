"""The audit after a batch (docs/security.md, "The audit"), run from orkeon's own code: no
hook, no gate, no budget charge.

1. What changed since the batch began: in a git repository, `git status --porcelain -z`
   (untracked files included) before and after, each dirty file fingerprinted by its
   content, plus every path a moved HEAD touched; elsewhere a snapshot of every file's
   content hash. Paths under `.orkeon/` (and the run directory) are not the crew's work.
2. Every changed path must lie under the batch's roots. In a git repository the
   repository's own guards (`config`, `config.worktree`, `hooks/`, `info/` of its git
   folder) must not change at all, whatever the roots: a role that wrote them (`cp` into
   `.git/config`) made every later `git` run a program of its choosing.
3. `audit.build`, then `audit.test`, when given: each must exit 0.

The first failing check decides the record: `{batch, passed, outside_roots,
failed_command, output_tail}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import proc
from .paths import ALWAYS_IGNORED, AuditError, ignore_list, norm_root, shown, under
from .snapshot import Snapshot, changed_paths, snapshot, tampered

__all__ = [
    "ALWAYS_IGNORED",
    "AuditError",
    "Snapshot",
    "changed_paths",
    "ignore_list",
    "norm_root",
    "record",
    "run_audit",
    "shown",
    "snapshot",
    "tampered",
    "under",
]

TAIL_CHARS = 4000
# The audit's own commands are not charged to the budget; this bounds a hung build.
COMMAND_TIMEOUT = 1800.0


# --- the audit ---------------------------------------------------------------------------


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _command_output(argv: Sequence[str], r: proc.ProcResult) -> str:
    if r.error is not None:
        return f"{' '.join(argv)} could not run: {r.error}"
    parts = [r.stdout.rstrip("\n"), r.stderr.rstrip("\n")]
    text = "\n".join(p for p in parts if p)
    if r.timed_out:
        text += f"\n[{' '.join(argv)} ran longer than {COMMAND_TIMEOUT:g} s and was stopped]"
    elif r.exit_code:
        text += f"\n[{' '.join(argv)} exited {r.exit_code}]"
    return text.strip("\n")


def record(
    batch: str,
    *,
    passed: bool,
    outside_roots: Sequence[str] = (),
    failed_command: Sequence[str] | None = None,
    output_tail: str = "",
) -> dict[str, Any]:
    return {
        "batch": batch,
        "passed": passed,
        "outside_roots": list(outside_roots),
        "failed_command": list(failed_command) if failed_command is not None else None,
        "output_tail": _tail(output_tail),
    }


async def run_audit(
    workspace: Path,
    batch: str,
    roots: Sequence[str],
    before: Snapshot,
    *,
    build: Sequence[str] | None = None,
    test: Sequence[str] | None = None,
    run_commands: bool = True,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Audit the batch: what changed since `before`, then build and test (with `env`, by
    default orkeon's). Returns the audit record. `run_commands=False` checks the paths only."""
    from anyio import to_thread

    try:
        changed = await to_thread.run_sync(changed_paths, workspace, before)
        guards = await to_thread.run_sync(tampered, workspace, before)
    except AuditError as exc:
        return record(batch, passed=False, output_tail=str(exc))
    outside = [shown(p) for p in changed if not under(p, roots)]
    guards = [shown(p) for p in guards]
    if outside or guards:
        lines = []
        if outside:
            lines += [f"changed outside the roots of batch {batch} ({', '.join(roots)}):"]
            lines += [f"  {p}" for p in outside]
        if guards:
            lines += ["changed the repository's configuration or hooks (never a role's work):"]
            lines += [f"  {p}" for p in guards]
        return record(
            batch,
            passed=False,
            outside_roots=[*outside, *guards],
            output_tail="\n".join(lines),
        )
    if run_commands:
        for argv in (build, test):
            if not argv:
                continue
            r = await proc.arun(list(argv), cwd=workspace, timeout=COMMAND_TIMEOUT, env=env)
            if r.exit_code != 0:
                return record(
                    batch,
                    passed=False,
                    failed_command=argv,
                    output_tail=_command_output(argv, r),
                )
    return record(batch, passed=True)
