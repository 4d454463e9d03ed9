"""The workspace's state when a batch began (`Snapshot`), and what changed since."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...policy.guards import guard_files
from .git import (
    Repo,
    git_moved,
    git_refs,
    git_repo,
    git_status,
    git_unseen,
    moved_refs,
    repo_guards,
    repo_or_error,
)
from .gitcmd import AuditGit, Git
from .nested import git_entries, guard_changes, guards_of, nested_files, walk
from .paths import ALWAYS_IGNORED, AuditError, Ignore, fingerprint, stat_key


@dataclass(frozen=True)
class Snapshot:
    """The workspace's state when a batch began."""

    git: bool
    ignore: tuple[str, ...]
    prefix: str = ""  # the workspace relative to the repository root ("" or "sub/dir/")
    head: str | None = None
    # git: path -> (XY status, content fingerprint) for dirty paths and the files of
    # nested repositories; no git: path -> content fingerprint for every file.
    entries: dict[str, Any] = field(default_factory=dict)
    # Path -> stat key, so an unchanged file is not hashed again: every file with no git,
    # the files of nested repositories with git.
    stats: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # The guard files (path relative to the workspace) -> fingerprint: the repository's
    # and its nested repositories' (git), the nested repositories' (no git); None in a
    # snapshot saved before orkeon watched them (a resumed older run).
    guards: dict[str, Any] | None = field(default_factory=dict)
    # The operator's `audit.ignore` when the batch began.
    patterns: tuple[str, ...] = ()
    # The run's pinned files (config/pins.py): guards like the rest.
    pinned: tuple[str, ...] = ()
    # git: the repository's history, ref -> what it names (`HEAD`, every branch and tag,
    # the stash); None with no git, or in a snapshot saved before orkeon watched it.
    refs: dict[str, str] | None = None

    @property
    def exempt(self) -> Ignore:
        return Ignore(self.ignore, self.patterns, self.pinned)

    def to_json(self) -> dict[str, Any]:
        """For state.json: a resumed batch is audited against its first start."""
        return {
            "git": self.git,
            "ignore": list(self.ignore),
            "patterns": list(self.patterns),
            "prefix": self.prefix,
            "head": self.head,
            "entries": self.entries,
            "stats": self.stats,
            "guards": self.guards,
            "pinned": list(self.pinned),
            "refs": self.refs,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Snapshot:
        def tup(v: Any) -> Any:
            return tuple(tup(x) for x in v) if isinstance(v, list) else v

        return cls(
            git=bool(d["git"]),
            ignore=tuple(d["ignore"]),
            patterns=tuple(d.get("patterns", ())),
            prefix=d.get("prefix", ""),
            head=d.get("head"),
            entries={k: tup(v) for k, v in d.get("entries", {}).items()},
            stats={k: tuple(v) for k, v in d.get("stats", {}).items()},
            guards=({k: tup(v) for k, v in d["guards"].items()} if "guards" in d else None),
            pinned=tuple(d.get("pinned", ())),
            refs=d.get("refs"),
        )


@dataclass(frozen=True)
class _State:
    """What one look at the workspace found (git mode)."""

    head: str | None
    entries: dict[str, Any]
    stats: dict[str, tuple[int, ...]]
    guards: dict[str, Any]
    refs: dict[str, str]


def _look(git: Git, repo: Repo, ignore: Ignore, earlier: Snapshot | None) -> _State:
    """The workspace through git: dirty paths fingerprinted, nested repositories walked
    file by file, the guards of the repository and of the nested ones. `repo`: the
    repository as just found."""
    ws = git.workspace
    prefix = repo.prefix
    status = git_unseen(git, prefix, ignore)
    status.update(git_status(git, prefix, ignore))
    nested = [p for p in status if p.endswith("/")]
    entries: dict[str, Any] = {
        p: (xy, fingerprint(ws / p)) for p, xy in status.items() if not p.endswith("/")
    }
    files, stats, gits = nested_files(
        ws, nested, ignore, earlier.entries if earlier else None, earlier.stats if earlier else None
    )
    entries.update(files)
    for rel in git_entries(ws, gits):  # one that appears or goes is a change
        entries[rel] = ("??", fingerprint(ws / rel))
    guards = repo_guards(ws, repo)
    guards.update(guards_of(ws, gits))
    guards.update(workspace_guards(ws, ignore.pinned))
    return _State(repo.head, entries, stats, guards, git_refs(git, repo))


def workspace_guards(workspace: Path, pinned: Sequence[str]) -> dict[str, Any]:
    """The workspace's guard files (policy/guards.py) -> fingerprint, read directly (not
    through git: a guard git ignores is still a guard)."""
    return {rel: fingerprint(path) for rel, path in guard_files(workspace, pinned).items()}


def snapshot(
    workspace: Path,
    ignore: Sequence[str] = ALWAYS_IGNORED,
    git: bool | None = None,
    *,
    patterns: Sequence[str] = (),
    tools: AuditGit | None = None,
    pinned: Sequence[str] = (),
) -> Snapshot:
    """The workspace's state now. Blocking: call it in a worker thread from async code.

    `git` is the step's audit mode, decided by its first snapshot (None: decide now) and
    kept for every later one: a workspace that was no repository when the step began is
    not audited through git because a role ran `git init` (with a `.git/info/exclude`
    of its own, git would then hide every later change). `patterns`: the operator's
    `audit.ignore`. `tools`: how git runs (default: orkeon's PATH's git, unconfined).
    `pinned`: the run's pinned files, guards like the rest."""
    exempt = Ignore(tuple(ignore), tuple(patterns), tuple(pinned))
    how = tools if tools is not None else AuditGit.default(workspace)
    runner = how.bind(workspace)
    repo = git_repo(runner) if git is not False else None
    if git and repo is None:
        if how.program is None:
            raise AuditError("no git program was found outside the workspace")
        raise AuditError("the workspace is no longer a git repository")
    if repo is not None:
        state = _look(runner, repo, exempt, None)
        return Snapshot(
            git=True,
            ignore=exempt.prefixes,
            patterns=exempt.patterns,
            pinned=exempt.pinned,
            prefix=repo.prefix,
            head=state.head,
            entries=state.entries,
            stats=state.stats,
            guards=state.guards,
            refs=state.refs,
        )
    files, gits = walk(workspace, exempt)
    files.update(git_entries(workspace, gits))
    return Snapshot(
        git=False,
        ignore=exempt.prefixes,
        patterns=exempt.patterns,
        pinned=exempt.pinned,
        entries={p: fingerprint(workspace / p) for p in files},
        stats={p: stat_key(st) for p, st in files.items()},
        guards={**guards_of(workspace, gits), **workspace_guards(workspace, exempt.pinned)},
    )


@dataclass(frozen=True)
class Changes:
    """What changed since a snapshot: `paths` (workspace-relative, sorted, those its ignore
    rules leave out dropped), `guards` (sorted; never ignored), `refs` (the history: `HEAD`,
    branches, tags, the stash that were made, moved or deleted)."""

    paths: list[str]
    guards: list[str]
    refs: list[str] = field(default_factory=list)


def compare(
    workspace: Path, before: Snapshot, tools: AuditGit | None = None
) -> tuple[list[str], list[str]]:
    """What changed since `before`: the changed paths and the changed guards. Blocking."""
    found = changes(workspace, before, tools)
    return found.paths, found.guards


def changes(workspace: Path, before: Snapshot, tools: AuditGit | None = None) -> Changes:
    """What changed since `before` (`Changes`). Blocking."""
    exempt = before.exempt
    how = tools if tools is not None else AuditGit.default(workspace)
    runner = how.bind(workspace)
    if before.git:
        now = _look(runner, repo_or_error(runner), exempt, before)
        changed = {
            p for p in before.entries.keys() | now.entries.keys()
            if before.entries.get(p) != now.entries.get(p)
        }  # fmt: skip
        changed.update(git_moved(runner, before.prefix, before.head, now.head))
        guards_now = now.guards
        refs = moved_refs(before.refs, now.refs) if before.refs is not None else []
    else:
        files, gits = walk(workspace, exempt)
        files.update(git_entries(workspace, gits))
        changed = set(before.entries.keys() - files.keys())
        for p, st in files.items():
            old = before.entries.get(p)
            if old is None or (
                before.stats.get(p) != stat_key(st) and fingerprint(workspace / p) != old
            ):
                changed.add(p)
        guards_now = {**guards_of(workspace, gits), **workspace_guards(workspace, exempt.pinned)}
        refs = []
    paths = sorted(p for p in changed if not exempt(p))
    if before.guards is None:
        return Changes(paths, [], refs)
    return Changes(paths, guard_changes(before.guards, guards_now), refs)


def changed_paths(workspace: Path, before: Snapshot, tools: AuditGit | None = None) -> list[str]:
    """Workspace-relative paths that changed since `before`, sorted. Blocking."""
    return compare(workspace, before, tools)[0]


def tampered(workspace: Path, before: Snapshot, tools: AuditGit | None = None) -> list[str]:
    """The guard files that changed since `before` (paths relative to the workspace,
    `.git/config` at the top of a repository), sorted. Blocking."""
    return compare(workspace, before, tools)[1]
