"""The run's change as git sees it (docs/output.md, "The patch"): every path where the
workspace now differs from the commit the run started from (tracked files changed or
deleted, files git does not ignore added), each file's content at that commit (from git)
and now (from the workspace itself: the run's records hold redacted copies, never used
here). Paths orkeon never counts as the crew's work are left out, as the audit leaves
them out (`.orkeon/` but its guards, the run directory), and so is the patch file itself.

Every git command is the audit's own git (run/audit/gitcmd.py: its switches, its
sandbox). Blocking: run it in a worker thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from .. import gitpatch
from .audit.gitcmd import Git, must_have_worked
from .audit.paths import AuditError, ignored

GIT_ARGS = 500  # paths per git command line


def changed_files(
    git: Git, prefix: str, base: str, ignore: Sequence[str], pinned: Sequence[str] = ()
) -> list[gitpatch.FileChange]:
    """The files the workspace changed since commit `base`, in path order. `prefix`: the
    workspace's folder in its repository ("" at its top); `ignore`: workspace-relative
    paths (a trailing `/`: a folder) left out unless they are guards."""
    listed = git("diff", "--name-only", "-z", "--no-renames", "--relative", base, "--")
    must_have_worked(listed, "git diff --name-only")
    others = git("ls-files", "-z", "--others", "--exclude-standard", "--", ".")
    must_have_worked(others, "git ls-files --others")
    names = {n for n in (listed.stdout + "\0" + others.stdout).split("\0") if n}
    paths = sorted(p for p in names if not ignored(p, ignore, pinned))
    before = _at_commit(git, prefix, base, paths)
    out = []
    for rel in paths:
        old, old_mode = before.get(rel, (None, ""))
        new, new_mode = _read(git.workspace / rel)
        if old == new:
            continue
        out.append(gitpatch.FileChange(rel, old, new, new_mode or old_mode or gitpatch.REGULAR))
    return out


def _read(path: Path) -> tuple[bytes | None, str]:
    """A workspace file's content and git mode ((None, "") when there is none, or it is
    no file git keeps); a symlink's content is its target, as git stores it."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(path)), gitpatch.SYMLINK
        if not stat.S_ISREG(st.st_mode):
            return None, ""
        mode = gitpatch.EXECUTABLE if st.st_mode & 0o111 else gitpatch.REGULAR
        return path.read_bytes(), mode
    except OSError:
        return None, ""


def _at_commit(
    git: Git, prefix: str, base: str, paths: Sequence[str]
) -> dict[str, tuple[bytes, str]]:
    """Each path's content and mode at commit `base` (a path it lacks is left out): one
    `ls-tree` names the blobs, one `cat-file --batch` prints them."""
    found: dict[str, tuple[bytes, str]] = {}
    for i in range(0, len(paths), GIT_ARGS):
        chunk = [prefix + p for p in paths[i : i + GIT_ARGS]]
        listed = git("ls-tree", "-z", "--full-tree", base, "--", *chunk)
        must_have_worked(listed, "git ls-tree")
        blobs = []  # (path, mode, object id)
        for entry in listed.stdout.split("\0"):
            meta, _, name = entry.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == "blob":
                blobs.append((name.removeprefix(prefix), fields[0], fields[2]))
        if not blobs:
            continue
        ids = "".join(oid + "\n" for *_, oid in blobs).encode()
        shown = git("cat-file", "--batch", stdin=ids)
        must_have_worked(shown, "git cat-file --batch")
        data = shown.stdout.encode("utf-8", "surrogateescape")
        at = 0
        for rel, mode, oid in blobs:
            end = data.index(b"\n", at)
            head = data[at:end].split()
            if len(head) != 3 or head[0].decode() != oid or not head[2].isdigit():
                raise AuditError(f"git cat-file --batch: unexpected output for {rel}")
            size = int(head[2])
            found[rel] = (data[end + 1 : end + 1 + size], mode)
            at = end + 1 + size + 1
    return found
