"""A structured answer on the wire: how the HTTP providers pass an answer schema to their
structured-output modes, and read the answer back as the Turn's text (the JSON value).

- Anthropic (a forced tool answer): one more tool, `ANSWER_TOOL`, whose `input_schema` is
  the schema, with `tool_choice: {"type": "any"}` so every turn calls a tool; a call of
  `ANSWER_TOOL` is the final answer: the Turn's text is its input as JSON and it has no
  calls (any other call in that answer is dropped: the answer is final).
- OpenAI (`response_format: {"type": "json_schema"}`, not strict: strict mode takes only a
  subset of draft 2020-12): the reply's content is the JSON text.

Both modes take an object at the top: a schema for any other value is wrapped as
`{"type": "object", "properties": {"value": SCHEMA}, "required": ["value"]}` and the
answer unwrapped. The keywords only a validator reads (`$schema`, `$id`) are left out.
The validator that judges the answer is the step's (run/steps/answer.py): a provider's
mode helps the model, it is not trusted.
"""

from __future__ import annotations

import json
from typing import Any

ANSWER_TOOL = "final_answer"
ANSWER_DESCRIPTION = (
    "Give your final answer: call this once you are done, with the answer as its input. "
    "Your answer must be valid against this tool's input schema."
)
_VALIDATOR_ONLY = ("$schema", "$id")


def wrapped(schema: Any) -> bool:
    """Whether the providers need `schema` wrapped (it does not describe an object)."""
    return not (isinstance(schema, dict) and schema.get("type") == "object")


def wire_schema(schema: Any) -> dict[str, Any]:
    """`schema` as the providers' structured-output modes take it."""
    if wrapped(schema):
        return {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    return {k: v for k, v in schema.items() if k not in _VALIDATOR_ONLY}


def answer_text(schema: Any, value: Any) -> str:
    """The answer a provider read, unwrapped, as the JSON text the step validates."""
    if wrapped(schema) and isinstance(value, dict) and "value" in value:
        value = value["value"]
    return json.dumps(value, ensure_ascii=False)


def unwrap_text(schema: Any, text: str) -> str:
    """An OpenAI reply's content, unwrapped when the schema was; text that is not JSON is
    kept as it is (the step's validator says what is wrong with it)."""
    if not wrapped(schema):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return answer_text(schema, value)
