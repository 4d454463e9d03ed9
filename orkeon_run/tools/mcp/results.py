"""What the model reads from an MCP call: the server's result the way it returned it, cut
to the size the built-in tools keep, and the texts for calls that could not get one.

A result (`CallToolResult`):

- structured content that is a JSON object or list, and fits: that value, as `shell`
  returns its object (the model reads compact JSON; the event keeps the value);
- otherwise the content blocks as text: text blocks as they are, one after the other
  separated by a newline; blocks orkeon cannot pass on (images, audio, binary resources)
  as a one-line note, since every result the model reads is text;
- `isError: true`: that text after `error: ` (errors the model can act on are text
  starting `error: `, as for the built-in tools).

At most `RESULT_CHARS` characters (the most one `file_read` returns) reach the model; a
longer text is cut with a last line saying so. A structured value whose JSON is longer
is given as text instead (its text blocks, or its JSON), cut the same way.
"""

from __future__ import annotations

import json
from typing import Any

from ...catalog import READ_RESULT_CHARS

RESULT_CHARS = READ_RESULT_CHARS

Result = str | dict[str, Any] | list[Any]


# --- texts for calls that got no result ------------------------------------------------


def not_running(server: str, reason: str) -> str:
    """The call was not sent: the server failed to start or ended earlier."""
    return f"[refused: MCP server {server} is not running: {reason}]"


def unreachable(server: str, reason: str) -> str:
    """An http server's session broke before the call ran; one new session was tried (and
    did not come up, or the call failed on it too). Nothing ran there."""
    return f"[refused: MCP server {server} is unreachable (one new session was tried): {reason}]"


def stopped_during(server: str, reason: str) -> str:
    """The call was sent and the server ended before it answered."""
    return f"error: MCP server {server} stopped during the call: {reason}"


def timed_out(server: str, seconds: float) -> str:
    return (
        f"error: MCP server {server} did not answer within {seconds_text(seconds)}; "
        "the call was cancelled"
    )


def call_error(tool: str, message: str) -> str:
    """The server answered the call with a protocol error (an unknown tool, bad params)."""
    return f"error: {tool}: {message}"


def no_tool(tool: str) -> str:
    """The same text the pipeline gives for any unknown tool."""
    return f"error: there is no tool named {tool!r}"


def seconds_text(seconds: float) -> str:
    return f"{round(seconds, 1):g} s"


# --- results ------------------------------------------------------------------------


def to_result(reply: Any, tool: str, cap: int = RESULT_CHARS) -> Result:
    """The model's view of one `CallToolResult` (module docstring)."""
    text = content_text(reply.content)
    if reply.is_error:
        return cut("error: " + (text or "the tool reported an error and gave no text"), tool, cap)
    structured = reply.structured_content
    if structured is not None:
        try:
            dumped = json.dumps(
                structured, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
        except ValueError:  # NaN or Infinity: not JSON any reader downstream accepts
            dumped = None
        if dumped is not None:
            if isinstance(structured, dict | list) and len(dumped) <= cap:
                return structured
            if isinstance(structured, str):
                return cut(structured, tool, cap)
            if not text:
                text = dumped
    return cut(text, tool, cap)


def cut(text: str, tool: str, cap: int = RESULT_CHARS) -> str:
    """`text`, or its first `cap` characters and a line saying how much was dropped."""
    if len(text) <= cap:
        return text
    dropped = len(text) - cap
    return (
        f"{text[:cap]}\n[{tool}: the result was cut at {cap} characters; "
        f"{dropped} more were dropped]"
    )


def content_text(blocks: list[Any]) -> str:
    return "\n".join(_block_text(b) for b in blocks)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} ({block.mime_type}) left out: orkeon passes only text to the model]"
    if kind == "resource_link":
        title = f" ({block.name})" if getattr(block, "name", None) else ""
        return f"[resource link: {block.uri}{title}]"
    if kind == "resource":
        res = block.resource
        if isinstance(getattr(res, "text", None), str):
            return str(res.text)
        mime = getattr(res, "mime_type", None) or "binary"
        return f"[resource {res.uri} ({mime}) left out: orkeon passes only text to the model]"
    return f"[{kind or 'unknown'} content left out: orkeon passes only text to the model]"


__all__ = [
    "RESULT_CHARS",
    "Result",
    "call_error",
    "content_text",
    "cut",
    "no_tool",
    "not_running",
    "seconds_text",
    "stopped_during",
    "timed_out",
    "to_result",
]
