"""Do the native hooks' programs and scripts exist? (`orkeon validate`; `orkeon run` warns.)

A hook whose program or script is missing cannot run, and a pre-tool hook that cannot run
refuses every call of the step (docs/hooks.md). So validation looks for both, as the hook
will be run: in the workspace (its working directory), with orkeon's PATH.

- The program: a name with no `/` must be on PATH; a path (`./hooks/x.sh`, `/opt/x`) is
  relative to the workspace and must be an executable file.
- An interpreter's script: for `python3 .orkeon/hooks/guard.py {tool}`, `node x.mjs`,
  `bash x.sh` and their kin, the first argument that is not an option is the script, and
  it must be a file (relative to the workspace). Inline code (`python3 -c …`, `node -e …`,
  `bash -c …`), a module (`python3 -m pkg`) and standard input (`-`) have no script.

Words orkeon fills in at each call (`{tool}`, `{event}`, `{path}`) are never looked for.
Whether the program rules allow the program is not checked here: `orkeon hooks check`
shows it (docs/inputs.md, "shell").
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..policy.words import CommandRefused, split_command

# Interpreter -> (options that give inline code or a module: no script follows; options
# that take the next word as their value).
_PYTHON = (frozenset({"-c", "-m"}), frozenset({"-W", "-X", "-Q"}))
_NODE = (
    frozenset({"-e", "--eval", "-p", "--print", "-i", "--interactive"}),
    frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "-C"}),
)
_SHELL = (frozenset({"-c", "-s", "-i"}), frozenset({"-o", "+o", "-O", "+O"}))
_PERL = (frozenset({"-e", "-E"}), frozenset({"-I", "-M", "-m"}))
_RUBY = (frozenset({"-e"}), frozenset({"-I", "-r"}))
INTERPRETERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "python": _PYTHON,
    "python3": _PYTHON,
    "node": _NODE,
    "bash": _SHELL,
    "sh": _SHELL,
    "dash": _SHELL,
    "zsh": _SHELL,
    "ksh": _SHELL,
    "perl": _PERL,
    "ruby": _RUBY,
}
_VERSIONED = re.compile(r"^(python)3\.\d+$")
_FILLED = re.compile(r"\{(tool|event|path)\}")


class HookSpec(Protocol):
    @property
    def event(self) -> str: ...

    @property
    def command(self) -> str: ...


def missing_files(hooks: Sequence[HookSpec], workspace: Path, path_env: str) -> list[str]:
    """One line per native hook whose program or script is missing, naming the hook by
    its place in `hooks` (`hooks[0].command: …`) and saying what to fix."""
    problems = []
    for i, hook in enumerate(hooks):
        problem = _missing(hook.command, workspace, path_env)
        if problem:
            problems.append(f"hooks[{i}].command: {problem}")
    return problems


def _missing(command: str, workspace: Path, path_env: str) -> str | None:
    try:
        argv = split_command(command)
    except CommandRefused:
        return None  # the inputs' own check reports it
    if not argv or _FILLED.search(argv[0]):
        return None
    program = argv[0]
    if "/" in program:
        target = workspace / program
        if not target.is_file():
            return f"no such program: {program} (a path is relative to the workspace, {workspace})"
        if not os.access(target, os.X_OK):
            return f"{program} is not executable (chmod +x it, or run it with its interpreter)"
    elif shutil.which(program, path=path_env) is None:
        return f"no such program on PATH: {program}"
    script = script_of(argv)
    if script is None or _FILLED.search(script):
        return None
    if not (workspace / script).is_file():
        name = os.path.basename(program)
        return (
            f"no such file: {script} (the script {name} would run, relative to the "
            f"workspace, {workspace})"
        )
    return None


def _inline(name: str, word: str) -> bool:
    """Options run together: `python3 -cCODE`, `-mpkg`; a shell's `-ec` or `-xc`."""
    if name == "python":
        return word.startswith(("-c", "-m"))
    if INTERPRETERS[name] is _SHELL:
        return word.startswith("-") and not word.startswith("--") and "c" in word[1:]
    return False


def script_of(argv: Sequence[str]) -> str | None:
    """The script an interpreter command runs (`python3 -u x.py a` -> `x.py`), or None:
    not an interpreter, inline code or a module, standard input, or no script at all."""
    name = os.path.basename(argv[0])
    name = _VERSIONED.sub(r"\1", name)
    spec = INTERPRETERS.get(name)
    if spec is None:
        return None
    no_script, takes_value = spec
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            return next(words, None)
        if word in no_script or _inline(name, word):
            return None
        if word in takes_value:
            next(words, None)
            continue
        if word.startswith(("-", "+")) and word != "-":
            continue
        return None if word == "-" else word
    return None
