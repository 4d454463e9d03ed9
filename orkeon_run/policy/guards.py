"""The guards: the files that decide what runs with more rights than the model, and that
nothing the model touched may change (docs/security.md, "Guards"). This module is the one
list; the file tools' rule set (below), the shell sandbox (read-only in every sandbox,
tools/sandbox/policy.py) and the audit (run/audit/) all read it.

- every `.git`, at any depth (each reader finds those its own way: a walk, git's folders);
- `WORKSPACE_GUARDS`: `.orkeon/settings.json`, `.orkeon/hooks/`, `.orkeon/crews/`,
  `.orkeon/checks/` (a review's check changed by a role would drop out of a later review),
  `.claude/settings*.json`, `.claude/hooks/`, `.mcp.json`;
- the run's pinned files (config/pins.py): every file in the workspace that a trusted
  command names or loads (a hook's script, a stdio MCP server's), given by the run.

The built-in rule set `orkeon` refuses every writing tool of the catalog (`writes`) on
the guards, `.orkeon/runs/` and the run directory (wherever in the workspace `--run-dir`
put it); the rest of `.orkeon/` (the spec, the plan) is written only by the role whose
output it is (`own`). Reads are not refused here. Matching is the gate's own (pathglob,
on the resolved path), so `lnk/config` with `lnk -> .git` is `.git/config`. A refusal
reads `[refused by rule set orkeon: file_write(.git)]`, refused_by "rules".
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..catalog import TOOLS, Tool
from .pathglob import PathGlob
from .rules import Rule, RuleSet

NAME = "orkeon"
# Workspace-relative; a trailing `/` names a folder and all under it; `*` in the last
# component matches within one name.
WORKSPACE_GUARDS = (
    ".orkeon/settings.json",
    ".orkeon/hooks/",
    ".orkeon/crews/",
    ".orkeon/checks/",
    ".claude/settings*.json",
    ".claude/hooks/",
    ".mcp.json",
)
# What a patch (`--patch`, `orkeon apply`) may not touch besides the guards above: the
# workflows, which run with the rights of the job that a merged change triggers. The
# agent's own rule set lets a role edit them (a crew may be asked to); a patch is handed to
# a job with `contents: write`, so there they are guards (docs/security.md, "Guards").
PATCH_GUARDS = (".github/workflows/",)
# Never written by the file tools either: orkeon's records.
RECORDS = "/.orkeon/runs"
# Written only as a role's own output.
OUTPUTS = "/.orkeon"

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def writing_tools(tools: Iterable[Tool] | None = None) -> tuple[str, ...]:
    """The names of the catalog's tools that write (`Tool.writes`): the ones the guards
    hold against. `tools`: the catalog's entries (default: the built-ins)."""
    return tuple(t.name for t in (TOOLS.values() if tools is None else tools) if t.writes)


def exact(rel: str) -> str:
    """A pattern that matches exactly workspace-relative `rel` (and, for a folder, all
    under it)."""
    return "/" + _GLOB_SPECIAL.sub(r"\\\1", PurePosixPath(rel.lstrip("/")).as_posix())


def patterns(pinned: Iterable[str] = ()) -> tuple[str, ...]:
    """The guards as gate patterns (gitignore-style, anchored at the workspace)."""
    out = [".git", *("/" + g.rstrip("/") for g in WORKSPACE_GUARDS)]
    return (*out, *(exact(p) for p in pinned))


def is_guard(rel: str, pinned: Iterable[str] = ()) -> bool:
    """Whether workspace-relative `rel` is a guard or lies in a guard folder (`.git`
    excepted: the readers find those)."""
    rel = rel.rstrip("/")
    return any(_matches(rel, g) for g in (*WORKSPACE_GUARDS, *pinned))


def patch_guard(rel: str, pinned: Iterable[str] = ()) -> str | None:
    """The guard that workspace-relative `rel` is or lies in, for a patch: a `.git` at any
    depth, a workspace guard, a pinned file, or `PATCH_GUARDS`; None when it is none."""
    rel = rel.strip("/")
    if ".git" in rel.split("/"):
        return ".git"
    for g in PATCH_GUARDS:
        if rel == g.rstrip("/") or rel.startswith(g):
            return g
    for g in (*WORKSPACE_GUARDS, *pinned):
        if _matches(rel, g):
            return g
    return None


def _matches(rel: str, g: str) -> bool:
    if g.endswith("/"):
        return rel == g.rstrip("/") or rel.startswith(g)
    return fnmatch.fnmatchcase(rel, g) and rel.count("/") == g.count("/")


def holds_guard(folder: str, pinned: Iterable[str] = ()) -> bool:
    """Whether workspace-relative folder `folder` (`a/b/`) holds a guard."""
    return any(g.startswith(folder) for g in (*WORKSPACE_GUARDS, *pinned))


def guard_paths(workspace: Path, pinned: Iterable[str] = ()) -> dict[str, Path]:
    """The guards that exist now (`.git` excepted), workspace-relative path -> path: the
    guard folders and files themselves (what a sandbox binds read-only)."""
    found: dict[str, Path] = {}
    for g in (*WORKSPACE_GUARDS, *pinned):
        rel = g.rstrip("/")
        parent, _, name = rel.rpartition("/")
        if "*" in name:
            folder = workspace / parent
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for n in names:
                if fnmatch.fnmatchcase(n, name):
                    found[f"{parent}/{n}" if parent else n] = folder / n
        elif os.path.lexists(workspace / rel):
            found[rel] = workspace / rel
    return found


def guard_files(workspace: Path, pinned: Iterable[str] = ()) -> dict[str, Path]:
    """Every guard file that exists now (`.git` excepted), workspace-relative path ->
    path: the guards, and the files under the guard folders (symlinks not followed)."""
    found: dict[str, Path] = {}
    for rel, path in guard_paths(workspace, pinned).items():
        if path.is_dir() and not path.is_symlink():
            for top, dirs, files in os.walk(path):
                dirs.sort()
                for f in sorted(files + [d for d in dirs if os.path.islink(Path(top, d))]):
                    full = Path(top, f)
                    found[full.relative_to(workspace).as_posix()] = full
        else:
            found[rel] = path
    return found


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


def guard(
    run_dir: str | None = None,
    own: str | None = None,
    *,
    pinned: Iterable[str] = (),
    tools: Iterable[Tool] | None = None,
) -> Guard:
    """The rule set for one role: `run_dir` is the run directory relative to the workspace
    (None when it lies outside: the workspace check refuses it there); `own` the role's
    own output, relative and resolved (None for a role that has none); `pinned` the run's
    pinned files; `tools` the catalog's entries whose writing tools it refuses (default:
    the built-ins)."""
    writing = writing_tools(tools)
    denied = [*patterns(pinned), RECORDS]
    if run_dir is not None and run_dir not in ("", "."):
        denied.append(exact(run_dir))
    deny = tuple(_rule(tool, p) for p in denied for tool in writing)
    outputs = tuple(_rule(tool, OUTPUTS) for tool in writing)
    return Guard(name=NAME, deny=deny, outputs=outputs, own=own)


def _rule(tool: str, pattern: str) -> Rule:
    # Made here, not parsed: a tool a run adds to the catalog is no name a rule can spell.
    return Rule(f"{tool}({pattern})", tool, pattern, PathGlob(pattern).match)
