"""What the steps share about their roles: the crew of the step, each role's context and
its agent, started from the crew and closed however the step ends, a role result saved by
an earlier attempt, and the workspace files a step reads. Cancellation (SIGINT/SIGTERM) is
never caught: it passes through to the runner, which records "interrupted". The step's
outcome from its roles is outcome.py's.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ... import __version__
from ...agent.loop import Agent, RoleSpec
from ...calls import CallContext
from ...config.crews import Crew
from ...errors import Interrupted, RecordsError, StepError
from ...models.claude_transcript import ClaudeTranscript
from ...policy.paths import PathOutside, resolve_in_workspace
from ..context import StepRun
from .role_messages import project_instructions

if TYPE_CHECKING:
    from ...agent.loop import Agent
    from ...pipeline import Pipeline

# How long closing an agent (its SessionEnd hooks) may take once the step is cancelled.
CLOSE_GRACE = 15.0


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
    entries give (the MCP tools among them in `ctx`'s catalog), its final answer to match
    `answer_schema` when given (answer.py); closed on the way out
    (also when the step is cancelled, within CLOSE_GRACE seconds)."""
    claude = None
    if sr.config.settings_hooks:
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
    system_prompt = crew.system_prompt(template, variables)
    given = sr.config.instructions.for_role(ctx.roots)
    if given:  # the project's trusted instruction files, as read at run start
        system_prompt += "\n" + project_instructions(given)
    spec = RoleSpec(
        name=ctx.role,
        system_prompt=system_prompt,
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
    # SessionEnd's `reason` in Claude Code's words (docs/hooks.md): `other` at the end of a
    # headless session, `prompt_input_exit` when it is quit (a signal, or a caller's stop,
    # cancels the run).
    reason = "other"
    raised: BaseException | None = None
    try:
        yield agent
    except BaseException as exc:
        raised = exc
        if isinstance(exc, anyio.get_cancelled_exc_class() | KeyboardInterrupt | Interrupted):
            reason = "prompt_input_exit"
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
        idle=r.idle,
    )


def stat_key(path: Path) -> tuple[int, ...] | None:
    """Changes whenever the file is written (ctime cannot be set back), None: missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def workspace_file(sr: StepRun, rel: str, what: str) -> Path:
    """`rel` resolved inside the workspace, or StepError naming `what`."""
    try:
        return resolve_in_workspace(sr.workspace, rel)
    except PathOutside:
        raise StepError(f"{what}: {rel} is outside the workspace") from None
