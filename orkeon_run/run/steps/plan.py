"""dev-plan: `planner` reads the spec and writes the plan (inputs.plan when it is a path,
default `.orkeon/plan.json`). The plan is checked against the plan schema
(`inputs.parse_plan`); an invalid one goes back to the same agent with the problems, at
most MAX_RETRIES times, then the step fails with the problems in `error`.
Artifacts: `{"plan": PATH}`. state.json: `plan_before`, the plan file's state when the
planner first started; a resumed planner continues its conversation.
"""

from __future__ import annotations

from pathlib import Path

from ...config.inputs import Inputs, load_document, parse_plan
from ...errors import InputError, StepError
from ..context import StepOutcome, StepRun
from ..prepare import DEFAULT_PLAN
from . import role_messages
from .outcome import error_outcome, finish
from .roles import crew_of, role_agent, role_context, stat_key, workspace_file

MAX_RETRIES = 2
ROLES = ("planner",)


def check(inputs: Inputs, workspace: Path, pinned: object = None, sources: object = None) -> None:
    if not (workspace / inputs.spec).is_file():
        raise InputError(f"spec: no such file in the workspace: {inputs.spec} (run dev-spec first)")


def plan_path(sr: StepRun) -> str:
    return sr.inputs.plan if isinstance(sr.inputs.plan, str) else DEFAULT_PLAN


def check_plan(path: Path, plan_rel: str, before: list[int] | None) -> list[str]:
    """The plan's problems, one line each; [] when it is valid and was written."""
    now = stat_key(path)
    if now is None or not path.is_file():
        return [f"plan: {plan_rel} was not written"]
    if list(now) == before:
        return [f"plan: {plan_rel} was not written in this step (it is the earlier file)"]
    try:
        parse_plan(load_document(f"@{path}", what="plan"), origin="plan")
    except InputError as exc:
        return [p.replace(str(path), plan_rel) for p in exc.problems]
    return []


async def run(sr: StepRun) -> StepOutcome:
    spec_rel = sr.inputs.spec
    plan_rel = plan_path(sr)
    crew = crew_of(sr)
    try:
        spec_path = workspace_file(sr, spec_rel, "spec")
        target = workspace_file(sr, plan_rel, "plan")
        try:
            spec_text = spec_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            raise StepError(f"spec: no such file in the workspace: {spec_rel}") from None
    except StepError as exc:
        return error_outcome(exc)

    variables = {"spec": spec_rel, "plan": plan_rel}
    # The plan must change after the planner starts (its first start, on a resume).
    before: list[int] | None
    if sr.resume and "plan_before" in sr.state:
        before = sr.state["plan_before"]
    else:
        key = stat_key(target)
        before = None if key is None else list(key)
        sr.save_state(plan_before=before)
    ctx = role_context(sr, "planner")
    pipeline = sr.pipeline(crew.rule_sets_for("planner", variables), own_output=plan_rel)
    problems: list[str] = []
    async with role_agent(sr, crew, "planner", ctx, pipeline, variables, resume=sr.resume) as agent:
        result = await agent.run(role_messages.planner(spec_rel, spec_text, plan_rel))
        for attempt in range(MAX_RETRIES + 1):
            if result.status != "succeeded":
                return finish(sr, [result])
            problems = check_plan(target, plan_rel, before)
            if not problems:
                return finish(sr, [result], artifacts={"plan": plan_rel})
            sr.events.emit("plan.invalid", step=sr.step, attempt=attempt + 1, problems=problems)
            if attempt == MAX_RETRIES or sr.ledger.spent():
                break
            result = await agent.run(role_messages.plan_retry(plan_rel, problems))
    error = f"the plan in {plan_rel} is not valid:\n" + "\n".join(problems)
    return finish(sr, [result], error=error)
