"""Globs as the model writes them for list_files and search_files, matched against posix
paths relative to the folder searched: `*` and `?` stay within one folder, `**` spans
folders (`**/` also matches no folder at all), `[abc]`/`[!abc]` are classes, `{a,b}` are
alternatives. (Python 3.11's fnmatch lets `*` cross `/`, which is not what a model means.)"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i):
                at_start = i == 0 or pat[i - 1] == "/"
                if at_start and pat.startswith("**/", i):
                    out.append("(?:[^/]*/)*")
                    i += 3
                    continue
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            start = i + 2 if pat.startswith(("[!", "[^"), i) else i + 1
            if pat.startswith("]", start):
                start += 1  # a `]` first in the class is a literal
            j = pat.find("]", start)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j]
                neg = body[:1] in ("!", "^")
                if neg:
                    body = body[1:]
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[^/{body}]" if neg else f"[{body}]")
                i = j
        elif c == "{":
            j = _closing_brace(pat, i)
            if j < 0:
                out.append(re.escape(c))
            else:
                alts = _split_top(pat[i + 1 : j])
                out.append("(?:" + "|".join(_translate(a) for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _closing_brace(pat: str, i: int) -> int:
    depth = 0
    for j in range(i, len(pat)):
        if pat[j] == "{":
            depth += 1
        elif pat[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top(body: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for j, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:j])
            start = j + 1
    parts.append(body[start:])
    return parts


class BadGlob(ValueError):
    """The glob makes no pattern (an unclosed class, braces nested past any use)."""


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Any:
    """The compiled pattern for `pattern` (a leading `./` or `/` is dropped), from the
    `regex` module: its `match` takes a `timeout`, and callers pass what is left of the
    call's time, since a glob like `*a*a*a*a*b` backtracks for minutes on a long name
    and Python's `re` cannot be stopped. Raises BadGlob."""
    import regex  # ~30 ms to import: only a glob that is matched pays it

    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    try:
        return regex.compile(_translate(pattern) + r"\Z", regex.DOTALL)
    except (regex.error, RecursionError) as exc:
        raise BadGlob(str(exc) or type(exc).__name__) from None
