"""What the steps share: starting a role's agent from the crew, and turning role results
and the ledger into the step's outcome. Cancellation (SIGINT/SIGTERM) is never caught: it
passes through to the runner, which records "interrupted".

Why a step did not succeed (`finish`, the result's `error.kind`; docs/output.md, "Exit
codes"), the first that holds:

1. the step's budget is spent: `budget_exhausted`, kind `budget` (exit 3);
2. a role failed by its own doing (a hook stopped it, its answers were cut, it crashed):
   `failed`, kind `role` (exit 1): the work is known broken, whatever else happened;
3. a role reached its own limit (`budget.per_role`): `budget_exhausted`, kind `budget`;
4. a role failed because its model provider did: `failed`, kind `provider` (exit 4), also
   when the audit of its batch failed: that audit judged work the provider cut short, and
   a `--resume` later runs the batch again;
5. the step's own finding: the audit failed (kind `audit`), the writer wrote no spec or the
   plan stayed invalid (kind `role`): `failed` (exit 1).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...calls import CallContext
from ...config.crews import Crew
from ...errors import Interrupted, RecordsError
from ...vocabulary import ErrorKind, spent_text
from ..context import StepOutcome, StepRun, StepStatus

if TYPE_CHECKING:
    from ...agent.loop import Agent, RoleResult
    from ...pipeline import Pipeline

# How long closing an agent (its SessionEnd hooks) may take once the step is cancelled.
CLOSE_GRACE = 15.0


class StepError(Exception):
    """A problem a step reports as its result (status "error") instead of raising."""


class SavedRole:
    """A role result of an earlier attempt of this run, as recorded in state.json."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = dict(record)
        self.name: str = record["name"]
        self.status: str = record["status"]
        self.error: str | None = record.get("error")
        self.error_kind: str | None = record.get("error_kind")

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)


def crew_of(sr: StepRun) -> Crew:
    """The step's crew, loaded and checked when the run was prepared."""
    assert sr.config.crew is not None  # a step's run is always prepared with its crew
    return sr.config.crew


def role_context(
    sr: StepRun, role: str, *, batch: str | None = None, roots: Sequence[str] | None = None
) -> CallContext:
    """The role's context. Its session, for settings-shape hooks: `session_id` a UUID made
    from the run and the role (the same on --resume; hook scripts put it in file names,
    where the run id's and role's `/` would not go), `transcript_path` the role's
    conversation in Claude Code's shape."""
    return CallContext(
        step=sr.step,
        role=role,
        workspace=sr.workspace,
        batch=batch,
        roots=tuple(roots) if roots is not None else None,
        session_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"orkeon:{sr.run_id}/{role}")),
        transcript_path=str(sr.claude_transcript_path(role)),
    )


@asynccontextmanager
async def role_agent(
    sr: StepRun,
    crew: Crew,
    template: str,
    ctx: CallContext,
    pipeline: Pipeline,
    variables: Mapping[str, str] | None = None,
    *,
    resume: bool = False,
    answer_schema: Any = None,
) -> AsyncIterator[Agent]:
    """The agent of one role, built from the crew role `template`, with the tools its
    entries give (the MCP tools among them in `ctx`'s catalog); closed on the way out
    (also when the step is cancelled, within CLOSE_GRACE seconds)."""
    import anyio

    from ...agent.loop import Agent, RoleSpec

    claude = None
    if sr.config.settings_hooks:
        from ... import __version__
        from ...models.claude_transcript import ClaudeTranscript

        claude = ClaudeTranscript(
            sr.claude_transcript_path(ctx.role),
            session_id=ctx.session_id,
            cwd=str(sr.workspace),
            version=__version__,
            redactor=sr.events.redactor,
        )
    crew_role = crew.role(template)
    tools, catalog = sr.role_tools(crew_role.tools)
    ctx = replace(ctx, catalog=catalog)
    spec = RoleSpec(
        name=ctx.role,
        system_prompt=crew.system_prompt(template, variables),
        tools=tools,
        ctx=ctx,
        answer_schema=answer_schema,
    )
    agent = Agent(
        spec,
        provider=sr.provider,
        pipeline=pipeline,
        hooks=pipeline.hooks,
        ledger=sr.ledger,
        events=sr.events,
        transcript_path=sr.transcript_path(ctx.role),
        resume=resume,
        claude_transcript=claude,
    )
    sr.agents[ctx.role] = agent
    sr.events.emit("role.start", step=sr.step, batch=ctx.batch, role=ctx.role)
    reason = "other"
    raised: BaseException | None = None
    try:
        yield agent
    except BaseException as exc:
        reason, raised = "interrupted", exc
        if isinstance(exc, RecordsError):  # the run stops: its records cannot be kept
            agent.status, agent.error = "failed", str(exc)
        raise
    finally:
        with anyio.move_on_after(CLOSE_GRACE, shield=True):
            await agent.close(reason)
        _role_end(sr, agent, raised)


