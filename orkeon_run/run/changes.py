"""What each batch changed, kept for the reports (docs/output.md, "Changes").

After a batch's roles, before the audit's build and test, every path the audit would see
changed is recorded with its content before and after the batch:

- `RUN_DIR/changes.jsonl`: one line per batch, `{"type": "batch", "step", "batch",
  "files": [{"path", "roles", "status" (added|modified|deleted), "before", "after"
  (digests, null when there was no file, "unknown" when its content was not kept),
  "binary", "added", "removed", "mode"}]}`; first a `{"type": "start", "files": {path:
  digest}}` line with the uncommitted files the step began with, so that a change to one of
  them shows against what it was.
- `RUN_DIR/changes/blobs/SHA256`: each content once, the run's secrets redacted.

The content before a batch is, in order: what an earlier batch of this run left (its
`after`), what the step began with (the start line), the file at the commit the workspace
was at (`git cat-file`, the audit's own hardened git), or nothing (added). A workspace that
is no git repository keeps no start content: its changed files' `before` is "unknown"
unless an earlier batch stored it.

A file over BLOB_CAP, or one that would take the store over STORE_CAP, is listed with
"unknown" content. Recording never fails a step: an error becomes a warning event.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..environ import Redactor
from ..jsonio import read_objects
from . import audit

if TYPE_CHECKING:
    from .context import StepRun

LOG = "changes.jsonl"
BLOBS = "changes/blobs"
BLOB_CAP = 1 << 20
STORE_CAP = 64 << 20
UNKNOWN = "unknown"
# The uncommitted files kept when a step begins, at most (a nested repository's files all
# count as uncommitted).
START_FILES = 5000
GIT_ARGS = 500  # paths per git command line


class Store:
    """Contents by SHA-256 under RUN_DIR/changes/blobs, redacted before they are hashed."""

    def __init__(self, run_dir: Path, redactor: Redactor | None = None) -> None:
        self.root = run_dir / BLOBS
        self.redactor = redactor
        self._used: int | None = None

    def put(self, data: bytes) -> str | None:
        """The digest `data` is kept under; None when it is too large to keep."""
        from .. import gitpatch  # here and below: only a run with a changed file needs it

        if self.redactor and not gitpatch.is_binary(data):
            text = data.decode("utf-8", "surrogateescape")
            data = self.redactor.text(text).encode("utf-8", "surrogateescape")
        if len(data) > BLOB_CAP:
            return None
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / digest
        if path.exists():
            return digest
        if self._used is None:
            self._used = (
                sum(p.stat().st_size for p in self.root.glob("*")) if self.root.is_dir() else 0
            )
        if self._used + len(data) > STORE_CAP:
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        # Renamed into place whole, but not synced: a content lost in a crash is reported
        # as not kept, and a sync per file would cost more than the whole record.
        part = path.with_name(f".{digest}.{os.getpid()}")
        part.write_bytes(data)
        part.replace(path)
        self._used += len(data)
        return digest

    def get(self, digest: object) -> bytes | None:
        if not isinstance(digest, str) or len(digest) != 64 or not digest.isalnum():
            return None
        try:
            return (self.root / digest).read_bytes()
        except OSError:
            return None


def read_log(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of RUN_DIR/changes.jsonl that are objects (a torn last line is skipped)."""
    return read_objects(run_dir / LOG)


def _known(lines: Sequence[dict[str, Any]]) -> dict[str, str | None]:
    """Each path's content as this run last saw it: the start line, then every batch's
    `after`, in order."""
    known: dict[str, str | None] = {}
    for doc in lines:
        if doc.get("type") == "start" and isinstance(doc.get("files"), dict):
            known.update({k: v for k, v in doc["files"].items() if isinstance(k, str)})
        elif doc.get("type") == "batch":
            for f in doc.get("files") or []:
                if isinstance(f, dict) and isinstance(f.get("path"), str):
                    known[f["path"]] = f.get("after")
    return known


def _append(run_dir: Path, doc: dict[str, Any]) -> None:
    with (run_dir / LOG).open("a", encoding="utf-8") as f:
        f.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")


def _read(path: Path) -> tuple[bytes | None, str]:
    """A workspace file's content and git mode; (None, "") when there is none. A symlink's
    content is its target, as git stores it."""
    from .. import gitpatch  # as in Store.put: read only once there is a changed file

    try:
        st = os.lstat(path)
    except OSError:
        return None, ""
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(os.readlink(path)), gitpatch.SYMLINK
    if not stat.S_ISREG(st.st_mode):
        return None, ""
    mode = gitpatch.EXECUTABLE if st.st_mode & 0o111 else gitpatch.REGULAR
    if st.st_size > BLOB_CAP:
        return b"", mode + "+large"
    try:
        return path.read_bytes(), mode
    except OSError:
        return None, ""


def record_start(run_dir: Path, workspace: Path, before: audit.Snapshot, store: Store) -> None:
    """The start line: the content of each file that was uncommitted when the step began
    (git mode only), once per run directory (a resumed run keeps its first)."""
    if not before.git or any(d.get("type") == "start" for d in read_log(run_dir)):
        return
    files: dict[str, str | None] = {}
    for rel in sorted(before.entries)[:START_FILES]:
        data, mode = _read(workspace / rel)
        if data is not None and not mode.endswith("+large"):
            files[rel] = store.put(data) or UNKNOWN
    _append(run_dir, {"type": "start", "files": files})


