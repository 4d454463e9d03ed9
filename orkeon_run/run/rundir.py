"""The run directory (docs/output.md, "The run directory"): ids, redacted inputs, a new
run's directory made and locked, a resumed one locked and checked against its seal.

RUN_DIR/inputs.json        the inputs as given, secrets redacted
RUN_DIR/mcp/SERVER.stderr.log  what each stdio MCP server wrote on stderr
RUN_DIR/events.jsonl       appended and flushed line by line (events.EventLog)
RUN_DIR/result.json        written atomically: temp file, fsync, rename
RUN_DIR/state.json         progress for --resume (atomic too)
RUN_DIR/lock               held while a run works here (records.RunLock)
RUN_DIR/transcripts/ROLE.jsonl
RUN_DIR/steps/STEP/        a pipeline's steps, each a run directory of its own

inputs.json, state.json and result.json are sealed (records.py).

A first run in WORKSPACE/.orkeon/runs/ leaves `.orkeon/.gitignore` (`/runs/`) unless the
folder has one, so run folders stay out of a commit a later CI step makes.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import logs
from ..config.mcp import REDACTED, has_variable
from ..errors import InputError, RecordsError, UsageError
from .records import RunLock, RunRecords, open_sealed, pinned_plan

# Key names that hold credentials. `*_env` keys name a variable, they hold no secret.
_SECRET_KEY = re.compile(
    r"(?i)(api[_-]?key|token|secret|password|passwd|credential|private[_-]?key|authorization|cookie)"
)
# Values that look like a credential whatever their key is called.
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}|Bearer\s+[A-Za-z0-9._~+/-]{16,})"
)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def redact(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str):
        if key and _SECRET_KEY.search(key) and not key.endswith("_env"):
            return REDACTED
        return _SECRET_VALUE.sub(REDACTED, value)
    return value


def redact_inputs(doc: dict[str, Any]) -> dict[str, Any]:
    """The inputs as inputs.json saves them: `redact` on every key, and on `mcp_servers`
    the stricter rule of `redact_servers`."""
    out = redact({k: v for k, v in doc.items() if k != "mcp_servers"})
    if "mcp_servers" in doc:
        out["mcp_servers"] = redact_servers(doc["mcp_servers"])
    return {k: out[k] for k in doc}  # the keys in the order given


def redact_servers(servers: Any) -> Any:
    """`mcp_servers` as saved. A server's `env` and `headers` are where its credentials go,
    whatever their names, so a value there is kept only when it names a variable (`${VAR}`:
    the secret is in the environment, and a resumed run starts the server the same way),
    with any credential-like text in it cut as anywhere; every other value is REDACTED.
    The server's other keys are redacted as any input."""
    if not isinstance(servers, dict):
        return redact(servers)
    out: dict[str, Any] = {}
    for name, server in servers.items():
        if not isinstance(server, dict):
            out[name] = redact(server)
            continue
        saved = {}
        for key, value in server.items():
            if key in ("env", "headers") and isinstance(value, dict):
                saved[key] = {k: _kept(v) for k, v in value.items()}
            else:
                saved[key] = redact(value, key)
        out[name] = saved
    return out


def _kept(value: Any) -> Any:
    if isinstance(value, str) and has_variable(value):
        return _SECRET_VALUE.sub(REDACTED, value)
    return REDACTED


