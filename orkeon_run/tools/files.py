"""file_read, file_write, file_edit. Each acts on the path the pipeline resolved and
checked, and names the path as the model wrote it in its messages.

The checked path is reached from the workspace one folder at a time, each opened without
following a symlink (`openat` with `O_NOFOLLOW`), and the file is then opened, created or
replaced relative to its folder's descriptor: a symlink swapped into the path after the
check (during a slow hook, by a command the model started) makes the call fail instead of
sending it elsewhere. File errors come back as text starting with `error: `, never as an
exception. Text is kept byte-exact: no newline translation on read or write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..calls import CheckedCall
from ..catalog import (
    READ_LINES,
    READ_RESULT_CHARS,
    READ_WHOLE_BYTES,
    FileEditInput,
    FileReadInput,
    FileWriteInput,
)

if TYPE_CHECKING:
    from . import ToolEnv

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Target:
    """A checked file: `rel` its path below the (resolved) workspace, `raw` as written."""

    workspace: Path
    rel: tuple[str, ...]
    raw: str

    @classmethod
    def of(cls, workspace: Path, path: Path, raw: str) -> Target:
        return cls(workspace, path.relative_to(workspace).parts, raw)


class _Moved(OSError):
    """A folder on the checked path is no folder any more (a symlink was swapped in)."""


@contextlib.contextmanager
def folder_of(target: Target, create: bool = False) -> Iterator[int]:
    """A descriptor of the target's folder, walked to from the workspace without following
    a symlink; with `create`, missing folders are made on the way."""
    fd = os.open(target.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in target.rel[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError:
                # A file is a file (the model's mistake); a symlink was swapped in.
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise _Moved(errno.ELOOP, "a symlink on the path") from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def os_error(raw: str, exc: OSError) -> str:
    if isinstance(exc, _Moved):
        return f"error: {raw} changed after the call was checked (a folder on its path is no folder any more)"
    if isinstance(exc, FileNotFoundError):
        return f"error: {raw} does not exist"
    if isinstance(exc, IsADirectoryError):
        return f"error: {raw} is a directory"
    if isinstance(exc, (NotADirectoryError, FileExistsError)):  # mkdir met a file
        return f"error: a parent of {raw} is a file, not a directory"
    if isinstance(exc, PermissionError):
        return f"error: permission denied: {raw}"
    if exc.errno == errno.ELOOP:  # the file itself became a symlink since the check
        return f"error: {raw} changed after the call was checked (it is a symlink now)"
    return f"error: {raw}: {exc.strerror or exc}"


def _not_text(raw: str) -> str:
    return f"error: {raw} is not UTF-8 text"


class _NotRegular(Exception):
    pass


def _open(target: Target, flags: int) -> tuple[int, int]:
    """Open the file without ever blocking (a FIFO would) or following a symlink, and
    insist on a regular file. Returns (fd, size); raises OSError or _NotRegular(message)."""
    with folder_of(target) as folder:
        fd = os.open(
            target.rel[-1],
            flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o666,
            dir_fd=folder,
        )
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _NotRegular("is a directory" if stat.S_ISDIR(st.st_mode) else "is not a regular file")
    return fd, st.st_size


def _read_all(target: Target, most: int | None) -> bytes | str | None:
    """The file's bytes; None when it holds more than `most`; an error text on failure."""
    try:
        fd, size = _open(target, os.O_RDONLY)
    except OSError as exc:
        return os_error(target.raw, exc)
    except _NotRegular as exc:
        return f"error: {target.raw} {exc}"
    try:
        with open(fd, "rb", closefd=True) as f:
            if most is not None and size > most:
                return None
            return f.read() if most is None else f.read(most + 1)
    except OSError as exc:
        return os_error(target.raw, exc)


def read_bytes(workspace: Path, path: Path, most: int) -> bytes | None:
    """The bytes of the checked file `path` (resolved, inside `workspace`), reached as the
    tools reach it (no symlink followed); None when it cannot be read, is no regular file
    or holds more than `most` bytes."""
    data = _read_all(Target.of(workspace, path, str(path)), most)
    return data if isinstance(data, bytes) and len(data) <= most else None


def read_small(target: Target) -> str | None:
    """The whole file when it is small enough to return whole (the cheap, common case, run
    on the event loop); None when it is larger and needs `read_range` in a thread."""
    data = _read_all(target, READ_WHOLE_BYTES)
    if data is None or isinstance(data, str):
        return data
    if len(data) > READ_WHOLE_BYTES:  # grew since the stat, or a special file
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _not_text(target.raw)


