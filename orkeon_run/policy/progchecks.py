"""Checks of a shell command's arguments, read the way the program itself reads them, that a
crew's rule set names in `program_checks` (docs/inputs.md, "Rule sets"). A command pattern
reads text (`shell(git push *)` misses `git --no-pager push`); a check parses the words:

- `git-read-only`: git may run only subcommands that read the repository, with no option
  that runs a program or writes a file (policy/gitargs.py);
- `sort-no-compress-program`: `sort` may not name a compression program
  (`--compress-program=sh` runs a shell; GNU getopt takes any unambiguous prefix, `--co`).

A check applies to a command whose program is its program by name (`git`, `/usr/bin/git`);
the refusal reads `[refused by rule set SET: CHECK: WHY]`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgramCheck:
    name: str
    program: str
    check: Callable[[Sequence[str]], str | None]  # the arguments -> why they are refused

    def refusal(self, argv: Sequence[str]) -> str | None:
        """`CHECK: WHY` when `argv` is a command of this check's program it refuses."""
        if not argv or os.path.basename(argv[0]) != self.program:
            return None
        why = self.check(argv[1:])
        return f"{self.name}: {why}" if why is not None else None


def _git(args: Sequence[str]) -> str | None:
    from . import gitargs  # its tables only for a command that runs git (or a sort option)

    return gitargs.refusal(args)


def _sort(args: Sequence[str]) -> str | None:
    for word in args:
        if word == "--":
            return None
        if word.startswith("--"):
            from . import gitargs  # as in _git

            why = gitargs.long_option_refusal({"compress-program": "runs a program"}, word)
            if why is not None:
                return f"sort {word}: {why}"
    return None


CHECKS: dict[str, ProgramCheck] = {
    c.name: c
    for c in (
        ProgramCheck("git-read-only", "git", _git),
        ProgramCheck("sort-no-compress-program", "sort", _sort),
    )
}


def check_named(name: str) -> ProgramCheck:
    """The check called `name`; ValueError naming the known ones."""
    found = CHECKS.get(name)
    if found is None:
        raise ValueError(f"unknown program check {name!r} (checks: {', '.join(CHECKS)})")
    return found
