"""file_read, file_write, file_edit. Each takes the already resolved path (inside the
workspace) and the path as the model wrote it (for messages). File errors come back as
text starting with `error: `, never as an exception. Text is kept byte-exact: no newline
translation on read or write."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from .specs import READ_LINES, READ_RESULT_CHARS, READ_WHOLE_BYTES


def _os_error(raw: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"error: {raw} does not exist"
    if isinstance(exc, IsADirectoryError):
        return f"error: {raw} is a directory"
    if isinstance(exc, (NotADirectoryError, FileExistsError)):  # mkdir met a file
        return f"error: a parent of {raw} is a file, not a directory"
    if isinstance(exc, PermissionError):
        return f"error: permission denied: {raw}"
    return f"error: {raw}: {exc.strerror or exc}"


def _not_text(raw: str) -> str:
    return f"error: {raw} is not UTF-8 text"


class _NotRegular(Exception):
    pass


def _open(path: Path, flags: int) -> tuple[int, int]:
    """Open without ever blocking (a FIFO would) and insist on a regular file.
    Returns (fd, size); raises OSError or _NotRegular(message)."""
    # `path` is resolved, so its last component is no symlink; O_NOFOLLOW keeps it so if
    # one is swapped in after the check.
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _NotRegular("is a directory" if stat.S_ISDIR(st.st_mode) else "is not a regular file")
    return fd, st.st_size


def _read_all(path: Path, raw: str, most: int | None) -> bytes | str | None:
    """The file's bytes; None when it holds more than `most`; an error text on failure."""
    try:
        fd, size = _open(path, os.O_RDONLY)
    except OSError as exc:
        return _os_error(raw, exc)
    except _NotRegular as exc:
        return f"error: {raw} {exc}"
    try:
        with open(fd, "rb", closefd=True) as f:
            if most is not None and size > most:
                return None
            return f.read() if most is None else f.read(most + 1)
    except OSError as exc:
        return _os_error(raw, exc)


def read_small(path: Path, raw: str) -> str | None:
    """The whole file when it is small enough to return whole (the cheap, common case, run
    on the event loop); None when it is larger and needs `read_range` in a thread."""
    data = _read_all(path, raw, READ_WHOLE_BYTES)
    if data is None or isinstance(data, str):
        return data
    if len(data) > READ_WHOLE_BYTES:  # grew since the stat, or a special file
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _not_text(raw)


def read_range(path: Path, raw: str, offset: int | None, limit: int | None) -> str:
    """Lines offset.. (from 1) of the file, `limit` of them (default READ_LINES), with line
    endings kept, at most READ_RESULT_CHARS in all (a minified file is one huge line). A
    result cut short says how to read on."""
    first = offset or 1
    count = limit or READ_LINES
    try:
        fd, _ = _open(path, os.O_RDONLY)
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
        return _os_error(raw, exc)
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


def write(path: Path, raw: str, content: str) -> str:
    data = content.encode("utf-8", errors="replace")  # a lone surrogate becomes "?"
    try:
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, data)
    except OSError as exc:
        return _os_error(raw, exc)
    except _NotRegular as exc:
        return f"error: {raw} {exc}"
    return f"{'updated' if existed else 'created'} {raw} ({len(data)} bytes)"


def _replace(path: Path, data: bytes) -> None:
    """Write `data` as a new file and rename it over `path`. A new inode, so a hard link
    to a file outside the workspace is never written through (the link is replaced), a
    symlink swapped in after the path check is replaced rather than followed, and a killed
    run leaves the old contents or the new, never half of them. The mode is kept."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    else:
        if stat.S_ISDIR(st.st_mode):
            raise _NotRegular("is a directory")
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            raise _NotRegular("is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".orkeon-tmp")
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_umask() -> int:
    # Read once, at import: os.umask sets as it reads, and roles write from several threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def edit(path: Path, raw: str, old: str, new: str, replace_all: bool) -> str:
    if old == "":
        return "error: old_string is empty; use file_write to write a whole file"
    if old == new:
        return "error: old_string and new_string are the same"
    data = _read_all(path, raw, None)
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
        _replace(path, text.encode("utf-8", errors="replace"))
    except OSError as exc:
        return _os_error(raw, exc)
    except _NotRegular as exc:
        return f"error: {raw} {exc}"
    return f"edited {raw}: replaced {found} occurrence{'s' if found != 1 else ''}"
