"""A structured answer (docs/inputs.md, "output_schema"): a role's final answer read as a
JSON value and checked against a schema (draft 2020-12, config/answers.py). An answer that
is not JSON, or not valid, goes back to the same conversation with the validator's
message, at most `retries` times; `ask` then says what was wrong with the last one. The
schema goes to the provider's structured-output mode too (models/structured.py), but only
this check decides. task's answer and each of review's checks come through here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...config.answers import problems as schema_problems

if TYPE_CHECKING:
    from ...agent.loop import Agent, RoleResult
    from ..context import StepRun


@dataclass
class Answer:
    """What `ask` came to: the role's result, and the valid `value` (`valid`), or the
    `problems` of the last answer."""

    role: RoleResult
    valid: bool = False
    value: Any = None
    problems: list[str] = field(default_factory=list)
    answers: int = 1  # how many answers were judged

    @property
    def error(self) -> str:
        """The result's `error.message` when no answer was valid."""
        said = f"after {self.answers} answer{'s' if self.answers != 1 else ''}"
        return f"no valid answer {said}: " + "; ".join(self.problems or ["(none)"])


def parse_answer(text: str, validator: Any) -> tuple[Any, list[str]]:
    """The JSON value in `text` (a Markdown code fence around it is allowed) and what is
    wrong with it by `validator`; `[...]` problems when it is not JSON at all."""
    body = text.strip()
    if body.startswith("```"):
        rest = body.partition("\n")[2]
        body = rest.rsplit("```", 1)[0] if rest.rstrip().endswith("```") else body
    if not body:
        return None, ["the answer is empty: answer with the JSON value alone"]
    try:
        value = json.loads(body)
    except ValueError as exc:
        return None, [f"the answer is not JSON ({exc}): answer with the JSON value alone"]
    return value, schema_problems(validator, value)


def retry_message(problems: list[str]) -> str:
    lines = "\n".join(f"- {p}" for p in problems)
    return (
        "Your answer is not valid against the schema it must match:\n"
        f"{lines}\n\nAnswer again with the whole JSON value alone, valid against the schema.\n"
    )


async def ask(
    sr: StepRun,
    agent: Agent,
    prompt: str,
    validator: Any,
    retries: int,
    *,
    check: str | None = None,
) -> Answer:
    """Run `agent` on `prompt` until its final answer is valid by `validator`, at most
    `retries` more times; an `output.invalid` event for each invalid answer (`check`: the
    review check it was for)."""
    result = await agent.run(prompt)
    answer = Answer(result)
    for attempt in range(retries + 1):
        if result.status != "succeeded":
            return answer
        value, found = parse_answer(result.final_text, validator)
        if not found:
            return Answer(result, True, value, answers=attempt + 1)
        answer = Answer(result, problems=found, answers=attempt + 1)
        sr.events.emit(
            "output.invalid",
            step=sr.step,
            role=result.name,
            check=check,
            attempt=attempt + 1,
            problems=found,
        )
        if attempt == retries or sr.ledger.spent():
            break
        result = await agent.run(retry_message(found))
        answer.role = result
    return answer
