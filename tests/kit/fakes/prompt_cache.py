"""Anthropic's prompt cache, as its documentation describes it, for the fake server.

A request is a list of blocks in the API's order: each tool definition, the system prompt
(a string is one block), then each content block of each message (a string content is one
block). A block carrying `cache_control` is a breakpoint (at most 4 per request, else 400).
The cache holds prefixes, keyed by the exact content up to and including a block
(`cache_control` itself is not part of the key, so a breakpoint may move).

For one request:

- read: for each breakpoint, the API looks back at most `LOOKBACK` blocks (that one
  included) for a cached prefix ending there; the longest one found is read;
- written: from the end of what was read up to the last breakpoint, when that prefix
  reaches `min_tokens` (a shorter one is not cached, and no error says so); each
  breakpoint's prefix is then cached;
- input: the rest (what no breakpoint covers, or everything when there is none).

Tokens are counted as one per 4 characters of a block's compact JSON: deterministic, and
near enough for the ratios the tests and the bench look at.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

LOOKBACK = 20
MAX_BREAKPOINTS = 4


@dataclass
class Usage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int


def blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's blocks in the order the API caches them."""
    out: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str):
        out.append({"type": "text", "text": system})
    elif system:
        out.extend(system)
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, str):
            out.append({"type": "text", "text": content, "role": m.get("role")})
        else:
            out.extend({**b, "role": m.get("role")} for b in content or [])
    return out


def _key(block: dict[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in block.items() if k != "cache_control"},
        sort_keys=True,
        separators=(",", ":"),
    )


def tokens(block: dict[str, Any]) -> int:
    return max(1, len(_key(block)) // 4)


@dataclass
class PromptCache:
    min_tokens: int = 1024
    entries: set[str] = field(default_factory=set)

    def breakpoints(self, body: dict[str, Any]) -> int:
        return sum("cache_control" in b for b in blocks(body))

    def use(self, body: dict[str, Any]) -> Usage:
        """Serve one request: what it read, wrote, and paid in full."""
        items = blocks(body)
        prefix_tokens: list[int] = []
        prefix_keys: list[str] = []
        digest = hashlib.sha256()
        total = 0
        for b in items:
            total += tokens(b)
            digest.update(_key(b).encode())
            prefix_tokens.append(total)
            prefix_keys.append(digest.copy().hexdigest())
        marks = [i for i, b in enumerate(items) if "cache_control" in b]
        read = 0
        for mark in marks:
            for j in range(mark, max(-1, mark - LOOKBACK), -1):
                if prefix_keys[j] in self.entries:
                    read = max(read, prefix_tokens[j])
                    break
        written = 0
        if marks and prefix_tokens[marks[-1]] >= self.min_tokens:
            written = max(0, prefix_tokens[marks[-1]] - read)
            for mark in marks:
                if prefix_tokens[mark] >= self.min_tokens:
                    self.entries.add(prefix_keys[mark])
        return Usage(total - read - written, written, read)
