"""Model-written paths, resolved safely inside the workspace and a role's roots.

Every path a model writes is resolved the way the kernel would follow it (symlinks and
`..` included, a not-yet-existing tail allowed), and the result must lie inside the
workspace. Callers act on the returned path, never on the text the model wrote, so what
was checked is what gets touched. A `..` that stays inside (`src/../README.md`) is fine;
one that leaves is refused, like an absolute path outside or a symlink that points out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PathOutside", "contains", "relative", "resolve_in_workspace", "within_roots"]


class PathOutside(Exception):
    """The path leaves the workspace (or can name no file in it). `.path` is the path as
    the model wrote it."""

    def __init__(self, path: str, why: str = "is outside the workspace") -> None:
        self.path = path
        super().__init__(f"{path!r} {why}")


def contains(base: str, path: str) -> bool:
    """Whether resolved absolute path `path` is `base` or lies under it, by whole components
    (`/w/src/a` does not contain `/w/src/ab`)."""
    if path == base:
        return True
    prefix = base if base.endswith("/") else base + "/"
    return path.startswith(prefix)


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """The resolved absolute path `raw` names, which must lie inside `workspace` (already
    resolved). Raises PathOutside for an empty path, a NUL byte, text the file system
    cannot encode, and any path that resolves outside the workspace."""
    if not isinstance(raw, str) or not raw:
        raise PathOutside(str(raw), "is empty")
    if "\x00" in raw:
        raise PathOutside(raw, "holds a NUL character")
    try:
        os.fsencode(raw)
    except UnicodeError:
        raise PathOutside(raw, "cannot be encoded as a file name") from None
    ws = os.fspath(workspace)
    # An absolute path is walked from `/`, a relative one from the workspace down.
    resolved, whole = join_resolved(ws, raw, {})
    # A symlink loop stops the walk and leaves the rest as written, where a `..` would
    # cancel the loop as text (`loop/../out/x`), though the kernel can never follow it:
    # nothing past a loop is known to be inside.
    if not whole:
        raise PathOutside(raw)
    resolved = os.path.normpath(resolved)
    if not contains(ws, resolved):
        raise PathOutside(raw)
    return Path(resolved)


# Symlinks one path may pass through: Linux's own limit (MAXSYMLINKS). Each is a level of
# recursion below, and a chain of a thousand (a model can make one with `git apply`)
# ended the step with a RecursionError before its audit.
MAX_LINKS = 40


def join_resolved(base: str, rest: str, seen: dict[str, str | None]) -> tuple[str, bool]:
    """`base` (absolute, its symlinks already resolved) joined with `rest`, every symlink
    in `rest` followed: what `os.path.realpath(base + "/" + rest)` gives, without an
    `lstat` for each component of `base` (the workspace's depth, two thirds of the work
    for a short path, on every call). The walk is realpath's own (posixpath in Python
    3.11), and a test holds the two to the same answers on random trees. The flag is
    False when a symlink loop, or more than MAX_LINKS links, stopped the walk (the rest is
    then joined as written)."""
    path = base
    if rest.startswith("/"):
        path, rest = "/", rest[1:]
    while rest:
        name, _, rest = rest.partition("/")
        if not name or name == ".":
            continue
        if name == "..":
            path = os.path.dirname(path)
            continue
        new = path + name if path == "/" else path + "/" + name
        try:
            is_link = stat.S_ISLNK(os.lstat(new).st_mode)
        except OSError:
            is_link = False
        if not is_link:
            path = new
            continue
        if new in seen:
            cached = seen[new]
            if cached is not None:
                path = cached
                continue
            return os.path.join(new, rest), False  # a loop
        if len(seen) >= MAX_LINKS:  # as the kernel gives up (ELOOP), before the stack does
            return os.path.join(new, rest), False
        seen[new] = None
        path, ok = join_resolved(path, os.readlink(new), seen)
        if not ok:
            return os.path.join(path, rest), False
        seen[new] = path
    return path, True


def relative(workspace: Path, resolved: Path) -> str:
    """`resolved` as a posix path relative to `workspace` ("." for the workspace itself)."""
    return resolved.relative_to(workspace).as_posix()


def within_roots(workspace: Path, resolved: Path, roots: Sequence[str]) -> bool:
    """Whether `resolved` lies inside one of `roots` (workspace-relative, trailing slash or
    not; each root is resolved too). Containment is by whole components: root `src/a`
    does not hold `src/ab/x`. Since `resolved` has its symlinks resolved, a symlink inside
    a root that points out of it is outside. A root that itself leaves the workspace holds
    nothing."""
    path = os.fspath(resolved)
    for root in roots:
        try:
            base = resolve_in_workspace(workspace, root or ".")
        except PathOutside:
            continue
        if contains(os.fspath(base), path):
            return True
    return False
