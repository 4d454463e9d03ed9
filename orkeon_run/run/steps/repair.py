"""tasks-repair: `inputs.repair = {run: RUN_DIR, role: "BATCH/ROLE"}` starts that role of a
dev-batches run again, as the crew's `repairer`, with its roots, its task and the step's
hooks; its first message is its task plus what went wrong (the failing audit's output, or
the role's own failure). Then the audit runs again over what this repair changed, against
the role's roots, with the build and tests.

The plan, audit, shell settings and hooks come from the failed run's saved inputs unless
given again: `prepare` merges them into the inputs once (docs/inputs.md, "`repair`").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...config.inputs import Inputs, Plan, PlanRole
from ...errors import InputError, StepError
from .. import audit
from ..context import StepOutcome, StepRun
from ..prepare import DEFAULT_PLAN, load_plan
from . import auditing, role_messages
from .batches import role_variables
from .outcome import error_outcome, finish
from .roles import crew_of, role_agent, role_context

ROLES = ("repairer",)


def check(
    inputs: Inputs,
    workspace: Path,
    pinned: tuple[Plan, str] | None = None,
    sources: object = None,
) -> tuple[Plan, str]:
    """The plan the repair runs: `pinned` (the failed run's, or a resumed repair's own),
    else the one the inputs give."""
    if inputs.repair is None or inputs.repair.run is None or inputs.repair.role is None:
        raise InputError('repair: tasks-repair needs {"run": RUN_DIR, "role": "BATCH/ROLE"}')
    plan, rel = pinned if pinned is not None else load_plan(workspace, inputs.plan)
    names = [f"{b.name}/{r.name}" for b in plan.batches for r in b.roles]
    if inputs.repair.role not in names:
        raise InputError(
            f"repair.role: the plan has no role {inputs.repair.role} ({', '.join(names)})"
        )
    return plan, rel


def find_role(plan: Plan, full: str) -> tuple[Any, PlanRole]:
    batch_name, _, role_name = full.partition("/")
    for batch in plan.batches:
        if batch.name == batch_name:
            for role in batch.roles:
                if role.name == role_name:
                    return batch, role
    raise StepError(f"repair.role: the plan has no role {full}")


async def run(sr: StepRun) -> StepOutcome:
    repair, failed = sr.inputs.repair, sr.config.repair
    plan, plan_rel = sr.config.plan, sr.config.plan_rel
    assert repair is not None and repair.role is not None  # check() made sure
    assert failed is not None and plan is not None  # prepared
    crew = crew_of(sr)
    try:
        batch, role = find_role(plan, repair.role)
    except StepError as exc:
        return error_outcome(exc)
    earlier = failed.result
    wrong = role_messages.what_went_wrong(earlier, batch.name, repair.role)
    first = role_messages.repair(
        role.task, str(earlier.get("run_id") or failed.run_dir.name), wrong
    )

    variables = role_variables(batch, role, plan_rel or DEFAULT_PLAN)
    variables["run"] = str(failed.run_dir)
    pipeline = sr.pipeline(crew.rule_sets_for("repairer", {"plan": variables["plan"]}))
    ctx = role_context(sr, repair.role, batch=batch.name, roots=role.roots)
    # The failed run's audit mode, so a role that made the workspace a repository there
    # cannot have this audit read through git.
    git_mode = failed.state.get("audit_git")
    first_snapshot = sr.state.get("snapshot") if sr.resume else None
    if isinstance(first_snapshot, dict):
        # Resumed: audit against the workspace as it was when the repair first began, so
        # nothing the interrupted attempt did escapes the audit.
        before = audit.Snapshot.from_json(first_snapshot)
    else:
        try:
            before = await auditing.snapshot(sr, git_mode if isinstance(git_mode, bool) else None)
        except audit.AuditError as exc:  # e.g. the failed run's repository went away since
            return error_outcome(StepError(f"the audit cannot start: {exc}"), kind="audit")
    sr.save_state(audit_git=before.git, snapshot=before.to_json())
    sr.events.emit("repair.start", step=sr.step, run=str(failed.run_dir), role=repair.role)
    async with role_agent(
        sr, crew, "repairer", ctx, pipeline, variables, resume=sr.resume
    ) as agent:
        result = await agent.run(first)
    record = await auditing.audit_batch(
        sr, batch.name, role.roots, before, {repair.role: role.roots}
    )
    error = None if record["passed"] else auditing.audit_error(record)
    return finish(sr, [result], audits=[record], error=error, kind="audit")
