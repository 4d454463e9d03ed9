"""The audit after a batch (docs/security.md, "The audit"), run from orkeon's own code: no
hook, no gate, no budget charge.

1. What changed since the batch began: in a git repository, `git status --porcelain -z`
   (untracked files included) before and after, each dirty file fingerprinted by its
   content, the files of nested repositories git does not look into one by one, plus
   every path a moved HEAD touched; elsewhere a snapshot of every file's content hash.
   Paths under `.orkeon/` (and the run directory) are not the crew's work, nor those the
   operator's `audit.ignore` names. git is the audit's own (gitcmd.py): found before any
   role ran, with every setting that would start a program switched off.
2. Every changed path must lie under the batch's roots. The guards must not change at all,
   whatever the roots and whatever the ignore rules: those of the repository and of every
   nested one (`config`, `config.worktree`, `hooks/`, `info/` of their git folders: a role
   that wrote them, `cp` into `.git/config`, made every later `git` run a program of its
   choosing), and the workspace's (policy/guards.py: orkeon's and Claude Code's settings,
   hooks, crews, `.mcp.json`, the run's pinned files), read directly. The history must be
   as it was: HEAD, every branch and tag, the stash (git.py `git_refs`).
3. With `audit.require_changes`, at least one file must have changed: a batch whose roles
   changed nothing did not do its work (a small model that only read and talked).
4. `audit.build`, then `audit.test`, when given: each must exit 0. They run the model's
   code: inside the audit's sandbox (`Commands`) unless the sandbox is off. After each,
   the workspace is compared again with the batch's start, and what it changed is judged
   by 2 (named as that command's doing).

The first failing check decides the record: `{batch, passed, changed, outside_roots,
failed_command, output_tail}`; `changed` is how many files changed (null when the audit
could not tell).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import proc
from ...tools import sandbox
from .gitcmd import AuditGit, find_git
from .paths import ALWAYS_IGNORED, AuditError, Ignore, ignore_list, norm_root, shown, under
from .snapshot import Changes, Snapshot, changed_paths, changes, compare, snapshot, tampered

if TYPE_CHECKING:
    from ...tools.sandbox import SandboxPolicy

__all__ = [
    "ALWAYS_IGNORED",
    "AuditError",
    "AuditGit",
    "Changes",
    "Commands",
    "Ignore",
    "Snapshot",
    "changed_paths",
    "changes",
    "compare",
    "find_git",
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


@dataclass(frozen=True)
class Commands:
    """How `audit.build` and `audit.test` run: with `env`; inside a sandbox made by
    `sandbox()` when it is given (made when each audit starts, so the nested `.git`
    folders it protects are those of that moment); not at all when `refused` says why
    (the sandbox is on but cannot be made here); unconfined otherwise (`"sandbox": "off"`)."""

    env: Mapping[str, str] | None = None
    sandbox: Callable[[], SandboxPolicy] | None = None
    refused: str | None = None


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
    changed: int | None = None,
    outside_roots: Sequence[str] = (),
    failed_command: Sequence[str] | None = None,
    output_tail: str = "",
) -> dict[str, Any]:
    return {
        "batch": batch,
        "passed": passed,
        "changed": changed,
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
    git: AuditGit | None = None,
    commands: Commands | None = None,
    require_changes: bool = False,
    found: Changes | None = None,
) -> dict[str, Any]:
    """Audit the batch: what changed since `before` (through `git`, by default the git on
    orkeon's PATH; `found`: what `changes` answered for it just now, not asked again), that
    something did when `require_changes`, then build and test as `commands` says (by
    default unconfined, with `env`, else orkeon's environment). Returns the audit record.
    `run_commands=False` checks the paths only."""
    from anyio import to_thread  # not at import: `validate` loads this package (find_git)

    if found is None:
        try:
            found = await to_thread.run_sync(changes, workspace, before, git)
        except AuditError as exc:
            return record(batch, passed=False, output_tail=str(exc))
    count = len(found.paths)
    refused = _refused(found, batch, roots)
    if refused is not None:
        return record(batch, passed=False, changed=count, **refused)
    if require_changes and not count:
        why = f"no role of batch {batch} changed any file (audit.require_changes is set)"
        return record(batch, passed=False, changed=0, output_tail=why)
    if run_commands:
        how = commands if commands is not None else Commands(env=env)
        for argv in (build, test):
            if not argv:
                continue
            if how.refused is not None:
                return record(
                    batch,
                    passed=False,
                    changed=count,
                    failed_command=argv,
                    output_tail=(
                        f"{' '.join(argv)} was not run: it runs the model's code, and {how.refused}"
                    ),
                )
            r = await _run_command(workspace, argv, how)
            if r.exit_code != 0:
                return record(
                    batch,
                    passed=False,
                    changed=count,
                    failed_command=argv,
                    output_tail=_command_output(argv, r),
                )
            # The build and test run the model's code: what they changed is judged like
            # the roles' work, against the batch's start (docs/security.md, "The audit").
            try:
                after = await to_thread.run_sync(changes, workspace, before, git)
            except AuditError as exc:
                return record(batch, passed=False, changed=count, failed_command=argv,
                              output_tail=f"after {' '.join(argv)}: {exc}")  # fmt: skip
            refused = _refused(after, batch, roots, made_by=argv)
            if refused is not None:
                return record(batch, passed=False, changed=count, failed_command=argv, **refused)
    return record(batch, passed=True, changed=count)


def _refused(
    found: Changes, batch: str, roots: Sequence[str], made_by: Sequence[str] | None = None
) -> dict[str, Any] | None:
    """The record's `outside_roots` and `output_tail` when `found` breaks the rules: a
    path outside the roots, a guard, the history; None when it does not. `made_by`: the
    audit's command that ran last (its changes are named as its own)."""
    guards = [shown(p) for p in found.guards]
    outside = [shown(p) for p in found.paths if not under(p, roots) and shown(p) not in guards]
    refs = [shown(r) for r in found.refs]
    if not (outside or guards or refs):
        return None
    by = f" (made by the audit's command {' '.join(made_by)})" if made_by is not None else ""
    lines = []
    if outside:
        lines += [f"changed outside the roots of batch {batch} ({', '.join(roots)}){by}:"]
        lines += [f"  {p}" for p in outside]
    if guards:
        lines += [f"changed a guard (the repository's configuration or hooks, orkeon's or "
                  f"Claude Code's settings, hooks, crews, a pinned file: never a role's work){by}:"]  # fmt: skip
        lines += [f"  {p}" for p in guards]
    if refs:
        lines += [f"changed the repository's history (never a role's work){by}:"]
        lines += [f"  {r}" for r in refs]
    return {"outside_roots": [*outside, *guards, *refs], "output_tail": "\n".join(lines)}


async def _run_command(workspace: Path, argv: Sequence[str], how: Commands) -> proc.ProcResult:
    if how.sandbox is None:
        # Not at import: `validate` loads this package (find_git), and proc_loop brings
        # asyncio, which validate does not need (docs/performance.md).
        from ... import proc_loop

        return await proc_loop.arun(list(argv), cwd=workspace, timeout=COMMAND_TIMEOUT, env=how.env)
    from anyio import to_thread  # not at import: `validate` loads this package (find_git)

    policy = await to_thread.run_sync(how.sandbox)  # walks the workspace for `.git` folders
    env = how.env if how.env is not None else os.environ
    return await sandbox.arun(policy, list(argv), cwd=workspace, timeout=COMMAND_TIMEOUT, env=env)
