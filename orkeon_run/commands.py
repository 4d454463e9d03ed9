"""Splitting a command into one program and its arguments (INTERFACE sections 4 and 6).

Shared by native hooks (checked when inputs are read and again at run time) and the shell
tool. There is no shell: the text is split like a POSIX shell splits words and nothing is
expanded. The operators that would need a shell are refused wherever they appear, quoted
or not, so no quoting trick can smuggle one through: put the steps in a script.
"""

from __future__ import annotations

import shlex

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
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise CommandRefused(f"cannot split the command: {exc}") from None
    if not argv:
        raise CommandRefused("the command is empty")
    return argv
