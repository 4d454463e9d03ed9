"""Keeping a long conversation inside the model's context window.

`ContextMeter` estimates how many tokens the next request will carry: the provider's
last reported input tokens plus about one token per 4 characters added since, or 4
characters a token for the whole conversation when no report exists yet.

When the estimate passes `TRIGGER` of the window, `plan` picks what to shorten, oldest
first, until the estimate is back under `TARGET` of the window:

1. tool results older than the last `KEEP_TURNS` answers become the stub
   `[compacted: N characters dropped]`;
2. then long string arguments of those older answers' tool calls (a file_write's
   `content`) become the same stub.

The system prompt, every user message (the task first), every answer's text, the last
`KEEP_TURNS` answers and their results are kept. No message is removed and no id is
changed, so every tool call keeps its result and the providers see valid pairs. When
all of that is not enough, the request goes out as it is and a provider that still finds
it too long fails the role with its own message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from .models.base import Message, ToolCall

TRIGGER = 0.8
TARGET = 0.5
KEEP_TURNS = 2
CHARS_PER_TOKEN = 4
MIN_DROP = 200  # shorter texts are not worth a stub

STUB = "[compacted: {n} characters dropped]"


def stub(n: int) -> str:
    return STUB.format(n=n)


def message_chars(m: Message) -> int:
    """Characters of a message as a provider sends it (near enough for an estimate)."""
    n = len(m.content)
    for c in m.tool_calls:
        n += len(c.id) + len(c.name) + len(json.dumps(c.input, ensure_ascii=False))
    return n


class ContextMeter:
    """Tokens of the next request, estimated from characters and the provider's reports."""

    def __init__(self, context_tokens: int) -> None:
        self.context_tokens = context_tokens
        self._reported: int | None = None  # input tokens of the last request
        self._chars_then = 0  # conversation characters that request carried

    def report(self, chars_sent: int, tokens_in: int) -> None:
        if tokens_in > 0:
            self._reported, self._chars_then = tokens_in, chars_sent

    def reset(self) -> None:
        """Forget the last report (after compaction it no longer describes the request)."""
        self._reported = None

    def estimate(self, chars: int) -> int:
        est = chars // CHARS_PER_TOKEN
        if self._reported is not None:
            est = max(est, self._reported + (chars - self._chars_then) // CHARS_PER_TOKEN)
        return est

    def over(self, chars: int) -> bool:
        return self.estimate(chars) > TRIGGER * self.context_tokens

    def chars_to_drop(self, chars: int) -> int:
        """How many characters must go to bring the estimate down to TARGET."""
        excess = self.estimate(chars) - int(TARGET * self.context_tokens)
        return max(0, excess * CHARS_PER_TOKEN)


@dataclass
class Edit:
    index: int
    message: Message  # the replacement
    chars_dropped: int


def _shrink_input(value: Any) -> tuple[Any, int]:
    if isinstance(value, str) and len(value) >= MIN_DROP:
        s = stub(len(value))
        return s, len(value) - len(s)
    if isinstance(value, dict):
        out, dropped = {}, 0
        for k, v in value.items():
            out[k], d = _shrink_input(v)
            dropped += d
        return out, dropped
    return value, 0


@dataclass
class Scanned:
    """How far earlier plans read, once their edits are applied: before `results` no tool
    result is long enough for a stub, before `calls` no call argument is. Messages are
    never removed or moved, so the next plan starts there. Without it, a conversation that
    stays over the trigger with nothing left to drop is read whole again every turn:
    quadratic in its length (a 10,000-call run spent half its time here)."""

    results: int = 0
    calls: int = 0


def plan(messages: list[Message], need: int, scanned: Scanned | None = None) -> list[Edit]:
    """Edits, oldest first, that drop at least `need` characters, or as many as exist.

    With `scanned`, reading starts where it says and it is moved to where this plan
    stopped; it holds only once the edits are applied."""
    s = scanned if scanned is not None else Scanned()
    horizon = -1  # messages from the KEEP_TURNS-th last answer on are recent: kept whole
    answers = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            answers += 1
            if answers == KEEP_TURNS:
                horizon = i
                break
    if horizon < 0:
        return []
    edits: list[Edit] = []
    dropped = 0
    for i in range(s.results, horizon):
        m = messages[i]
        if m.role == "tool" and len(m.content) >= MIN_DROP:
            stubbed = stub(len(m.content))
            edits.append(Edit(i, replace(m, content=stubbed), len(m.content) - len(stubbed)))
            dropped += edits[-1].chars_dropped
            if dropped >= need:
                s.results = i + 1
                return edits
    s.results = max(s.results, horizon)
    for i in range(s.calls, horizon):
        m = messages[i]
        if m.role != "assistant" or not m.tool_calls:
            continue
        calls, lost = [], 0
        for c in m.tool_calls:
            new_input, d = _shrink_input(c.input)
            calls.append(ToolCall(c.id, c.name, new_input) if d else c)
            lost += d
        if lost:
            edits.append(Edit(i, replace(m, tool_calls=tuple(calls)), lost))
            dropped += lost
            if dropped >= need:
                s.calls = i + 1
                return edits
    s.calls = max(s.calls, horizon)
    return edits


def apply(messages: list[Message], edits: list[Edit]) -> int:
    """Apply `edits` in place; the characters dropped."""
    for e in edits:
        messages[e.index] = e.message
    return sum(e.chars_dropped for e in edits)
