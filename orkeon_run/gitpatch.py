"""A change written as a patch `git apply` takes (docs/output.md, "Changes"): for each file
its content before and after (bytes, None when it did not exist), text as a unified diff
and anything else as a GIT binary patch, each with the full `index` line git requires to
apply a binary hunk.

Pure functions over bytes: no git is run, so the same text comes out wherever the run's
records are read (a report on another machine, a later job).
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

REGULAR, EXECUTABLE, SYMLINK = "100644", "100755", "120000"
_NO_NEWLINE = "\\ No newline at end of file\n"
_ZERO = "0" * 40
# git reads this many leading bytes to tell text from binary (a NUL among them: binary).
_SNIFF = 8000


@dataclass(frozen=True)
class FileChange:
    path: str  # workspace-relative, `/`-separated
    before: bytes | None  # None: the file did not exist
    after: bytes | None
    mode: str = REGULAR  # the mode of the side that exists (after, else before)


def is_binary(data: bytes | None) -> bool:
    """git's test: a NUL byte in the first 8,000; text that is not UTF-8 counts too, so
    the diff never has to guess an encoding."""
    if not data:
        return False
    if b"\0" in data[:_SNIFF]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def blob_id(data: bytes | None) -> str:
    """The object id git gives `data` as a blob (SHA-1), or forty zeros for no file."""
    if data is None:
        return _ZERO
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def counts(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """Lines added and removed (0, 0 for binary content)."""
    if is_binary(before) or is_binary(after):
        return 0, 0
    added = removed = 0
    for line in _unified(_lines(before), _lines(after)):
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def file_diff(change: FileChange, context: int = 3) -> str:
    """One file's part of the patch, headers included; "" when nothing changed."""
    before, after = change.before, change.after
    if before == after:
        return ""
    a, b = quote("a/" + change.path), quote("b/" + change.path)
    head = [f"diff --git {a} {b}\n"]
    if before is None:
        head.append(f"new file mode {change.mode}\n")
    elif after is None:
        head.append(f"deleted file mode {change.mode}\n")
    binary = is_binary(before) or is_binary(after)
    index = f"index {blob_id(before)}..{blob_id(after)}"
    head.append(index + ("\n" if before is None or after is None else f" {change.mode}\n"))
    if binary:
        return "".join(head) + "GIT binary patch\n" + _literal(after or b"") + "\n"
    head.append(f"--- {a if before is not None else '/dev/null'}\n")
    head.append(f"+++ {b if after is not None else '/dev/null'}\n")
    body = list(_unified(_lines(before), _lines(after), context))
    return "".join(head) + "".join(body)


def patch(changes: Iterable[FileChange]) -> str:
    """The whole patch: each file's part, in the order given."""
    return "".join(file_diff(c) for c in changes)


def _lines(data: bytes | None) -> list[str]:
    # surrogateescape: text that is UTF-8 but for a stray byte still round-trips.
    return [] if data is None else data.decode("utf-8", "surrogateescape").splitlines(True)


def _unified(a: list[str], b: list[str], context: int = 3) -> Iterator[str]:
    """difflib's hunks without its file header, each line that lacks its newline followed
    by git's marker."""
    for i, line in enumerate(difflib.unified_diff(a, b, n=context, lineterm="")):
        if i < 2:  # the ---/+++ lines: the caller writes git's own
            continue
        if line.startswith("@@"):
            yield line + "\n"
        elif line.endswith("\n"):
            yield line
        else:
            yield line + "\n" + _NO_NEWLINE


def _literal(data: bytes) -> str:
    """`literal SIZE` and the deflated content in git's base85 lines (52 bytes a line,
    each led by its length: A-Z for 1-26, a-z for 27-52)."""
    packed = zlib.compress(data, 9)
    out = [f"literal {len(data)}\n"]
    for i in range(0, len(packed), 52):
        chunk = packed[i : i + 52]
        n = len(chunk)
        mark = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        out.append(mark + base64.b85encode(chunk, pad=True).decode("ascii") + "\n")
    return "".join(out)


def quote(path: str) -> str:
    """A path as git writes it in a patch header: as it is, or C-quoted when it holds a
    quote, a backslash, a control character or a byte outside ASCII."""
    raw = path.encode("utf-8", "surrogateescape")
    if all(0x20 <= c < 0x7F and c not in (0x22, 0x5C) for c in raw):
        return path
    special = {0x22: '\\"', 0x5C: "\\\\", 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
    out = []
    for c in raw:
        if c in special:
            out.append(special[c])
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\{c:03o}")
    return '"' + "".join(out) + '"'
