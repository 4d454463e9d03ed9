"""The workspace's state when a batch began (`Snapshot`), and what changed since."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .git import git_dirty, git_head, git_moved, git_repo, repo_guards
from .paths import (
    ALWAYS_IGNORED,
    AuditError,
    fingerprint,
    holds_guarded,
    ignored,
    stat_key,
)


@dataclass(frozen=True)
class Snapshot:
    """The workspace's state when a batch began."""

    git: bool
    ignore: tuple[str, ...]
    prefix: str = ""  # the workspace relative to the repository root ("" or "sub/dir/")
    head: str | None = None
    # git: path -> (XY status, content fingerprint) for dirty paths;
    # no git: path -> content fingerprint for every file.
    entries: dict[str, Any] = field(default_factory=dict)
    # no git: path -> stat key, so an unchanged file is not hashed again.
    stats: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # git: the repository's guard files (path relative to the workspace) -> fingerprint;
    # None in a snapshot saved before orkeon watched them (a resumed older run).
    guards: dict[str, Any] | None = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """For state.json: a resumed batch is audited against its first start."""
        return {
            "git": self.git,
            "ignore": list(self.ignore),
            "prefix": self.prefix,
            "head": self.head,
            "entries": self.entries,
            "stats": self.stats,
            "guards": self.guards,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Snapshot:
        def tup(v: Any) -> Any:
            return tuple(tup(x) for x in v) if isinstance(v, list) else v

        return cls(
            git=bool(d["git"]),
            ignore=tuple(d["ignore"]),
            prefix=d.get("prefix", ""),
            head=d.get("head"),
            entries={k: tup(v) for k, v in d.get("entries", {}).items()},
            stats={k: tuple(v) for k, v in d.get("stats", {}).items()},
            guards=({k: tup(v) for k, v in d["guards"].items()} if "guards" in d else None),
        )


def _walk(workspace: Path, ignore: Sequence[str]) -> dict[str, os.stat_result]:
    found: dict[str, os.stat_result] = {}
    ws = os.fspath(workspace)
    for dirpath, dirnames, filenames in os.walk(ws):
        rel_dir = os.path.relpath(dirpath, ws)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        keep = []
        for d in dirnames:
            rel = rel_dir + d
            if d == ".git":
                # A repository's insides are not walked (git changes them as it works),
                # but one appearing or going is a change like any other.
                if not ignored(rel, ignore):
                    with contextlib.suppress(FileNotFoundError):
                        found[rel] = os.lstat(os.path.join(dirpath, d))
                continue
            if ignored(rel + "/", ignore) and not holds_guarded(rel + "/"):
                continue
            full = os.path.join(dirpath, d)
            if os.path.islink(full):  # os.walk lists a symlink to a folder as a folder
                filenames.append(d)
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in filenames:
            rel = rel_dir + name
            if ignored(rel, ignore):
                continue
            try:
                found[rel] = os.lstat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
    return found


def snapshot(
    workspace: Path, ignore: Sequence[str] = ALWAYS_IGNORED, git: bool | None = None
) -> Snapshot:
    """The workspace's state now. Blocking: call it in a worker thread from async code.

    `git` is the step's audit mode, decided by its first snapshot (None: decide now) and
    kept for every later one: a workspace that was no repository when the step began is
    not audited through git because a role ran `git init` (with a `.git/info/exclude`
    of its own, git would then hide every later change)."""
    ignore = tuple(ignore)
    repo = git_repo(workspace) if git is not False else None
    if git and repo is None:
        raise AuditError("the workspace is no longer a git repository")
    if repo is not None:
        return Snapshot(
            git=True,
            ignore=ignore,
            prefix=repo.prefix,
            head=git_head(workspace),
            entries=git_dirty(workspace, repo.prefix, ignore),
            guards=repo_guards(workspace, repo),
        )
    stats = _walk(workspace, ignore)
    entries = {p: fingerprint(workspace / p) for p in stats}
    return Snapshot(
        git=False,
        ignore=ignore,
        entries=entries,
        stats={p: stat_key(st) for p, st in stats.items()},
    )


def changed_paths(workspace: Path, before: Snapshot) -> list[str]:
    """Workspace-relative paths that changed since `before`, sorted. Blocking."""
    ignore = before.ignore
    if before.git:
        after = git_dirty(workspace, before.prefix, ignore)
        changed = {
            p for p in before.entries.keys() | after.keys() if before.entries.get(p) != after.get(p)
        }
        moved = git_moved(workspace, before.prefix, before.head, git_head(workspace))
        changed.update(p for p in moved if not ignored(p, ignore))
        return sorted(changed)
    now = _walk(workspace, ignore)
    changed = set(before.entries.keys() - now.keys())
    for p, st in now.items():
        old = before.entries.get(p)
        if old is None or (
            before.stats.get(p) != stat_key(st) and fingerprint(workspace / p) != old
        ):
            changed.add(p)
    return sorted(changed)


def tampered(workspace: Path, before: Snapshot) -> list[str]:
    """The repository's guard files that changed since `before` (paths relative to the
    workspace, `.git/config` at the top of a repository), sorted. Blocking."""
    if not before.git or before.guards is None:
        return []
    repo = git_repo(workspace)
    if repo is None:  # the repository itself went away
        return sorted(before.guards) or [".git"]
    now = repo_guards(workspace, repo)
    return sorted(
        p for p in before.guards.keys() | now.keys() if before.guards.get(p) != now.get(p)
    )
