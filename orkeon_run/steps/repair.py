"""tasks-repair: `inputs.repair = {run: RUN_DIR, role: "BATCH/ROLE"}` starts that role of a
dev-batches run again, as the crew's `repairer`, with its roots, its task and the step's
hooks; its first message is its task plus what went wrong (the failing audit's output, or
the role's own failure). Then the audit runs again over what this repair changed, against
the role's roots, with the build and tests.

The plan, audit and shell settings come from RUN_DIR/inputs.json unless given again
(INTERFACE section 8); `repair_document` does that merge on the inputs document, and `run`
applies it again on the parsed inputs, so either place may do it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import anyio

from .. import audit
from ..errors import InputError
from ..inputs import Audit, Plan, PlanRole, ShellInputs, parse_plan
from ..rundir import read_json
from ..steprun import StepOutcome, StepRun
from . import StepError, crew_for, error_outcome, finish, messages, role_agent, role_context
from .batches import load_plan, role_variables, step_error

# Keys of the failed run's inputs a repair takes over unless given again.
# What a repair takes from the failed run unless given again: its workspace and model, what
# the role was asked to do and checked by, and the guards it ran under (the hooks registry
# is handed to the agent started again, as the seed says).
INHERITED = ("workspace", "model", "plan", "audit", "shell", "hooks", "settings", "gate")


def repair_run_dir(raw: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    return Path(os.path.expanduser(raw)).resolve()


def repair_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The tasks-repair inputs document with the INHERITED keys taken from the failed
    run's saved inputs where `doc` does not give them."""
    repair = doc.get("repair")
    if not isinstance(repair, dict) or not isinstance(repair.get("run"), str):
        return doc
    saved_path = repair_run_dir(repair["run"]) / "inputs.json"
    try:
        saved = read_json(saved_path)
    except (OSError, ValueError):
        return doc  # prepare reports the missing run directory
    merged = dict(doc)
    for key in INHERITED:
        if key not in merged and key in saved:
            merged[key] = saved[key]
    return merged


def _saved_inputs(run_dir: Path) -> dict[str, Any]:
    try:
        saved = read_json(run_dir / "inputs.json")
    except FileNotFoundError:
        raise StepError(f"repair.run: not a run directory (no inputs.json): {run_dir}") from None
    except (OSError, ValueError) as exc:
        raise StepError(f"repair.run: cannot read {run_dir / 'inputs.json'}: {exc}") from None
    if not isinstance(saved, dict):
        raise StepError(f"repair.run: {run_dir / 'inputs.json'} is not an inputs document")
    return saved


def _saved_result(run_dir: Path) -> dict[str, Any]:
    try:
        result = read_json(run_dir / "result.json")
    except (OSError, ValueError):
        return {}  # a run killed before its result: repair from the task alone
    return result if isinstance(result, dict) else {}


def _saved_state(run_dir: Path) -> dict[str, Any]:
    try:
        state = read_json(run_dir / "state.json")
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def effective_plan(sr: StepRun, saved: dict[str, Any]) -> tuple[Plan, str]:
    if "plan" in sr.inputs.model_fields_set or "plan" not in saved:
        return load_plan(sr, sr.inputs.plan)
    value = saved["plan"]
    if isinstance(value, str):
        return load_plan(sr, value)
    try:
        return parse_plan(value, origin="plan"), ""
    except InputError as exc:
        raise StepError(f"{exc} (the plan saved in repair.run)") from None


def effective_audit(sr: StepRun, saved: dict[str, Any]) -> Audit:
    if "audit" in sr.inputs.model_fields_set or not isinstance(saved.get("audit"), dict):
        return sr.inputs.audit
    try:
        return Audit.model_validate(saved["audit"])
    except ValueError as exc:
        raise StepError(f"audit: the audit saved in repair.run is not valid: {exc}") from None