def resolve(raw: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    return Path(os.path.expanduser(raw)).resolve()


def default_run_dir(workspace: Path, run_id: str) -> Path:
    """WORKSPACE/.orkeon/runs/RUN_ID. A `.orkeon` or `.orkeon/runs` that is a symlink is
    refused (InputError): a repository that ships one would have the run written wherever
    it points, outside the workspace."""
    for rel in (".orkeon", ".orkeon/runs"):
        path = workspace / rel
        if path.is_symlink():
            raise InputError(
                f"{rel}: {path} is a symlink (to {os.readlink(path)}): orkeon does not write "
                "a run through a link the workspace holds (remove it, or give --run-dir)"
            )
    return workspace / ".orkeon" / "runs" / run_id


def resume_document(rd: Path, saved: Any, overrides: Any | None) -> dict[str, Any]:
    """The saved inputs of run directory `rd` (read and checked against the run's seal),
    with top-level keys of `overrides` replacing theirs."""
    if not isinstance(saved, dict):
        raise InputError(f"--resume: {rd / 'inputs.json'} is not an inputs document")
    doc = dict(saved)
    if overrides is not None:
        if not isinstance(overrides, dict):
            raise InputError("inputs: must be a JSON object")
        doc.update(overrides)
    return doc


def save_inputs(
    records: RunRecords, doc: dict[str, Any], resume: bool, saved: Any | None = None
) -> None:
    """RUN_DIR/inputs.json, secrets redacted. A resumed run given other inputs keeps the
    earlier ones beside (`inputs.1.json`, ...): nothing a user wrote is lost."""
    rd = records.run_dir
    redacted = redact_inputs(doc)
    if resume and saved is not None:
        written = records.redactor.value(redacted) if records.redactor else redacted
        if written == saved:
            return
        n = 1
        while (rd / f"inputs.{n}.json").exists():
            n += 1
        records.copy("inputs.json", f"inputs.{n}.json")
    records.write("inputs.json", redacted)


@dataclass
class Resumed:
    """A run directory to resume, locked, its records checked against its seal."""

    lock: RunLock
    records: RunRecords
    doc: dict[str, Any]  # the saved inputs, with the keys given again
    saved_inputs: Any
    state: dict[str, Any]
    pinned: tuple[Any, str] | None
    # The last attempt's result's `budget`: what every attempt so far spent (None: the
    # last attempt left no result, killed before it could write one).
    earlier: dict[str, Any] | None = None


def resumed_run(rd: Path, step: str, overrides: Any, environ: Mapping[str, str] | None) -> Resumed:
    """The run in `rd` to resume: locked (UsageError when a run is working in it), its
    records checked against its seal (InputError naming a record that does not match),
    the saved inputs with `overrides`' keys, its state and pinned plan."""
    if not (rd / "inputs.json").is_file():
        raise InputError(f"--resume: not a run directory (no inputs.json): {rd}")
    lock = RunLock.take(rd, "--resume")
    try:
        records, docs = open_sealed(rd, "--resume", environ)
        doc = resume_document(rd, docs["inputs.json"], overrides)
        state = docs["state.json"] if isinstance(docs["state.json"], dict) else {}
        if state.get("step", step) != step:
            raise UsageError(f"--resume: {rd} is a {state['step']} run, not {step}")
        pinned = pinned_plan(state, rd)
        saved = docs["inputs.json"]
        if (
            pinned is not None
            and isinstance(overrides, dict)
            and "plan" in overrides
            and redact(overrides["plan"]) != saved.get("plan")  # given again as it was: fine
        ):
            raise InputError(
                "plan: a resumed run keeps the plan it started with (pinned in its "
                "state.json); start a new run to run another plan"
            )
    except BaseException:
        lock.release()
        raise
    last = docs.get("result.json")
    earlier = last.get("budget") if isinstance(last, dict) else None
    spent = earlier if isinstance(earlier, dict) else None
    return Resumed(lock, records, doc, docs["inputs.json"], state, pinned, spent)


def new_run_dir(
    rd: Path, run_id: str, environ: Mapping[str, str] | None
) -> tuple[RunLock, RunRecords]:
    """Make and lock a new run's directory; UsageError when it holds a run already or
    another run is working in it, RecordsError when the disk refuses."""
    try:
        rd.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordsError.writing(rd, exc) from None
    lock = RunLock.take(rd, "--run-dir")
    if (rd / "inputs.json").exists():
        lock.release()
        raise UsageError(f"--run-dir: already holds a run (use --resume to continue it): {rd}")
    return lock, RunRecords.create(rd, run_id, environ)


GITIGNORE = (
    "# orkeon's run folders (written by the first orkeon run here; edit or delete freely)\n/runs/\n"
)


def leave_gitignore(workspace: Path, rd: Path) -> None:
    """Write WORKSPACE/.orkeon/.gitignore ignoring `runs/` when the run directory `rd` is in
    WORKSPACE/.orkeon/runs/ and the file does not exist; a file there, the user's or an
    earlier run's, is never touched. A failure to write it is a warning: the run goes on."""
    orkeon_dir = workspace / ".orkeon"
    try:
        rd.relative_to(orkeon_dir / "runs")
    except ValueError:
        return  # the run is kept elsewhere: nothing of it lands in the workspace's commits
    target = orkeon_dir / ".gitignore"
    try:
        orkeon_dir.mkdir(parents=True, exist_ok=True)
        # O_EXCL: created only where no file is, even when two runs start at once.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    except OSError as exc:
        logs.warn(
            f"{target}: could not write it ({exc.strerror or exc}); run folders are not ignored by git"
        )
        return
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(GITIGNORE)
