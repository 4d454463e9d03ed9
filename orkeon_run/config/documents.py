"""Reading a JSON document orkeon is given: `--inputs` (inline, `@PATH`, `-`), a plan file.
Limits hold before anything is parsed: a file must be a regular file of at most
MAX_DOCUMENT_BYTES (checked before it is read, so `@/dev/zero` or a FIFO is refused at
once), standard input is read no further, and arrays and objects nest at most
`jsonio.MAX_DEPTH` levels (docs/inputs.md, "Limits"). Every problem is an InputError
naming what was being read.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import TooDeep, loads_strict

__all__ = ["MAX_DOCUMENT_BYTES", "load_document"]

# An inputs document (or a file it names) larger than this is refused before it is read.
MAX_DOCUMENT_BYTES = 16 << 20


def load_document(src: str, what: str = "inputs") -> Any:
    """Read SRC: inline JSON, `@PATH`, or `-` for standard input. At most
    MAX_DOCUMENT_BYTES: a file must be a regular file no larger (checked before it is
    read, so `@/dev/zero` or a FIFO is refused at once), standard input is read no
    further; nested at most `jsonio.MAX_DEPTH` levels. InputError naming `what` otherwise."""
    limit = f"more than {MAX_DOCUMENT_BYTES >> 20} MiB"
    if src == "-":
        origin = f"{what} (stdin)"
        stream = getattr(sys.stdin, "buffer", None)
        data: bytes | str = (stream or sys.stdin).read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise InputError(f"{origin}: {limit}")
        text = _decoded(data, origin)
    elif src.startswith("@"):
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
        # internal error, exit 1); the shell's way is to keep the text as it is.
        path = Path(os.path.expanduser(src[1:]))
        text = _decoded(_read_file(path, what, limit), f"{what}: cannot read {path}:")
        origin = f"{what} ({path})"
    else:
        text = src
        origin = what
        if len(src) > MAX_DOCUMENT_BYTES:
            raise InputError(f"{what}: {limit}")
    try:
        return loads_strict(text)
    except TooDeep as exc:
        raise InputError(f"{origin}: {exc}") from None
    except ValueError as exc:  # JSONDecodeError, or a number JSON does not have
        raise InputError(f"{origin}: not JSON: {exc}") from None


def _read_file(path: Path, what: str, limit: str) -> bytes:
    """The bytes of regular file `path`, refused before reading when it is not one or is
    larger than MAX_DOCUMENT_BYTES."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"{what}: no such file: {path}") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_DOCUMENT_BYTES:
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what}: not a regular file: {path}")
        raise InputError(f"{what}: {path} holds {limit}")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{what}: cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_DOCUMENT_BYTES:  # it grew since
        raise InputError(f"{what}: {path} holds {limit}")
    return data


def _decoded(data: bytes | str, origin: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = origin if origin.endswith(":") else f"{origin}:"
        raise InputError(f"{head} {exc}") from None
