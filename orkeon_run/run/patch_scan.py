"""What keeps a patch from being written (docs/output.md, "The patch"), each hit naming
the path and the rule, never the secret:

- a guard path (policy/guards.py `patch_guard`: every `.git`, the workspace guards, the
  run's pinned files, `.github/workflows/`);
- a secret orkeon knows (the run's redactor: the model's key, the MCP servers' header and
  env values, every credential-like variable it started with): anywhere in a file's new
  content, binary files too, or in a path;
- a secret Yelp's detect-secrets finds (its default plugins and filters, through its
  public API) in the lines the patch adds to a text file.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import gitpatch
from ..environ import Redactor
from ..policy.guards import patch_guard

# detect-secrets keeps its settings in the process (`default_settings` sets and restores
# them), and `orkeon jobs run` writes several runs' patches in one process: one at a time.
_SCANNING = threading.Lock()


@dataclass(frozen=True)
class Hit:
    path: str
    rule: str  # "guard .github/workflows/", "redactor value", "detect-secrets: AWS Access Key"
    line: int | None = None

    def text(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where} ({self.rule})"


def scan(
    changes: Sequence[gitpatch.FileChange],
    redactor: Redactor | None,
    pinned: Iterable[str] = (),
) -> list[Hit]:
    """Every hit in `changes` (the patch's files), guards first."""
    pinned = tuple(pinned)
    hits = [
        Hit(c.path, f"guard {g}") for c in changes if (g := patch_guard(c.path, pinned)) is not None
    ]
    if redactor:
        hits += [h for c in changes if (h := _redactor_hit(c, redactor)) is not None]
    hits += detector_hits(changes)
    return hits


def _redactor_hit(change: gitpatch.FileChange, redactor: Redactor) -> Hit | None:
    data = change.after or b""
    for secret in redactor.secrets:
        if secret in change.path:
            return Hit(change.path, "redactor value")
        at = data.find(secret.encode("utf-8", "surrogateescape"))
        if at >= 0:
            line = None if gitpatch.is_binary(data) else data.count(b"\n", 0, at) + 1
            return Hit(change.path, "redactor value", line)
    return None


def added_lines(change: gitpatch.FileChange) -> list[tuple[int, str]]:
    """The lines of a text file's new content that its old content lacks, with their line
    numbers (from 1); [] for a binary or deleted file."""
    if (
        change.after is None
        or gitpatch.is_binary(change.before)
        or gitpatch.is_binary(change.after)
    ):
        return []
    old = (change.before or b"").decode("utf-8", "surrogateescape").splitlines()
    new = change.after.decode("utf-8", "surrogateescape").splitlines()
    out: list[tuple[int, str]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "insert"):
            out += [(j + 1, new[j]) for j in range(j1, j2)]
    return out


def detector_hits(changes: Sequence[gitpatch.FileChange]) -> list[Hit]:
    """detect-secrets over the lines each file adds: each file's added lines are written,
    under the file's own name (its plugins and filters read the name: a lock file, a
    `.env`), to a private temporary folder and scanned there."""
    todo = [(c.path, lines) for c in changes if (lines := added_lines(c))]
    if not todo:
        return []
    # Imported only when a patch is written: its ~25 plugins load on first use.
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    hits: list[Hit] = []
    with (
        _SCANNING,
        tempfile.TemporaryDirectory(prefix="orkeon-scan-") as tmp,
        default_settings(),
    ):
        for i, (path, lines) in enumerate(todo):
            folder = Path(tmp, str(i))
            folder.mkdir()
            name = folder / (os.path.basename(path) or "file")
            name.write_text(
                "".join(text + "\n" for _, text in lines),
                encoding="utf-8",
                errors="surrogateescape",
            )
            found = SecretsCollection(root=str(folder))
            found.scan_file(name.name)
            seen: set[tuple[str, int]] = set()
            for _, secret in found:
                line = (
                    lines[secret.line_number - 1][0]
                    if 0 < secret.line_number <= len(lines)
                    else None
                )
                key = (secret.type, line or 0)
                if key not in seen:
                    seen.add(key)
                    hits.append(Hit(path, f"detect-secrets: {secret.type}", line))
    return hits
