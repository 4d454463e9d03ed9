"""The step's outcome from its roles, the ledger and its own finding.

Why a step did not succeed (`finish`, the result's `error.kind`; docs/output.md, "Exit
codes"), the first that holds:

1. the step's budget is spent: `budget_exhausted`, kind `budget` (exit 3);
2. a role failed by its own doing (a hook stopped it, its answers were cut, it crashed):
   `failed`, kind `role` (exit 1): the work is known broken, whatever else happened;
3. a role reached its own limit (`budget.per_role`): `budget_exhausted`, kind `budget`;
4. a role failed because its model provider did: `failed`, kind `provider` (exit 4), also
   when the audit of its batch failed: that audit judged work the provider cut short, and
   a `--resume` later runs the batch again;
5. the step's own finding: the audit failed (kind `audit`), the writer wrote no spec or the
   plan stayed invalid (kind `role`): `failed` (exit 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import StepError
from ...vocabulary import ErrorKind, spent_text
from ..context import StepOutcome, StepRun, StepStatus

if TYPE_CHECKING:
    from ...agent.loop import RoleResult


def role_failure(results: Sequence[RoleResult]) -> str | None:
    """One line naming every role that did not succeed, or None."""
    bad = [r for r in results if r.status != "succeeded"]
    if not bad:
        return None
    parts = []
    for r in bad:
        part = f"role {r.name} {r.status}"
        if r.error:
            part += f": {r.error}"
        parts.append(part)
    return "; ".join(parts)


def refusal_notes(roles: Sequence[Any]) -> list[str]:
    """`every call of role writer was refused (2 calls; the first by the hook: TEXT)`,
    for each role whose every call was refused."""
    notes = []
    for role in roles:
        record = role.to_json()
        first = record.get("all_refused")
        # A spent budget refuses every call after it, and the error says so already.
        if isinstance(first, dict) and first.get("stage") != "budget":
            n = record.get("calls")
            calls = "1 call" if n == 1 else f"{n} calls"
            notes.append(
                f"every call of role {record['name']} was refused ({calls}; the first by "
                f"{STAGE_WORDS.get(first['stage'], first['stage'])}: {first['text']})"
            )
    return notes


STAGE_WORDS = {
    "gate": "the gate",
    "rules": "the rule set",
    "roots": "the roots",
    "workspace": "the workspace check",
    "hook": "a hook",
    "budget": "the budget",
    "invalid": "the call check (an unknown tool or a bad input)",
}


def finish(
    sr: StepRun,
    roles: Sequence[Any],
    *,
    artifacts: Mapping[str, str] | None = None,
    audits: Sequence[dict[str, Any]] = (),
    error: str | None = None,
    kind: ErrorKind = "role",
    blame: Sequence[Any] | None = None,
) -> StepOutcome:
    """The step's outcome from its roles, the ledger and its own finding `error` (of
    `kind`: "audit" for a failed audit), by the order in the module docstring. The error
    line names every role that did not succeed, then `error`; that of a step that did not
    succeed starts with each role of `blame` (default: `roles`) whose every call was
    refused."""
    spent = sr.ledger.exhausted
    status: StepStatus
    why: ErrorKind | None
    if spent:
        status, why = "budget_exhausted", "budget"
        # The roles the budget stopped are said by it; any other that did not succeed is named.
        others = role_failure([r for r in roles if r.status != "budget_exhausted"])
        error = "; ".join(p for p in (spent_text(spent), others, error) if p)
    else:
        status, why = verdict(roles, error, kind)
        parts = [role_failure(roles), error]
        error = "; ".join(p for p in parts if p) or None
    if status != "succeeded":
        # Say first what left a role with nothing done, rather than only what came of it
        # (the writer "did not write the spec" because a hook refused every write).
        notes = refusal_notes(roles if blame is None else blame)
        error = "; ".join([*notes, *([error] if error else [])]) or None
    return StepOutcome(
        status=status,
        roles=list(roles),
        artifacts=dict(artifacts or {}) if status == "succeeded" else {},
        audits=list(audits),
        error=error,
        kind=why,
    )


def verdict(
    roles: Sequence[Any], error: str | None, kind: ErrorKind
) -> tuple[StepStatus, ErrorKind | None]:
    """The status and error kind of a step whose own budget holds (module docstring, 2-5)."""
    bad = [r for r in roles if r.status != "succeeded"]
    provider = [r for r in bad if getattr(r, "error_kind", None) == "provider"]
    spent = [r for r in bad if r.status == "budget_exhausted"]
    if len(bad) > len(provider) + len(spent):
        return "failed", "role"
    if spent:
        return "budget_exhausted", "budget"
    if provider:
        return "failed", "provider"
    if error:
        return "failed", kind
    return "succeeded", None


def error_outcome(
    exc: StepError, roles: Sequence[Any] = (), kind: ErrorKind = "input"
) -> StepOutcome:
    """A step that could not start its work: what it was given does not hold (or, `kind`
    "audit", the audit could not start)."""
    return StepOutcome(status="error", roles=list(roles), error=str(exc), kind=kind)
