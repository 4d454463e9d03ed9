"""The audit as dev-batches and tasks-repair run it (run/audit/): the workspace as it was
before a batch's roles, then the audit of what they changed, both with the run's settings
(its ignore list, `audit.*`, the audit's git and sandbox), and the audit's events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import anyio

from .. import audit, changes
from ..context import StepRun


async def snapshot(sr: StepRun, git_mode: bool | None) -> audit.Snapshot:
    """The workspace now, in a worker thread: through git or by hashes (`git_mode`; None:
    as the workspace is). Raises audit.AuditError (the repository went away, say)."""
    ignore = audit.ignore_list(sr.workspace, sr.guarded_dir or sr.run_dir)  # a pipeline's too
    before = await anyio.to_thread.run_sync(
        partial(
            audit.snapshot,
            sr.workspace,
            ignore,
            git_mode,
            patterns=tuple(sr.inputs.audit.ignore),
            tools=sr.audit_git(),
            pinned=sr.config.pins.paths,
        )
    )
    await changes.start(sr, before)  # the uncommitted files the step began with
    return before


async def audit_batch(
    sr: StepRun,
    batch: str,
    roots: Sequence[str],
    before: audit.Snapshot,
    roles: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Record what the roles changed (run/changes.py; `roles`: each role's full name and
    roots), then audit what changed since `before` against `roots`, then build and test
    (not once the budget is spent: the paths are still checked); emit its events; the
    record. What changed is looked at once, for both (each look is six git commands)."""
    try:
        found = await anyio.to_thread.run_sync(audit.changes, sr.workspace, before, sr.audit_git())
    except (OSError, audit.AuditError):
        found = None  # each looks again as it did alone: the log warns, the audit fails
    await changes.batch(sr, batch, roles or {}, before, None if found is None else found.paths)
    record = await audit.run_audit(
        sr.workspace,
        batch,
        roots,
        before,
        build=sr.inputs.audit.build,
        test=sr.inputs.audit.test,
        run_commands=not sr.ledger.spent(),
        git=sr.audit_git(),
        commands=sr.audit_commands(),
        require_changes=sr.inputs.audit.require_changes,
        found=found,
    )
    unpinned = sr.unpinned
    if record["passed"] and unpinned:  # changed in an earlier batch, attempt or run
        why = ["a pinned file changed since the run started (never a role's work):"]
        why += [f"  {p}" for p in unpinned]
        record = audit.record(
            batch, passed=False, changed=record["changed"], outside_roots=unpinned,
            output_tail="\n".join(why),
        )  # fmt: skip
    audited(sr, record)
    return record


def audited(sr: StepRun, record: dict[str, Any]) -> None:
    """The `audit` event; for a batch that changed no file, a `warning` event after it (the
    progress view shows it; with `audit.require_changes` the audit fails as well)."""
    sr.events.emit("audit", step=sr.step, **record)
    if record.get("changed") == 0:
        message = "no role changed any file"
        sr.events.emit("warning", step=sr.step, batch=record["batch"], message=message)


def audit_error(record: dict[str, Any]) -> str:
    """The step's error line for a failed audit record."""
    batch = record["batch"]
    if record["outside_roots"]:
        return f"the audit of batch {batch} failed: changed outside the roots: " + ", ".join(
            record["outside_roots"]
        )
    if record["failed_command"]:
        return f"the audit of batch {batch} failed: {' '.join(record['failed_command'])}"
    if record.get("changed") == 0:
        return f"the audit of batch {batch} failed: no role changed any file"
    return f"the audit of batch {batch} failed: {record['output_tail']}"
