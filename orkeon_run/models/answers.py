"""What the model reads about an answer it sent that cannot be run as it is.

- A call whose arguments could not be read (`ToolCall.error`: not valid JSON, not an
  object) is not run; its result is `error: the arguments are not valid JSON: ...`. The
  other calls of the same answer run as usual.
- An answer cut at the output limit (`Turn.cut_at`) is unfinished: none of its calls is
  run (the last one's arguments are cut short, and the ones before it were meant to go
  with what was cut), each gets `NOT_RUN` as its result; an answer without calls is
  followed by `CUT_NOTE`. The role goes on, and fails after `MAX_CUT` cut answers in a
  row: a model that cannot fit its answer in the limit would loop until the budget ends.

Every result here is an error result (`is_error`, for Anthropic's `tool_result`).
"""

from __future__ import annotations

from .base import Message, ToolCall, Turn

MAX_CUT = 3
NOT_RUN = (
    "error: not run: your answer was cut at the output limit ({limit} tokens) before it "
    "ended, so none of its calls ran; send them again in a shorter answer (write a large "
    "file in parts)"
)
CUT_NOTE = (
    "[your answer was cut at the output limit ({limit} tokens) before it ended; "
    "go on from there, more briefly]"
)


def unreadable(call: ToolCall) -> Message:
    """The result of a call whose arguments could not be read."""
    return Message(
        "tool", f"error: {call.error}", tool_call_id=call.id, name=call.name, is_error=True
    )


def after_cut(turn: Turn) -> list[Message]:
    """What follows a cut answer: a result per call, or the note when it has none."""
    limit = turn.cut_at
    if not turn.tool_calls:
        return [Message("user", CUT_NOTE.format(limit=limit))]
    text = NOT_RUN.format(limit=limit)
    return [
        Message("tool", text, tool_call_id=c.id, name=c.name, is_error=True)
        for c in turn.tool_calls
    ]


def cut_error(limit: int | None, times: int) -> str:
    """The role's error once `times` answers in a row were cut."""
    return (
        f"the model's answers were cut at the output limit ({limit} tokens) {times} times "
        "in a row: raise model.max_output_tokens"
    )
