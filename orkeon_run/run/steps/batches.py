"""dev-batches: the plan's batches in order; the roles of a batch at the same time (at most
inputs.concurrency at once), each as the crew's `worker` with its roots and its task as
first message; full role names `BATCH/ROLE`.

After each batch the audit (auditing.py) checks what changed against the batch's roots, then
builds and tests; a batch that changed no file is warned about (a `warning` event, which
the progress view shows) and, with `audit.require_changes`, fails its audit. A failed
audit, or a role that did not succeed, stops the step after that batch's audit. Each
batch that passes is recorded in state.json at once, so `--resume` continues from the
first batch that did not pass and never runs a finished batch again.

state.json: `batches_passed` (names, in order), `batches` (each passed batch's role results
and audit record), `current` (the batch under way: the workspace snapshot it is audited
against, the roles that ended so far, and its failed audit record, if any). Cancellation
passes through; what state.json holds has truly finished. A resumed batch is audited
against the snapshot taken when it first began, so nothing an earlier attempt did escapes
its audit. Resumed roles continue their conversations (from their transcripts).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from ...config.crews import Crew
from ...config.inputs import Batch, Inputs, Plan, PlanRole
from .. import audit
from ..context import StepOutcome, StepRun
from ..prepare import DEFAULT_PLAN, load_plan
from ..records import open_sealed
from . import auditing, role_messages
from .outcome import finish
from .roles import SavedRole, crew_of, role_agent, role_context

ROLES = ("worker",)


def check(
    inputs: Inputs,
    workspace: Path,
    pinned: tuple[Plan, str] | None = None,
    sources: object = None,
) -> tuple[Plan, str]:
    """The plan to run: the one the run pinned (a resumed run), else the inputs'."""
    return pinned if pinned is not None else load_plan(workspace, inputs.plan)


def batch_roots(batch: Batch) -> list[str]:
    roots: list[str] = []
    for role in batch.roles:
        roots.extend(r for r in role.roots if r not in roots)
    return roots


def role_variables(batch: Batch, role: PlanRole, plan_rel: str) -> dict[str, str]:
    return {
        "batch": batch.name,
        "role": role.name,
        "full_name": f"{batch.name}/{role.name}",
        "roots": ", ".join(role.roots),
        "task": role.task,
        "plan": plan_rel,
    }


async def run_batch(
    sr: StepRun,
    crew: Crew,
    template: str,
    batch: Batch,
    plan_rel: str,
    pipeline: Any,
    progress: dict[str, Any],
) -> list[Any]:
    """Run the batch's roles concurrently; their results in plan order.

    Resuming a batch whose earlier attempt was cut short (no `progress["audit"]`), a role
    that succeeded then is not run again. Resuming one whose audit failed, every role runs
    again and its message adds the audit's output to its task. Each role that ends is
    recorded in `progress["roles"]` and state.json at once."""
    limiter = anyio.CapacityLimiter(sr.inputs.concurrency)
    finished: dict[str, Any] = progress["roles"]
    failed_audit: dict[str, Any] | None = progress.pop("audit", None)
    # A pipeline repaired this batch's roles (mark_repaired): the batch is audited again as
    # it stands, and no role that ended runs again.
    repaired = bool(progress.pop("repaired", False))
    results: dict[str, Any] = {}

    async def one(role: PlanRole) -> None:
        full = f"{batch.name}/{role.name}"
        ctx = role_context(sr, full, batch=batch.name, roots=role.roots)
        variables = role_variables(batch, role, plan_rel)
        prompt = role.task
        if failed_audit is not None:
            wrong = role_messages.what_went_wrong({"audits": [failed_audit]}, batch.name, full)
            prompt = role_messages.repair(role.task, sr.run_id, wrong)
        async with (
            limiter,
            role_agent(sr, crew, template, ctx, pipeline, variables, resume=sr.resume) as agent,
        ):
            result = await agent.run(prompt)
        results[role.name] = result
        finished[full] = result.to_json()
        sr.save_state(current=progress)

    async with anyio.create_task_group() as tg:
        for role in batch.roles:
            earlier = finished.get(f"{batch.name}/{role.name}")
            done = repaired or (
                failed_audit is None and earlier is not None and earlier["status"] == "succeeded"
            )
            if earlier is not None and done:
                results[role.name] = SavedRole(earlier)
            else:
                tg.start_soon(one, role)
    return [results[r.name] for r in batch.roles]


