"""The data that crosses the pipeline: one call's context (with the catalog of the tools
the calling role may call), the call once checked, its hook runs, its outcome.

Shared by the pipeline (pipeline.py), native hooks (hooks/native.py) and settings-shape
hooks (hooks/claude/), so none of them imports another's internals.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .catalog import TOOLS, Tool, ToolInput, ToolSpec, canonical
from .vocabulary import RefusedBy

if TYPE_CHECKING:
    from .ledger import Ledger


# --- the tools of one role -----------------------------------------------------------

# Why the tool named cannot run here now, or None: the text its calls are refused with.
Unavailable = Callable[[str], str | None]


class Catalog:
    """The tools one role may call: every built-in (`TOOLS`) and the entries the run added
    for that role (`catalog.declared_tool`: the MCP tools its crew entries selected).

    `unavailable(name)` is the one seam for a tool that cannot run here now (a tool of an
    MCP server that is not running, listed or not): the pipeline refuses such a call at its
    stage 2 with that text, refused_by null, before the gate and the hooks. Each check the
    run hands in is asked in turn; the first text counts."""

    __slots__ = ("_added", "_checks")

    def __init__(self, added: Iterable[Tool] = (), checks: Sequence[Unavailable] = ()) -> None:
        self._added = {t.name: t for t in added}
        taken = sorted(n for n in self._added if canonical(n) is not None)
        if taken:
            raise ValueError(f"tool names taken by built-in tools: {', '.join(taken)}")
        self._checks = tuple(checks)

    def get(self, name: str) -> Tool | None:
        return TOOLS.get(name) or self._added.get(name)

    @property
    def added(self) -> tuple[Tool, ...]:
        return tuple(self._added.values())

    def unavailable(self, name: str) -> str | None:
        for check in self._checks:
            text = check(name)
            if text is not None:
                return text
        return None

    def with_check(self, check: Unavailable) -> Catalog:
        """This catalog with `check` asked before its own (the run's: the shell where no
        sandbox can be made here)."""
        return Catalog(self._added.values(), (check, *self._checks))

    def only(self, names: Iterable[str], checks: Sequence[Unavailable] | None = None) -> Catalog:
        """The built-ins and the added entries `names` (one role's), with `checks` (default:
        this catalog's)."""
        wanted = set(names)
        kept = [t for t in self._added.values() if t.name in wanted]
        return Catalog(kept, self._checks if checks is None else checks)

    def specs(self, names: Iterable[str]) -> list[ToolSpec]:
        """What the model is offered for `names`, in that order; ValueError for a name this
        catalog does not hold."""
        found = [(n, self.get(n)) for n in names]
        unknown = [n for n, t in found if t is None]
        if unknown:
            raise ValueError(f"unknown tools: {', '.join(unknown)}")
        return [t.spec for _, t in found if t is not None]


BUILTINS = Catalog()


@dataclass(frozen=True)
class CallContext:
    """Who is calling: the step, the role (full name `BATCH/ROLE` for a batch role), the
    role's roots (None = no roots: the role may write anywhere its rule sets allow) and the
    tools it may call (`catalog`: the built-ins, plus the MCP tools its crew gave it)."""

    step: str
    role: str
    workspace: Path
    batch: str | None = None
    roots: tuple[str, ...] | None = None
    session_id: str = ""
    transcript_path: str = ""
    catalog: Catalog = field(default=BUILTINS, compare=False)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A stage's refusal: who refused (None when the call was not one the pipeline could
    run: an unknown tool, a bad input) and the text the model reads."""

    by: RefusedBy | None
    text: str


def budget_refusal(ledger: Ledger) -> Refusal:
    """The budget stops this call: recorded in the ledger as the exhausted budget;
    `[refused: the step's time budget is spent]` (turn, token, cost likewise; `the
    role's …` for a role's own limit, `budget.per_role`)."""
    ledger.refuse()
    return Refusal("budget", f"[refused: {ledger.refusal_text()}]")


@dataclass(frozen=True, slots=True)
class CheckedCall:
    """A call whose input passed its tool's check (`catalog.Tool.parse`), with its path
    resolved once: the gate, the rule sets, the roots and the tool itself all use this
    one resolution, so what was checked is what gets touched.

    `raw_path` is the path argument as written (None when the tool has none or the call
    leaves it out). `path` is where it resolved inside the workspace (the workspace itself
    when an optional path is left out), None for a tool without a path and for a path
    that resolves outside the workspace (`outside`), which a later stage refuses.

    `words`: for a tool with a command field (`Tool.command_field`: the shell), the
    command split into one program and its arguments, once (policy/words.split_command):
    the rule patterns, the program checks, the hooks and the tool all read these words,
    never the command split again, so what was judged is what runs. None for another tool,
    and for a command that cannot be split (`unsplit` says why; the tool answers with it)."""

    tool: Tool
    input: dict[str, Any]  # as the model (or a hook's rewrite) wrote it
    args: ToolInput
    raw_path: str | None = None
    path: Path | None = None
    outside: bool = False
    words: tuple[str, ...] | None = None
    unsplit: str | None = None

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def command(self) -> str | None:
        """The command line as written (the tool's command field), or None."""
        field = self.tool.command_field
        value = getattr(self.args, field, None) if field is not None else None
        return value if isinstance(value, str) else None


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
    # A settings-shape prompt hook's model answer (tokens_in, tokens_out, usd); None: none.
    usage: dict[str, Any] | None = None
    # An `async: true` settings-shape hook (it ran in the background, deciding nothing).
    background: bool = False

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "n": self.n,
            "event": self.event,
            "command": self.command,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 6),
            "timed_out": self.timed_out,
            "first_line": self.first_line,
        }
        if self.usage is not None:
            d["usage"] = self.usage
        if self.background:
            d["async"] = True
        return d


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

    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
