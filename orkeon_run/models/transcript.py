"""Transcripts: `transcripts/ROLE.jsonl`, one line per message a role's model was sent or
answered (docs/output.md, "transcripts/ROLE.jsonl").

A line is `Message.to_json()` plus `ts`, `agent` (the role's full name) and `direction`:
`"sent"` (system, user and tool messages, written when they join the conversation, so
before the request that carries them) or `"received"` (the model's answers, with `usage`).
A `"compacted"` line records a compaction (what the model was sent from then on is the
shortened form, some old exchanges perhaps removed; the transcript keeps every message in
full, as first sent). Each line is one `write()` on an
`O_APPEND` descriptor, so a killed run leaves every finished line whole; a line the disk
cut short is taken back (`jsonio.append_line`). Secrets are redacted from every line.

The agent loop writes transcripts; `load_conversation` reloads one on resume, and
`replay_script` turns one (or a directory of them) into a scripted-model script.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..environ import Redactor
from ..errors import RecordsError
from ..jsonio import append_line, utf8_line
from .base import Message

if TYPE_CHECKING:
    from .claude_transcript import ClaudeTranscript

Direction = Literal["sent", "received"]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


class TranscriptWriter:
    """Appends a role's lines, each whole or not at all (`jsonio.append_line`), secrets
    redacted (`redactor`); a line the disk cannot take raises RecordsError. `mirror`, when
    given, gets every message and compaction too, in Claude Code's shape
    (claude_transcript.py: the file settings-shape hooks read)."""

    def __init__(
        self,
        path: Path,
        agent: str,
        mirror: ClaudeTranscript | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.path = path
        self.agent = agent
        self.mirror = mirror
        self.redactor = redactor if redactor else None
        self._fd: int | None = None

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def _write(self, line: dict[str, Any]) -> None:
        text = _dumps(line)
        if self.redactor is not None:
            text = self.redactor.json_text(text)
        try:
            append_line(self._open(), utf8_line(text + "\n"))
        except OSError as exc:
            raise RecordsError.writing(self.path, exc) from None

    def message(
        self, direction: Direction, message: Message, *, model: str = "", **extra: Any
    ) -> Message:
        """Record `message`; return it as recorded: a user message (a task, a hook's
        context, a repair message) with the run's secrets redacted, which is what the model
        is then sent. `model`, the model's name, goes to the mirror only."""
        if self.redactor is not None and message.role == "user":
            content = self.redactor.text(message.content)
            if content is not message.content:
                message = replace(message, content=content)
        line = {"ts": round(time.time(), 6), "agent": self.agent, "direction": direction}
        line.update(message.to_json())
        line.update(extra)
        self._write(line)
        if self.mirror is not None:
            self.mirror.add(message, extra.get("usage"), model)
        return message

    def note(self, direction: str, **fields: Any) -> None:
        self._write(
            {"ts": round(time.time(), 6), "agent": self.agent, "direction": direction, **fields}
        )
        if self.mirror is not None and direction == "compacted":
            self.mirror.compacted(int(fields.get("tokens_before") or 0))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.mirror is not None:
            self.mirror.close()


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The transcript's lines; a torn last line (a killed run) is skipped."""
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                out.append(line)
    return out


def load_conversation(path: Path) -> list[Message]:
    """The conversation a transcript recorded, every message as first sent (before any
    compaction: the agent compacts it again as needed)."""
    return [
        Message.from_json(line)
        for line in read_lines(path)
        if line.get("direction") in ("sent", "received") and "role" in line
    ]


def replay_script(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A script (docs/inputs.md) that replays the model answers recorded in `path`.

    A file replays the role it recorded (its lines' `agent`; the file name without
    `.jsonl` when the lines carry none). A directory (a run's `transcripts/`) replays every
    role found under it. Each recorded answer becomes one entry with the same text and the
    same tool calls, ids included, except a call whose arguments could not be read (it
    never ran); the recorded usage is not replayed (a replay costs nothing).
    """
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    script: dict[str, list[dict[str, Any]]] = {}
    for file in files:
        default = file.relative_to(path).with_suffix("").as_posix() if path.is_dir() else file.stem
        for line in read_lines(file):
            if line.get("direction") != "received":
                continue
            agent = str(line.get("agent") or default)
            entry: dict[str, Any] = {"text": line.get("content", "")}
            entry["tool_calls"] = [
                {"tool": c["name"], "input": c.get("input", {}), "id": c.get("id")}
                for c in line.get("tool_calls", [])
                if "error" not in c  # unreadable arguments: never run, nothing to replay
            ]
            script.setdefault(agent, []).append(entry)
    return script
