"""Hooks around the model's tool calls.

Two kinds: native hooks (`native.py`, INTERFACE section 4, run by the pipeline itself) and
settings-shape hooks (`settings.py`, section 5, the Claude Code contract), which the
pipeline reaches through the `ToolHooks` protocol below. Native pre-tool hooks run before
the settings-shape PreToolUse hooks; native post-tool hooks before PostToolUse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..calls import CallContext, HookRun
    from ..ledger import Ledger


@dataclass
class PreToolVerdict:
    """What the settings-shape PreToolUse hooks made of one call.

    - `refusal_lines`: formatted lines (`[PreToolUse hook (CMD) blocked the call: REASON]`
      …), one per refusing hook in configuration order; non-empty = the call is refused.
    - `updated_input`: replaces the input; the pipeline checks it again (input, gate,
      workspace, rule sets, roots) before the tool runs.
    - `context_lines`: `<hook_context>…</hook_context>` lines appended after the result
      when the call runs.
    - `stop`: `continue: false`; the call does not run and the role stops.
    """

    refusal_lines: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    context_lines: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)
    stop: bool = False
    stop_reason: str | None = None


@dataclass
class PostToolVerdict:
    """Lines (feedback, contexts) to append after the result, in order; `stop` as above."""

    lines: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)
    stop: bool = False
    stop_reason: str | None = None


class ToolHooks(Protocol):
    """The settings-shape hooks as the pipeline sees them.

    The implementation charges each hook's run time to `ledger` itself ("hook", at the
    call) and caps each hook's time limit with `ledger.cap(own)`; the pipeline only adds
    the `runs` to the call's event (their seconds count in its `hook_seconds`).
    """

    async def pre_tool(
        self, ctx: CallContext, tool: str, input: dict[str, Any], call_id: str, ledger: Ledger
    ) -> PreToolVerdict: ...

    async def post_tool(
        self,
        ctx: CallContext,
        tool: str,
        input: dict[str, Any],
        result: Any,
        call_id: str,
        ledger: Ledger,
    ) -> PostToolVerdict: ...


__all__ = ["PostToolVerdict", "PreToolVerdict", "ToolHooks"]
