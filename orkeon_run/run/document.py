"""The result document (result.json, `--output json`; docs/output.md) as plain dicts, built
by `result_document`. Its JSON Schema is result.py's `Result`, which a run does not import:
pydantic's models there cost 10 to 20 ms to define even with their validators deferred
(docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import exit_code_of
from ..vocabulary import SCHEMA_VERSION

if TYPE_CHECKING:
    from ..ledger import Ledger
    from .context import StepOutcome


def result_document(
    run_id: str,
    step: str,
    outcome: StepOutcome,
    ledger: Ledger,
    sandbox: str,
    pinned_changed: Sequence[str] | None = None,
    network: Mapping[str, int] | None = None,
    mcp_sandbox: dict[str, str] | None = None,
    bare: bool = False,
) -> dict[str, Any]:
    """The result document of a step that ended with `outcome`; `sandbox` is the run's
    shell sandbox state; `pinned_changed` the pinned files that changed (None: not
    looked at, as when the run could not start); `network` its allow-lists' counts
    (`StepRun.network`), to which a pipeline's steps' are added; `mcp_sandbox` its stdio
    MCP servers' confinement (None: it has none); `bare`: a hermetic run (`--bare`)."""

    kind = outcome.error_kind
    error = None
    if kind is not None:
        error = {"kind": kind, "message": outcome.error or f"the step ended {outcome.status}"}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "step": step,
        "status": outcome.status,
        "exit_code": exit_code_of(outcome.status, kind),
        "budget": ledger.snapshot(),
        "roles": [r.to_json() for r in outcome.roles],
        "artifacts": dict(outcome.artifacts),
        "audits": list(outcome.audits),
        "error": error,
        "sandbox": sandbox,
        "bare": bare,
    }
    refused = int((network or {}).get("refused", 0))
    if mcp_sandbox is not None:
        doc["mcp_sandbox"] = dict(mcp_sandbox)
    if outcome.steps is not None:
        doc["steps"] = list(outcome.steps)
        for s in outcome.steps:
            counted = (s.get("network") or {}).get("refused") if isinstance(s, dict) else 0
            refused += counted if isinstance(counted, int) else 0
    doc["network"] = {"refused": refused}
    if pinned_changed is not None:
        doc["pinned_changed"] = list(pinned_changed)
    doc.update(outcome.fields)
    return doc
