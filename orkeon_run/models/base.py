"""The provider-neutral conversation and the Model protocol every provider implements.

A conversation is a list of `Message`. Providers translate it to their wire form
(Chat Completions messages, Messages API blocks) and translate the reply back into a
`Turn`. Nothing outside `models/` knows a wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .pricing import Pricer

from ..catalog import ToolSpec

__all__ = ["Message", "Model", "Provider", "ToolCall", "ToolSpec", "Turn"]

# ToolCall and Message have `slots=True`: a conversation holds one of each per tool call for
# the whole session, and without an instance dict each is some 40-50 bytes smaller.


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. A call whose arguments could not be read (not valid
    JSON, or not an object: a small model's everyday mistake) has `input` `{}`, `error`
    saying why and `raw` holding the arguments as the model wrote them; it is not run, and
    the model reads `error: ERROR` as its result (agent.py)."""

    id: str
    name: str
    input: dict[str, Any]
    error: str | None = None
    raw: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "input": self.input}
        if self.error is not None:
            d["error"] = self.error
            d["arguments"] = self.raw
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ToolCall:
        return cls(d["id"], d["name"], d["input"], d.get("error"), d.get("arguments"))


@dataclass(slots=True)
class Message:
    """One message. `role="tool"` carries one tool result (`tool_call_id`, `content` =
    exactly the text the model reads). An assistant message may carry tool calls."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    # A tuple: never changed in place (compaction replaces the message), and the empty one
    # every tool result carries is shared instead of a list per message.
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name, on role="tool"
    # On role="tool": the call was refused (Anthropic's `is_error`; OpenAI has no such flag).
    is_error: bool = False
    # On compaction's note (a user message that stands where earlier exchanges were
    # removed, compaction.py): how many answers it stands for, so the conversation still
    # tells how many answers came before (the scripted model counts them).
    removed_answers: int = 0

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.is_error:
            d["is_error"] = True
        if self.removed_answers:
            d["removed_answers"] = self.removed_answers
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Message:
        return cls(
            role=d["role"],
            content=d.get("content", ""),
            tool_calls=tuple(ToolCall.from_json(c) for c in d.get("tool_calls", ())),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            is_error=bool(d.get("is_error", False)),
            removed_answers=int(d.get("removed_answers", 0)),
        )


@dataclass
class Turn:
    """One model answer. No tool calls means the model is done, unless the answer was cut.

    `tokens_in` counts every input token of the request; `cache_read_tokens` and
    `cache_write_tokens` are the parts of it the provider read from its prompt cache and
    wrote to it (priced apart: models/pricing.py). `cut_at` is the output limit the answer
    was cut at (OpenAI's `finish_reason: "length"`, Anthropic's `stop_reason:
    "max_tokens"`), None when it ended on its own: a cut answer is unfinished, its calls
    are not run (agent.py)."""

    text: str
    tool_calls: list[ToolCall]
    tokens_in: int = 0
    tokens_out: int = 0
    model_name: str | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cut_at: int | None = None


class Model(Protocol):
    """One role's model. `complete` is one turn; it raises ProviderError on failure.
    `answer_schema`, when given, is the JSON Schema the final answer must match: a provider
    with a structured-output mode passes it on, and the Turn's text is then the answer as
    JSON (structured.py); the others ignore it (the step validates the text either way)."""

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], answer_schema: Any = None
    ) -> Turn: ...


class Provider(Protocol):
    """Builds a Model per role (the scripted provider keys its script by role name)."""

    name: str

    def for_role(self, role: str) -> Model: ...

    def price(self) -> Pricer | None:
        """What the model's tokens cost (models/pricing.py), or None when unknown."""
        ...

    def context_tokens(self) -> int: ...

    async def aclose(self) -> None:
        """Release the provider's connections (called once, when the step ends)."""
        ...
