"""The provider-neutral conversation and the Model protocol every provider implements.

A conversation is a list of `Message`. Providers translate it to their wire form
(Chat Completions messages, Messages API blocks) and translate the reply back into a
`Turn`. Nothing outside `models/` knows a wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..catalog import ToolSpec

__all__ = ["Message", "Model", "Provider", "ToolCall", "ToolSpec", "Turn"]

# ToolCall and Message have `slots=True`: a conversation holds one of each per tool call for
# the whole session, and without an instance dict each is some 40-50 bytes smaller.


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


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
            d["tool_calls"] = [
                {"id": c.id, "name": c.name, "input": c.input} for c in self.tool_calls
            ]
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
            tool_calls=tuple(
                ToolCall(c["id"], c["name"], c["input"]) for c in d.get("tool_calls", ())
            ),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            is_error=bool(d.get("is_error", False)),
            removed_answers=int(d.get("removed_answers", 0)),
        )


@dataclass
class Turn:
    """One model answer. No tool calls means the model is done."""

    text: str
    tool_calls: list[ToolCall]
    tokens_in: int = 0
    tokens_out: int = 0
    model_name: str | None = None


class Model(Protocol):
    """One role's model. `complete` is one turn; it raises ProviderError on failure."""

    async def complete(self, messages: list[Message], tools: list[ToolSpec]) -> Turn: ...


class Provider(Protocol):
    """Builds a Model per role (the scripted provider keys its script by role name)."""

    name: str

    def for_role(self, role: str) -> Model: ...

    def price(self) -> tuple[float, float] | None:
        """(input, output) USD per million tokens, or None when unknown."""
        ...

    def context_tokens(self) -> int: ...

    async def aclose(self) -> None:
        """Release the provider's connections (called once, when the step ends)."""
        ...
