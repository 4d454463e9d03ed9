"""The one hook protocol. Native hooks (`native.py`) and Claude Code's settings-shape hooks
(`claude/`) both implement `Hooks`; the pipeline asks it around every tool call and the
agent loop at each session event, and never asks whether there are hooks: `Hooks()` is the
set that does nothing.

`Chain` folds several sets in contract order (docs/hooks.md, "The two contracts
side by side"): pre-tool, the first set that refuses ends the call and later sets do not
run; post-tool, every set runs, each adding its pre-tool context lines and then its own
lines; session events, every set runs and the first block or keep-going answer counts;
the environment changes of the sets apply in order.

A set charges the time its hooks run to the ledger itself ("hook", at the call), and caps
each hook's limit with `ledger.cap(its own)`; the pipeline adds the `runs` it returns to
the call's event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..calls import CallContext, CheckedCall, HookRun, Refusal
    from ..ledger import Ledger


@dataclass
class PreToolVerdict:
    """What a set's pre-tool hooks made of one call.

    - `refusal`: the call does not run; the model reads its text.
    - `updated_input`: replaces the input; the pipeline checks it again (input, gate,
      workspace, rule sets, roots) before the tool runs.
    - `context_lines`: lines appended after the result when the call runs.
    - `stop`: the role stops after this call (Claude Code's `continue: false`).
    """

    refusal: Refusal | None = None
    updated_input: dict[str, Any] | None = None
    context_lines: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)
    stop: bool = False
    stop_reason: str | None = None
    # A Chain's verdict: each set's own, in order, for its post_tool.
    parts: tuple[PreToolVerdict, ...] = ()


@dataclass
class PostToolVerdict:
    """Lines to append after the result, in order; `stop` as above."""

    lines: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)
    stop: bool = False
    stop_reason: str | None = None


@dataclass
class PromptVerdict:
    """What the hooks made of one prompt (UserPromptSubmit).

    - `blocked_reason`: not None = the prompt must not be sent; one line per blocking hook.
    - `context`: a `<hook_context>…</hook_context>` block to append to the prompt.
    - `stop`: the role stops (`stop_reason`).
    """

    blocked_reason: str | None = None
    context: str | None = None
    stop: bool = False
    stop_reason: str | None = None


class Hooks:
    """A set of hooks around one step's calls and sessions. Every method does nothing
    here; a set overrides the events it has."""

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        return PreToolVerdict()

    async def post_tool(
        self,
        ctx: CallContext,
        call: CheckedCall,
        result: Any,
        call_id: str,
        ledger: Ledger,
        pre: PreToolVerdict,
    ) -> PostToolVerdict:
        """After the tool ran on `call` (the input that ran). `pre` is what this set's
        pre_tool answered on the call: its context lines come first."""
        return PostToolVerdict(lines=list(pre.context_lines))

    async def session_start(
        self, ctx: CallContext, source: Literal["startup", "resume"], ledger: Ledger
    ) -> str | None:
        """A `<hook_context>` block for the role's first prompt, or None."""
        return None

    async def user_prompt(self, ctx: CallContext, prompt: str, ledger: Ledger) -> PromptVerdict:
        return PromptVerdict()

    async def stop(
        self, ctx: CallContext, stop_hook_active: bool, ledger: Ledger, last_message: str = ""
    ) -> str | None:
        """The user message that keeps the model going, or None (it may finish).
        `last_message` is the text of the answer that would end the turn."""
        return None

    async def pre_compact(self, ctx: CallContext, ledger: Ledger, trigger: str = "auto") -> None:
        return None

    async def session_end(self, ctx: CallContext, reason: str, ledger: Ledger) -> None:
        return None

    def session_env(self, ctx: CallContext) -> Mapping[str, str | None]:
        """How the session's hooks change the environment of its shell commands
        (SessionStart's `CLAUDE_ENV_FILE`): name -> value, None to remove it; {} for none."""
        return {}

    async def drain(self, *, cancel: bool = False) -> None:
        """Before the step's result is written: await the hooks still running in the
        background (`async: true`), or with `cancel` cancel them, each one recorded."""
        return None

    async def permission_denied(
        self, ctx: CallContext, call: CheckedCall, call_id: str, reason: str, ledger: Ledger
    ) -> list[HookRun]:
        """A stage before the hooks (gate, workspace, rule sets, roots) refused `call`:
        notify-only; the runs, for the call's record."""
        return []

    async def stop_failure(
        self, ctx: CallContext, error: str, ledger: Ledger, last_message: str = ""
    ) -> None:
        """The role's turn ended because its model provider failed: notify-only."""
        return None


NO_HOOKS = Hooks()


class Chain(Hooks):
    """Sets folded in the order given (native first, then settings-shape)."""

    def __init__(self, sets: Sequence[Hooks]) -> None:
        self.sets = tuple(sets)

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        out = PreToolVerdict()
        parts: list[PreToolVerdict] = []
        for s in self.sets:
            v = await s.pre_tool(ctx, call, call_id, ledger)
            parts.append(v)
            out.runs.extend(v.runs)
            if v.refusal is not None:
                out.refusal, out.stop, out.stop_reason = v.refusal, v.stop, v.stop_reason
                break
            if v.updated_input is not None:
                out.updated_input = v.updated_input
        out.parts = tuple(parts)
        return out

    async def post_tool(
        self,
        ctx: CallContext,
        call: CheckedCall,
        result: Any,
        call_id: str,
        ledger: Ledger,
        pre: PreToolVerdict,
    ) -> PostToolVerdict:
        out = PostToolVerdict()
        reasons: list[str] = []
        for s, part in zip(self.sets, pre.parts, strict=True):
            v = await s.post_tool(ctx, call, result, call_id, ledger, part)
            out.lines.extend(v.lines)
            out.runs.extend(v.runs)
            if v.stop:
                out.stop = True
                if v.stop_reason:
                    reasons.append(v.stop_reason)
        out.stop_reason = "\n".join(reasons) or None
        return out

    async def session_start(
        self, ctx: CallContext, source: Literal["startup", "resume"], ledger: Ledger
    ) -> str | None:
        blocks = [await s.session_start(ctx, source, ledger) for s in self.sets]
        kept = [b for b in blocks if b]
        return "\n".join(kept) if kept else None

    async def user_prompt(self, ctx: CallContext, prompt: str, ledger: Ledger) -> PromptVerdict:
        contexts: list[str] = []
        for s in self.sets:
            v = await s.user_prompt(ctx, prompt, ledger)
            if v.blocked_reason is not None or v.stop:
                return v
            if v.context:
                contexts.append(v.context)
        return PromptVerdict(context="\n".join(contexts) if contexts else None)

    async def stop(
        self, ctx: CallContext, stop_hook_active: bool, ledger: Ledger, last_message: str = ""
    ) -> str | None:
        for s in self.sets:
            keep = await s.stop(ctx, stop_hook_active, ledger, last_message)
            if keep:
                return keep
        return None

    async def pre_compact(self, ctx: CallContext, ledger: Ledger, trigger: str = "auto") -> None:
        for s in self.sets:
            await s.pre_compact(ctx, ledger, trigger)

    async def session_end(self, ctx: CallContext, reason: str, ledger: Ledger) -> None:
        for s in self.sets:
            await s.session_end(ctx, reason, ledger)

    def session_env(self, ctx: CallContext) -> Mapping[str, str | None]:
        parts = [p for p in (s.session_env(ctx) for s in self.sets) if p]
        if len(parts) <= 1:
            return parts[0] if parts else {}
        return {k: v for p in parts for k, v in p.items()}

    async def drain(self, *, cancel: bool = False) -> None:
        for s in self.sets:
            await s.drain(cancel=cancel)

    async def permission_denied(
        self, ctx: CallContext, call: CheckedCall, call_id: str, reason: str, ledger: Ledger
    ) -> list[HookRun]:
        runs: list[HookRun] = []
        for s in self.sets:
            runs.extend(await s.permission_denied(ctx, call, call_id, reason, ledger))
        return runs

    async def stop_failure(
        self, ctx: CallContext, error: str, ledger: Ledger, last_message: str = ""
    ) -> None:
        for s in self.sets:
            await s.stop_failure(ctx, error, ledger, last_message)


def chain(sets: Sequence[Hooks]) -> Hooks:
    """One set as it is, several as a Chain, none as NO_HOOKS."""
    kept = [s for s in sets if s is not NO_HOOKS]
    if not kept:
        return NO_HOOKS
    return kept[0] if len(kept) == 1 else Chain(kept)
