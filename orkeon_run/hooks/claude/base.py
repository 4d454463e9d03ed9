"""What every settings-shape hook event shares: the configuration, selecting the hooks of an
event, running them in parallel with the event's JSON line on stdin (`run.py`), reading
their answers (`answers.py`), telling the person running orkeon about problems, and
recording the runs. `SettingsHooks` (settings.py) builds on it, through `Lifecycle`
(lifecycle.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import logs
from ...config.inputs import MatcherGroup, SettingsCommand
from ...config.pins import NO_PINS, Pins
from ..protocol import Hooks
from .answers import Answer, read_answer
from .envfile import Changes
from .matchers import Selection
from .payloads import base, encode
from .run import DEFAULT_TIMEOUT, CommandRunner, hook_environment, user_shell

if TYPE_CHECKING:
    from ...calls import CallContext, HookRun
    from ...events import EventLog
    from ...ledger import Ledger

_OUTPUT_IN_LOG = 4000


def join_reasons(reasons: list[str | None]) -> str | None:
    kept = [r for r in reasons if r]
    return "\n".join(kept) if kept else None


class SettingsBase(Hooks):
    """The settings-shape hooks of one run (config already merged from every source by
    `load_settings_hooks`). One instance serves every role of the step."""

    def __init__(
        self,
        config: dict[str, list[MatcherGroup]],
        *,
        workspace: Path,
        events: EventLog,
        extra_env_remove: Sequence[str] = (),
        pins: Pins = NO_PINS,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self._ws = str(self.workspace)
        self.events = events
        self._groups = Selection(config)
        self._key_vars = tuple(extra_env_remove)
        env = hook_environment(os.environ, self.workspace, extra_env_remove)
        self._runner = CommandRunner(self.workspace, env, user_shell(os.environ), pins)
        self._log = logs.get("orkeon.hooks")
        # Per session (role): what its SessionStart hooks' CLAUDE_ENV_FILE changes for its
        # shell commands (lifecycle.py).
        self._session_env: dict[str, Changes] = {}

    def has(self, event: str) -> bool:
        """Whether any hook is configured for `event` (SubagentStop included)."""
        return self._groups.has(event)

    def commands(self, event: str, value: str | None = None) -> list[SettingsCommand]:
        return self._groups.commands(event, value)

    async def _run(
        self,
        event: str,
        ctx: CallContext,
        value: str | None,
        fields: dict[str, Any],
        ledger: Ledger,
        *,
        cap: float | None = None,
        extra_env: Callable[[int], Mapping[str, str]] | None = None,
    ) -> list[Answer]:
        hooks = self.commands(event, value)
        if not hooks:
            return []
        payload = base(ctx.session_id, ctx.transcript_path, self._ws, event)
        payload.update(fields)
        todo = []
        for h in hooks:
            timeout = h.timeout if h.timeout is not None else DEFAULT_TIMEOUT
            todo.append((h.command, min(timeout, cap) if cap is not None else timeout))
        ran = await self._runner.run_all(todo, encode(payload), ledger, extra_env)
        answers = [read_answer(event, r) for r in ran]
        for a in answers:
            self._surface(event, ctx, a)
        return answers

    def _surface(self, event: str, ctx: CallContext, a: Answer) -> None:
        """Problems and system messages go to the person running orkeon (stderr)."""
        out = {} if a.suppress_output else {"stdout": a.ran.stdout[:_OUTPUT_IN_LOG]}
        for problem in a.problems:
            self._log.warning(
                "hook problem (non-blocking)",
                hook_event=event,
                role=ctx.role,
                command=a.command,
                problem=problem,
                stderr=a.ran.stderr[:_OUTPUT_IN_LOG],
                **out,
            )
        if a.system_message:
            self._log.info(
                "hook message",
                hook_event=event,
                role=ctx.role,
                command=a.command,
                message=a.system_message,
                stderr=a.ran.stderr[:_OUTPUT_IN_LOG],
                **out,
            )

    def _cannot_block(self, event: str, ctx: CallContext, answers: list[Answer]) -> None:
        for a in answers:
            if a.blocking:
                self._log.warning(
                    f"{event} hooks cannot block; exit 2 is a warning",
                    role=ctx.role,
                    command=a.command,
                    stderr=a.ran.stderr[:_OUTPUT_IN_LOG],
                )

    @staticmethod
    def _runs(event: str, answers: list[Answer]) -> list[HookRun]:
        return [a.ran.record(event, with_stdout=not a.suppress_output) for a in answers]

    def _emit_runs(self, event: str, ctx: CallContext, answers: list[Answer]) -> None:
        for run in self._runs(event, answers):
            self.events.emit(
                "hook.run",
                role=ctx.role,
                event=event,
                command=run.command,
                exit_code=run.exit_code,
                seconds=round(run.seconds, 6),
                timed_out=run.timed_out,
                first_line=run.first_line,
            )
