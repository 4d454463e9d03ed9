"""task: one role, `agent`, on the request, with the tools its crew names
(`crews/task.toml`); its final answer is the result's `output`. With `output_schema` the
answer is a JSON value valid against it (answer.py: an invalid one goes back to the role
with the validator's message, at most `output_retries` times); without one, it is the
final text. A run that ends without a valid (or, without a schema, a non-empty) answer
fails with `error.kind` "output" (exit 1) and `output` null: never exit 0 with no answer
(docs/inputs.md, "task").
"""

from __future__ import annotations

import json
from pathlib import Path

from ...config.answers import compile_schema, load_schema
from ...config.inputs import Inputs
from ...errors import InputError
from ..context import StepOutcome, StepRun
from . import answer
from .outcome import finish
from .roles import crew_of, role_agent, role_context

ROLES = ("agent",)


def check(inputs: Inputs, workspace: Path, pinned: object = None, sources: object = None) -> None:
    if not (inputs.request or "").strip():
        raise InputError("request: task needs a request (what to do, as text)")
    if inputs.output_schema is not None:
        load_schema(inputs.output_schema, workspace)


def prompt(request: str, schema: object) -> str:
    """The role's first message: the request, and the schema its answer must match."""
    text = f"The request:\n\n{request.strip()}\n"
    if schema is not None:
        text += (
            "\nWhen you are done, answer with one JSON value alone (no prose), valid "
            f"against this JSON Schema:\n\n{json.dumps(schema, indent=2)}\n"
        )
    return text


async def run(sr: StepRun) -> StepOutcome:
    request = sr.inputs.request or ""
    crew = crew_of(sr)
    given = sr.inputs.output_schema
    schema = None if given is None else load_schema(given, sr.workspace)
    ctx = role_context(sr, "agent")
    pipeline = sr.pipeline(crew.rule_sets_for("agent", {}))
    async with role_agent(
        sr, crew, "agent", ctx, pipeline, {}, resume=sr.resume, answer_schema=schema
    ) as agent:
        if schema is None:
            result = await agent.run(prompt(request, None))
            text = result.final_text.strip()
            got = answer.Answer(result, bool(text), text, [] if text else ["the answer is empty"])
        else:
            validator = compile_schema(schema)
            got = await answer.ask(
                sr, agent, prompt(request, schema), validator, sr.inputs.output_retries
            )
    if got.role.status != "succeeded":
        outcome = finish(sr, [got.role])
    elif not got.valid:
        outcome = finish(sr, [got.role], error=got.error, kind="output")
    else:
        outcome = finish(sr, [got.role])
    outcome.fields["output"] = got.value if got.valid and outcome.status == "succeeded" else None
    return outcome
