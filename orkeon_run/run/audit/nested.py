"""What git does not look into: the walk of a workspace (or one folder of it) file by file,
and the guards of the repositories found on the way.

A workspace that is no repository is audited by this walk alone. In a git workspace, a
repository nested in it that the top one does not track (`vendor/lib/.git`) is one
untracked folder to `git status`, which never looks inside: the audit walks it file by
file, and its `.git` guards (config, hooks, info/) are watched like the top one's, so a
hook planted there fails the audit whatever the roots.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .git import folder_guards
from .paths import Fingerprint, Ignore, fingerprint, stat_key


def walk(
    workspace: Path, ignore: Ignore, start: str = ""
) -> tuple[dict[str, os.stat_result], list[str]]:
    """Every file under `start` (workspace-relative, "" for all), by path, with its lstat;
    and every `.git` entry found (folder or file), which is not walked into. Symlinks are
    not followed (a link to a folder is one entry). The files of an ignored folder are
    left out, but it is still looked through for `.git` entries: a guard is never
    ignored. Only orkeon's own folders are not walked at all."""
    found: dict[str, os.stat_result] = {}
    gits: list[str] = []
    quiet: set[str] = set()  # folders whose files are ignored
    ws = os.fspath(workspace)
    top = os.path.join(ws, start) if start else ws
    if start and ignore.skips_folder(start):
        quiet.add(top)
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, ws)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        silent = dirpath in quiet
        keep = []
        for d in dirnames:
            rel = rel_dir + d
            full = os.path.join(dirpath, d)
            if d == ".git":
                gits.append(rel)
            elif os.path.islink(full):
                filenames.append(d)  # os.walk lists a symlink to a folder as a folder
            elif not ignore.prunes_folder(rel):
                if silent or ignore.skips_folder(rel):
                    quiet.add(full)
                keep.append(d)
        dirnames[:] = keep
        for name in filenames:
            rel = rel_dir + name
            if name == ".git":
                gits.append(rel)  # a `gitdir:` file
            elif not silent and not ignore(rel):
                with contextlib.suppress(FileNotFoundError):
                    found[rel] = os.lstat(os.path.join(dirpath, name))
    return found, gits


def git_entries(workspace: Path, gits: Iterable[str]) -> dict[str, os.stat_result]:
    """The `.git` entries themselves, for the walk's content: one that appears or goes is
    a change like any other."""
    out = {}
    for rel in gits:
        with contextlib.suppress(FileNotFoundError):
            out[rel] = os.lstat(workspace / rel)
    return out


def guards_of(workspace: Path, gits: Iterable[str]) -> dict[str, Fingerprint]:
    """The guards of nested repositories, by path from the workspace: each `.git` entry
    itself (`vendor/lib/.git`: a folder, or a `gitdir:` file by its content) and the guard
    files of its git folder (the folder, or the one a `gitdir:` file names when that lies
    in the workspace)."""
    ws = os.path.realpath(workspace)
    found: dict[str, Fingerprint] = {}
    for rel in gits:
        path = workspace / rel
        fp = fingerprint(path)
        if fp[0] == "missing":
            continue
        found[rel] = fp
        folder: Path | None = path if fp[0] == "dir" else None
        if fp[0].startswith("file:"):
            target = _gitdir(path)
            if target is not None and (target == ws or target.startswith(ws + os.sep)):
                folder = Path(target)
        if folder is not None:
            found.update(folder_guards(workspace, folder))
    return found


def _gitdir(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            first = f.read(4096).split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(path.parent, first[len("gitdir:") :].strip()))


def nested_files(
    workspace: Path,
    folders: Iterable[str],
    ignore: Ignore,
    earlier: Mapping[str, Any] | None = None,
    earlier_stats: Mapping[str, tuple[int, ...]] | None = None,
) -> tuple[dict[str, Any], dict[str, tuple[int, ...]], list[str]]:
    """The files of the nested repositories `folders` (`vendor/lib/`), as git-mode entries
    (`path -> ("??", fingerprint)`), their stat keys, and the `.git` entries found. A
    file whose stat key is the one `earlier_stats` holds keeps its `earlier` entry, so an
    unchanged file is not hashed again."""
    entries: dict[str, Any] = {}
    stats: dict[str, tuple[int, ...]] = {}
    gits: list[str] = []
    for folder in folders:
        files, found = walk(workspace, ignore, folder.rstrip("/"))
        gits += found
        for rel, st in files.items():
            key = stat_key(st)
            old = (earlier or {}).get(rel)
            if old is not None and (earlier_stats or {}).get(rel) == key:
                entries[rel] = old
            else:
                entries[rel] = ("??", fingerprint(workspace / rel))
            stats[rel] = key
    return entries, stats, gits


def _is_git_entry(path: str) -> bool:
    return path == ".git" or path.endswith("/.git")


def guard_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The guards that differ, sorted. A nested repository's are compared only when its
    `.git` is in both: one that appeared or went is a change of its `.git` path, which
    the roots decide like any other."""
    moved = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    roots = {p for p in before.keys() | after.keys() if _is_git_entry(p)}
    one_sided = {r for r in roots if (r in before) != (r in after)}
    return sorted(p for p in moved if not any(p == r or p.startswith(r + "/") for r in one_sided))
