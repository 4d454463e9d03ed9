"""`CLAUDE_ENV_FILE`: variables a SessionStart hook sets for the role's later shell commands.

Claude Code gives each SessionStart hook a file of its own in `CLAUDE_ENV_FILE`
(`…/session-env/SESSION/sessionstart-hook-N.sh`), and sources what the hooks wrote there,
in order, as a shell script in front of every Bash command of the session: `export
NAME=VALUE` lines, and anything else the shell can run (`export PATH="$HOME/bin:$PATH"`
expands). orkeon's shell tool has no shell to source them in, so `EnvFiles` evaluates the
files once, right after the SessionStart hooks end, and keeps what they changed in the
exported environment: each shell command of the session then runs with those changes.

- The files live in a private folder (mode 0700) outside the workspace, made for the one
  SessionStart event and removed after it: nothing the role's model can reach writes into
  what orkeon runs, and nothing is left behind.
- They are sourced together, in configuration order, by the hooks' shell (`$SHELL -c`,
  else /bin/sh), in the hooks' environment and working directory, within the SessionStart
  hooks' time limit, as that shell sources them: a file that ends the shell (`exit`, or a
  syntax error in a shell that stops on one, like dash) sets nothing at all; bash stops
  reading a file at a syntax error and keeps what came before it.
- The change is the exported environment after sourcing against before (both read by the
  same shell, so what the shell itself sets, `SHLVL` or `_`, is no change): a name set or
  changed, or removed (`unset NAME`).
- Never applied: the model provider's key variable(s), orkeon's own variables (`ORKEON_*`),
  GitHub Actions' command files (`GITHUB_ENV`, …: the model's commands must not write
  them) and `CLAUDE_ENV_FILE` itself; each one dropped is logged.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...environ import CI_FILE_VARS, OWN_VARS, own_name
from .. import spawn

if TYPE_CHECKING:
    from ...ledger import Ledger
    from .run import CommandRunner

VARIABLE = "CLAUDE_ENV_FILE"

# Prints the exported environment as one JSON line (run twice: before and after).
_DUMP = "import json, os, sys; sys.stdout.write(json.dumps(dict(os.environ)) + '\\n')"
# $1 python, $2 the dump program, the rest the files. What the files print goes to stderr,
# so stdout holds the two dumps only. Both dumps start the same way, so what the shell sets
# for a child (`_`, `SHLVL`) is the same in both: the trailing `exit` keeps bash from
# exec'ing the last command in its place, which lowers SHLVL. The names are unlikely to be
# a sourced file's own.
_SCRIPT = (
    '__orkeon_py=$1; __orkeon_dump=$2; shift 2; "$__orkeon_py" -I -S -c "$__orkeon_dump"; '
    'for __orkeon_f in "$@"; do . "$__orkeon_f" >&2; done; '
    '"$__orkeon_py" -I -S -c "$__orkeon_dump"; exit $?'
)

Changes = dict[str, "str | None"]  # name -> value; None: unset


@dataclass
class EnvFiles:
    """The files of one SessionStart event: `path(i)` for the i-th hook (0-based, in
    configuration order), then `changes()` once the hooks ended, then `close()`."""

    folder: Path
    count: int = 0
    problems: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @classmethod
    def make(cls) -> EnvFiles:
        return cls(Path(tempfile.mkdtemp(prefix="orkeon-session-env-")))

    def path(self, i: int) -> str:
        self.count = max(self.count, i + 1)
        return str(self.folder / f"sessionstart-hook-{i}.sh")

    def written(self) -> list[str]:
        """The files the hooks wrote something into, in configuration order."""
        out = []
        for i in range(self.count):
            p = self.folder / f"sessionstart-hook-{i}.sh"
            try:
                if p.is_file() and p.stat().st_size > 0:
                    out.append(str(p))
            except OSError:
                continue
        return out

    async def changes(
        self,
        runner: CommandRunner,
        timeout: float,
        ledger: Ledger,
        refused: Iterable[str] = (),
    ) -> Changes:
        """What the written files change in the exported environment, the names orkeon
        never lets them set left out (recorded in `dropped`); {} when nothing was written
        or sourcing failed (recorded in `problems`)."""
        files = self.written()
        if not files:
            return {}
        limit = ledger.cap(timeout)
        if limit <= 0:
            self.problems.append(f"not read: {ledger.time_spent_text()}")
            return {}
        res = await spawn.arun(
            [runner.shell, "-c", _SCRIPT, "sh", sys.executable, _DUMP, *files],
            cwd=runner.workspace,
            timeout=limit,
            env=runner.env,
            cap=1 << 22,
            kill_grace=2.0,
        )
        ledger.charge("hook", res.seconds)
        dumps = _dumps(res.stdout)
        if res.exit_code != 0 or len(dumps) != 2:
            why = res.error or (
                "it ran out of time" if res.timed_out else f"the shell exited {res.exit_code}"
            )
            detail = res.first_line()
            self.problems.append(f"could not be sourced ({why}){': ' + detail if detail else ''}")
            return {}
        return self._keep(diff(dumps[0], dumps[1]), refused)

    def _keep(self, changes: Changes, refused: Iterable[str]) -> Changes:
        never = {VARIABLE, *OWN_VARS, *CI_FILE_VARS, *refused}
        kept: Changes = {}
        for name, value in changes.items():
            if name in never or own_name(name):
                self.dropped.append(name)
            else:
                kept[name] = value
        return kept

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _dumps(stdout: str) -> list[dict[str, str]]:
    """The two environments on stdout (JSON, ASCII: a value that is not UTF-8 comes back
    with the same surrogate escapes `os.environ` gives it); [] when stdout is not that."""
    out = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            return []
        if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
            return []
        out.append(obj)
    return out


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> Changes:
    changes: Changes = {k: v for k, v in after.items() if before.get(k) != v}
    changes.update({k: None for k in before if k not in after})
    return changes


__all__ = ["VARIABLE", "Changes", "EnvFiles", "diff"]