def record_batch(
    run_dir: Path,
    workspace: Path,
    step: str,
    batch: str,
    roles: Mapping[str, Sequence[str]],
    before: audit.Snapshot,
    git: audit.AuditGit,
    store: Store,
    paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Record what changed since `before` (`paths`: the changed paths the audit's look
    found just now; None: look); `roles` maps each role's full name to its roots.
    Blocking. Returns the line written."""
    if paths is None:
        paths, _ = audit.compare(workspace, before, git)
    known = _known(read_log(run_dir))
    runner = git.bind(workspace) if before.git and git.program is not None else None
    clean = [p for p in paths if p not in known and before.git and p not in before.entries]
    committed = _committed(runner, before, clean, store)
    files = []
    for rel in paths:
        data, mode = _read(workspace / rel)
        large = mode.endswith("+large")
        after: str | None = None
        if data is not None:
            after = UNKNOWN if large else (store.put(data) or UNKNOWN)
        if rel in known:
            was: str | None = known[rel]
        elif rel in committed:
            was = committed[rel]
        else:
            was = _before(before, rel)
        if was is None and after is None:
            continue
        old, new = store.get(was), store.get(after)
        from .. import gitpatch  # as in Store.put: a file changed

        added, removed = (
            gitpatch.counts(old, new) if was != UNKNOWN and after != UNKNOWN else (0, 0)
        )
        files.append(
            {
                "path": audit.shown(rel),
                "roles": [name for name, roots in roles.items() if audit.under(rel, roots)],
                "status": "added" if was is None else "deleted" if after is None else "modified",
                "before": was,
                "after": after,
                "binary": gitpatch.is_binary(old) or gitpatch.is_binary(new),
                "added": added,
                "removed": removed,
                "mode": mode.removesuffix("+large") or gitpatch.REGULAR,
            }
        )
    doc = {"type": "batch", "step": step, "batch": batch, "files": files}
    _append(run_dir, doc)
    return doc


def _before(before: audit.Snapshot, rel: str) -> str | None:
    """A path the snapshot knows: None when there was no file, UNKNOWN when it was there
    but its content was not kept."""
    entry = before.entries.get(rel)
    if not before.git:
        return None if entry is None else UNKNOWN
    missing = isinstance(entry, tuple | list) and tuple(entry[-1])[:1] == ("missing",)
    return None if entry is None or missing else UNKNOWN


def _committed(
    runner: Any, before: audit.Snapshot, paths: Sequence[str], store: Store
) -> dict[str, str | None]:
    """The digests of `paths` (clean when the batch began) as the commit HEAD named then:
    None for a path that commit does not have. Two git commands for all of them: `ls-tree`
    names each path's blob and size, `show` prints the blobs one after another."""
    if not paths:
        return {}
    if runner is None or before.head is None:
        return dict.fromkeys(paths)
    found: dict[str, str | None] = dict.fromkeys(paths)
    for i in range(0, len(paths), GIT_ARGS):
        chunk = [before.prefix + p for p in paths[i : i + GIT_ARGS]]
        listed = runner("ls-tree", "-z", "-l", "--full-tree", before.head, "--", *chunk)
        if listed.exit_code != 0 or listed.stdout_dropped:
            raise audit.AuditError(f"git ls-tree failed: {listed.first_line()}")
        blobs = []  # (path, object id, size)
        for entry in listed.stdout.split("\0"):
            meta, _, name = entry.partition("\t")
            fields = meta.split()
            if len(fields) == 4 and fields[1] == "blob" and fields[3].isdigit():
                blobs.append((name.removeprefix(before.prefix), fields[2], int(fields[3])))
        if not blobs:
            continue
        shown = runner("show", "--no-textconv", *(oid for _, oid, _ in blobs))
        data = shown.stdout.encode("utf-8", "surrogateescape")
        if shown.exit_code != 0 or shown.stdout_dropped or len(data) != sum(n for *_, n in blobs):
            raise audit.AuditError(f"git show failed: {shown.first_line() or 'short output'}")
        at = 0
        for rel, _, size in blobs:
            found[rel] = store.put(data[at : at + size]) or UNKNOWN
            at += size
    return found


async def start(sr: StepRun, before: audit.Snapshot) -> None:
    """`record_start` for a step run, in a worker thread; a failure is a warning event."""
    await _guarded(sr, "", partial(record_start, sr.run_dir, sr.workspace, before, _store(sr)))


async def batch(
    sr: StepRun,
    batch: str,
    roles: Mapping[str, Sequence[str]],
    before: audit.Snapshot,
    paths: Sequence[str] | None = None,
) -> None:
    """`record_batch` for a step run (`paths`: what changed, as the audit found it), in a
    worker thread; a failure is a warning event."""
    work = partial(
        record_batch,
        sr.run_dir,
        sr.workspace,
        sr.step,
        batch,
        roles,
        before,
        sr.audit_git(),
        _store(sr),
        paths,
    )
    await _guarded(sr, batch, work)


def _store(sr: StepRun) -> Store:
    return Store(sr.run_dir, sr.events.redactor)


async def _guarded(sr: StepRun, batch: str, work: Any) -> None:
    try:
        await anyio.to_thread.run_sync(work)
    except (OSError, audit.AuditError) as exc:
        message = f"the batch's changes were not recorded for the report: {exc}"
        sr.events.emit("warning", step=sr.step, batch=batch or None, message=message)
