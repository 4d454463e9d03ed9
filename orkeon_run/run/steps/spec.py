"""dev-spec: `analyst` reads the workspace and reports what matters for the request; its
final text is the report. Then `writer` writes the spec (inputs.spec, default
`.orkeon/spec.md`) from the request and that report. The step fails when the writer did
not write the spec. Artifacts: `{"spec": PATH}`.

state.json: `analyst` (its result and report, once it has finished) and `spec_before` (the
spec's file state when the writer first started), so `--resume` does not run a finished
analyst again and still knows whether the writer wrote the spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...config.inputs import Inputs
from ...errors import InputError, StepError
from ..context import StepOutcome, StepRun
from . import role_messages
from .outcome import error_outcome, finish
from .roles import SavedRole, crew_of, role_agent, role_context, stat_key, workspace_file

ROLES = ("analyst", "writer")


def check(inputs: Inputs, workspace: Path, pinned: object = None, sources: object = None) -> None:
    if not (inputs.request or "").strip():
        raise InputError("request: dev-spec needs a request (what to build, as text)")


async def run(sr: StepRun) -> StepOutcome:
    request = sr.inputs.request or ""
    spec_rel = sr.inputs.spec
    crew = crew_of(sr)
    try:
        spec_path = workspace_file(sr, spec_rel, "spec")
    except StepError as exc:
        return error_outcome(exc)
    variables = {"spec": spec_rel}
    roles: list[Any] = []
    # --resume: an analyst that finished is not run again (its report is kept in state).
    state = sr.state if sr.resume else {}

    saved = state.get("analyst")
    if saved is not None and saved["role"]["status"] == "succeeded":
        analyst: Any = SavedRole(saved["role"])
        report = saved["report"]
    else:
        analyst_ctx = role_context(sr, "analyst")
        pipeline = sr.pipeline(crew.rule_sets_for("analyst", variables))
        async with role_agent(
            sr, crew, "analyst", analyst_ctx, pipeline, variables, resume=sr.resume
        ) as agent:
            analyst = await agent.run(role_messages.analyst(request))
        report = analyst.final_text or ""
        sr.save_state(analyst={"role": analyst.to_json(), "report": report})
    roles.append(analyst)
    if analyst.status != "succeeded":
        return finish(sr, roles)

    # The spec must change after the writer starts (its first start, on a resume).
    before: list[int] | None
    if "spec_before" in state:
        before = state["spec_before"]
    else:
        key = stat_key(spec_path)
        before = None if key is None else list(key)
        sr.save_state(spec_before=before)
    writer_ctx = role_context(sr, "writer")
    pipeline = sr.pipeline(crew.rule_sets_for("writer", variables), own_output=spec_rel)
    async with role_agent(
        sr, crew, "writer", writer_ctx, pipeline, variables, resume=sr.resume
    ) as agent:
        writer = await agent.run(role_messages.writer(request, report, spec_rel))
    roles.append(writer)
    if writer.status != "succeeded":
        return finish(sr, roles)

    after = stat_key(spec_path)
    if after is None or not spec_path.is_file() or list(after) == before:
        return finish(sr, roles, error=f"the writer did not write the spec ({spec_rel})")
    return finish(sr, roles, artifacts={"spec": spec_rel})
