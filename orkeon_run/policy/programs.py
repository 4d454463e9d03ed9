"""The shell tool's program rules (docs/tools.md, "shell"), for the model's shell calls and
for native hook commands alike.

A command is one program and its arguments. A bare program name must be on a list: the
base list, the interpreters (with `allow_interpreters`) or `extra_allowed_commands`. PATH
is never searched to decide. A program given by path (`./x.sh`, `/usr/bin/env`) must be
listed in `extra_allowed_commands` by exactly that path. Where the two settings come from
is `shellrules.py`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BASE_PROGRAMS", "INTERPRETERS", "ShellRules"]

# The lists as docs/tools.md gives them.
_BASE = "cat cp cut diff echo false git grep head ls mkdir mv pwd sleep sort tail test touch tr"
BASE_PROGRAMS = frozenset(f"{_BASE} true uniq wc".split())
INTERPRETERS = frozenset("node npm dotnet find python python3".split())  # noqa: SIM905


@dataclass(frozen=True)
class ShellRules:
    allow_interpreters: bool = False
    extra_allowed_commands: tuple[str, ...] = ()

    def refusal(self, argv: list[str]) -> str | None:
        """None when the program may run; else one line saying why not."""
        if not argv or not argv[0]:
            return "the command is empty"
        prog = argv[0]
        if prog in self.extra_allowed_commands:
            return None
        if "/" in prog:
            return (
                f"program {prog!r} is given by path: it must be listed by exactly that path "
                "in extra_allowed_commands"
            )
        if prog in BASE_PROGRAMS:
            return None
        if prog in INTERPRETERS:
            if self.allow_interpreters:
                return None
            return (
                f"program {prog!r} is an interpreter: it needs allow_interpreters "
                "(or extra_allowed_commands)"
            )
        return (
            f"program {prog!r} is not allowed (allowed: the base list; interpreters need "
            "allow_interpreters; others need extra_allowed_commands)"
        )
