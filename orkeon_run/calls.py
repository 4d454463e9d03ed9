"""The data that crosses the pipeline: one call's context, the call once checked, its hook
runs, its outcome.

Shared by the pipeline (pipeline.py), native hooks (hooks/native.py) and settings-shape
hooks (hooks/settings.py), so none of them imports another's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .catalog import Tool, ToolInput
from .vocabulary import RefusedBy, spent_text

if TYPE_CHECKING:
    from .ledger import Ledger


@dataclass(frozen=True)
class CallContext:
    """Who is calling: the step, the role (full name `BATCH/ROLE` for a batch role) and
    the role's roots (None = no roots: the role may write anywhere its rule sets allow)."""

    step: str
    role: str
    workspace: Path
    batch: str | None = None
    roots: tuple[str, ...] | None = None
    session_id: str = ""
    transcript_path: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A stage's refusal: who refused (None when the call was not one the pipeline could
    run: an unknown tool, a bad input) and the text the model reads."""

    by: RefusedBy | None
    text: str


def budget_refusal(ledger: Ledger) -> Refusal:
    """The budget stops this call: recorded in the ledger as the exhausted budget;
    `[refused: the step's time budget is spent]` (turn, token, cost likewise)."""
    return Refusal("budget", f"[refused: {spent_text(ledger.refuse() or 'seconds')}]")


@dataclass(frozen=True, slots=True)
class CheckedCall:
    """A call whose input passed its tool's check (`catalog.Tool.parse`), with its path
    resolved once: the gate, the rule sets, the roots and the tool itself all use this
    one resolution, so what was checked is what gets touched.

    `raw_path` is the path argument as written (None when the tool has none or the call
    leaves it out). `path` is where it resolved inside the workspace (the workspace itself
    when an optional path is left out), None for a tool without a path and for a path
    that resolves outside the workspace (`outside`), which a later stage refuses."""

    tool: Tool
    input: dict[str, Any]  # as the model (or a hook's rewrite) wrote it
    args: ToolInput
    raw_path: str | None = None
    path: Path | None = None
    outside: bool = False

    @property
    def name(self) -> str:
        return self.tool.name


@dataclass
class HookRun:
    """One hook run, as listed in a `tool.call` event's `hooks`."""

    n: int | None  # native hook number; None for settings-shape hooks
    event: str  # pre-tool | post-tool | PreToolUse | PostToolUse | ...
    command: str
    exit_code: int | None
    seconds: float
    timed_out: bool
    first_line: str

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "event": self.event,
            "command": self.command,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 6),
            "timed_out": self.timed_out,
            "first_line": self.first_line,
        }


@dataclass
class CallOutcome:
    """What one call came to. `result` is exactly what the model read: the tool's
    structured value when nothing was added, else text."""

    tool: str
    input: dict[str, Any]
    outcome: Literal["ran", "refused"]
    refused_by: RefusedBy | None
    result: Any
    hooks: list[HookRun] = field(default_factory=list)
    tool_seconds: float = 0.0
    hook_seconds: float = 0.0
    # A settings-shape hook answered `continue: false`: the role stops after this call.
    stop_role: bool = False
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The result as the model reads it in a tool-result message."""
        return result_text(self.result)


def result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    import json

    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