def read_range(target: Target, offset: int | None, limit: int | None) -> str:
    """Lines offset.. (from 1) of the file, `limit` of them (default READ_LINES), with line
    endings kept, at most READ_RESULT_CHARS in all (a minified file is one huge line). A
    result cut short says how to read on."""
    raw = target.raw
    first = offset or 1
    count = limit or READ_LINES
    try:
        fd, _ = _open(target, os.O_RDONLY)
        with open(fd, encoding="utf-8", errors="strict", newline="", closefd=True) as f:
            for _ in range(first - 1):
                if not _skip_line(f):
                    break
            lines: list[str] = []
            room, cut, more_after_cut = READ_RESULT_CHARS, False, False
            while len(lines) < count:
                line = f.readline(room + 1)
                if not line:
                    break
                if len(line) > room:
                    if lines:  # stop at a line boundary: the next read starts there
                        f.seek(0, os.SEEK_END)  # (any text left makes `more` true)
                        more_after_cut = True
                        break
                    lines.append(line[:room])  # one line alone is too long: cut inside it
                    cut = True
                    break
                lines.append(line)
                room -= len(line)
            more = more_after_cut or (not cut and limit is None and f.readline(1) != "")
    except OSError as exc:
        return os_error(raw, exc)
    except _NotRegular as exc:
        return f"error: {raw} {exc}"
    except UnicodeDecodeError:
        return _not_text(raw)
    if not lines and first > 1:
        return f"error: {raw} has fewer than {first} lines"
    text = "".join(lines)
    last = first + len(lines) - 1
    sep = "" if text.endswith(chr(10)) else chr(10)
    if cut:
        text += (
            f"{sep}[file_read: cut at {READ_RESULT_CHARS} characters, in line {last}; "
            "read a smaller range]"
        )
    elif more:
        text += (
            f"{sep}[file_read: showed lines {first}-{last}; the file goes on: read on with "
            f"offset={last + 1}]"
        )
    return text


def _skip_line(f: Any) -> bool:
    """Read past one line without holding it whole; False at the end of the file."""
    while True:
        chunk = f.readline(1 << 16)
        if not chunk:
            return False
        if chunk.endswith("\n"):
            return True


def write(target: Target, content: str) -> str:
    data = content.encode("utf-8", errors="replace")  # a lone surrogate becomes "?"
    try:
        with folder_of(target, create=True) as folder:
            existed = _replace(folder, target.rel[-1], data)
    except OSError as exc:
        return os_error(target.raw, exc)
    except _NotRegular as exc:
        return f"error: {target.raw} {exc}"
    return f"{'updated' if existed else 'created'} {target.raw} ({len(data)} bytes)"


def _replace(folder: int, name: str, data: bytes) -> bool:
    """Write `data` as a new file in `folder` and rename it over `name`; whether `name`
    existed. A new inode, so a hard link to a file outside the workspace is never written
    through (the link is replaced), a symlink swapped in after the check is replaced
    rather than followed, and a killed run leaves the old contents or the new, never half
    of them. The mode is kept."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        mode, existed = 0o666 & ~_UMASK, False
    else:
        if stat.S_ISDIR(st.st_mode):
            raise _NotRegular("is a directory")
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            raise _NotRegular("is not a regular file")
        mode, existed = stat.S_IMODE(st.st_mode), True
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.orkeon-tmp"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=folder,
    )
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise
    return existed


def _read_umask() -> int:
    # Read once, at import: os.umask sets as it reads, and roles write from several threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def edit(target: Target, old: str, new: str, replace_all: bool) -> str:
    raw = target.raw
    if old == "":
        return "error: old_string is empty; use file_write to write a whole file"
    if old == new:
        return "error: old_string and new_string are the same"
    data = _read_all(target, None)
    if isinstance(data, str):
        return data
    assert data is not None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _not_text(raw)
    found = text.count(old)
    if found == 0:
        return f"error: old_string was not found in {raw}"
    if found > 1 and not replace_all:
        return (
            f"error: old_string occurs {found} times in {raw}; include more surrounding text "
            "to make it unique, or set replace_all"
        )
    text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    try:
        with folder_of(target) as folder:
            _replace(folder, target.rel[-1], text.encode("utf-8", errors="replace"))
    except OSError as exc:
        return os_error(raw, exc)
    except _NotRegular as exc:
        return f"error: {raw} {exc}"
    return f"edited {raw}: replaced {found} occurrence{'s' if found != 1 else ''}"


# --- the catalog's entry points ------------------------------------------------------------


def _target(call: CheckedCall, env: ToolEnv) -> Target:
    assert call.path is not None and call.raw_path is not None  # a file tool's path is required
    return Target.of(env.workspace, call.path, call.raw_path)


async def run_read(call: CheckedCall, env: ToolEnv, timeout: float) -> str:
    from anyio import to_thread  # the tools load with the catalog; anyio with a run

    args = call.args
    assert isinstance(args, FileReadInput)
    target = _target(call, env)
    if args.offset is None and args.limit is None:
        text = read_small(target)  # the common case stays on the event loop
        if text is not None:
            return text
    return await to_thread.run_sync(read_range, target, args.offset, args.limit)


async def run_write(call: CheckedCall, env: ToolEnv, timeout: float) -> str:
    args = call.args
    assert isinstance(args, FileWriteInput)
    return write(_target(call, env), args.content)


async def run_edit(call: CheckedCall, env: ToolEnv, timeout: float) -> str:
    args = call.args
    assert isinstance(args, FileEditInput)
    return edit(_target(call, env), args.old_string, args.new_string, args.replace_all)
