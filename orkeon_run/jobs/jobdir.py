"""A job's folder, `OUT/ID/`: the job's run directory (docs/output.md) plus `job.json`,
and `workspace/` for a git workspace.

`job.json` is written (atomically) when an attempt at the job begins:
`{"id", "step", "workspace", "shard", "fingerprint", "attempts", "started", "error"}`,
and `skipped: "budget"` for a job the batch's cap left no room to start (jobs/cap.py).
`error` is null, or the one line saying why the attempt could not start its run (the
clone failed, the inputs do not hold for the cloned workspace); then there is no
result.json from that attempt.

A job's outcome, from those files:

    result.json      status         outcome            finished
    present          succeeded      succeeded          yes
    present          failed         provider_failed    no   (exit 4: its model provider failed)
    present          failed         failed             yes
    present          budget_...     budget_exhausted   yes
    present          error          error              yes
    present          interrupted    interrupted        no
    absent, job.json has an error   not_started        no
    absent, job.json `skipped`      skipped            no   (the batch's cap was spent)
    absent (or unreadable)          unfinished         no   (killed, or still running)

`orkeon jobs run` skips a finished job and runs the others again: a run directory that
holds inputs.json is resumed (`orkeon run --resume`), so what an interrupted or killed
attempt finished is kept.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..errors import EXIT_PROVIDER
from ..jsonio import atomic_write_json, read_json

JOB_FILE = "job.json"
WORKSPACE = "workspace"

OUTCOMES = (
    "succeeded",
    "failed",
    "provider_failed",
    "budget_exhausted",
    "interrupted",
    "error",
    "not_started",
    "skipped",
    "unfinished",
)
FINISHED = frozenset({"succeeded", "failed", "budget_exhausted", "error"})


def read_doc(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None (missing, torn, not an object)."""
    try:
        doc = read_json(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def provider_failed(result: dict[str, Any]) -> bool:
    """The step failed because its model provider did: exit 4 or `error.kind` "provider".
    A result from before `schema_version` (its `error` a string, every exit 1) is read
    the old way: a role "failed", which then only a provider failure gave."""
    if result.get("exit_code") == EXIT_PROVIDER:
        return True
    error = result.get("error")
    if isinstance(error, dict) or "schema_version" in result:
        return isinstance(error, dict) and error.get("kind") == "provider"
    return result.get("status") == "failed" and any(
        isinstance(r, dict) and r.get("status") == "failed" for r in result.get("roles") or ()
    )


def outcome(result: dict[str, Any] | None, record: dict[str, Any] | None) -> str:
    """One of OUTCOMES (the table in the module docstring)."""
    if result is None:
        if record and record.get("skipped"):
            return "skipped"
        return "not_started" if record and record.get("error") else "unfinished"
    status = result.get("status")
    if status == "failed":
        return "provider_failed" if provider_failed(result) else "failed"
    return status if status in OUTCOMES else "error"


def job_outcome(jd: Path) -> str:
    return outcome(read_doc(jd / "result.json"), read_doc(jd / JOB_FILE))


def begin(jd: Path, definition: dict[str, Any], shard: str, fingerprint: str) -> None:
    """Record the start of an attempt (the folder is made if needed)."""
    earlier = read_doc(jd / JOB_FILE) or {}
    record = {
        **definition,
        "shard": shard,
        "fingerprint": fingerprint,
        "attempts": int(earlier.get("attempts") or 0) + 1,
        "started": round(time.time(), 3),
        "error": None,
    }
    atomic_write_json(jd / JOB_FILE, record)


def skipped(jd: Path, definition: dict[str, Any], shard: str, fingerprint: str) -> None:
    """Record a job not started because the batch's cap was spent (`skipped: "budget"`):
    no attempt, no run directory; a later `jobs run` runs it."""
    earlier = read_doc(jd / JOB_FILE) or {}
    record = {
        **definition,
        "shard": shard,
        "fingerprint": fingerprint,
        "attempts": int(earlier.get("attempts") or 0),
        "started": None,
        "error": None,
        "skipped": "budget",
    }
    atomic_write_json(jd / JOB_FILE, record)


def could_not_start(jd: Path, error: str) -> None:
    record = read_doc(jd / JOB_FILE) or {}
    atomic_write_json(jd / JOB_FILE, {**record, "error": error})


def conflict(jd: Path, job_id: str, fingerprint: str) -> str | None:
    """Why `jd` cannot hold the job `job_id` as defined now, or None: a folder that is
    not a job's, or the job of another definition (its step, workspace or inputs
    changed since the folder was written)."""
    if not jd.exists():
        return None
    if not jd.is_dir():
        return f"{jd} is not a folder"
    record = read_doc(jd / JOB_FILE)
    if record is None:
        if any(jd.iterdir()):
            return f"{jd} holds files but no {JOB_FILE}: not a job's folder"
        return None
    if record.get("id") != job_id or record.get("fingerprint") != fingerprint:
        return (
            f"{jd} holds job {job_id} as it was defined before (its step, workspace or "
            "inputs changed): remove that folder, or choose another --out"
        )
    return None
