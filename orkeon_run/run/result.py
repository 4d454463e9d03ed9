"""The models of the documents a run leaves: the result (result.json, `--output json`) and
the events (events.jsonl, `--output stream-json`). They exist to print and check their JSON
Schemas (`orkeon schema result|event`); the code that writes them builds plain dicts
(document.py's `result_document`; docs/output.md), so a run never imports this module
(docs/performance.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..vocabulary import (
    BudgetName,
    ErrorKind,
    RefusedBy,
    RoleStatus,
    StepStatus,
)
from .steps import STEPS

# The step names, from the step registry (its keys, in its order).
if TYPE_CHECKING:
    StepName = str
else:
    StepName = Literal[tuple(STEPS)]


# defer_build (pydantic's documented setting): a model's validator is built when its
# schema is first asked for (`orkeon schema`), not by every run that imports
# `result_document` (10 to 16 ms; docs/performance.md).
class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class AttemptBlock(_Doc):
    """What the last attempt of the run (the latest `--resume`) spent on its own."""

    used_seconds: float
    turns: int
    tokens_in: int
    tokens_out: int
    usd: float | None = Field(description="null when a model's price is unknown")


class Overshoot(_Doc):
    """How far answers in flight when a limit was reached took the run past it."""

    turns: int
    tokens: int
    usd: float


class BudgetBlock(_Doc):
    """What the whole run spent, every attempt of it (docs/output.md, "budget")."""

    limit_seconds: float | None
    used_seconds: float
    model_seconds: float
    tool_seconds: float
    hook_seconds: float
    turns: int
    tokens_in: int = Field(description="every input token, the prompt cache's included")
    tokens_out: int
    cache_read_tokens: int = Field(description="the part of tokens_in read from a prompt cache")
    cache_write_tokens: int = Field(description="the part of tokens_in written to a prompt cache")
    usd: float | None = Field(description="null when a model's price is unknown")
    exhausted: BudgetName | None
    attempts: int = Field(
        default=1, ge=1, description="the run's attempts: 1, and one more per --resume"
    )
    attempt: AttemptBlock | None = Field(
        default=None, description="what the last attempt spent on its own"
    )
    overshoot: Overshoot | None = Field(
        default=None,
        description="past the turn, token or cost limit by answers in flight (null: not past)",
    )


class AllRefused(_Doc):
    """Present when every call of the role was refused: the first refusal."""

    stage: RefusedBy | Literal["invalid"]
    text: str = Field(description="the first line of what the model read")


class RoleBudget(_Doc):
    """What one role spent, present when the budget has `per_role` limits."""

    used_seconds: float
    turns: int
    tokens: int = Field(description="input plus output")
    usd: float | None
    exhausted: BudgetName | None = Field(description="the role's own limit that stopped it")


class Silent(_Doc):
    """What the no-progress watchdog (`budget.idle_seconds`) found silent."""

    kind: Literal["provider", "tool", "hook", "mcp"]
    name: str = Field(description="the provider and model, the tool, the hook, the MCP server")
    command: str | None = Field(description="the tool's command, the hook's, the MCP tool")
    seconds: float = Field(description="how long it was silent: budget.idle_seconds")


class RoleRecord(_Doc):
    name: str
    status: RoleStatus
    turns: int
    calls: int
    refused: int
    error: str | None = None
    error_kind: Literal["provider"] | None = Field(
        default=None, description="provider: the role failed because its model provider did"
    )
    all_refused: AllRefused | None = None
    budget: RoleBudget | None = None
    idle: Silent | None = Field(default=None, description="the watchdog ended the role")
    stop_blocks_capped: int | None = Field(
        default=None,
        description="the role finished when Stop hooks had blocked this many times in a row "
        "(budget.stop_blocks)",
    )


class AuditRecord(_Doc):
    batch: str
    passed: bool
    changed: int | None = Field(
        default=None,
        description="files the batch changed (0: none); null when the audit could not tell",
    )
    outside_roots: list[str]
    failed_command: list[str] | None
    output_tail: str


class ErrorInfo(_Doc):
    kind: ErrorKind
    message: str = Field(description="why, in one line (plan problems: several lines)")


class NetworkBlock(_Doc):
    refused: int = Field(
        description="hosts shell.network's allow-list refused, once per command and host "
        "(each a network.refused event); a pipeline's: its steps' together"
    )


class Finding(_Doc):
    path: str = Field(description="workspace-relative, a file of the change")
    line: int = Field(ge=1, description="a line of the change's new side")
    end_line: int | None = Field(default=None, ge=1)
    severity: Literal["error", "warning", "notice"]
    message: str
    suggestion: str | None = Field(
        default=None, description="the lines path:line..end_line should read instead"
    )


class CheckRecord(_Doc):
    name: str
    verdict: Literal["pass", "fail", "error"] = Field(
        description="error: the check was never answered validly (never counted a pass)"
    )
    summary: str
    findings: list[Finding]


class PatchBlock(_Doc):
    path: str = Field(description='the patch file, absolute (docs/output.md, "The patch")')
    base: str = Field(description="the commit the patch is made against")
    files: int = Field(description="the files it changes")
    sha256: str = Field(description="the SHA-256 of its patch part (the manifest's patch_sha256)")


class Result(_Doc):
    """The result document: result.json, `--output json`, the last stream-json line."""

    schema_version: int = Field(description="the shape of this document (docs/output.md)")
    run_id: str
    step: StepName
    status: StepStatus
    exit_code: Literal[0, 1, 3, 4, 130]
    budget: BudgetBlock
    roles: list[RoleRecord]
    artifacts: dict[str, str]
    audits: list[AuditRecord]
    error: ErrorInfo | None
    sandbox: Literal["on", "off", "unavailable"] = Field(
        description='the shell sandbox: on; off ("shell": {"sandbox": "off"}: '
        "unconfined); unavailable (no sandbox could be made here: shell calls were refused)"
    )
    network: NetworkBlock
    bare: bool = Field(
        default=False,
        description="a hermetic run (--bare, ORKEON_BARE=1): no configuration was read but "
        "what the inputs name (no user folder, no workspace settings, .mcp.json, crews, "
        "review checks, instruction files, trust records; docs/inputs.md)",
    )
    mcp_sandbox: dict[str, Literal["on", "off", "unavailable"]] | None = Field(
        default=None,
        description="runs with stdio MCP servers only: each one's confinement: on (in the "
        'roles\' sandbox); off (its "sandbox": "off", or the shell sandbox\'s: unconfined); '
        "unavailable (no sandbox could be made here: it did not start)",
    )
    steps: list[StepRecord] | None = Field(
        default=None, description="pipeline only: every step it ran, in order"
    )
    output: Any = Field(
        default=None,
        description="task only: the final answer, valid against output_schema (null: none)",
    )
    checks: list[CheckRecord] | None = Field(
        default=None, description="review only: each check's verdict, in order"
    )
    patch: PatchBlock | None = Field(
        default=None, description="--patch only: the patch file written (none on failure)"
    )
    pinned_changed: list[str] | None = Field(
        default=None,
        description="the files pinned at run start (hook and MCP server scripts, settings, "
        "crews, .mcp.json) whose content changed during the run: hooks whose file changed "
        "were not run (docs/security.md)",
    )


class StepRecord(Result):
    """One step a pipeline ran: its result document, its name and its run directory."""

    name: str = Field(description="dev-spec, dev-plan, dev-batches, tasks-repair-N")
    run_dir: str = Field(description="relative to the pipeline's run directory")


Result.model_rebuild()


class HookRecord(_Doc):
    n: int | None
    event: str
    command: str
    exit_code: int | None
    seconds: float
    timed_out: bool
    first_line: str


class ToolCallEvent(_Doc):
    type: Literal["tool.call"]
    ts: float
    schema_version: int
    step: str
    batch: str | None
    role: str
    seq: int
    tool: str
    input: dict[str, Any]
    outcome: Literal["ran", "refused"]
    refused_by: RefusedBy | None
    result: Any = Field(description="exactly what the model read")
    hooks: list[HookRecord]
    tool_seconds: float
    hook_seconds: float


class NetworkRefusedEvent(_Doc):
    """A host shell.network's allow-list refused (docs/output.md, "Events")."""

    type: Literal["network.refused"]
    ts: float
    schema_version: int
    step: str
    command: str = Field(description="the sandboxed command that asked for it")
    host: str = Field(description="the host name it asked for, in lower case")
    port: int


class OtherEvent(BaseModel):
    """Every other event: `type` and `ts`, then fields of its own (docs/output.md, "Events")."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    type: str
    ts: float
    schema_version: int


class Event(BaseModel):
    """One line of events.jsonl."""

    model_config = ConfigDict(defer_build=True)

    event: ToolCallEvent | NetworkRefusedEvent | OtherEvent
