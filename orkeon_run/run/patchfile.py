"""The file `--patch FILE` writes and `orkeon apply` reads (docs/output.md, "The patch").

One file, three parts:

    orkeon-patch 1
    {"format": "orkeon-patch", "version": 1, ...the manifest, one line of JSON...}
    (an empty line)
    diff --git a/... b/...        the patch, exactly as `git apply --index` takes it

git skips what comes before the first `diff --git`, so `git apply FILE` reads it too; the
manifest's `patch_sha256` is the SHA-256 of the bytes after the empty line. The manifest:
`orkeon` (the version that wrote it), `run_id`, `step`, `base` (the commit the run started
from), `patch_sha256`, and `files`, one per path in the patch, in its order: `{"path"
(workspace-relative), "status" (added|modified|deleted), "batch" (the last batch that
changed it; null: not a change of this run's batches, e.g. uncommitted before it),
"roles" (the full names of the roles whose roots hold it), "mode", "sha256" and "blob"
(the SHA-256 and git's object id of its new content; null when deleted)}`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

MAGIC = b"orkeon-patch 1\n"
FORMAT = "orkeon-patch"
VERSION = 1
STATUSES = ("added", "modified", "deleted")


class PatchFormatError(ValueError):
    """The bytes are no patch file orkeon wrote (one line: what is wrong)."""


@dataclass(frozen=True)
class PatchFile:
    manifest: dict[str, Any]
    patch: bytes

    @property
    def paths(self) -> list[str]:
        return [f["path"] for f in self.manifest["files"]]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render(manifest: dict[str, Any], patch: bytes) -> bytes:
    """The file's bytes: the manifest (its `patch_sha256` set here) and the patch."""
    doc = {"format": FORMAT, "version": VERSION, **manifest, "patch_sha256": sha256(patch)}
    line = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return MAGIC + line.encode("utf-8") + b"\n\n" + patch


def parse(data: bytes) -> PatchFile:
    """The manifest and the patch of a file `render` wrote; PatchFormatError naming what
    is missing or malformed. The digests are not checked here (`orkeon apply` does)."""
    if not data.startswith(MAGIC):
        raise PatchFormatError("not an orkeon patch (its first line is not 'orkeon-patch 1')")
    head, sep, patch = data[len(MAGIC) :].partition(b"\n\n")
    if not sep:
        raise PatchFormatError("no empty line after the manifest")
    try:
        manifest = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PatchFormatError(f"the manifest is not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PatchFormatError("the manifest is not an orkeon-patch manifest")
    if manifest.get("version") != VERSION:
        raise PatchFormatError(
            f"manifest.version: {manifest.get('version')!r} (this orkeon reads 1)"
        )
    for key in ("base", "patch_sha256"):
        if not isinstance(manifest.get(key), str) or not manifest[key]:
            raise PatchFormatError(f"manifest.{key}: missing")
    files = manifest.get("files")
    if not isinstance(files, list):
        raise PatchFormatError("manifest.files: missing")
    for i, f in enumerate(files):
        _check_file(i, f)
    return PatchFile(manifest, patch)


def _check_file(i: int, f: Any) -> None:
    where = f"manifest.files[{i}]"
    if not isinstance(f, dict) or not isinstance(f.get("path"), str) or not f["path"]:
        raise PatchFormatError(f"{where}.path: missing")
    if f.get("status") not in STATUSES:
        raise PatchFormatError(f"{where}.status: one of {', '.join(STATUSES)}")
    deleted = f["status"] == "deleted"
    for key in ("sha256", "blob"):
        value = f.get(key)
        if deleted and value is not None:
            raise PatchFormatError(f"{where}.{key}: null for a deleted file")
        if not deleted and not isinstance(value, str):
            raise PatchFormatError(f"{where}.{key}: missing")
