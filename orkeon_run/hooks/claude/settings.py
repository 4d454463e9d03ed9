"""Settings-shape hooks: the Claude Code contract (docs/hooks.md, "Settings-shape hooks"),
so hook scripts written for Claude Code run unchanged.

`SettingsHooks` implements the `Hooks` protocol for the pipeline (PreToolUse, PostToolUse, and
Notification when a hook asks for an approval a headless run cannot give) and the
lifecycle events for the agent loop (SessionStart, UserPromptSubmit, Stop, PreCompact,
SessionEnd). SubagentStop is accepted in the configuration and never fired.

The modules: `base.py` (selecting an event's hooks, running them, reading and recording
their answers), `lifecycle.py` (the lifecycle events, `envfile.py` for SessionStart's
`CLAUDE_ENV_FILE`), this one (the tool events, `rewrites.py` for a file a PostToolUse hook
changed), `payloads.py` (stdin), `answers.py`, `texts.py` (what the model reads),
`matchers.py`, `sources.py` (where the configuration comes from, `plugins.py` for
Claude Code plugins), `run.py` (command processes), `handlers.py` (http and prompt
handlers), `background.py` (`async: true` hooks).

For one event: the groups whose matcher matches are collected in configuration order,
identical handlers run once, they run in parallel (`run.py`, `handlers.py`), each one's
answer is read (`answers.py`) and the answers merge: deny and block > ask > allow, contexts
concatenate into one `<hook_context>` block (at most 8192 bytes), the last `updatedInput`
in configuration order wins, any `continue: false` stops the role, reasons join.

Tool-event runs are recorded in the verdicts (`HookRun`, n=None); lifecycle runs as their
own `hook.run` events. Problems (a hook that could not start, failed or ran out of time)
never block: they are logged on stderr and recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anyio import to_thread

from ...calls import Refusal
from ..protocol import PostToolVerdict, PreToolVerdict
from .base import join_reasons
from .lifecycle import Lifecycle, notification_fields
from .payloads import claude_input, tool_fields, tool_response
from .sources import load_settings_hooks
from .texts import context_block, not_run_line, post_tool_line, pre_tool_line

if TYPE_CHECKING:
    from ...calls import CallContext, CheckedCall, HookRun
    from ...ledger import Ledger


class SettingsHooks(Lifecycle):
    """Settings-shape hooks: the tool events here, the lifecycle events in `Lifecycle`."""

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        """PreToolUse. Refusal lines: every hook that blocked or denied, in configuration
        order; else every hook that asked (and Notification fires: a headless run cannot
        give the approval). `allow` adds nothing: the gate, rule sets and roots ran first."""
        if not self.has("PreToolUse"):
            return PreToolVerdict()
        tool, input = call.name, call.input
        shown = claude_input(tool, input, self._ws)
        fields = {**tool_fields(tool, shown), "tool_use_id": call_id}
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
                if kind in ("block", "deny", "unpinned"):
                    hard.append(pre_tool_line(kind, a.command, why))
                elif kind == "ask":
                    asked.append(pre_tool_line(kind, a.command, why))
            contexts.extend(a.context)
            if a.updated_input is not None:
                updated, updated_by = a.updated_input, a.command
            if a.stop:
                stop_reasons.append(a.stop_reason)
        refusal_lines = hard or asked
        stop_reason = join_reasons(stop_reasons)
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
            notes = await self._run("Notification", ctx, None, notification_fields(message), ledger)
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
        one `<hook_context>` block, then the note on the file the call wrote when the
        hooks changed it (rewrites.py)."""
        tool = call.name
        failure = await self._failure(ctx, call, result, call_id, ledger)
        if not self.commands("PostToolUse", tool):
            return PostToolVerdict(lines=list(pre.context_lines), runs=failure)
        from .rewrites import Watch  # only a call that PostToolUse commands see

        watch = Watch.before_hooks(self.workspace, call, result)
        shown = claude_input(tool, call.input, self._ws)
        fields = {
            **tool_fields(tool, shown),
            "tool_response": tool_response(call.tool, shown, result),
            "tool_use_id": call_id,
        }
        answers = await self._run("PostToolUse", ctx, tool, fields, ledger)
        lines: list[str] = list(pre.context_lines)
        contexts: list[str] = []
        stop_reasons: list[str | None] = []
        for a in answers:
            why = a.block_reason()
            if a.not_run is not None:
                lines.append(not_run_line("PostToolUse", a.command, a.not_run))
            elif why is not None:
                lines.append(post_tool_line(a.command, why))
            contexts.extend(a.context)
            if a.stop:
                stop_reasons.append(a.stop_reason)
        block = context_block(contexts)
        if block:
            lines.append(block)
        if watch is not None:
            note = await to_thread.run_sync(watch.note)  # a large file's diff takes a while
            if note:
                lines.append(note)
        return PostToolVerdict(
            lines=lines,
            runs=[*failure, *self._runs("PostToolUse", answers)],
            stop=bool(stop_reasons),
            stop_reason=join_reasons(stop_reasons),
        )

    async def _failure(
        self, ctx: CallContext, call: CheckedCall, result: Any, call_id: str, ledger: Ledger
    ) -> list[HookRun]:
        """PostToolUseFailure, notify-only, before PostToolUse (which still fires: a failed
        command's exit code is part of its result): for a shell command that exited
        non-zero or ran out of time, or a tool that answered an error."""
        tool = call.name
        if not self.commands("PostToolUseFailure", tool):
            return []
        error = failure_text(result)
        if error is None:
            return []
        shown = claude_input(tool, call.input, self._ws)
        interrupted = (
            isinstance(result, dict) and "exit_code" in result and result["exit_code"] is None
        )
        fields = {
            **tool_fields(tool, shown),
            "tool_use_id": call_id,
            "error": error,
            "is_interrupt": interrupted,
        }
        answers = await self._run("PostToolUseFailure", ctx, tool, fields, ledger)
        self._cannot_block("PostToolUseFailure", ctx, answers)
        return self._runs("PostToolUseFailure", answers)

    async def permission_denied(
        self, ctx: CallContext, call: CheckedCall, call_id: str, reason: str, ledger: Ledger
    ) -> list[HookRun]:
        """PermissionDenied: a stage before the hooks refused the call (gate, workspace,
        rule sets, roots). Notify-only: an answer changes nothing."""
        tool = call.name
        if not self.commands("PermissionDenied", tool):
            return []
        shown = claude_input(tool, call.input, self._ws)
        fields = {**tool_fields(tool, shown), "tool_use_id": call_id, "reason": reason}
        answers = await self._run("PermissionDenied", ctx, tool, fields, ledger)
        self._cannot_block("PermissionDenied", ctx, answers)
        return self._runs("PermissionDenied", answers)


def failure_text(result: Any) -> str | None:
    """Claude Code's `error` of a failed call (`Exit code 3\nOUT\nERR` for a command), or
    None when the call did not fail."""
    if isinstance(result, str):
        return result if result.startswith("error: ") else None
    if isinstance(result, dict) and "exit_code" in result:
        code = result["exit_code"]
        if code == 0:
            return None
        head = "Command timed out" if code is None else f"Exit code {code}"
        parts = [str(result.get(k) or "").rstrip("\n") for k in ("stdout", "stderr")]
        return "\n".join([head, *(p for p in parts if p)])
    return None


__all__ = ["SettingsHooks", "context_block", "load_settings_hooks"]
