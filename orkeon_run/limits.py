"""A step's budget limits, as the inputs give them (docs/inputs.md, "`budget`"): the
step's (`BudgetLimits`) and each role's own (`RoleLimits`). The ledger (ledger.py) counts
what is spent against them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

IDLE_SECONDS = 600.0  # `budget.idle_seconds`' default


class RoleLimits(BaseModel):
    """`budget.per_role`: what each role of the step may spend; `null` (the default) = no
    limit of the role's own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seconds: float | None = Field(default=None, gt=0)
    turns: int | None = Field(default=None, ge=1)
    tokens: int | None = Field(default=None, ge=1)
    usd: float | None = Field(default=None, gt=0)

    def any(self) -> bool:
        return any(v is not None for v in (self.seconds, self.turns, self.tokens, self.usd))


class BudgetLimits(BaseModel):
    """`null` = no limit. A limit of 0 would start nothing: it is refused (exit 2)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seconds: float | None = Field(default=1800, gt=0)
    turns: int | None = Field(default=None, ge=1)
    tokens: int | None = Field(default=None, ge=1)
    usd: float | None = Field(default=None, gt=0)
    # The no-progress watchdog, on by default and generous: ten minutes of silence from a
    # model, a tool, a hook or an MCP server is a wedge, not work. `null`: off.
    idle_seconds: float | None = Field(default=IDLE_SECONDS, gt=0)
    per_role: RoleLimits | None = None
    # Stop hooks' blocks honoured in a row before the role may finish (Claude Code's
    # CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, default 8; docs/hooks.md, "Events").
    stop_blocks: int = Field(default=8, ge=1, strict=True)

    def to_json(self) -> dict[str, Any]:
        """The limits as the `run.start` event gives them: `per_role` only when set."""
        return self.model_dump(exclude=None if self.per_role else {"per_role"})

    def capped(self, share: Mapping[str, float] | None) -> BudgetLimits:
        """These limits with each key of `share` no higher than it: a job's budget under
        the batch's cap (jobs/cap.py)."""
        if not share:
            return self
        update: dict[str, float | int] = {}
        for key, part in share.items():
            own = getattr(self, key)
            value = part if own is None else min(own, part)
            update[key] = int(value) if key == "tokens" else value
        return self.model_copy(update=update)

    def per_role_warnings(self) -> list[str]:
        """A per-role limit no smaller than the step's own never stops a role first."""
        if self.per_role is None:
            return []
        out = []
        for key in ("seconds", "turns", "tokens", "usd"):
            mine, step = getattr(self.per_role, key), getattr(self, key)
            if mine is not None and step is not None and mine >= step:
                out.append(
                    f"budget.per_role.{key}: {mine:g} is not below the step's {step:g}: "
                    "the step's limit is reached first"
                )
        return out