async def run(sr: StepRun) -> StepOutcome:
    crew = crew_of(sr)
    plan, plan_rel = sr.config.plan, sr.config.plan_rel
    assert plan is not None  # check() loaded it
    variables = {"plan": plan_rel or DEFAULT_PLAN}
    pipeline = sr.pipeline(crew.rule_sets_for("worker", variables))
    # What an earlier attempt of this run finished (--resume); a fresh run starts clean.
    state = sr.state if sr.resume else {}
    done: dict[str, Any] = dict(state.get("batches", {}))
    passed = [b for b in state.get("batches_passed", []) if b in done]
    current = state.get("current") if isinstance(state.get("current"), dict) else None
    # Through git or by hashes: decided by the step's first snapshot, kept to its end.
    git_mode = state.get("audit_git") if isinstance(state.get("audit_git"), bool) else None
    roles: list[Any] = []
    audits: list[dict[str, Any]] = []

    for batch in plan.batches:
        if batch.name in passed:
            roles.extend(SavedRole(r) for r in done[batch.name]["roles"])
            audits.append(done[batch.name]["audit"])
            sr.events.emit("batch.skipped", step=sr.step, batch=batch.name, reason="passed earlier")
            continue
        roots = batch_roots(batch)
        sr.events.emit(
            "batch.start",
            step=sr.step,
            batch=batch.name,
            roles=[f"{batch.name}/{r.name}" for r in batch.roles],  # full names, as everywhere
        )
        if current is not None and current.get("batch") == batch.name:
            # Resuming this batch: audit against the workspace as it was when the batch
            # first began, so nothing the interrupted attempt did escapes the audit.
            before = audit.Snapshot.from_json(current["snapshot"])
            progress = dict(current)
            progress["roles"] = dict(current.get("roles", {}))
        else:
            try:
                before = await auditing.snapshot(sr, git_mode)
            except audit.AuditError as exc:  # e.g. the repository went away since
                record = audit.record(batch.name, passed=False, output_tail=str(exc))
                audits.append(record)
                auditing.audited(sr, record)
                why = auditing.audit_error(record)
                return finish(sr, roles, audits=audits, error=why, kind="audit", blame=[])
            progress = {"batch": batch.name, "snapshot": before.to_json(), "roles": {}}
        current = None
        git_mode = before.git
        sr.save_state(current=progress, audit_git=git_mode)
        results = await run_batch(sr, crew, "worker", batch, plan_rel, pipeline, progress)
        roles.extend(results)
        owners = {f"{batch.name}/{r.name}": r.roots for r in batch.roles}
        record = await auditing.audit_batch(sr, batch.name, roots, before, owners)
        audits.append(record)
        failed_roles = [r for r in results if r.status != "succeeded"]
        ok = record["passed"] and not failed_roles
        sr.events.emit("batch.end", step=sr.step, batch=batch.name, passed=ok)
        if ok:
            passed.append(batch.name)
            done[batch.name] = {"roles": [r.to_json() for r in results], "audit": record}
            sr.save_state(batches_passed=list(passed), batches=done, current=None)
            continue
        if not record["passed"]:
            # A resumed run repeats this batch with the audit's output in each message.
            sr.save_state(current={**progress, "audit": record})
        error = None if record["passed"] else auditing.audit_error(record)
        return finish(sr, roles, audits=audits, error=error, kind="audit", blame=results)
    return finish(sr, roles, audits=audits)


def failed_batch(run_dir: Path, environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The batch a failed dev-batches run stopped at, from its state.json (checked against
    the run's seal, records.py): `{"batch", "roles": {FULL_NAME: role record}, "audit":
    the failed audit record or None}`; None when it stopped before a batch ran (a pipeline
    has nothing to repair then)."""
    _, docs = open_sealed(run_dir, "dev-batches", environ)
    state = docs["state.json"] if isinstance(docs["state.json"], dict) else {}
    current = state.get("current")
    if not isinstance(current, dict) or not isinstance(current.get("batch"), str):
        return None
    roles = current.get("roles")
    return {
        "batch": current["batch"],
        "roles": dict(roles) if isinstance(roles, dict) else {},
        "audit": current.get("audit") if isinstance(current.get("audit"), dict) else None,
    }


def mark_repaired(
    run_dir: Path, records: dict[str, dict[str, Any]], environ: Mapping[str, str] | None = None
) -> None:
    """After a pipeline repaired roles of the batch the run stopped at: each repaired
    role's record becomes its repair's, and a `--resume` audits the batch again as it
    stands (against the workspace as it was when the batch first began) without running a
    role, then goes on with the next batches. state.json is read and written through the
    run's seal."""
    sealed, docs = open_sealed(run_dir, "dev-batches", environ)
    state = docs["state.json"] if isinstance(docs["state.json"], dict) else {}
    current = state.get("current")
    if not isinstance(current, dict):
        raise ValueError(f"{run_dir}: no batch to mark repaired")
    current["roles"] = {**(current.get("roles") or {}), **records}
    current["repaired"] = True
    current.pop("audit", None)
    sealed.write("state.json", state)
