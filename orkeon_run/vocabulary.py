"""The words orkeon's documents use, each defined once: step names, statuses, who refused
a call, budget names. The result document, the events, the crews, the command line and
the schemas all take them from here (docs/output.md lists them for users)."""

from __future__ import annotations

from typing import Literal, get_args

StepName = Literal["dev-spec", "dev-plan", "dev-batches", "tasks-repair", "pipeline"]
STEPS: tuple[StepName, ...] = get_args(StepName)
# The steps that run a crew of their own (`crews/STEP.toml`); `pipeline` runs the others.
CrewStep = Literal["dev-spec", "dev-plan", "dev-batches", "tasks-repair"]

# A step's status in the result document; each maps to one exit code (errors.py).
StepStatus = Literal["succeeded", "failed", "budget_exhausted", "interrupted", "error"]
# A role's status in the result document's `roles`.
RoleStatus = Literal["succeeded", "failed", "stopped", "budget_exhausted", "interrupted"]

# The stage that refused a tool call (`tool.call` events' `refused_by`).
RefusedBy = Literal["gate", "rules", "roots", "workspace", "hook", "budget"]

# The step's budgets (`budget.exhausted`), and how each is named in the texts people and
# models read.
BudgetName = Literal["seconds", "turns", "tokens", "usd"]
BUDGET_WORDS: dict[str, str] = {
    "seconds": "time",
    "turns": "turn",
    "tokens": "token",
    "usd": "cost",
}


def spent_text(which: str) -> str:
    """`the step's time budget is spent` (for `seconds`)."""
    return f"the step's {BUDGET_WORDS.get(which, which)} budget is spent"
