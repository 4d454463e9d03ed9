"""`--patch FILE` (`patch` in the inputs) on dev-batches, tasks-repair and pipeline: the
run's change as a file a separate, privileged job applies with `orkeon apply`
(docs/output.md, "The patch"; docs/ci.md, "A patch applied by another job").

- `target` (prepare, before anything runs): the step must be one of PATCH_STEPS, the
  workspace a git repository with a commit (its HEAD is the patch's base), and FILE no
  guard of the workspace; each an InputError naming `patch` (exit 2).
- `begin` (the step's start): the base is recorded in state.json (a resumed run keeps the
  one it first started from) and a FILE left from before is removed, so no stale patch is
  read as this run's.
- `finish` (the step succeeded): the change since the base (patch_build.py), attributed
  to the batch and roles that wrote each file (the changes log's paths), scanned
  (patch_scan.py), then written whole (renamed into place). A hit fails the step: status
  "failed", `error.kind` "audit" (exit 1), each hit's path and rule named, the secret never;
  no FILE is written. A step that did not succeed writes none.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .. import __version__, gitpatch
from ..config.inputs import Inputs
from ..errors import InputError
from ..policy.guards import RECORDS, patch_guard
from . import patch_build, patch_scan, patchfile
from .audit.git import git_repo
from .audit.gitcmd import AuditGit
from .audit.paths import AuditError, ignore_list
from .changes import read_log

if TYPE_CHECKING:
    from .context import StepOutcome, StepRun

PATCH_STEPS = ("dev-batches", "tasks-repair", "pipeline")
STATE_KEY = "patch_base"
# A pipeline's steps run in RUN_DIR/steps/NAME (run/steps/chain.py).
STEPS_DIR = "steps"


@dataclass(frozen=True)
class PatchTarget:
    path: Path  # absolute
    base: str  # the commit HEAD named when the run was prepared
    prefix: str  # the workspace's folder in its repository


def target(inputs: Inputs, step: str | None, workspace: Path) -> PatchTarget | None:
    """The checked `patch` of the inputs (a relative path is the workspace's), or None."""
    if inputs.patch is None or step is None:
        return None
    if step not in PATCH_STEPS:
        raise InputError(f"patch: only {', '.join(PATCH_STEPS)} write a patch, not {step}")
    path = Path(os.path.abspath(workspace / os.path.expanduser(inputs.patch)))
    if path.is_dir():
        raise InputError(f"patch: a folder, not a file: {inputs.patch}")
    if not path.parent.is_dir():
        raise InputError(f"patch: no such folder: {path.parent}")
    real = Path(os.path.realpath(path))
    try:
        rel = real.relative_to(workspace).as_posix()
    except ValueError:
        rel = None
    if rel is not None:
        guard = patch_guard(rel) or (RECORDS.lstrip("/") if _under(rel, RECORDS) else None)
        if guard is not None:
            raise InputError(f"patch: {inputs.patch} is inside the workspace's guards ({guard})")
    git = AuditGit.default(workspace)
    try:
        repo = git_repo(git.bind(workspace)) if git.program is not None else None
    except AuditError as exc:
        raise InputError(f"patch: the workspace's git cannot be read: {exc}") from None
    if repo is None or repo.head is None:
        raise InputError(
            "patch: the workspace is not a git repository with a commit (a patch is made "
            "against the commit the run starts from)"
        )
    return PatchTarget(real, repo.head, repo.prefix)


def _under(rel: str, folder: str) -> bool:
    folder = folder.strip("/")
    return rel == folder or rel.startswith(folder + "/")


def begin(sr: StepRun) -> None:
    """Record the base at the step's start; remove a FILE left from before."""
    t = sr.config.patch
    if t is None:
        return
    if not isinstance(sr.state.get(STATE_KEY), str):
        sr.save_state(**{STATE_KEY: t.base})
    with contextlib.suppress(FileNotFoundError):
        t.path.unlink()


async def finish(sr: StepRun, outcome: StepOutcome) -> StepOutcome:
    """Write the patch after a step that succeeded; the outcome, failed when it could not be."""
    t = sr.config.patch
    if t is None or outcome.status != "succeeded":
        return outcome
    base = str(sr.state.get(STATE_KEY) or t.base)
    try:
        written = await anyio.to_thread.run_sync(_write, sr, t, base)
    except (OSError, AuditError) as exc:
        return _failed(sr, outcome, f"the patch could not be made: {exc}")
    if isinstance(written, list):
        hits = "; ".join(h.text() for h in written)
        return _failed(sr, outcome, f"the patch was not written: it holds {hits}")
    sr.events.emit("patch.written", step=sr.step, **written)
    return replace(outcome, fields={**outcome.fields, "patch": written})


def _failed(sr: StepRun, outcome: StepOutcome, why: str) -> StepOutcome:
    sr.events.emit("patch.refused", step=sr.step, message=why)
    return replace(outcome, status="failed", kind="audit", error=why)


def _write(sr: StepRun, t: PatchTarget, base: str) -> dict[str, Any] | list[patch_scan.Hit]:
    git = sr.audit_git().bind(sr.workspace)
    ignore = [*ignore_list(sr.workspace, sr.run_dir)]
    with contextlib.suppress(ValueError):
        ignore.append(t.path.relative_to(sr.workspace).as_posix())
    pinned = sr.config.pins.paths
    changes = patch_build.changed_files(git, t.prefix, base, ignore, pinned)
    hits = patch_scan.scan(changes, sr.events.redactor, pinned)
    if hits:
        return hits
    owners = _owners(sr)
    files = []
    for c in changes:
        batch, roles = owners.get(c.path, (None, []))
        status = "added" if c.before is None else "deleted" if c.after is None else "modified"
        files.append(
            {
                "path": c.path,
                "status": status,
                "batch": batch,
                "roles": roles,
                "mode": c.mode,
                "sha256": None if c.after is None else patchfile.sha256(c.after),
                "blob": None if c.after is None else gitpatch.blob_id(c.after),
            }
        )
    manifest = {
        "orkeon": __version__,
        "run_id": sr.run_id,
        "step": sr.step,
        "base": base,
        "files": files,
    }
    data = patchfile.render(manifest, gitpatch.patch(changes).encode("utf-8", "surrogateescape"))
    part = t.path.with_name(f".{t.path.name}.{os.getpid()}.part")
    part.write_bytes(data)
    part.replace(t.path)
    digest = patchfile.parse(data).manifest["patch_sha256"]
    return {"path": str(t.path), "base": base, "files": len(files), "sha256": digest}


def _owners(sr: StepRun) -> dict[str, tuple[str | None, list[str]]]:
    """Each path a batch of this run changed: the last batch that changed it and every
    role whose roots hold it (the changes logs: a pipeline's steps' in the order run)."""
    dirs = [sr.run_dir]
    steps = sr.state.get("steps")
    if isinstance(steps, list):
        dirs = [sr.run_dir / str(s.get("run_dir")) for s in steps if isinstance(s, dict)]
    owners: dict[str, tuple[str | None, list[str]]] = {}
    for rd in dirs:
        for doc in read_log(rd):
            if doc.get("type") != "batch":
                continue
            for f in doc.get("files") or []:
                if not isinstance(f, dict) or not isinstance(f.get("path"), str):
                    continue
                _, earlier = owners.get(f["path"], (None, []))
                roles = [r for r in f.get("roles") or [] if isinstance(r, str)]
                owners[f["path"]] = (str(doc.get("batch")), list(dict.fromkeys(earlier + roles)))
    return owners
