"""Gitignore-style path patterns for file-tool rules (docs/inputs.md), matched in time
linear in the path, whatever the pattern and the path: a rule's verdict never depends on
the machine's load.

The answers are those of the regexes the `pathspec` library builds for a gitignore pattern
(its "gitwildmatch"), searched with `.` matching a newline and `$` only at the very end;
tests/policy/test_pathglob.py holds the two equal on generated patterns and paths. Those regexes
backtrack polynomially once several `**` or `*` mix (pathspec's regex for
`**/a/**/a/**/a/**/b` takes 14 s on a path 200 folders deep, hours at 2000), so the pattern
is matched here one path component at a time instead:

- the pattern is normalised into segments as pathspec does it (a pattern with no inner `/`
  matches at any depth, a trailing `/` means the folder and all under it, `**/**` is `**`);
- a segment other than `**` is a glob full-matched against whole components by a regex that
  cannot backtrack catastrophically (`star_glob_regex`);
- the `**` segments, the leading `**/` and the trailing `/**` are steps of a small dynamic
  programme over the components' indexes: sets of where the next segment may start.

One oddity of pathspec's regexes is kept: a bracket expression that can match `/` (every
`[!x]`, and a range across it such as `[+-0]`) also matches the `/` between two components,
so a segment holding one may cover two components.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

STAR = None  # a `*` among a glob's tokens; every other token is a regex for one character


def star_glob_regex(tokens: Sequence[str | None], any_char: str) -> str:
    """A regex (to apply with `re.match`, DOTALL) for the glob `tokens` (STAR for `*`, which
    is `any_char*`), anchored at both ends, that cannot backtrack catastrophically.

    As `fnmatch.translate` does (Python 3.11), a star followed by a fixed run and another
    star becomes the atomic `(?>ANY*?RUN)`: the earliest place RUN can end is never worse
    than a later one, since the next star takes what lies between. That holds because every
    character RUN can match is one `any_char` matches in the subjects given (a command for
    `.`; a path component, which has no `/`, for `[^/]`). The last star stays greedy, so the
    match runs in time linear in the subject for a given pattern.
    """
    runs: list[list[str]] = [[]]  # the fixed runs between stars; `**` is one star
    for token in tokens:
        if token is not STAR:
            runs[-1].append(token)
        elif runs[-1] or len(runs) == 1:
            runs.append([])
    body = "".join(runs[0])
    if len(runs) > 1:
        *middle, tail = runs[1:]
        body += "".join(f"(?>{any_char}*?{''.join(run)})" for run in middle)
        body += f"{any_char}*{''.join(tail)}"
    return body + r"\Z"


def _compile(regex: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        # `[[:alpha:]]` is a class holding `[` (as in pathspec's regexes); Python warns that
        # one day it may read it as a nested set. The operator cannot act on that here.
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(regex, re.DOTALL)


def _tokens(segment: str, pattern: str) -> list[str | None]:
    """The glob `segment` as tokens, read as pathspec reads it: `\\x` is `x`, `?` one
    character, `[...]` a bracket expression copied into the regex (`!` or `^` first
    negates it, a `]` first is literal, a `[` never closed is literal), `*` a STAR."""
    out: list[str | None] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "\\":
            if i == n:
                raise ValueError(f"Invalid git pattern: {pattern!r}")
            out.append(re.escape(segment[i]))
            i += 1
        elif char == "*":
            out.append(STAR)
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            start = i + 1 if segment[i : i + 1] in ("!", "^") else i
            close = segment.find("]", start + 1 if segment[start : start + 1] == "]" else start)
            if close < 0:
                out.append(r"\[")
                continue
            negate = "^" if start > i else ""
            body = segment[start:close].replace("\\", "\\\\")  # a backslash here is literal
            out.append(f"[{negate}{body}]")
            i = close + 1
        else:
            out.append(re.escape(char))
    return out


class _Segment:
    """A segment of the pattern other than `**`, matched against whole components.

    Its tokens are cut into pieces at each bracket expression that can match `/`. Such a
    bracket matches either a character inside a component (the pieces on either side join
    into one glob) or the `/` that ends it (the next piece starts the next component)."""

    __slots__ = ("_globs", "_pieces", "_slashes", "whole_star")

    def __init__(self, segment: str, pattern: str) -> None:
        # A segment that is just `*` is a whole component, never an empty one.
        self.whole_star = segment == "*"
        self._pieces: list[list[str | None]] = [[]]
        self._slashes: list[str] = []  # the bracket between piece k and piece k + 1
        self._globs: dict[tuple[int, int], re.Pattern[str]] = {}
        if self.whole_star:
            self._globs[0, 0] = _compile(r"[^/]+\Z")
            return
        for token in _tokens(segment, pattern):
            if token is not STAR and token.startswith("[") and _class(token, pattern).match("/"):
                self._slashes.append(token)
                self._pieces.append([])
            else:
                self._pieces[-1].append(token)
        self._glob(0, len(self._slashes))

    def _glob(self, first: int, last: int) -> re.Pattern[str]:
        """The regex for pieces `first`..`last` inside one component."""
        glob = self._globs.get((first, last))
        if glob is None:
            tokens = list(self._pieces[first])
            for k in range(first, last):
                tokens += [self._slashes[k], *self._pieces[k + 1]]
            glob = self._globs[first, last] = _compile(star_glob_regex(tokens, "[^/]"))
        return glob

    def ends(self, parts: list[str], starts: set[int]) -> set[int]:
        """The indexes of the components this segment can end on, starting on `starts`."""
        last = len(self._slashes)
        if last == 0:
            glob = self._globs[0, 0]
            return {k for k in starts if k < len(parts) and glob.match(parts[k])}
        # begin[p]: the components piece p can start on; a last piece matched ends one.
        begin: list[set[int]] = [starts, *(set() for _ in range(last + 1))]
        for first in range(last + 1):
            for k in begin[first]:
                if k >= len(parts):
                    continue
                for end in range(first, last + 1):
                    if self._glob(first, end).match(parts[k]):
                        begin[end + 1].add(k + 1)  # the bracket after `end` took the `/`
        return {k - 1 for k in begin[last + 1]}


def _class(token: str, pattern: str) -> re.Pattern[str]:
    try:
        return _compile(token)
    except re.error as exc:
        raise ValueError(f"{exc.msg} in {pattern!r}") from None


class PathGlob:
    """A gitignore pattern (`src/**`, `*.py`, `/README.md`, `build/`), as a rule's pattern.

    Raises ValueError naming the problem for a negated pattern (`!x`), a comment or blank,
    an escape with nothing after it, or a bracket expression Python cannot read."""

    __slots__ = ("_everywhere", "_segments", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        if pattern.startswith("!"):
            raise ValueError("a negated pattern ('!…') is not supported; write a deny rule")
        text = pattern if pattern.endswith("\\ ") else pattern.rstrip()
        if not text or text.startswith("#"):
            raise ValueError(f"{pattern!r} is not a path pattern")
        segments = text.split("/")
        is_dir = not segments[-1] and text != "/"
        if not segments[0]:
            del segments[0]  # a leading `/` anchors at the workspace
        elif segments[0] != "**" and (len(segments) == 1 or segments[1:] == [""]):
            segments.insert(0, "**")  # no inner `/`: at any depth
        if not segments[-1]:
            segments[-1] = "**"  # a folder and all under it
        segments = [s for k, s in enumerate(segments) if not (k and s == "**" == segments[k - 1])]
        # pathspec's shortcuts: `**` and `*` match every path ("": any text but none),
        # `**/` and `*/` every path below the top folder ("/": a `/` anywhere in it).
        self._everywhere: str | None = None
        self._segments: list[_Segment | None] = []
        if segments in (["**"], ["**", "*"], ["**", "*", "**"]):
            self._everywhere = "/" if is_dir or len(segments) == 3 else ""
        else:
            self._segments = [None if s == "**" else _Segment(s, pattern) for s in segments]

    def match(self, path: str) -> bool:
        """Whether the pattern matches `path` (relative, `/`-separated; `DIR/` for a folder)."""
        if self._everywhere is not None:
            return self._everywhere in path if self._everywhere else path != ""
        parts = path.split("/")
        last = len(parts) - 1
        segments = self._segments
        n = 0
        starts = {0}
        if segments[0] is None:  # `^(?:.+/)?`: the start, or after a `/` with text before it
            starts.update(range(1 if parts[0] else 2, last + 1))
            n = 1
        while True:
            segment = segments[n]
            assert segment is not None  # `**` is never next to `**`, nor alone here
            ends = segment.ends(parts, starts)
            n += 1
            if not ends:
                return False
            if n == len(segments):
                if segment.whole_star:  # `[^/]+/?\Z`
                    return any(e == last or (e == last - 1 and not parts[last]) for e in ends)
                return True  # `(?:/|\Z)`: the end of the path or of a folder in it
            if segments[n] is not None:
                starts = {e + 1 for e in ends if e < last}  # the `/` between two segments
            else:
                n += 1
                if n == len(segments):  # a trailing `/**`: anything under the folder
                    return min(ends) < last
                # An inner `/**/` is `(?:/.+)?/`: the next component, or one after it with
                # something between that is not empty.
                starts = set(range(min(ends) + 3, last + 1))
                starts.update(e + 1 for e in ends if e < last)
                starts.update(e + 2 for e in ends if e + 2 <= last and parts[e + 1])
