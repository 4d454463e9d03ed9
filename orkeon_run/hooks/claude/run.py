"""Running settings-shape hook commands (docs/hooks.md, "Execution and environment").

Each command runs as `[$SHELL or /bin/sh, "-c", COMMAND]` through `spawn.arun` (`proc`
under the veil that hides orkeon's processes): cwd the workspace, the event's JSON line on stdin, its own time limit (default 10 s, capped by what
is left of the step's budget), SIGTERM then SIGKILL after 2 s, output capped. The commands
of one event run in parallel; each one's own run time is charged to the ledger.

The environment is a redacted copy of orkeon's: credential-like names (the page's regex),
the provider's key variable(s) and orkeon's own configuration variables are removed;
`ORKEON_PROJECT_DIR`, `CLAUDE_PROJECT_DIR` and `MATTERAI_PROJECT_DIR` name the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ...calls import HookRun
from ...config.pins import NO_PINS, Pins, shell_words
from ...environ import scrubbed
from ...errors import Idle
from ...ledger import Ledger
from .. import spawn

DEFAULT_TIMEOUT = 10.0
KILL_GRACE = 2.0
OUTPUT_CAP = 1 << 20

PROJECT_DIR_VARS = ("ORKEON_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "MATTERAI_PROJECT_DIR")


def hook_environment(
    environ: Mapping[str, str], workspace: Path, remove: Iterable[str] = ()
) -> dict[str, str]:
    env = scrubbed(remove, environ=environ)
    for name in PROJECT_DIR_VARS:
        env[name] = str(workspace)
    env["PWD"] = str(workspace)  # the shell trusts an inherited PWD that names its cwd
    return env


def user_shell(environ: Mapping[str, str]) -> str:
    """`$SHELL` when it names an executable file, else /bin/sh."""
    shell = environ.get("SHELL", "")
    if shell and os.path.isabs(shell) and os.access(shell, os.X_OK) and os.path.isfile(shell):
        return shell
    return "/bin/sh"


@dataclass
class Ran:
    """One command's run."""

    command: str
    timeout: float
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    error: str | None  # it could not run (not started, or no budget left)
    # It was not run: a file it names changed since the run started (config/pins.py).
    unpinned: bool = False
    # Its failure (`error`) refuses a PreToolUse call: an http or prompt hook (handlers.py).
    fail_closed: bool = False
    # A prompt hook's model answer: tokens_in, tokens_out, usd (handlers.py).
    usage: dict[str, Any] | None = None
    # An `async: true` hook: it ran in the background (background.py).
    background: bool = False

    def first_line(self, *, with_stdout: bool = True) -> str:
        """The first line it printed, its error output first; or why it did not run."""
        if self.error:
            return self.error
        for text in (self.stderr, self.stdout) if with_stdout else (self.stderr,):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()[:1000]
        return ""

    def record(self, event: str, *, with_stdout: bool = True) -> HookRun:
        return HookRun(
            n=None,
            event=event,
            command=self.command,
            exit_code=self.exit_code,
            seconds=self.seconds,
            timed_out=self.timed_out,
            first_line=self.first_line(with_stdout=with_stdout),
            usage=self.usage,
            background=self.background,
        )


class CommandRunner:
    def __init__(
        self, workspace: Path, env: Mapping[str, str], shell: str, pins: Pins = NO_PINS
    ) -> None:
        """`pins`: the run's pinned files; a command whose files changed is not run."""
        self.workspace = workspace
        self.env = dict(env)
        self.shell = shell
        self.pins = pins

    async def run_one(
        self,
        command: str,
        timeout: float,
        stdin: bytes,
        ledger: Ledger,
        extra_env: Mapping[str, str] | None = None,
    ) -> Ran:
        """`extra_env` is added to this command's environment (SessionStart's
        `CLAUDE_ENV_FILE`)."""
        limit = ledger.cap(timeout)
        idle = ledger.idle_seconds
        if limit <= 0:
            return Ran(command, timeout, None, "", "", 0.0, False, ledger.time_spent_text())
        if self.pins.digests:
            changed = self.pins.changed(shell_words(command))
            if changed:
                why = f"{', '.join(changed)} changed since the run started"
                return Ran(command, timeout, None, "", "", 0.0, False, why, unpinned=True)
        res = await spawn.arun(
            [self.shell, "-c", command],
            cwd=self.workspace,
            timeout=limit,
            env={**self.env, **extra_env} if extra_env else self.env,
            stdin=stdin,
            cap=OUTPUT_CAP,
            kill_grace=KILL_GRACE,
            idle=idle if idle is not None and idle < limit else None,
        )
        ledger.charge("hook", res.seconds)
        if res.idle and idle is not None:  # the watchdog: the role ends (agent/loop.py)
            raise Idle({"kind": "hook", "name": "settings hook", "command": command,
                        "seconds": idle})  # fmt: skip
        return Ran(
            command=command,
            timeout=limit,
            exit_code=res.exit_code,
            stdout=res.stdout,
            stderr=res.stderr,
            seconds=res.seconds,
            timed_out=res.timed_out,
            error=res.error,
        )

    async def run_all(
        self,
        commands: list[tuple[str, float]],
        stdin: bytes,
        ledger: Ledger,
        extra_env: Callable[[int], Mapping[str, str]] | None = None,
    ) -> list[Ran]:
        """Run every (command, timeout) in parallel; results in the order given.
        `extra_env(i)` is added to the i-th command's environment."""

        def env(i: int) -> Mapping[str, str] | None:
            return extra_env(i) if extra_env else None

        if len(commands) == 1:
            command, timeout = commands[0]
            return [await self.run_one(command, timeout, stdin, ledger, env(0))]
        results: list[Ran | None] = [None] * len(commands)

        async def one(i: int, command: str, timeout: float) -> None:
            results[i] = await self.run_one(command, timeout, stdin, ledger, env(i))

        try:
            async with anyio.create_task_group() as tg:
                for i, (command, timeout) in enumerate(commands):
                    tg.start_soon(one, i, command, timeout)
        except ExceptionGroup as group:
            # The watchdog's stop, raised alone as run_one raises it (the others were
            # cancelled with it); anything else as it came.
            idle = next((e for e in group.exceptions if isinstance(e, Idle)), None)
            if idle is None:
                raise
            raise idle from None
        return [r for r in results if r is not None]


__all__ = ["DEFAULT_TIMEOUT", "CommandRunner", "Ran", "hook_environment", "user_shell"]
