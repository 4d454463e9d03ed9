"""JSON in and out, one way everywhere: strict reading (no `NaN`, no numbers JSON has not
got), compact lines that survive a lone surrogate, and whole-file writes a reader sees
whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def utf8_line(line: str) -> bytes:
    """`line` (JSON text) as UTF-8. A lone surrogate (JSON's `"\\ud800"`, which a model or
    an inputs document can send and `json.loads` keeps) has no UTF-8 form: it is written
    as that same JSON escape, so the line stays whole and parses back to the same value
    instead of the write raising and ending the run. Surrogates only occur inside JSON
    strings, where the escape is valid."""
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        return line.encode("utf-8", "backslashreplace")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a number")
    return value


# Deeper documents are refused: no document orkeon reads needs a tenth of it, and one a
# thousand deep ended validation with a RecursionError (an internal error, exit 1).
MAX_DEPTH = 64


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def loads_strict(text: str) -> Any:
    """`json.loads` without what Python adds to JSON: `NaN`, `Infinity` and numbers too large
    for a float (`1e400`) are refused. They would reach result.json and events.jsonl (a
    budget of NaN seconds) as `NaN`, which no strict JSON reader accepts. Arrays and objects
    nested deeper than MAX_DEPTH raise TooDeep (a ValueError)."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise TooDeep() from None
    if too_deep(value):
        raise TooDeep()
    return value


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels deep (walked
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def json_bytes(obj: Any) -> bytes:
    """`obj` as indented JSON text and a newline, UTF-8. A lone surrogate (from a JSON
    "\\ud800" escape) is written as that escape, valid JSON, instead of raising."""
    text = json.dumps(obj, ensure_ascii=False, indent=2) + "\n"
    return text.encode("utf-8", errors="backslashreplace")


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write JSON so a reader sees the old file or the new one, never a torn one."""
    atomic_write_bytes(path, json_bytes(obj))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file beside it, synced, then renamed over
    it: a reader sees the old file or the new one, never a torn one. Raises OSError (a full
    disk, a read-only folder) with no temporary file left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_line(fd: int, data: bytes) -> None:
    """Append one line (`data`, ending in a newline) to the file open on `fd` (O_APPEND,
    one writer) whole, or not at all: a write the disk cut short (full, over a size limit)
    is taken back to where the line began before the error is raised, so the file never
    ends in a torn line."""
    start = os.lseek(fd, 0, os.SEEK_END)
    done = 0
    try:
        while done < len(data):
            written = os.write(fd, data[done:] if done else data)
            if written <= 0:  # cannot happen for a regular file; never loop on it
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            done += written
    except OSError:
        if done:
            # A file system gone read-only meanwhile: nothing more can be done.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
        raise


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_objects(path: Path) -> list[dict[str, Any]]:
    """The lines of a JSON Lines file that are objects; a line that is not (a torn last
    line) is skipped, and a file that cannot be read is no lines."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out
