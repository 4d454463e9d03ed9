"""orkeon's own files, which no role writes through the file tools whatever its roots and
whatever its crew's rule sets allow: the built-in rule set `orkeon`, checked before the
crew's (docs/security.md, "orkeon's own files").

- Never written: every `.git` (the top repository's and nested ones', a folder or a
  worktree's `.git` file, and all under it), `.orkeon/settings.json`, `.orkeon/hooks/`,
  `.orkeon/crews/`, `.orkeon/runs/` and the run directory (wherever in the workspace
  `--run-dir` put it).
- The rest of `.orkeon/` (the spec, the plan) is written only by the role whose output it
  is: the writer its spec, the planner its plan (`own`).

Reads are not refused here. Matching is the gate's own (pathglob, on the resolved path),
so `lnk/config` with `lnk -> .git` is `.git/config`. A refusal reads
`[refused by rule set orkeon: file_write(.git)]`, refused_by "rules".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .rules import Rule, RuleSet, parse_rule

NAME = "orkeon"
WRITING = ("file_write", "file_edit")
# Never written by a role, whatever its roots.
GUARDED = (
    ".git",
    "/.orkeon/settings.json",
    "/.orkeon/hooks",
    "/.orkeon/crews",
    "/.orkeon/runs",
)
# Written only as a role's own output.
OUTPUTS = "/.orkeon"

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def exact(rel: str) -> str:
    """A pattern that matches exactly workspace-relative `rel` (and, for a folder, all
    under it)."""
    return "/" + _GLOB_SPECIAL.sub(r"\\\1", PurePosixPath(rel.lstrip("/")).as_posix())


@dataclass(frozen=True)
class Guard(RuleSet):
    """The `orkeon` rule set: its `deny` rules refuse always; `outputs` rules refuse
    unless the call's path is exactly `own`."""

    outputs: tuple[Rule, ...] = ()
    own: str | None = None

    def refusal(
        self, tool: str, subjects: Sequence[str], argv: Sequence[str] | None = None
    ) -> str | None:
        refused = super().refusal(tool, subjects, argv)
        if refused is not None:
            return refused
        if self.own is not None and tuple(subjects) == (self.own,):
            return None
        for rule in self.outputs:
            if rule.matches(tool, subjects):
                return rule.text
        return None


def guard(run_dir: str | None = None, own: str | None = None) -> Guard:
    """The rule set for one role: `run_dir` is the run directory relative to the workspace
    (None when it lies outside: the workspace check refuses it there); `own` the role's
    own output, relative and resolved (None for a role that has none)."""
    patterns = [*GUARDED]
    if run_dir is not None and run_dir not in ("", "."):
        patterns.append(exact(run_dir))
    deny = tuple(parse_rule(f"{tool}({p})") for p in patterns for tool in WRITING)
    outputs = tuple(parse_rule(f"{tool}({OUTPUTS})") for tool in WRITING)
    return Guard(name=NAME, deny=deny, outputs=outputs, own=own)
