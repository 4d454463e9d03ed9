"""What a run changed, read back for the reports (docs/output.md, "Changes"): the
`changes.jsonl` lines and stored contents the run wrote after each batch (run/changes.py),
of the run directory and of each step a pipeline ran; the model's own text per turn from
the transcripts; and the run's whole change as one patch (`--format patch`).

Everything here is hostile text (the workspace's files, the model's words): the writers
escape it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import gitpatch
from ..jsonio import read_objects

BLOBS = "changes/blobs"
UNKNOWN = "unknown"
TURN_TEXT_CAP = 8000


@dataclass
class FileView:
    """One changed file of one batch. `before`/`after`: the stored digests (None: no file;
    "unknown": not kept)."""

    path: str
    roles: list[str]
    status: str  # added | modified | deleted
    binary: bool
    added: int
    removed: int
    mode: str
    before: str | None
    after: str | None
    blobs: Path = field(repr=False, default=Path())

    def content(self, side: str) -> bytes | None:
        digest = self.before if side == "before" else self.after
        if not isinstance(digest, str) or digest == UNKNOWN or not digest.isalnum():
            return None
        try:
            return (self.blobs / digest).read_bytes()
        except OSError:
            return None

    @property
    def known(self) -> bool:
        """Whether both sides' contents were kept (a diff can be shown)."""
        return UNKNOWN not in (self.before, self.after) and all(
            d is None or self.content(s) is not None
            for s, d in (("before", self.before), ("after", self.after))
        )

    def diff(self) -> str:
        """This file's patch text ("" when its content was not kept)."""
        if not self.known:
            return ""
        change = gitpatch.FileChange(
            self.path, self.content("before"), self.content("after"), self.mode
        )
        return gitpatch.file_diff(change)

    def to_json(self) -> dict[str, Any]:
        keep = ("path", "roles", "status", "binary", "added", "removed", "mode")
        return {k: getattr(self, k) for k in keep}


@dataclass
class BatchChanges:
    step: str
    batch: str
    files: list[FileView]

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "batch": self.batch, "files": [f.to_json() for f in self.files]}


@dataclass
class TurnText:
    role: str
    turn: int
    text: str
    cut: bool = False


def load_changes(run_dir: Path, step_dirs: list[str]) -> list[BatchChanges]:
    """The batches' changes of `run_dir` and of the steps under it (a pipeline's), in the
    order they ran."""
    out: list[BatchChanges] = []
    for folder in [run_dir, *(run_dir / d for d in step_dirs)]:
        for doc in read_objects(folder / "changes.jsonl"):
            if doc.get("type") != "batch":
                continue
            files = [
                _file(f, folder / BLOBS) for f in doc.get("files") or [] if isinstance(f, dict)
            ]
            out.append(
                BatchChanges(_str(doc.get("step")), _str(doc.get("batch")), [f for f in files if f])
            )
    return out


def _file(raw: dict[str, Any], blobs: Path) -> FileView | None:
    path = raw.get("path")
    if not isinstance(path, str) or not path:
        return None

    def digest(v: Any) -> str | None:
        return v if isinstance(v, str) else None

    return FileView(
        path=path,
        roles=[r for r in raw.get("roles") or [] if isinstance(r, str)],
        status=_str(raw.get("status")) or "modified",
        binary=raw.get("binary") is True,
        added=_int(raw.get("added")),
        removed=_int(raw.get("removed")),
        mode=_str(raw.get("mode")) or gitpatch.REGULAR,
        before=digest(raw.get("before")),
        after=digest(raw.get("after")),
        blobs=blobs,
    )


def run_patch(batches: list[BatchChanges]) -> tuple[str, list[str]]:
    """The run's whole change: each path from its content before its first batch to its
    content after its last, in path order; and the paths left out because their content
    was not kept."""
    first: dict[str, FileView] = {}
    last: dict[str, FileView] = {}
    for b in batches:
        for f in b.files:
            first.setdefault(f.path, f)
            last[f.path] = f
    parts, missing = [], []
    for path in sorted(first):
        a, z = first[path], last[path]
        if UNKNOWN in (a.before, z.after):
            missing.append(path)
            continue
        before = a.content("before") if a.before is not None else None
        after = z.content("after") if z.after is not None else None
        if (a.before is not None and before is None) or (z.after is not None and after is None):
            missing.append(path)
            continue
        parts.append(gitpatch.file_diff(gitpatch.FileChange(path, before, after, z.mode)))
    return "".join(parts), missing


def turn_texts(run_dir: Path, step_dirs: list[str]) -> list[TurnText]:
    """Each model answer's own text, per role in the order answered (transcripts/)."""
    out: list[TurnText] = []
    for folder in [run_dir, *(run_dir / d for d in step_dirs)]:
        root = folder / "transcripts"
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.jsonl")):
            turn = 0
            for doc in read_objects(path):
                if doc.get("direction") != "received":
                    continue
                turn += 1
                text = doc.get("content")
                if isinstance(text, str) and text.strip():
                    name = (
                        _str(doc.get("agent")) or path.relative_to(root).with_suffix("").as_posix()
                    )
                    cut = len(text) > TURN_TEXT_CAP
                    out.append(TurnText(name, turn, text[:TURN_TEXT_CAP], cut))
    return out


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
