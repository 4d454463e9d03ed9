"""The words orkeon's documents use, each defined once: statuses, who refused a call,
budget names. The result document, the events, the crews, the command line and the schemas
all take them from here (docs/output.md lists them for users). The step names are the step
registry's (`run/steps/__init__.py`'s `STEPS`), which names each step's module."""

from __future__ import annotations

from typing import Any, Literal

# The version of the result document's and the events' shape, in each of them. It goes up
# when a reader written for the old shape would misread the new one (a field removed,
# renamed, or given another type or meaning); a new field does not move it (docs/output.md).
# 1: the results and events before the field (`error` a string); 2: `error` an object.
SCHEMA_VERSION = 2

# A step's status in the result document; each maps to one exit code (errors.py).
StepStatus = Literal["succeeded", "failed", "budget_exhausted", "interrupted", "error"]
# Why a step did not succeed: the result's `error.kind` (docs/output.md, "Exit codes").
# "output": the role ended without an answer valid against `output_schema` (exit 1).
# `--patch`'s file not written (a secret or a guard path in it) is "audit": the change
# did not pass a check on its way out (exit 1), as a review's failed check is.
ErrorKind = Literal[
    "provider", "audit", "role", "output", "budget", "input", "interrupted", "internal"
]
# A role's status in the result document's `roles`.
RoleStatus = Literal["succeeded", "failed", "stopped", "budget_exhausted", "interrupted"]

# The stage that refused a tool call (`tool.call` events' `refused_by`).
RefusedBy = Literal["gate", "rules", "roots", "workspace", "hook", "budget"]

# The step's budgets (`budget.exhausted`), and how each is named in the texts people and
# models read.
# "idle": the no-progress watchdog (`budget.idle_seconds`) ended a role.
BudgetName = Literal["seconds", "turns", "tokens", "usd", "idle"]
BUDGET_WORDS: dict[str, str] = {
    "seconds": "time",
    "turns": "turn",
    "tokens": "token",
    "usd": "cost",
    "idle": "idle",
}


def spent_text(which: str, whose: str = "step") -> str:
    """`the step's time budget is spent` (for `seconds`); `whose` "role": a role's own
    limit (`budget.per_role`); for `idle`: the watchdog's words."""
    if which == "idle":
        return "the no-progress watchdog ended a role (budget.idle_seconds)"
    return f"the {whose}'s {BUDGET_WORDS.get(which, which)} budget is spent"


def error_message(error: Any) -> str | None:
    """A result's `error` as text: its `message` (an object, schema_version 2), or the
    line itself (the results before); None for none."""
    if isinstance(error, dict):
        return str(error.get("message") or error.get("kind") or "") or None
    return str(error) if error else None


def error_kind(error: Any) -> str | None:
    """A result's `error.kind`, or None (none, or a result from before it)."""
    return str(error.get("kind")) if isinstance(error, dict) and error.get("kind") else None


# The documents `orkeon schema NAME` prints (commands/schema.py).
SCHEMAS = ("inputs", "plan", "script", "result", "event", "crew")
