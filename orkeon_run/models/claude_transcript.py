"""A role's conversation in Claude Code's transcript shape, for settings-shape hooks.

Hooks written for Claude Code read the file their `transcript_path` names: `jq` over the
lines whose `type` is `assistant` for the model's last words (a Stop hook that keeps the
model going until it prints a promise), `tool_use` blocks for what it ran. orkeon's own
transcript (transcript.py) has its own shape, so a role that has settings-shape hooks also
gets this file, `RUN_DIR/claude-transcripts/ROLE.jsonl`, written as the conversation
grows: each line is one `os.write` on an `O_APPEND` descriptor, so a hook started after a
message joined the conversation reads it (nothing is buffered). A line the disk cut short
is taken back (jsonio.append_line), and the run's secrets are redacted, as in orkeon's
own transcript.

One JSON object a line, compact (`"role":"assistant"` greps as it does in Claude Code's):

    {"parentUuid": null | UUID, "isSidechain": false, "userType": "external", "cwd": WS,
     "sessionId": SESSION, "version": ORKEON_VERSION, "type": "user" | "assistant",
     "message": {...}, "uuid": UUID, "timestamp": "2025-01-01T12:00:00.000Z"}

- a prompt (the task, a repair message, a Stop hook's keep-going message): `type` user,
  `message` `{"role": "user", "content": TEXT}` (a string, as Claude Code writes a prompt);
- a model answer: `type` assistant, `message` `{"id", "type": "message", "role":
  "assistant", "model", "content": [{"type": "text", "text"}, {"type": "tool_use", "id",
  "name", "input"}…], "stop_reason": "end_turn" | "tool_use", "stop_sequence": null,
  "usage": {"input_tokens", "output_tokens"}}`, one line per answer; `name` is Claude
  Code's name of the tool (`Bash`, `Write`, …) and `input` the call as the model wrote it;
- a tool result: `type` user, `message` `{"role": "user", "content": [{"type":
  "tool_result", "tool_use_id", "content": TEXT, "is_error"}]}`, TEXT exactly what the
  model read;
- a compaction: `{"type": "system", "subtype": "compact_boundary", "content":
  "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens"}, …}` with
  `parentUuid` null and `logicalParentUuid` the line before. The lines before it stay (the
  file keeps every message as first sent, like orkeon's own transcript).

The system prompt is not written (Claude Code's transcript holds none). On `--resume` the
file is written again, whole, from the conversation orkeon's transcript holds, so it
always matches what the model was sent.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..catalog import claude_name
from ..environ import Redactor
from ..errors import RecordsError
from ..jsonio import append_line, utf8_line
from .base import Message

# jsonio.dumps's settings, in one encoder made once (a line's largest cost is encoding).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
dumps = _ENCODER.encode

_second: list[Any] = [-1, ""]  # the last whole second formatted, and its text


def _now() -> str:
    """`2026-11-30T07:41:34.548Z`, the second's part formatted once a second."""
    t = time.time()
    s = int(t)
    if s != _second[0]:
        _second[:] = [s, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s))]
    return f"{_second[1]}.{int((t - s) * 1000):03d}Z"


class _Ids:
    """UUIDs (version 4 in form) for the lines of one file: 80 random bits drawn once,
    then a counter, so an id costs a format, not a draw from the OS and a `uuid.UUID`
    (together most of a line's cost)."""

    def __init__(self) -> None:
        h = os.urandom(12).hex()
        self._prefix = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-"
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n:012x}"


class ClaudeTranscript:
    def __init__(
        self,
        path: Path,
        *,
        session_id: str,
        cwd: str,
        version: str,
        redactor: Redactor | None = None,
    ) -> None:
        """`redactor`: the run's secrets, redacted from every line (environ.Redactor)."""
        self.path = path
        self.redactor = redactor if redactor else None
        self._common = {
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": version,
        }
        # The same in every line: encoded once (the body of `_common`, without braces).
        self._common_json = dumps(self._common)[1:-1]
        self._fd: int | None = None
        self._last: str | None = None
        self._ids = _Ids()

    def start(self, messages: list[Message]) -> None:
        """(Re)create the file with `messages` (a resumed conversation; none for a new one),
        so that it exists, empty or not, before the first hook runs."""
        self.close()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
            self._fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise RecordsError.writing(self.path, exc) from None
        self._last = None
        self._ids = _Ids()
        lines = [line for m in messages if (line := self._line(m)) is not None]
        if lines:
            self._write(b"".join(lines))

    def add(self, message: Message, usage: dict[str, int] | None = None, model: str = "") -> None:
        line = self._line(message, usage, model)
        if line is not None:
            self._write(line)

    def compacted(self, pre_tokens: int, trigger: str = "auto") -> None:
        record = {
            "parentUuid": None,
            "logicalParentUuid": self._last,
            **self._common,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "level": "info",
            "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
        }
        self._write(self._record(record))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # --- lines -------------------------------------------------------------------------

    def _write(self, line: bytes) -> None:
        """Whole lines or nothing (jsonio.append_line), secrets redacted; RecordsError when
        the disk refuses."""
        if self._fd is None:
            self.start([])
        assert self._fd is not None
        if self.redactor is not None:
            text = line.decode("utf-8")
            redacted = self.redactor.json_text(text)
            if redacted is not text:
                line = redacted.encode("utf-8")
        try:
            append_line(self._fd, line)
        except OSError as exc:
            raise RecordsError.writing(self.path, exc) from None

    def _record(self, record: dict[str, Any]) -> bytes:
        self._last = record["uuid"] = self._ids.next()
        record["timestamp"] = _now()
        return utf8_line(dumps(record) + "\n")

    def _line(
        self, m: Message, usage: dict[str, int] | None = None, model: str = ""
    ) -> bytes | None:
        if m.role == "system":
            return None
        kind = "assistant" if m.role == "assistant" else "user"
        parent = "null" if self._last is None else f'"{self._last}"'
        self._last = uid = self._ids.next()
        message = dumps(self._message(m, usage, model))
        return utf8_line(
            f'{{"parentUuid":{parent},{self._common_json},"type":"{kind}","message":{message},'
            f'"uuid":"{uid}","timestamp":"{_now()}"}}\n'
        )

    def _message(self, m: Message, usage: dict[str, int] | None, model: str) -> dict[str, Any]:
        if m.role == "user":
            return {"role": "user", "content": m.content}
        if m.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.content,
                "is_error": m.is_error,
            }
            return {"role": "user", "content": [result]}
        blocks: list[dict[str, Any]] = []
        if m.content or not m.tool_calls:
            blocks.append({"type": "text", "text": m.content})
        blocks += [
            {"type": "tool_use", "id": c.id, "name": claude_name(c.name), "input": c.input}
            for c in m.tool_calls
        ]
        return {
            "id": f"msg_{self._ids.next().replace('-', '')}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": "tool_use" if m.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": dict(usage or {"input_tokens": 0, "output_tokens": 0}),
        }


__all__ = ["ClaudeTranscript"]
