"""A role as the agent loop runs it: what it is given (`RoleSpec`) and what it came to
(`RoleResult`, the result document's `roles[]` entry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..calls import BUILTINS, CallContext, Catalog
from ..models.base import ToolSpec
from ..vocabulary import RoleStatus

Status = RoleStatus


@dataclass(frozen=True)
class RoleSpec:
    name: str  # full name: "analyst", "writer", "planner", "b1/api"
    system_prompt: str
    tools: tuple[str, ...]  # tool names offered to the model (`ctx.catalog` holds them)
    ctx: CallContext
    # The JSON Schema the role's final answer must match (an `output_schema`), passed to
    # the provider's structured-output mode; None: the answer is free text.
    answer_schema: Any = None


@dataclass
class RoleResult:
    name: str
    status: Status
    turns: int
    calls: int
    refused: int
    final_text: str
    error: str | None = None
    # The stage that refused the role's first refused call and the first line of what the
    # model read: said in the result when every call was refused.
    first_refusal: tuple[str, str] | None = None
    # "provider": the role failed because its model provider did (the step may exit 4).
    error_kind: str | None = None
    # What the role spent, when the budget has per-role limits (ledger.RoleLedger).
    budget: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The result document's `roles[]` entry; `all_refused` when the role made calls
        and every one was refused (what it did then is what the refusals let it do)."""
        d: dict[str, Any] = {
            "name": self.name,
            "status": self.status,
            "turns": self.turns,
            "calls": self.calls,
            "refused": self.refused,
        }
        if self.error is not None:
            d["error"] = self.error
        if self.error_kind is not None:
            d["error_kind"] = self.error_kind
        if self.calls and self.refused == self.calls and self.first_refusal is not None:
            stage, text = self.first_refusal
            d["all_refused"] = {"stage": stage, "text": text}
        if self.budget is not None:
            d["budget"] = self.budget
        return d


def first_line(text: str, limit: int = 300) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def specs_for(names: tuple[str, ...], catalog: Catalog = BUILTINS) -> list[ToolSpec]:
    """What the model is offered for `names` (ValueError for a name `catalog` lacks)."""
    return catalog.specs(names)


def with_context(prompt: str, blocks: list[str | None]) -> str:
    """The prompt with each `<hook_context>` block appended on its own line."""
    kept = [b for b in blocks if b]
    if not kept:
        return prompt
    return "\n".join([prompt.rstrip("\n"), *kept])
