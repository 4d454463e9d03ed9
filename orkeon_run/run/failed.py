"""The failed run a tasks-repair starts from (docs/inputs.md, "repair"), loaded once
when the repair is prepared: its records, each read only once checked against its seal
(records.py); the plan it pinned in its state, never the file in the workspace a role could
have rewritten; and what the repair takes from its saved inputs (`INHERITED`), merged into
the repair's document once, so the run directory records the inputs the repair really ran
with."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.inputs import Plan
from ..errors import InputError

# What a repair takes from the failed run unless given again: its workspace and model, what
# the role was asked to do and checked by, and the guards it ran under (the hooks registry
# is handed to the agent started again).
INHERITED = (
    "workspace",
    "model",
    "plan",
    "audit",
    "shell",
    "hooks",
    "settings",
    "gate",
    "mcp_servers",
)


@dataclass(frozen=True)
class FailedRun:
    """The run a tasks-repair starts from: its directory and what it recorded (each
    record checked against the run's seal)."""

    run_dir: Path
    result: dict[str, Any]  # {} when it was killed before its result
    state: dict[str, Any]
    inputs: dict[str, Any] = field(default_factory=dict)


def run_dir_path(raw: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    return Path(os.path.expanduser(raw)).resolve()


def repair_document(doc: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`doc` with the INHERITED keys the failed run's saved inputs give (as `prepare`
    merges them for a tasks-repair), or `doc` as it is when the failed run cannot be read
    (its problems are reported when the repair runs)."""
    repair = doc.get("repair") if isinstance(doc, dict) else None
    if not isinstance(repair, dict) or not isinstance(repair.get("run"), str):
        return doc
    try:
        failed = failed_run(repair["run"], environ)
    except InputError:
        return doc
    return inherit(doc, failed.inputs)


def inherit(doc: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """The tasks-repair inputs document with the INHERITED keys taken from the failed
    run's saved inputs where `doc` does not give them."""
    merged = dict(doc)
    for key in INHERITED:
        if key not in merged and key in saved:
            merged[key] = saved[key]
    return merged


def failed_run(raw: str, environ: Mapping[str, str] | None = None) -> FailedRun:
    """The records of the run a repair starts from, each checked against the run's seal
    (records.open_sealed). Its result may be missing (a run killed before it): the repair
    then works from the task alone. A run still running is refused."""
    # The run directory's code loads for a repair only: `orkeon validate` of another step
    # starts without it (bench_startup.py).
    from .records import in_use, open_sealed

    rd = run_dir_path(raw)
    if not (rd / "inputs.json").is_file():
        raise InputError(f"repair.run: not a run directory (no inputs.json): {rd}")
    holder = in_use(rd)
    if holder is not None:
        raise InputError(f"repair.run: {rd} is still running{holder}: repair it once it ended")
    _, docs = open_sealed(rd, "repair.run", environ)
    inputs = docs["inputs.json"]
    if not isinstance(inputs, dict):
        raise InputError(f"repair.run: {rd / 'inputs.json'} is not an inputs document")
    return FailedRun(rd, _record(docs["result.json"]), _record(docs["state.json"]), inputs)


def _record(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def failed_plan(doc: dict[str, Any], failed: FailedRun) -> tuple[Plan, str] | None:
    """The plan a repair of `failed` runs: the one that run pinned when the repair's
    inputs give no plan, or give the one it was given (a pipeline's repairs do); None (the
    inputs' plan, read as given) for another."""
    from .records import pinned_plan  # as in failed_run
    from .rundir import redact

    if "plan" in doc and redact(doc["plan"]) != failed.inputs.get("plan"):
        return None
    return pinned_plan(failed.state, failed.run_dir)
