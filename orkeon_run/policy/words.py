"""Splitting a command into one program and its arguments (docs/tools.md, "shell").

Shared by native hooks (checked when inputs are read and again at run time) and the shell
tool. There is no shell: the text is split like a POSIX shell splits words and nothing is
expanded. The operators that would need a shell are refused wherever they appear, quoted
or not, so no quoting trick can smuggle one through: put the steps in a script.
"""

from __future__ import annotations

import re

# One piece of a word at a time, the way shlex.split (POSIX mode) reads them, but linear:
# shlex builds each word a character at a time by string concatenation, which is quadratic
# (a 1.6 MB word took 41 s, on the event loop, and the model writes shell commands).
# Whitespace is shlex's (space, tab, CR, LF); no comments; quotes join onto the word.
_PIECE = re.compile(
    r"""(?P<ws>[ \t\r\n]+)
      | (?P<plain>[^ \t\r\n'"\\]+)
      | '(?P<single>[^']*)'
      | "(?P<double>(?:[^"\\]++|\\.)*+)"
      | \\(?P<escaped>.)
      | (?P<bad>["'\\])""",
    re.VERBOSE | re.DOTALL,
)
# Inside double quotes a backslash escapes only `"` and itself; elsewhere it stays.
_IN_DOUBLE = re.compile(r'\\(["\\])')

# Longest first, so the message names `&&` rather than `&`.
OPERATORS = ("$(", "&&", "||", ">>", ";", "|", "&", "<", ">", "`")


class CommandRefused(ValueError):
    """The command cannot be run as one program with arguments."""


def find_operator(command: str) -> str | None:
    for op in OPERATORS:
        if op in command:
            return op
    return None


def split_command(command: str) -> list[str]:
    op = find_operator(command)
    if op is not None:
        raise CommandRefused(
            f"{op!r} is refused: a command is one program and its arguments, "
            "with no shell; put the steps in a script and name the script"
        )
    if "\x00" in command:
        raise CommandRefused("a NUL character is refused")
    argv = split_words(command)
    if not argv:
        raise CommandRefused("the command is empty")
    return argv


def split_words(command: str) -> list[str]:
    """`shlex.split(command)` (POSIX, no comments) in linear time: the same words, and
    CommandRefused where shlex raises ValueError, with its message."""
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    for m in _PIECE.finditer(command):
        kind = m.lastgroup
        if kind == "ws":
            if in_word:
                words.append("".join(parts))
                parts.clear()
                in_word = False
            continue
        in_word = True
        if kind == "plain" or kind == "single" or kind == "escaped":
            parts.append(m.group(kind))
        elif kind == "double":
            parts.append(_IN_DOUBLE.sub(r"\1", m.group(kind)))
        else:
            raise CommandRefused(f"cannot split the command: {_unsplittable(command, m)}")
    if in_word:
        words.append("".join(parts))
    return words


def _unsplittable(command: str, m: re.Match[str]) -> str:
    """shlex's message for the quote or backslash `m` that starts no complete piece: an
    unclosed double quote whose text ends in a lone backslash ends in an escape."""
    char = m.group("bad")
    if char == "\\":
        return "No escaped character"
    rest = command[m.end() :]
    if char == '"' and (len(rest) - len(rest.rstrip("\\"))) % 2 == 1:
        return "No escaped character"
    return "No closing quotation"
