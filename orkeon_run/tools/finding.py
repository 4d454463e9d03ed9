"""list_files and search_files: walk a folder of the workspace (never into `.git`, never
through a symlinked folder, so the walk stays inside the tree) and stop at a deadline, so
neither tool can hang a role. Both run in a worker thread."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import ToolEnv

from ..calls import CheckedCall
from ..catalog import LIST_CAP, SEARCH_CAP, SEARCH_TEXT_CHARS, ListFilesInput, SearchFilesInput
from ..policy.paths import contains
from .globs import BadGlob, compile_glob

SKIP_DIRS = frozenset({".git"})
SEARCH_MAX_FILE = 4 << 20  # bytes; larger files are skipped by search_files
_BINARY_PROBE = 8192


class _Late(Exception):
    pass


def _walk(base: str, deadline: float) -> Iterator[tuple[str, str, bool]]:
    """(absolute path, path relative to base, is a symlink) of every file under base (and
    of every symlink, which is never followed), each folder's entries in name order.
    Raises _Late past the deadline."""
    stack = [(base, "")]
    seen = 0
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            seen += 1
            if seen % 512 == 0 and time.monotonic() > deadline:
                raise _Late
            name_rel = f"{rel}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name not in SKIP_DIRS:
                    subdirs.append((entry.path, name_rel + "/"))
            elif entry.name not in SKIP_DIRS:  # a worktree's `.git` is a file
                yield entry.path, name_rel, entry.is_symlink()
        stack.extend(reversed(subdirs))


def _prefix(workspace: Path, base: Path) -> str:
    rel = base.relative_to(workspace).as_posix()
    return "" if rel == "." else rel + "/"


def list_files(
    workspace: Path, base: Path, raw: str, pattern: str | None, deadline: float
) -> list[str] | str:
    """Workspace-relative paths of the files under `base` matching `pattern` (a glob
    relative to base), sorted, at most LIST_CAP."""
    try:
        rx = compile_glob(pattern) if pattern else None
    except BadGlob as exc:
        return f"error: bad glob {pattern!r}: {exc}"
    late = f"error: listing {raw} took too long; list a smaller folder or use a pattern"
    if base.is_file():
        rel = base.relative_to(workspace).as_posix()
        try:
            return [rel] if rx is None or _match(rx, base.name, deadline) else []
        except TimeoutError:
            return late
    if not base.is_dir():
        return f"error: {raw} does not exist"
    prefix = _prefix(workspace, base)
    found: list[str] = []
    try:
        for _, rel, _ in _walk(os.fspath(base), deadline):
            if rx is None or _match(rx, rel, deadline):
                found.append(prefix + rel)
    except (_Late, TimeoutError):
        return late
    found.sort()
    return found[:LIST_CAP]


def _match(rx: Any, text: str, deadline: float) -> bool:
    """Whether glob `rx` matches `text`; TimeoutError once the call's time is spent."""
    return rx.match(text, timeout=max(deadline - time.monotonic(), 0.001)) is not None


def _glob_filter(glob: str | None, deadline: float) -> Any:
    """A test on (path relative to base, file name): a glob without `/` matches the name."""
    if not glob:
        return None
    rx = compile_glob(glob)
    if "/" in glob.strip("/"):
        return lambda rel, name: _match(rx, rel, deadline)
    return lambda rel, name: _match(rx, name, deadline)


def search_files(
    workspace: Path,
    base: Path,
    raw: str,
    pattern: str,
    glob: str | None,
    deadline: float,
) -> list[dict[str, Any]] | str:
    """`{file, line, text}` for each line matching `pattern` under `base` (a folder or one
    file), at most SEARCH_CAP, in path order. Binary files (a NUL in the first 8 KiB) and
    files over SEARCH_MAX_FILE are skipped; other bytes that are not UTF-8 read as U+FFFD."""
    import regex  # the `regex` module takes a time-out, so no pattern can hang the search

    try:
        rx = regex.compile(pattern)
    except (regex.error, ValueError) as exc:
        return f"error: bad pattern {pattern!r}: {exc}"
    try:
        keep = _glob_filter(glob, deadline)
    except BadGlob as exc:
        return f"error: bad glob {glob!r}: {exc}"

    if base.is_file():
        files: Any = [(os.fspath(base), base.name, False)]
        prefix = _prefix(workspace, base.parent)
    elif base.is_dir():
        files = _walk(os.fspath(base), deadline)
        prefix = _prefix(workspace, base)
    else:
        return f"error: {raw} does not exist"

    ws = os.fspath(workspace)
    matches: list[dict[str, Any]] = []
    late = f"error: searching {raw} took too long; search a smaller folder or use a glob"
    try:
        for path, rel, is_link in files:
            if keep is not None and not keep(rel, rel.rpartition("/")[2]):
                continue
            if is_link and not contains(ws, os.path.realpath(path)):
                continue  # a symlink out of the workspace is not read through
            text = _text_of(path)
            if text is None:
                continue
            budget = deadline - time.monotonic()
            if budget <= 0:
                return late
            for number, line in enumerate(text.split("\n"), 1):
                if line.endswith("\r"):
                    line = line[:-1]
                if rx.search(line, timeout=budget) is None:
                    continue
                matches.append(
                    {"file": prefix + rel, "line": number, "text": line[:SEARCH_TEXT_CHARS]}
                )
                if len(matches) >= SEARCH_CAP:
                    return matches
    except (_Late, TimeoutError):
        return late
    return matches


def _text_of(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        # Before the file object: open() raises for a folder (a symlink to one inside
        # the workspace), and the descriptor would be left open.
        st = os.fstat(fd)
        regular = stat.S_ISREG(st.st_mode) and st.st_size <= SEARCH_MAX_FILE
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    with open(fd, "rb", closefd=True) as f:
        try:
            data = f.read(SEARCH_MAX_FILE + 1)
        except OSError:
            return None
    if len(data) > SEARCH_MAX_FILE or b"\x00" in data[:_BINARY_PROBE]:
        return None
    return data.decode("utf-8", errors="replace")


# --- the catalog's entry points ------------------------------------------------------------


def _base(call: CheckedCall, env: ToolEnv) -> tuple[Path, str]:
    """The folder (or file) to work on, as checked, and its name as the model wrote it
    (`.` when left out: the whole workspace)."""
    return call.path or env.workspace, call.raw_path or "."


async def run_list(call: CheckedCall, env: ToolEnv, timeout: float) -> list[str] | str:
    from anyio import to_thread

    args = call.args
    assert isinstance(args, ListFilesInput)
    base, shown = _base(call, env)
    deadline = time.monotonic() + timeout
    return await to_thread.run_sync(list_files, env.workspace, base, shown, args.pattern, deadline)


async def run_search(call: CheckedCall, env: ToolEnv, timeout: float) -> list[dict[str, Any]] | str:
    from anyio import to_thread

    args = call.args
    assert isinstance(args, SearchFilesInput)
    base, shown = _base(call, env)
    deadline = time.monotonic() + timeout
    return await to_thread.run_sync(
        search_files, env.workspace, base, shown, args.pattern, args.glob, deadline
    )
