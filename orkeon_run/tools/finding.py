"""list_files and search_files: walk a folder of the workspace (never into `.git`, never
through a symlinked folder, so the walk stays inside the tree) and stop at a deadline, so
neither tool can hang a role. Both run in a worker thread.

The folder (or file) is the one the pipeline checked: it is reached from the workspace one
folder at a time without following a symlink, and walked through folder descriptors
(`os.fwalk`), so a folder swapped for a symlink after the check is not followed.
"""

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
from .files import Target, folder_of, os_error
from .globs import BadGlob, compile_glob

SKIP_DIRS = frozenset({".git"})
SEARCH_MAX_FILE = 4 << 20  # bytes; larger files are skipped by search_files
_BINARY_PROBE = 8192


class _Late(Exception):
    pass


def _open_base(workspace: Path, base: Path) -> int:
    """A descriptor of `base` (the checked folder or file), reached without following a
    symlink. OSError when it is gone or became something else since the check."""
    if base == workspace:
        return os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    target = Target.of(workspace, base, base.name)
    with folder_of(target) as parent:
        return os.open(
            base.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent
        )


def _walk(base_fd: int, deadline: float) -> Iterator[tuple[int, str, str, bool]]:
    """(its folder's descriptor, name, path relative to base, is a symlink) of every file
    under the folder `base_fd` (and of every symlink, which is never followed), each
    folder's files in name order before its subfolders'. Raises _Late past the deadline."""
    seen = 0
    for top, dirs, files, top_fd in os.fwalk(".", dir_fd=base_fd, follow_symlinks=False):
        rel_dir = "" if top == "." else top[2:] + "/"
        entries: list[tuple[str, bool]] = [(f, False) for f in files if f not in SKIP_DIRS]
        keep = []
        for d in dirs:
            if d in SKIP_DIRS:
                continue
            try:
                link = stat.S_ISLNK(os.stat(d, dir_fd=top_fd, follow_symlinks=False).st_mode)
            except OSError:
                continue
            if link:  # listed as a file, never walked into
                entries.append((d, True))
            else:
                keep.append(d)
        dirs[:] = sorted(keep)
        for name, dir_link in sorted(entries):
            seen += 1
            if seen % 512 == 0 and time.monotonic() > deadline:
                raise _Late
            is_link = dir_link or _is_link(top_fd, name)
            yield top_fd, name, rel_dir + name, is_link


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


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
    try:
        fd = _open_base(workspace, base)
    except OSError as exc:
        return os_error(raw, exc)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rel = base.relative_to(workspace).as_posix()
            return [rel] if rx is None or _match(rx, base.name, deadline) else []
        prefix = _prefix(workspace, base)
        found = [prefix + rel for _, _, rel, _ in _walk(fd, deadline)
                 if rx is None or _match(rx, rel, deadline)]  # fmt: skip
    except (_Late, TimeoutError):
        return late
    finally:
        os.close(fd)
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

    try:
        fd = _open_base(workspace, base)
    except OSError as exc:
        return os_error(raw, exc)
    try:
        return _search(workspace, base, fd, raw, rx, keep, deadline)
    finally:
        os.close(fd)


def _search(
    workspace: Path, base: Path, fd: int, raw: str, rx: Any, keep: Any, deadline: float
) -> list[dict[str, Any]] | str:
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        files: Any = _walk(fd, deadline)
        prefix = _prefix(workspace, base)
    else:
        files = [(fd, None, base.name, False)]
        prefix = _prefix(workspace, base.parent)
    ws = os.fspath(workspace)
    matches: list[dict[str, Any]] = []
    late = f"error: searching {raw} took too long; search a smaller folder or use a glob"
    try:
        for folder, name, rel, is_link in files:
            if keep is not None and not keep(rel, rel.rpartition("/")[2]):
                continue
            if is_link:
                # Read through a symlink only when it leads inside the workspace.
                real = os.path.realpath(os.path.join(base, rel))
                if not contains(ws, real):
                    continue
                text = _text_of(None, real)
            else:
                text = _text_of(folder, name)
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


def _text_of(folder: int | None, name: str | None) -> str | None:
    """The text of file `name` in `folder` (not following a symlink); `folder` alone: that
    open file itself; `folder` None: `name` is a path, followed."""
    try:
        if name is None:
            assert folder is not None
            fd = os.dup(folder)
            os.lseek(fd, 0, os.SEEK_SET)
        elif folder is None:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        else:
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(name, flags, dir_fd=folder)
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
    from anyio import to_thread  # the tools load with the catalog; anyio with a run

    args = call.args
    assert isinstance(args, ListFilesInput)
    base, shown = _base(call, env)
    deadline = time.monotonic() + timeout
    return await to_thread.run_sync(list_files, env.workspace, base, shown, args.pattern, deadline)


async def run_search(call: CheckedCall, env: ToolEnv, timeout: float) -> list[dict[str, Any]] | str:
    from anyio import to_thread  # the tools load with the catalog; anyio with a run

    args = call.args
    assert isinstance(args, SearchFilesInput)
    base, shown = _base(call, env)
    deadline = time.monotonic() + timeout
    return await to_thread.run_sync(
        search_files, env.workspace, base, shown, args.pattern, args.glob, deadline
    )
