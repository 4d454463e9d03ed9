"""The plain view of one run that every report format reads (`load.py` builds it).

All strings here are as the run recorded them: hostile text, to be escaped by whoever
writes it out. Times are Unix seconds (floats); durations are seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from .changes import BatchChanges, TurnText

PRE_EVENTS = ("pre-tool", "PreToolUse")


def num(value: Any) -> float:
    """A JSON number as a float; anything else (a string, null, a bool) is 0."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0


def text(value: Any) -> str:
    """A JSON value as text: a string as it is, None as "", anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def call_target(inp: dict[str, Any]) -> str:
    """What a call acts on, as the model wrote it: a path, a pattern or a command."""
    for key in ("file_path", "path", "pattern", "command", "url"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


@dataclass
class HookView:
    """One hook run: of a call (`call` is the call's index) or outside calls (`hook.run`)."""

    role: str
    call: int | None
    ts: float
    n: int | None
    event: str
    command: str
    exit_code: int | None
    seconds: float
    timed_out: bool
    first_line: str
    # passed | refused (this hook refused the call) | blocked (a settings-shape hook's exit
    # 2 outside a refusal: feedback, a blocked prompt, "keep going") | failed (non-zero,
    # timed out or could not run, without deciding anything: the run went on)
    decision: str = "passed"


def hook_decision(hook: HookView, refusal: str | None) -> str:
    """What the hook came to. `refusal` is the text of a call the hooks refused."""
    if refusal is not None and hook.event in PRE_EVENTS:
        if hook.n is not None and f"[{hook.event} hook #{hook.n} (" in refusal:
            return "refused"
        if hook.n is None and refusal.startswith(f"[{hook.event} hook ({hook.command})"):
            return "refused"
    if hook.n is None and hook.exit_code == 2:
        return "blocked"
    if hook.timed_out or hook.exit_code != 0:
        return "failed"
    return "passed"


@dataclass
class CallView:
    """One `tool.call` event. `result` is the text the model read."""

    index: int  # 1-based over the whole run directory
    attempt: int
    ts: float  # when it ended
    started: float
    step: str
    batch: str | None
    role: str
    seq: int
    tool: str
    input: dict[str, Any]
    target: str
    outcome: str  # ran | refused
    refused_by: str | None
    result: str
    tool_seconds: float
    hook_seconds: float
    hooks: list[HookView] = field(default_factory=list)

    @property
    def stage(self) -> str | None:
        """The refusing stage; `invalid` for a refused call no stage refused (unknown
        tool, missing field)."""
        if self.outcome != "refused":
            return None
        return self.refused_by or "invalid"


@dataclass
class RoleView:
    name: str
    step: str = ""
    batch: str | None = None
    status: str = ""
    error: str = ""
    turns: int = 0
    calls: int = 0
    refused: int = 0
    refused_by: dict[str, int] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float | None = 0.0  # None: a model's price is unknown
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    hook_seconds: float = 0.0
    compactions: int = 0
    first: float | None = None  # when its first model request began
    last: float | None = None  # its last event
    # Working counts: from the events, and from the result/state (used when no event is left).
    turns_seen: int = 0
    calls_seen: int = 0
    refused_seen: int = 0
    turns_recorded: int = 0
    calls_recorded: int = 0
    refused_recorded: int = 0
    answered: bool = False

    def span(self, start: float, end: float) -> None:
        """Widen the role's time on the timeline to cover `start` to `end`."""
        self.first = start if self.first is None else min(self.first, start)
        self.last = end if self.last is None else max(self.last, end)

    @property
    def seconds(self) -> float:
        """Time charged to the budget: model answers, tools, hooks."""
        return self.model_seconds + self.tool_seconds + self.hook_seconds

    def finish(self) -> None:
        seen = self.turns_seen or self.calls_seen
        self.turns = self.turns_seen if seen else self.turns_recorded
        self.calls = self.calls_seen if seen else self.calls_recorded
        self.refused = self.refused_seen if seen else self.refused_recorded
        if not self.status:
            self.status = "not_started" if not seen else "unfinished"

    def to_json(self) -> dict[str, Any]:
        keep = ("name", "step", "batch", "status", "error", "turns", "calls", "refused",
                "refused_by", "tokens_in", "tokens_out", "usd", "model_seconds",
                "tool_seconds", "hook_seconds", "compactions", "first", "last")  # fmt: skip
        data = {k: getattr(self, k) for k in keep}
        data["seconds"] = self.seconds
        return data


@dataclass
class AuditView:
    batch: str
    attempt: int
    ts: float | None
    passed: bool
    outside_roots: list[str]
    failed_command: list[str] | None
    output_tail: str

    @property
    def what_failed(self) -> str:
        """One line: what made the audit fail ("" when it passed)."""
        if self.passed:
            return ""
        if self.outside_roots:
            more = len(self.outside_roots) - 1
            return f"changed outside the roots: {self.outside_roots[0]}" + (
                f" and {more} more" if more else ""
            )
        if self.failed_command:
            return f"failed: {' '.join(self.failed_command)}"
        return "failed"


@dataclass
class BatchView:
    name: str
    attempt: int
    roles: list[str] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None
    passed: bool | None = None  # None: no batch.end (cut off, or still running)
    skipped: bool = False  # passed in an earlier attempt, not run again


@dataclass
class BudgetPoint:
    """What the last attempt had spent at `ts`."""

    ts: float
    seconds: float
    turns: int
    tokens: int
    usd: float | None


@dataclass
class StepView:
    """One step a pipeline ran, from its record in the pipeline's result (`steps`)."""

    name: str
    status: str
    exit_code: int | None
    run_dir: str  # relative to the pipeline's run directory
    error: str | None = None
    roles: int = 0
    calls: int = 0
    refused: int = 0
    seconds: float = 0.0


@dataclass
class RunView:
    run_dir: str
    run_id: str = ""
    step: str = ""
    # succeeded | failed | budget_exhausted | interrupted | error | unfinished (no result)
    status: str = "unfinished"
    exit_code: int | None = None
    error: str | None = None
    error_kind: str | None = None
    finished: bool = False
    attempts: int = 0
    workspace: str = ""
    started: float | None = None
    ended: float | None = None
    budget: dict[str, Any] = field(default_factory=dict)  # the result's, or counted
    limits: dict[str, float] = field(default_factory=dict)  # seconds, turns, tokens, usd
    budget_points: list[BudgetPoint] = field(default_factory=list)  # the last attempt's
    artifacts: dict[str, str] = field(default_factory=dict)
    roles: list[RoleView] = field(default_factory=list)
    batches: list[BatchView] = field(default_factory=list)
    calls: list[CallView] = field(default_factory=list)
    hooks: list[HookView] = field(default_factory=list)  # hook.run events (outside calls)
    audits: list[AuditView] = field(default_factory=list)
    plan_checks: list[dict[str, Any]] = field(default_factory=list)
    # network.refused events: {"command", "host", "port"} (docs/output.md)
    network_refused: list[dict[str, Any]] = field(default_factory=list)
    steps: list[StepView] = field(default_factory=list)  # a pipeline's, in order
    checks: list[dict[str, Any]] = field(default_factory=list)  # a review's (report/checks.py)
    changes: list[BatchChanges] = field(default_factory=list)  # each batch's, in order
    texts: list[TurnText] = field(default_factory=list)  # the model's own words per turn
    problems: list[str] = field(default_factory=list)  # what could not be read

    @property
    def refused_calls(self) -> list[CallView]:
        return [c for c in self.calls if c.outcome == "refused"]

    @property
    def failed_hooks(self) -> list[HookView]:
        """Hooks that failed without refusing a call (a refusing hook is in its call)."""
        in_calls = [h for c in self.calls for h in c.hooks]
        return [h for h in in_calls + self.hooks if h.decision == "failed"]

    @property
    def failed_audits(self) -> list[AuditView]:
        return [a for a in self.audits if not a.passed]

    def to_json(self) -> dict[str, Any]:
        data = plain(self)
        data["changes"] = [b.to_json() for b in self.changes]
        data["roles"] = [r.to_json() for r in self.roles]
        for call, raw in zip(self.calls, data["calls"], strict=True):
            raw["stage"] = call.stage
        return data


def plain(obj: Any) -> Any:
    """Dataclasses as dicts, all the way down. Unlike `dataclasses.asdict` it copies no
    other value (a call's input is the event's own dict): 3x faster on 10,000 calls."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return obj
