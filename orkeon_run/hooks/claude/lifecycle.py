"""The lifecycle events of settings-shape hooks, which the agent loop fires: SessionStart
(with `CLAUDE_ENV_FILE`, envfile.py), UserPromptSubmit, Stop, PreCompact, SessionEnd, and
Notification. The tool events are in settings.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..protocol import PromptVerdict
from .base import SettingsBase, join_reasons
from .run import DEFAULT_TIMEOUT
from .texts import context_block, prompt_blocked_line, reason, stop_line

if TYPE_CHECKING:
    from ...calls import CallContext
    from ...ledger import Ledger
    from .envfile import Changes, EnvFiles

SESSION_END_CAP = 3.0  # the page: "Capped at 3s on quit so it never wedges exit"


class Lifecycle(SettingsBase):
    async def session_start(
        self, ctx: CallContext, source: Literal["startup", "resume"], ledger: Ledger
    ) -> str | None:
        """SessionStart, before the role's first prompt. Returns a `<hook_context>` block
        (plain stdout on exit 0, or `additionalContext`) to append to that prompt, or None.
        It cannot block. Each hook gets a `CLAUDE_ENV_FILE` of its own; what they write
        there is read once they all ended (envfile.py) and replaces what the session's
        shell commands got from an earlier SessionStart."""
        if not self.has("SessionStart"):
            return None
        from .envfile import VARIABLE, EnvFiles  # only a session with SessionStart hooks

        files = EnvFiles.make()
        try:
            answers = await self._run(
                "SessionStart",
                ctx,
                source,
                {"source": source},
                ledger,
                extra_env=lambda i: {VARIABLE: files.path(i)},
            )
            changes = await files.changes(self._runner, DEFAULT_TIMEOUT, ledger, self._key_vars)
        finally:
            files.close()
        self._env_changes(ctx, files, changes)
        self._emit_runs("SessionStart", ctx, answers)
        self._cannot_block("SessionStart", ctx, answers)
        for a in answers:
            if a.stop:
                self._log.warning(
                    "SessionStart hooks cannot stop the role; continue:false ignored",
                    role=ctx.role,
                    command=a.command,
                )
        return context_block([c for a in answers if not a.blocking for c in a.context])

    async def user_prompt(self, ctx: CallContext, prompt: str, ledger: Ledger) -> PromptVerdict:
        """UserPromptSubmit, before each prompt goes to the role's model (the task first).
        Exit 2 or `decision: block` blocks the prompt; context as for SessionStart."""
        if not self.has("UserPromptSubmit"):
            return PromptVerdict()
        answers = await self._run("UserPromptSubmit", ctx, None, {"prompt": prompt}, ledger)
        self._emit_runs("UserPromptSubmit", ctx, answers)
        blocked: list[str] = []
        contexts: list[str] = []
        stop_reasons: list[str | None] = []
        for a in answers:
            why = a.block_reason()
            if why is not None:
                blocked.append(prompt_blocked_line(a.command, why))
                self._log.warning(
                    "a UserPromptSubmit hook blocked the prompt",
                    role=ctx.role,
                    command=a.command,
                    reason=reason(why),
                )
            contexts.extend(a.context)
            if a.stop:
                stop_reasons.append(a.stop_reason)
        return PromptVerdict(
            blocked_reason="\n".join(blocked) if blocked else None,
            context=context_block(contexts),
            stop=bool(stop_reasons),
            stop_reason=join_reasons(stop_reasons),
        )

    async def stop(
        self, ctx: CallContext, stop_hook_active: bool, ledger: Ledger, last_message: str = ""
    ) -> str | None:
        """Stop, when the role's model is about to finish. Returns the user message that
        keeps it going, `[Stop hook (CMD) asks to keep going: REASON]` (one line per
        blocking hook), or None. `stop_hook_active`: the model's answer follows a
        continuation; the agent loop honours blocks in a row up to `budget.stop_blocks`.
        `continue: false` from any hook lets the role finish."""
        if not self.has("Stop"):
            return None
        fields = {"stop_hook_active": stop_hook_active, "last_assistant_message": last_message}
        answers = await self._run("Stop", ctx, None, fields, ledger)
        self._emit_runs("Stop", ctx, answers)
        lines = [
            stop_line(a.command, why) for a in answers if (why := a.block_reason()) is not None
        ]
        if not lines or any(a.stop for a in answers):
            return None
        return "\n".join(lines)

    async def stop_failure(
        self, ctx: CallContext, error: str, ledger: Ledger, last_message: str = ""
    ) -> None:
        """StopFailure: the role's turn ended because its model provider failed (`error`,
        its one-line message). Notify-only."""
        if not self.has("StopFailure"):
            return
        fields = {"error": error, "last_assistant_message": last_message}
        answers = await self._run("StopFailure", ctx, None, fields, ledger)
        self._emit_runs("StopFailure", ctx, answers)
        self._cannot_block("StopFailure", ctx, answers)

    async def pre_compact(self, ctx: CallContext, ledger: Ledger, trigger: str = "auto") -> None:
        """PreCompact, before a transcript is compacted. Side effects only."""
        if not self.has("PreCompact"):
            return
        fields = {"trigger": trigger, "custom_instructions": None}
        answers = await self._run("PreCompact", ctx, trigger, fields, ledger)
        self._emit_runs("PreCompact", ctx, answers)
        self._cannot_block("PreCompact", ctx, answers)

    async def session_end(self, ctx: CallContext, reason: str, ledger: Ledger) -> None:
        """SessionEnd, when the role ends. Each hook gets at most 3 s, so it never wedges
        the end of a run."""
        if not self.has("SessionEnd"):
            return
        answers = await self._run(
            "SessionEnd", ctx, reason, {"reason": reason}, ledger, cap=SESSION_END_CAP
        )
        self._emit_runs("SessionEnd", ctx, answers)
        self._cannot_block("SessionEnd", ctx, answers)

    async def notification(self, ctx: CallContext, message: str, ledger: Ledger) -> None:
        """Notification: orkeon would need the person's attention (an approval a headless
        run cannot give). Side effects only."""
        if not self.has("Notification"):
            return
        answers = await self._run("Notification", ctx, None, notification_fields(message), ledger)
        self._emit_runs("Notification", ctx, answers)
        self._cannot_block("Notification", ctx, answers)

    def session_env(self, ctx: CallContext) -> Mapping[str, str | None]:
        """What the session's SessionStart hooks wrote to `CLAUDE_ENV_FILE` changes in the
        environment of the role's shell commands."""
        return self._session_env.get(ctx.session_id, {})

    def _env_changes(self, ctx: CallContext, files: EnvFiles, changes: Changes) -> None:
        from .envfile import VARIABLE  # as session_start, its one caller, imports it

        for problem in files.problems:
            self._log.warning(f"{VARIABLE}: {problem}; its variables are not set", role=ctx.role)
        if files.dropped:
            self._log.warning(
                f"{VARIABLE}: orkeon never lets a hook set these for the model's commands",
                role=ctx.role,
                names=sorted(files.dropped),
            )
        if changes:
            self._log.info(
                f"{VARIABLE}: the role's shell commands get these variables",
                role=ctx.role,
                set=sorted(k for k, v in changes.items() if v is not None),
                unset=sorted(k for k, v in changes.items() if v is None),
            )
        self._session_env[ctx.session_id] = changes


def notification_fields(message: str) -> dict[str, Any]:
    return {"message": message, "notification_type": "permission_prompt"}
