"""What every settings-shape hook event shares: the configuration, selecting the hooks of an
event, running them in parallel with the event's JSON line on stdin (`run.py`), reading
their answers (`answers.py`), telling the person running orkeon about problems, and
recording the runs. `SettingsHooks` (settings.py) builds on it, through `Lifecycle`
(lifecycle.py)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ... import logs
from ...config.inputs import MatcherGroup, SettingsHandler, SettingsHttp, SettingsPrompt
from ...config.pins import NO_PINS, Pins
from ..protocol import Hooks
from .answers import Answer, read_answer
from .background import Background
from .handlers import (
    HTTP_DEFAULT_TIMEOUT,
    PROMPT_DEFAULT_TIMEOUT,
    HttpClients,
    ask_model,
    post_hook,
)
from .matchers import Selection
from .payloads import base, encode
from .run import DEFAULT_TIMEOUT, CommandRunner, Ran, hook_environment, user_shell

if TYPE_CHECKING:
    from ...calls import CallContext, HookRun
    from ...events import EventLog
    from ...ledger import Ledger
    from ...models.base import Provider
    from .envfile import Changes

_OUTPUT_IN_LOG = 4000
_DEFAULT = {
    "command": DEFAULT_TIMEOUT,
    "http": HTTP_DEFAULT_TIMEOUT,
    "prompt": PROMPT_DEFAULT_TIMEOUT,
}


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
        provider_for: Callable[[str | None], Provider] | None = None,
    ) -> None:
        """`provider_for(model)`: the provider a prompt hook asks (None: the run's own);
        without it a prompt hook fails (closed)."""
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
        self._provider_for = provider_for
        self._ran_once: set[tuple[str, int]] = set()  # (session, hook) of `once: true` hooks
        self._background = Background(self._record_background)
        self._http = HttpClients()

    def has(self, event: str) -> bool:
        """Whether any hook is configured for `event` (SubagentStop included)."""
        return self._groups.has(event)

    def commands(self, event: str, value: str | None = None) -> list[SettingsHandler]:
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
        """Run the event's hooks; the answers of those that decide, in configuration
        order. `async: true` ones start in the background (background.py); `once: true`
        ones that ran in this session are skipped."""
        hooks = self.commands(event, value)
        if not hooks:
            return []
        payload = base(ctx.session_id, ctx.transcript_path, self._ws, event)
        payload.update(fields)
        stdin = encode(payload)
        sync: list[tuple[int, SettingsHandler, float]] = []
        for i, h in enumerate(hooks):
            if h.once:
                key = (ctx.session_id, id(h))
                if key in self._ran_once:
                    continue
                self._ran_once.add(key)
            timeout = h.timeout if h.timeout is not None else _DEFAULT[h.type]
            timeout = min(timeout, cap) if cap is not None else timeout
            if getattr(h, "background", False):
                env = extra_env(i) if extra_env else None
                self._background.start(
                    functools.partial(self._one, h, timeout, stdin, ledger, ctx, env),
                    h.label,
                    timeout,
                    event,
                    ctx.role,
                )
            else:
                sync.append((i, h, timeout))
        if not sync:
            return []
        results: list[Ran | None] = [None] * len(sync)

        async def one(k: int, i: int, h: SettingsHandler, timeout: float) -> None:
            env = extra_env(i) if extra_env else None
            results[k] = await self._one(h, timeout, stdin, ledger, ctx, env)

        if len(sync) == 1:
            await one(0, *sync[0])
        else:
            async with anyio.create_task_group() as tg:
                for k, (i, h, timeout) in enumerate(sync):
                    tg.start_soon(one, k, i, h, timeout)
        answers = [read_answer(event, r) for r in results if r is not None]
        for a in answers:
            self._surface(event, ctx, a)
        return answers

    async def _one(
        self,
        h: SettingsHandler,
        timeout: float,
        stdin: bytes,
        ledger: Ledger,
        ctx: CallContext,
        env: Mapping[str, str] | None,
    ) -> Ran:
        """One hook of any handler type (run.py for commands, handlers.py for the rest)."""
        if isinstance(h, SettingsHttp):
            return await post_hook(h, timeout, stdin, ledger, self._http)
        if isinstance(h, SettingsPrompt):
            if self._provider_for is None:
                why = "no model to ask here (a prompt hook runs in `orkeon run`)"
                return Ran(h.label, timeout, None, "", "", 0.0, False, why, fail_closed=True)
            payload = stdin.decode("utf-8").rstrip("\n")
            ran, usage = await ask_model(h, timeout, payload, ledger, self._provider_for, ctx.role)
            ran.usage = usage
            return ran
        if h.plugin is not None:
            from .plugins import PLUGIN_DATA, PLUGIN_ROOT  # a plugin's hooks only

            plugin_env = {PLUGIN_ROOT: h.plugin.root, PLUGIN_DATA: h.plugin.data}
            env = {**plugin_env, **env} if env else plugin_env
        return await self._runner.run_one(h.command, timeout, stdin, ledger, env)

    def _record_background(self, ran: Ran, event: str, role: str) -> None:
        a = read_answer(event, ran)
        self.events.emit(
            "hook.run",
            role=role,
            event=event,
            command=ran.command,
            exit_code=ran.exit_code,
            seconds=round(ran.seconds, 6),
            timed_out=ran.timed_out,
            first_line=ran.first_line(),
            **{"async": True},
        )
        for problem in a.problems:
            self._log.warning(
                "async hook problem (it decides nothing)",
                hook_event=event,
                role=role,
                command=ran.command,
                problem=problem,
            )

    async def drain(self, *, cancel: bool = False) -> None:
        """The `async: true` hooks still running: awaited, or cancelled and recorded."""
        await self._background.drain(cancel=cancel)
        await self._http.aclose()

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
            # For the person running orkeon (Claude Code shows it to the user): a warning,
            # so a CI log shows it beside the progress lines.
            self._log.warning(
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
                **({"usage": run.usage} if run.usage is not None else {}),
            )