def effective_run(sr: StepRun, saved: dict[str, Any]) -> StepRun:
    """`sr` with the failed run's shell settings when these inputs give none: its given
    fields win over the environment and settings files, as they did in that run."""
    if "shell" in sr.inputs.model_fields_set or not isinstance(saved.get("shell"), dict):
        return sr
    try:
        shell = ShellInputs.model_validate(saved["shell"])
    except ValueError:
        return sr
    rules = sr.shell_rules
    updated = dataclasses.replace(
        rules,
        allow_interpreters=(
            rules.allow_interpreters
            if shell.allow_interpreters is None
            else shell.allow_interpreters
        ),
        extra_allowed_commands=(
            rules.extra_allowed_commands
            if shell.extra_allowed_commands is None
            else tuple(shell.extra_allowed_commands)
        ),
    )
    return dataclasses.replace(sr, shell_rules=updated)


def find_role(plan: Plan, full: str) -> tuple[Any, PlanRole]:
    batch_name, _, role_name = full.partition("/")
    for batch in plan.batches:
        if batch.name == batch_name:
            for role in batch.roles:
                if role.name == role_name:
                    return batch, role
    raise StepError(f"repair.role: the plan has no role {full}")


async def run(sr: StepRun) -> StepOutcome:
    repair = sr.inputs.repair
    if repair is None:
        return error_outcome(StepError("repair: tasks-repair needs {run, role}"))
    run_dir = repair_run_dir(repair.run)
    try:
        crew = crew_for(sr)
        saved = _saved_inputs(run_dir)
        plan, plan_rel = effective_plan(sr, saved)
        audit_cfg = effective_audit(sr, saved)
        batch, role = find_role(plan, repair.role)
    except StepError as exc:
        return error_outcome(exc)
    sr = effective_run(sr, saved)
    earlier = _saved_result(run_dir)
    wrong = messages.what_went_wrong(earlier, batch.name, repair.role)
    first = messages.repair(role.task, str(earlier.get("run_id") or run_dir.name), wrong)

    variables = role_variables(batch, role, plan_rel or ".orkeon/plan.json")
    variables["run"] = str(run_dir)
    pipeline = sr.pipeline(crew.rule_sets_for("repairer", {"plan": variables["plan"]}))
    ctx = role_context(sr, repair.role, batch=batch.name, roots=role.roots)
    ignore = audit.ignore_list(sr.workspace, sr.run_dir)
    # The failed run's audit mode, so a role that made the workspace a repository there
    # cannot have this audit read through git.
    git_mode = _saved_state(run_dir).get("audit_git")
    first_snapshot = sr.state.get("snapshot") if sr.resume else None
    if isinstance(first_snapshot, dict):
        # Resumed: audit against the workspace as it was when the repair first began, so
        # nothing the interrupted attempt did escapes the audit.
        before = audit.Snapshot.from_json(first_snapshot)
    else:
        try:
            before = await anyio.to_thread.run_sync(
                audit.snapshot,
                sr.workspace,
                ignore,
                git_mode if isinstance(git_mode, bool) else None,
            )
        except audit.AuditError as exc:  # e.g. the failed run's repository went away since
            return error_outcome(StepError(f"the audit cannot start: {exc}"))
    sr.save_state(audit_git=before.git, snapshot=before.to_json())
    sr.events.emit("repair.start", step=sr.step, run=str(run_dir), role=repair.role)
    async with role_agent(
        sr, crew, "repairer", ctx, pipeline, variables, resume=sr.resume
    ) as agent:
        result = await agent.run(first)
    record = await audit.run_audit(
        sr.workspace,
        batch.name,
        role.roots,
        before,
        build=audit_cfg.build,
        test=audit_cfg.test,
        run_commands=not sr.ledger.spent(),
        env=sr.child_environ(credentials=False),
    )
    sr.events.emit("audit", step=sr.step, **record)
    failed = [result] if result.status != "succeeded" else []
    return finish(sr, [result], audits=[record], error=step_error(record, failed))
