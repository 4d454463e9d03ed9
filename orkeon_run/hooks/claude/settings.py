"""Settings-shape hooks: the Claude Code contract (`seeds/orbcode-cli-hooks.md`, INTERFACE
section 5), so hook scripts written for Claude Code run unchanged.

`SettingsHooks` implements `ToolHooks` for the pipeline (PreToolUse, PostToolUse, and
Notification when a hook asks for an approval a headless run cannot give) and the
lifecycle events for the agent loop (SessionStart, UserPromptSubmit, Stop, PreCompact,
SessionEnd). SubagentStop is accepted in the configuration and never fired.

For one event: the groups whose matcher matches are collected in configuration order,
identical commands run once, the commands run in parallel (`sh_run.py`), each one's
answer is read (`answers.py`) and the answers merge: deny and block > ask > allow, contexts
concatenate into one `<hook_context>` block (at most 8192 bytes), the last `updatedInput`
in configuration order wins, any `continue: false` stops the role, reasons join.

Tool-event runs are recorded in the verdicts (`HookRun`, n=None); lifecycle runs as their
own `hook.run` events. Problems (a hook that could not start, failed or ran out of time)
never block: they are logged on stderr and recorded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ... import logs
from ...calls import Refusal
from ...config.inputs import MatcherGroup, SettingsCommand
from ..protocol import Hooks, PostToolVerdict, PreToolVerdict, PromptVerdict
from .answers import Answer, read_answer
from .matchers import Selection
from .payloads import base, encode, tool_fields, tool_response
from .run import DEFAULT_TIMEOUT, CommandRunner, hook_environment, user_shell
from .sources import load_settings_hooks
from .texts import (
    context_block,
    post_tool_line,
    pre_tool_line,
    prompt_blocked_line,
    reason,
    stop_line,
)

if TYPE_CHECKING:
    from ...calls import CallContext, CheckedCall, HookRun
    from ...events import EventLog
    from ...ledger import Ledger

SESSION_END_CAP = 3.0  # the page: "Capped at 3s on quit so it never wedges exit"
_OUTPUT_IN_LOG = 4000


def _join(reasons: list[str | None]) -> str | None:
    kept = [r for r in reasons if r]
    return "\n".join(kept) if kept else None


class SettingsHooks(Hooks):
    """The settings-shape hooks of one run (config already merged from every source by
    `load_settings_hooks`). One instance serves every role of the step."""

    def __init__(
        self,
        config: dict[str, list[MatcherGroup]],
        *,
        workspace: Path,
        events: EventLog,
        extra_env_remove: Sequence[str] = (),
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.events = events
        self._groups = Selection(config)
        env = hook_environment(os.environ, self.workspace, extra_env_remove)
        self._runner = CommandRunner(self.workspace, env, user_shell(os.environ))
        self._log = logs.get("orkeon.hooks")

    # --- selection and running -----------------------------------------------------

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
    ) -> list[Answer]:
        hooks = self.commands(event, value)
        if not hooks:
            return []
        payload = base(ctx.session_id, ctx.transcript_path, str(self.workspace), event)
        payload.update(fields)
        todo = []
        for h in hooks:
            timeout = h.timeout if h.timeout is not None else DEFAULT_TIMEOUT
            todo.append((h.command, min(timeout, cap) if cap is not None else timeout))
        ran = await self._runner.run_all(todo, encode(payload), ledger)
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

    # --- tool events (ToolHooks) ------------------------------------------------------

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        """PreToolUse. Refusal lines: every hook that blocked or denied, in configuration
        order; else every hook that asked (and Notification fires: a headless run cannot
        give the approval). `allow` adds nothing: the gate, rule sets and roots ran first."""
        if not self.has("PreToolUse"):
            return PreToolVerdict()
        tool, input = call.name, call.input
        fields = {**tool_fields(tool, input), "tool_use_id": call_id}
        answers = await self._run("PreToolUse", ctx, tool, fields, ledger)
        if not answers:
            return PreToolVerdict()
        hard: list[str] = []
        asked: list[str] = []
        contexts: list[str] = []
        updated: dict[str, Any] | None = None
        updated_by = ""
        stop_reasons: list[str | None] = []
        for a in answers:
            say = a.refusal()
            if say is not None:
                kind, why = say
                if kind in ("block", "deny"):
                    hard.append(pre_tool_line(kind, a.command, why))
                elif kind == "ask":
                    asked.append(pre_tool_line(kind, a.command, why))
            contexts.extend(a.context)
            if a.updated_input is not None:
                updated, updated_by = a.updated_input, a.command
            if a.stop:
                stop_reasons.append(a.stop_reason)
        refusal_lines = hard or asked
        stop_reason = _join(stop_reasons)
        verdict = PreToolVerdict(
            context_lines=[b] if (b := context_block(contexts)) else [],
            runs=self._runs("PreToolUse", answers),
            stop=bool(stop_reasons),
            stop_reason=stop_reason,
        )
        if refusal_lines or stop_reasons:
            text = "\n".join(refusal_lines) or (
                f"[refused: a PreToolUse hook stopped the role: {stop_reason or 'no reason given'}]"
            )
            verdict.refusal = Refusal("hook", text)
        elif updated is not None:
            verdict.updated_input = updated
            self._log.warning(
                "a PreToolUse hook rewrote the tool input",
                role=ctx.role,
                tool=tool,
                command=updated_by,
                input=input,
                updated_input=updated,
            )
        if asked and not hard:
            message = (
                f"orkeon needs your permission to use {tool}, and a headless run cannot ask: "
                "the call is refused"
            )
            notes = await self._run("Notification", ctx, None, _notification(message), ledger)
            self._cannot_block("Notification", ctx, notes)
            verdict.runs.extend(self._runs("Notification", notes))
        return verdict

    async def post_tool(
        self,
        ctx: CallContext,
        call: CheckedCall,
        result: Any,
        call_id: str,
        ledger: Ledger,
        pre: PreToolVerdict,
    ) -> PostToolVerdict:
        """PostToolUse. Lines: the PreToolUse context of this call, then one feedback line
        per hook that exited 2 or answered `decision: block`, in configuration order, then
        one `<hook_context>` block."""
        if not self.has("PostToolUse"):
            return PostToolVerdict(lines=list(pre.context_lines))
        tool, input = call.name, call.input
        fields = {
            **tool_fields(tool, input),
            "tool_response": tool_response(tool, input, result),
            "tool_use_id": call_id,
        }
        answers = await self._run("PostToolUse", ctx, tool, fields, ledger)
        lines: list[str] = list(pre.context_lines)
        contexts: list[str] = []
        stop_reasons: list[str | None] = []
        for a in answers:
            why = a.block_reason()
            if why is not None:
                lines.append(post_tool_line(a.command, why))
            contexts.extend(a.context)
            if a.stop:
                stop_reasons.append(a.stop_reason)
        block = context_block(contexts)
        if block:
            lines.append(block)
        return PostToolVerdict(
            lines=lines,
            runs=self._runs("PostToolUse", answers),
            stop=bool(stop_reasons),
            stop_reason=_join(stop_reasons),
        )

    # --- lifecycle events (the agent loop) --------------------------------------------

    async def session_start(
        self, ctx: CallContext, source: Literal["startup", "resume"], ledger: Ledger
    ) -> str | None:
        """SessionStart, before the role's first prompt. Returns a `<hook_context>` block
        (plain stdout on exit 0, or `additionalContext`) to append to that prompt, or None.
        It cannot block."""
        if not self.has("SessionStart"):
            return None
        answers = await self._run("SessionStart", ctx, source, {"source": source}, ledger)
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
            stop_reason=_join(stop_reasons),
        )

    async def stop(self, ctx: CallContext, stop_hook_active: bool, ledger: Ledger) -> str | None:
        """Stop, when the role's model is about to finish. Returns the user message that
        keeps it going, `[Stop hook (CMD) asks to keep going: REASON]` (one line per
        blocking hook), or None. At most one continuation per turn: with
        `stop_hook_active` (this turn already continued) the hooks run, a block is not
        honoured. `continue: false` from any hook lets the role finish."""
        if not self.has("Stop"):
            return None
        answers = await self._run("Stop", ctx, None, {"stop_hook_active": stop_hook_active}, ledger)
        self._emit_runs("Stop", ctx, answers)
        lines = [
            stop_line(a.command, why) for a in answers if (why := a.block_reason()) is not None
        ]
        if not lines or any(a.stop for a in answers):
            return None
        if stop_hook_active:
            self._log.info(
                "a Stop hook asked to keep going again this turn; at most one continuation "
                "per turn, so the role finishes",
                role=ctx.role,
            )
            return None
        return "\n".join(lines)

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
        answers = await self._run("Notification", ctx, None, _notification(message), ledger)
        self._emit_runs("Notification", ctx, answers)
        self._cannot_block("Notification", ctx, answers)


def _notification(message: str) -> dict[str, Any]:
    return {"message": message, "notification_type": "permission_prompt"}


__all__ = ["SettingsHooks", "context_block", "load_settings_hooks"]
