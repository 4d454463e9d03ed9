"""Where the audit's git is (docs/security.md, "The audit's git"): the first `git` on PATH
outside the workspace, found once before any role runs. Apart from the audit's package
(`audit/gitcmd.py` runs it) so that `orkeon validate`, which finds it and runs no audit,
does not load the audit (docs/performance.md, "Start-up, fourth pass")."""

from __future__ import annotations

import os
from pathlib import Path


def find_git(workspace: Path, search_path: str | None) -> Path | None:
    """The first `git` on `search_path` (a PATH value), resolved, skipping folders that are
    relative or lie in `workspace` and a program that resolves into it: a `git` planted in
    the workspace (a git-ignored `.venv/bin`) is never the audit's. None when there is none."""
    ws = os.fspath(os.path.realpath(workspace))
    for folder in (search_path if search_path is not None else os.defpath).split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue
        real = os.path.realpath(folder)
        if _within(ws, real):
            continue
        candidate = os.path.join(real, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            target = os.path.realpath(candidate)
            if not _within(ws, target):
                return Path(target)
    return None


def _within(base: str, path: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")
