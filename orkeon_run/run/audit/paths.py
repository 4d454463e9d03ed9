"""What the audit counts as a change and where: which paths are never the crew's work,
which are guarded whatever the roots, whether a path lies under a batch's roots, and the
fingerprint of one path's content."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ...policy.guards import holds_guard, is_guard
from ...policy.pathglob import PathGlob

ALWAYS_IGNORED = (".orkeon/",)
# Under .orkeon/ only orkeon's own outputs (spec, plan, runs) are exempt. The guards
# (policy/guards.py: the hooks, settings, crews, `.claude/` hooks and settings, `.mcp.json`,
# the run's pinned files) are never ignored: a role that rewrote one would disarm the
# checks of every later batch, or run its code with the operator's rights.
# Folders that test and build tools create with a `.gitignore` of `*` in them (pytest,
# mypy, ruff, hypothesis, tox, nox, coverage's html, uv build, and venv in Python 3.13+
# and uv): a role that runs the tests makes one, and what such a file hides is only its
# own folder's content.
SELF_IGNORING_TOOL_DIRS = frozenset(
    {".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox", ".venv",
     "venv", "env", "htmlcov", "dist", "build"}
)  # fmt: skip
# Fingerprint of a path: its content digest, a symlink's target, or a marker.
Fingerprint = tuple[str, str]


class AuditError(Exception):
    """The audit could not tell what changed."""


def norm_root(root: str) -> str:
    """`./src/api/` -> `src/api`; the workspace itself -> ``."""
    p = PurePosixPath(root.strip())
    text = p.as_posix()
    return "" if text in (".", "/") else text.lstrip("/")


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether workspace-relative `path` lies in one of `roots` (whole components)."""
    for root in roots:
        r = norm_root(root)
        if r == "" or path == r or path.startswith(r + "/"):
            return True
    return False


def ignore_list(workspace: Path, run_dir: Path | None) -> tuple[str, ...]:
    """What the audit never counts: `.orkeon/`, and the run directory when it lies in the
    workspace (its events and transcripts are orkeon's, not the crew's)."""
    out = list(ALWAYS_IGNORED)
    if run_dir is not None:
        try:
            rel = run_dir.resolve().relative_to(workspace).as_posix()
        except ValueError:
            rel = None
        if rel and rel != ".":
            out.append(rel.rstrip("/") + "/")
    return tuple(out)


def ignored(path: str, ignore: Sequence[str], pinned: Sequence[str] = ()) -> bool:
    if is_guard(path, pinned):
        return False
    return any(path == i.rstrip("/") or path.startswith(i) for i in ignore)


@dataclass(frozen=True)
class Ignore:
    """What the audit does not count: orkeon's own folders (`prefixes`: `.orkeon/`, the run
    directory) and the operator's `audit.ignore` (`patterns`, gitignore-style). The guards
    (policy/guards.py, with the run's `pinned` files) are never ignored; a repository's
    `.git` guards are not paths it sees at all. `ignore(path)` for a file,
    `ignore(path + "/")` for a folder."""

    prefixes: tuple[str, ...] = ALWAYS_IGNORED
    patterns: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    _globs: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.patterns and not self._globs:
            object.__setattr__(self, "_globs", tuple(PathGlob(p) for p in self.patterns))

    def __call__(self, path: str) -> bool:
        if is_guard(path, self.pinned):
            return False
        if ignored(path, self.prefixes):
            return True
        return any(g.match(path) for g in self._globs)

    def skips_folder(self, rel: str) -> bool:
        """Whether the files under folder `rel` are left out: it is ignored and holds no
        guard. A walk still looks in it for nested repositories (their guards count)."""
        return self(rel + "/") and not holds_guard(rel + "/", self.pinned)

    def prunes_folder(self, rel: str) -> bool:
        """Whether a walk may leave folder `rel` out whole: orkeon's own (`.orkeon/runs/`,
        the run directory), where no repository of the crew's lies."""
        return ignored(rel + "/", self.prefixes) and not holds_guard(rel + "/", self.pinned)


def fingerprint(full: Path) -> Fingerprint:
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return ("missing", "")
    except OSError as exc:
        return ("error", str(exc))
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(full))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", "")
    if not stat.S_ISREG(st.st_mode):
        return ("special", str(st.st_mode))
    try:
        with open(full, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as exc:
        return ("error", str(exc))
    return (f"file:{stat.S_IMODE(st.st_mode):o}", digest)


def stat_key(st: os.stat_result) -> tuple[int, ...]:
    # ctime moves on every write and cannot be set back from user space, so an unchanged
    # key means unchanged content.
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def shown(path: str) -> str:
    """A path as the audit's record names it: bytes that are not UTF-8 as `\\xff`, so
    the record is plain text wherever it is written."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
