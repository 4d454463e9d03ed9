"""The texts a model reads from settings-shape hooks (docs/hooks.md), fixed to the
character. `CMD` is the command as written; `REASON` the stderr of an exit 2 or the JSON
reason, trimmed, `no reason given` when there is none (capped at 8192 bytes)."""

from __future__ import annotations

from collections.abc import Sequence

CONTEXT_CAP = 8192
REASON_CAP = 8192
NO_REASON = "no reason given"
_CUT = "\n[cut at 8192 bytes]"

_PRE = {
    "block": "[PreToolUse hook ({cmd}) blocked the call: {why}]",
    "deny": "[PreToolUse hook ({cmd}) denied the call: {why}]",
    "ask": "[PreToolUse hook ({cmd}) asked for approval, which a headless run cannot give: {why}]",
    "unpinned": "[PreToolUse hook ({cmd}) could not run: {why}]",
}


def cap_bytes(text: str, cap: int, marker: str = _CUT) -> str:
    """`text` if it fits in `cap` UTF-8 bytes, else cut on a character boundary so that it
    and `marker` fit."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    keep = cap - len(marker.encode("utf-8"))
    return data[:keep].decode("utf-8", errors="ignore") + marker


def reason(text: str) -> str:
    text = text.strip()
    return cap_bytes(text, REASON_CAP, "\n[cut]") if text else NO_REASON


def pre_tool_line(kind: str, cmd: str, why: str) -> str:
    """kind: block (exit 2, decision "block"), deny or ask (permissionDecision), unpinned
    (not run: a file it names changed since the run started)."""
    return _PRE[kind].format(cmd=cmd, why=reason(why))


def post_tool_line(cmd: str, why: str) -> str:
    return f"[PostToolUse hook ({cmd}) feedback: {reason(why)}]"


def not_run_line(event: str, cmd: str, why: str) -> str:
    """A hook that was not run because a file it names changed since the run started."""
    return f"[{event} hook ({cmd}) could not run: {why}]"


def stop_line(cmd: str, why: str) -> str:
    return f"[Stop hook ({cmd}) asks to keep going: {reason(why)}]"


def prompt_blocked_line(cmd: str, why: str) -> str:
    return f"[UserPromptSubmit hook ({cmd}) blocked the prompt: {reason(why)}]"


def context_block(parts: Sequence[str]) -> str | None:
    """Contexts joined by newlines, tags inside them defused (a hook cannot close the block
    early), capped at 8192 bytes, in `<hook_context>` tags; None when there is none."""
    text = "\n".join(p for p in parts if p)
    if not text:
        return None
    text = text.replace("<hook_context>", "&lt;hook_context&gt;").replace(
        "</hook_context>", "&lt;/hook_context&gt;"
    )
    return f"<hook_context>{cap_bytes(text, CONTEXT_CAP)}</hook_context>"


__all__ = [
    "context_block",
    "not_run_line",
    "post_tool_line",
    "pre_tool_line",
    "prompt_blocked_line",
    "reason",
    "stop_line",
]
