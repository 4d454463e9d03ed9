"""Trusted files pinned by content (docs/security.md, "Guards"): at run start, a digest of
every file inside the workspace that a trusted command names or loads, and of the
workspace's guard files (policy/guards.py: settings, crews, `.mcp.json`, hooks folders).

A command's files are read from its words: a native hook's argv, a settings-shape hook's
shell command (`$CLAUDE_PROJECT_DIR`, `${CLAUDE_PROJECT_DIR}` and the other project-dir
variables stand for the workspace; shell operators, a redirection's file and words with
other variables are skipped), a stdio MCP server's program and arguments. A word names a file of the
workspace when, taken from the workspace (where these commands run), it resolves inside
it and exists, or holds a `/` (a script not there yet is pinned as missing: one that
appears later has changed). A program found on PATH inside the workspace (`.venv/bin`,
`node_modules/.bin`) is pinned too, and `orkeon validate` warns about it.

The pinned files are guards: read-only in every sandbox, and a change fails the audit. A
hook whose file changed since the run started is not run (`Pins.changed`).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import InputError
from ..policy.guards import guard_files

PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "ORKEON_PROJECT_DIR", "MATTERAI_PROJECT_DIR")
MISSING = "missing"
_OPERATORS = frozenset("|&;<>()")


def digest(path: Path) -> str:
    """A file's content digest (sha256), `missing`, or `dir`. Raises OSError when the
    path exists but cannot be read."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if os.path.lexists(path):  # a dangling or looping symlink: named, not readable
            raise
        return MISSING
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def shell_words(command: str) -> list[str]:
    """The words of a settings-shape hook's shell command that could name a file: the
    project-dir variables replaced by `.`, operators and words with other `$` dropped.
    A command the splitter cannot read gives its whitespace-separated words."""
    text = command
    for name in PROJECT_VARS:
        text = text.replace("${" + name + "}", ".").replace("$" + name, ".")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = text.split()
    out = []
    for prev, w in zip(["", *words], words, strict=False):
        if "<" in prev or ">" in prev:
            continue  # a redirection's file is data the hook reads or writes, not its code
        if w and "$" not in w and not set(w) <= _OPERATORS:
            out.append(w)
    return out


@dataclass(frozen=True)
class Pins:
    """The run's pinned files: workspace-relative path -> digest at run start."""

    workspace: Path
    digests: Mapping[str, str] = field(default_factory=dict)
    search_path: str = ""

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(self.digests)

    def files_of(self, words: Sequence[str]) -> tuple[str, ...]:
        """The workspace files `words` name (see the module's docstring)."""
        return named_files(self.workspace, words, self.search_path)

    @property
    def saved(self) -> dict[str, str]:
        """For state.json: a resumed run, and a repair of this run, keep these digests."""
        return dict(self.digests)

    def since(self, saved: object) -> Pins:
        """These pins with the digests `saved` at an earlier start (a resumed run's first,
        the failed run's for its repair): a file changed since then has changed."""
        if not isinstance(saved, dict):
            return self
        kept = {k: v for k, v in saved.items() if isinstance(k, str) and isinstance(v, str)}
        return replace(self, digests={**self.digests, **kept})

    def changed(self, words: Sequence[str]) -> list[str]:
        """The files `words` name whose content is not what it was at run start (one not
        pinned then was missing then), in order. A file that cannot be read counts as
        changed."""
        out = []
        for rel in self.files_of(words):
            try:
                now = digest(self.workspace / rel)
            except OSError:
                now = "unreadable"
            if now != self.digests.get(rel, MISSING):
                out.append(rel)
        return out

    def changed_all(self) -> list[str]:
        """Every pinned file whose content changed since run start, sorted."""
        out = []
        for rel, was in self.digests.items():
            try:
                now = digest(self.workspace / rel)
            except OSError:
                now = "unreadable"
            if now != was:
                out.append(rel)
        return sorted(out)


NO_PINS = Pins(Path("/"))


def named_files(workspace: Path, words: Sequence[str], search_path: str) -> tuple[str, ...]:
    ws = os.path.realpath(workspace)
    found: dict[str, None] = {}
    for i, word in enumerate(words):
        candidates = [word.partition("=")[2] if word.startswith("-") else word]
        if i == 0 and "/" not in word:
            program = shutil.which(word, path=search_path) if search_path else None
            candidates = [program] if program else []
        for cand in candidates:
            if not cand:
                continue
            full = os.path.join(ws, cand)
            real = os.path.realpath(full)
            if real == ws or not real.startswith(ws + os.sep):
                continue
            if (os.path.lexists(full) or "/" in cand) and not os.path.isdir(real):
                found[os.path.relpath(real, ws)] = None
    return tuple(found)


def in_workspace_programs(
    workspace: Path, commands: Iterable[Sequence[str]], search_path: str
) -> list[tuple[str, str]]:
    """(command's program, where it was found) for each command whose program PATH finds
    inside the workspace: a program the model's work can replace."""
    ws = os.path.realpath(workspace)
    out = []
    for words in commands:
        if not words or "/" in words[0]:
            continue
        program = shutil.which(words[0], path=search_path)
        if program and os.path.realpath(program).startswith(ws + os.sep):
            out.append((words[0], os.path.relpath(os.path.realpath(program), ws)))
    return out


def pin(
    workspace: Path, commands: Iterable[Sequence[str]], search_path: str, guards: bool = True
) -> Pins:
    """The digests of the workspace's guard files (unless not `guards`: a bare run reads
    none of them, config/sources.py) and of every file `commands` (each a list of words)
    name. Raises InputError naming a file that exists but cannot be read: orkeon cannot
    tell later whether it changed."""
    ws = Path(os.path.realpath(workspace))
    rels: dict[str, None] = dict.fromkeys(guard_files(ws) if guards else ())
    for words in commands:
        rels.update(dict.fromkeys(named_files(ws, words, search_path)))
    digests: dict[str, str] = {}
    problems = []
    for rel in rels:
        try:
            digests[rel] = digest(ws / rel)
        except OSError as exc:
            problems.append(
                f"{rel}: a trusted command names it and it cannot be read "
                f"({exc.strerror or exc}): orkeon pins such files by content at run start"
            )
    if problems:
        raise InputError(problems)
    return Pins(ws, {r: d for r, d in digests.items() if d != "dir"}, search_path)


def hook_commands(
    native: Iterable[object], settings: Mapping[str, Sequence[object]]
) -> list[list[str]]:
    """The words of every hook command: native hooks' argv (as split, `{tool}` and the
    other placeholders left as they are), settings-shape hooks' shell words."""
    from ..policy.words import CommandRefused, split_command

    out: list[list[str]] = []
    for hook in native:
        try:
            out.append(split_command(getattr(hook, "command", "")))
        except CommandRefused:
            continue  # refused when it would run
    for groups in settings.values():
        for group in groups:
            for h in getattr(group, "hooks", ()):
                command = getattr(h, "command", None)
                if isinstance(command, str):
                    out.append(shell_words(command))
    return out


def run_pins(
    workspace: Path,
    native: Iterable[object],
    settings: Mapping[str, Sequence[object]],
    servers: Iterable[Sequence[str]],
    environ: Mapping[str, str],
    guards: bool = True,
) -> Pins:
    """The run's pins: the guard files (with `guards`), and the files of its hooks and
    stdio MCP servers' commands (`servers`: each one's argv), found on `environ`'s PATH."""
    commands = [*hook_commands(native, settings), *(list(s) for s in servers if s)]
    return pin(workspace, commands, environ.get("PATH", os.defpath), guards)
