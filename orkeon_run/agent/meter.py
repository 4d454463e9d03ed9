"""The context meter: how many tokens a role's next request will carry, and when that is
time to compact (the thresholds are fractions of the model's context window). The meter
runs every turn; what a compaction shortens or removes is compaction.py's, imported by a
role's first compaction (docs/performance.md, "Start-up, fourth pass")."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..models.base import Message, ToolSpec

TRIGGER = 0.8
TARGET = 0.5
BATCH = 0.1
CEILING = 0.95
CHARS_PER_TOKEN = 4


def message_chars(m: Message) -> int:
    """Characters of a message as a provider sends it (near enough for an estimate)."""
    n = len(m.content)
    for c in m.tool_calls:
        n += len(c.id) + len(c.name) + len(json.dumps(c.input, ensure_ascii=False))
    return n


def tools_chars(tools: Iterable[ToolSpec]) -> int:
    """Characters the tools' specs add to every request."""
    return sum(len(t.name) + len(t.description) + len(json.dumps(t.input_schema)) for t in tools)


class ContextMeter:
    """Tokens of the next request, estimated from characters and the provider's reports."""

    def __init__(self, context_tokens: int) -> None:
        self.context_tokens = context_tokens
        self._reported: int | None = None  # input tokens of the last request
        self._chars_then = 0  # conversation characters that request carried
        self._after: int | None = None  # conversation characters after the last compaction

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
        """Time to compact: over TRIGGER, and grown by BATCH since the last compaction (or
        over CEILING). Growth is counted in characters (4 a token), the one measure that
        means the same before and after a provider's first report."""
        est, window = self.estimate(chars), self.context_tokens
        if est <= TRIGGER * window:
            return False
        if self._after is None or est > CEILING * window:
            return True
        return (chars - self._after) // CHARS_PER_TOKEN >= BATCH * window

    def compacted(self, chars: int) -> int:
        """Record the size after a compaction (or one that found nothing to drop); its
        estimate."""
        self._after = chars
        return self.estimate(chars)

    def chars_to_drop(self, chars: int) -> int:
        """How many characters must go to bring the estimate down to TARGET."""
        excess = self.estimate(chars) - int(TARGET * self.context_tokens)
        return max(0, excess * CHARS_PER_TOKEN)
