"""dev-spec: `analyst` reads the workspace and reports what matters for the request; its
final text is the report. Then `writer` writes the spec (inputs.spec, default
`.orkeon/spec.md`) from the request and that report. The step fails when the writer did
not write the spec. Artifacts: `{"spec": PATH}`.
"""

from __future__ import annotations

from ..steprun import StepOutcome, StepRun
from . import (
    StepError,
    crew_for,
    error_outcome,
    finish,
    messages,
    role_agent,
    role_context,
    stat_key,
    workspace_file,
)


async def run(sr: StepRun) -> StepOutcome:
    request = sr.inputs.request or ""
    spec_rel = sr.inputs.spec
    try:
        crew = crew_for(sr)
        spec_path = workspace_file(sr, spec_rel, "spec")
    except StepError as exc:
        return error_outcome(exc)
    variables = {"spec": spec_rel}
    roles = []

    analyst_ctx = role_context(sr, "analyst")
    pipeline = sr.pipeline(crew.rule_sets_for("analyst", variables))
    async with role_agent(sr, crew, "analyst", analyst_ctx, pipeline, variables) as agent:
        analyst = await agent.run(messages.analyst(request))
    roles.append(analyst)
    if analyst.status != "succeeded":
        return finish(sr, roles)

    before = stat_key(spec_path)
    writer_ctx = role_context(sr, "writer")
    pipeline = sr.pipeline(crew.rule_sets_for("writer", variables))
    async with role_agent(sr, crew, "writer", writer_ctx, pipeline, variables) as agent:
        writer = await agent.run(messages.writer(request, analyst.final_text or "", spec_rel))
    roles.append(writer)
    if writer.status != "succeeded":
        return finish(sr, roles)

    after = stat_key(spec_path)
    if after is None or after == before or not spec_path.is_file():
        return finish(sr, roles, error=f"the writer did not write the spec ({spec_rel})")
    return finish(sr, roles, artifacts={"spec": spec_rel})