def _role_end(sr: StepRun, agent: Agent, raised: BaseException | None) -> None:
    """The `role.end` event: the role's status and counts once its session is closed; a
    role cut off by an exception is `interrupted` (cancelled) or `failed` (a bug)."""
    r = agent.result
    status, error = r.status, r.error
    if isinstance(raised, RecordsError):
        status, error = "failed", str(raised)
    elif isinstance(raised, Exception) and not isinstance(raised, Interrupted):
        status, error = "failed", f"{type(raised).__name__}: {raised}"
    elif raised is not None:
        status = "interrupted"
    sr.events.emit(
        "role.end",
        step=sr.step,
        batch=agent.ctx.batch,
        role=r.name,
        status=status,
        error=error,
        error_kind=r.error_kind if status == r.status else None,
        turns=r.turns,
        calls=r.calls,
        refused=r.refused,
    )


def role_failure(results: Sequence[RoleResult]) -> str | None:
    """One line naming every role that did not succeed, or None."""
    bad = [r for r in results if r.status != "succeeded"]
    if not bad:
        return None
    parts = []
    for r in bad:
        part = f"role {r.name} {r.status}"
        if r.error:
            part += f": {r.error}"
        parts.append(part)
    return "; ".join(parts)


def refusal_notes(roles: Sequence[Any]) -> list[str]:
    """`every call of role writer was refused (2 calls; the first by the hook: TEXT)`,
    for each role whose every call was refused."""
    notes = []
    for role in roles:
        record = role.to_json()
        first = record.get("all_refused")
        # A spent budget refuses every call after it, and the error says so already.
        if isinstance(first, dict) and first.get("stage") != "budget":
            n = record.get("calls")
            calls = "1 call" if n == 1 else f"{n} calls"
            notes.append(
                f"every call of role {record['name']} was refused ({calls}; the first by "
                f"{STAGE_WORDS.get(first['stage'], first['stage'])}: {first['text']})"
            )
    return notes


STAGE_WORDS = {
    "gate": "the gate",
    "rules": "the rule set",
    "roots": "the roots",
    "workspace": "the workspace check",
    "hook": "a hook",
    "budget": "the budget",
    "invalid": "the call check (an unknown tool or a bad input)",
}


def finish(
    sr: StepRun,
    roles: Sequence[Any],
    *,
    artifacts: Mapping[str, str] | None = None,
    audits: Sequence[dict[str, Any]] = (),
    error: str | None = None,
    kind: ErrorKind = "role",
    blame: Sequence[Any] | None = None,
) -> StepOutcome:
    """The step's outcome from its roles, the ledger and its own finding `error` (of
    `kind`: "audit" for a failed audit), by the order in the module docstring. The error
    line names every role that did not succeed, then `error`; that of a step that did not
    succeed starts with each role of `blame` (default: `roles`) whose every call was
    refused."""
    spent = sr.ledger.exhausted
    status: StepStatus
    why: ErrorKind | None
    if spent:
        status, why = "budget_exhausted", "budget"
        # The roles the budget stopped are said by it; any other that did not succeed is named.
        others = role_failure([r for r in roles if r.status != "budget_exhausted"])
        error = "; ".join(p for p in (spent_text(spent), others, error) if p)
    else:
        status, why = verdict(roles, error, kind)
        parts = [role_failure(roles), error]
        error = "; ".join(p for p in parts if p) or None
    if status != "succeeded":
        # Say first what left a role with nothing done, rather than only what came of it
        # (the writer "did not write the spec" because a hook refused every write).
        notes = refusal_notes(roles if blame is None else blame)
        error = "; ".join([*notes, *([error] if error else [])]) or None
    return StepOutcome(
        status=status,
        roles=list(roles),
        artifacts=dict(artifacts or {}) if status == "succeeded" else {},
        audits=list(audits),
        error=error,
        kind=why,
    )


def verdict(
    roles: Sequence[Any], error: str | None, kind: ErrorKind
) -> tuple[StepStatus, ErrorKind | None]:
    """The status and error kind of a step whose own budget holds (module docstring, 2-5)."""
    bad = [r for r in roles if r.status != "succeeded"]
    provider = [r for r in bad if getattr(r, "error_kind", None) == "provider"]
    spent = [r for r in bad if r.status == "budget_exhausted"]
    if len(bad) > len(provider) + len(spent):
        return "failed", "role"
    if spent:
        return "budget_exhausted", "budget"
    if provider:
        return "failed", "provider"
    if error:
        return "failed", kind
    return "succeeded", None


def error_outcome(
    exc: StepError, roles: Sequence[Any] = (), kind: ErrorKind = "input"
) -> StepOutcome:
    """A step that could not start its work: what it was given does not hold (or, `kind`
    "audit", the audit could not start)."""
    return StepOutcome(status="error", roles=list(roles), error=str(exc), kind=kind)


def stat_key(path: Path) -> tuple[int, ...] | None:
    """Changes whenever the file is written (ctime cannot be set back), None: missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def workspace_file(sr: StepRun, rel: str, what: str) -> Path:
    """`rel` resolved inside the workspace, or StepError naming `what`."""
    from ...policy.paths import PathOutside, resolve_in_workspace

    try:
        return resolve_in_workspace(sr.workspace, rel)
    except PathOutside:
        raise StepError(f"{what}: {rel} is outside the workspace") from None
