"""The project's instruction files (`AGENTS.md`, `CLAUDE.md`; docs/inputs.md,
"instructions"), behind trust (docs/security.md, "Project instruction files").

Where they are looked for: the workspace root, and each folder from the root down to each
of a role's roots (`src/api/` looks in `src` and `src/api`). In each folder the first
name of `instructions.files` that is there is the folder's file; a later name next to it
is not read (Codex's rule: one file per folder, so a `CLAUDE.md` that is a copy or a
symlink of the `AGENTS.md` beside it is not given twice). A role gets the root's file and
then its roots' folders' files, root first: a deeper file comes later and wins.

A file is given only when trusted: its digest (sha256 of its bytes) recorded by
`orkeon hooks trust` in the same store as the settings' (config/trust.py), or
`ORKEON_TRUST_PROJECT_HOOKS=1` with stdin not a TTY. An untrusted file, and one changed
since it was trusted, is not given at all. Every file is read once, when the run's
configuration is checked: the roles get that text, never the file as a role left it; a
resumed run (and a repair) compares with the digests its first start saved, and a file
changed since then is not given either.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from .trust import TRUST_FILE, default_config_dir, env_trusts, read_store, store_put, workspace_key

DEFAULT_FILES = ("AGENTS.md", "CLAUDE.md")
# A file's text is given up to this size (Codex's default, project_doc_max_bytes); the
# digest covers the whole file.
MAX_FILE_BYTES = 32 * 1024
# Folders `orkeon hooks trust` does not look in: git's own and orkeon's run records.
SKIPPED_FOLDERS = frozenset({".git", ".orkeon"})

# What happened to a file found (`orkeon validate` prints these, docs/inputs.md).
TRUSTED = "trusted"  # given to the roles
UNTRUSTED = "untrusted"  # no trust recorded: not given
CHANGED = "changed since trusted"  # a trust recorded for other content: not given
CHANGED_IN_RUN = "changed since the run started"  # a resumed run's: not given
NOT_READ = "not read"  # another name comes first in its folder, or it cannot be read


@dataclass(frozen=True)
class InstructionFile:
    """One file found: its workspace-relative path, the folder it applies to ("" is the
    workspace root), what happened to it, its digest, and its text when trusted."""

    rel: str
    folder: str
    status: str
    digest: str = ""
    text: str = ""
    why: str = ""  # for NOT_READ: the reason

    @property
    def given(self) -> bool:
        return self.status == TRUSTED


@dataclass(frozen=True)
class Instructions:
    """The instruction files of a run, read once at its start."""

    files: tuple[InstructionFile, ...] = ()

    def for_role(self, roots: Sequence[str] | None) -> list[InstructionFile]:
        """The trusted files a role with `roots` (None: none) gets, in the order given:
        the workspace root's, then each root's folders', root first, each once."""
        wanted = role_folders(roots or ())
        by_folder = {f.folder: f for f in self.files if f.given}
        return [by_folder[d] for d in wanted if d in by_folder]

    @property
    def saved(self) -> dict[str, str]:
        """For state.json: each file read and its digest then."""
        return {f.rel: f.digest for f in self.files if f.digest}

    def since(self, saved: object) -> Instructions:
        """These files against the digests `saved` at an earlier start (that start looked
        in every folder these were found in): a trusted file whose content is not what it
        was then, or that was not there then, is not given (CHANGED_IN_RUN)."""
        if not isinstance(saved, dict):
            return self
        out = []
        for f in self.files:
            was = saved.get(f.rel)
            if f.given and was != f.digest:
                # The earlier digest is kept: a step of a pipeline compares with it too.
                was = was if isinstance(was, str) else ""
                f = replace(f, status=CHANGED_IN_RUN, text="", digest=was)
            out.append(f)
        return Instructions(tuple(out))


NO_INSTRUCTIONS = Instructions()


def describe(f: InstructionFile) -> str:
    """`orkeon validate`'s line on a file found: what a run does with it."""
    if f.status == NOT_READ:
        return f"instructions: {f.rel}: not read: {f.why}"
    if f.given:
        who = "every role" if not f.folder else f"the roles whose roots are in {f.folder}/"
        return f"instructions: {f.rel}: trusted, given to {who}"
    fix = "`orkeon hooks trust` trusts it as it is now"
    return f"instructions: {f.rel}: {f.status}, not given ({fix})"


def root_folders(root: str) -> list[str]:
    """The folders from the workspace root (left out) down to `root`: its parents, and
    itself when it names a folder (a trailing `/`). A part with a glob character ends it."""
    parts = PurePosixPath(root).parts
    if not root.endswith("/"):
        parts = parts[:-1]
    out: list[str] = []
    for i, part in enumerate(parts):
        if part in (".", "..") or set(part) & set("*?["):
            break
        out.append("/".join(parts[: i + 1]))
    return out


def role_folders(roots: Iterable[str]) -> list[str]:
    """The workspace root ("") and every folder down to each root, each once, in order."""
    out: dict[str, None] = {"": None}
    for root in roots:
        out.update(dict.fromkeys(root_folders(root)))
    return list(out)


def _key(workspace: Path, rel: str) -> str:
    return workspace_key(workspace) + "::instructions:" + rel


def _read(ws: Path, rel: str) -> tuple[str, str, str]:
    """(digest, text up to MAX_FILE_BYTES, why not read): a file whose real path leaves
    the workspace (a symlink out), or that is not a regular file, is not read."""
    full = os.path.join(ws, rel)
    real = os.path.realpath(full)
    if not real.startswith(str(ws) + os.sep):
        return "", "", "its real path is outside the workspace"
    if not os.path.isfile(real):
        return "", "", "not a regular file"
    try:
        with open(real, "rb") as f:
            head = f.read(MAX_FILE_BYTES)
            h, size = hashlib.sha256(head), len(head)
            while chunk := f.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    except OSError as exc:
        return "", "", f"cannot be read ({exc.strerror or exc})"
    text = head.decode("utf-8", errors="replace")
    if size > MAX_FILE_BYTES:
        text += f"\n[… cut at {MAX_FILE_BYTES} bytes; read {rel} for the rest]"
    return "sha256:" + h.hexdigest(), text, ""


def found_in(ws: Path, folder: str, names: Sequence[str]) -> list[str]:
    """The relative path of each name present in `folder`, in the names' order: the first
    readable one is the folder's file."""
    rels = (str(PurePosixPath(folder, name)) if folder else name for name in names)
    return [rel for rel in rels if os.path.lexists(os.path.join(ws, rel))]


def load_instructions(
    workspace: Path,
    names: Sequence[str],
    roots: Iterable[str] = (),
    *,
    everywhere: bool = False,
    bare: bool = False,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> Instructions:
    """The instruction files of the workspace root and of the folders down to `roots` (a
    run's plan's), each read once, with its trust; `everywhere`: of every folder (a
    pipeline, whose plan is written later, reads them all at its start). `bare`
    (`--bare`): none is read."""
    if bare:
        return NO_INSTRUCTIONS
    ws = Path(os.path.realpath(workspace))
    env = os.environ if environ is None else environ
    everything = env_trusts(env, stdin_is_tty)
    store = read_store((config_dir or default_config_dir(env)) / TRUST_FILE)
    files: list[InstructionFile] = []
    for folder in all_folders(ws) if everywhere else role_folders(roots):
        chosen = ""
        for rel in found_in(ws, folder, names):
            if chosen:
                files.append(InstructionFile(rel, folder, NOT_READ, why=f"{chosen} comes first"))
                continue
            digest, text, why = _read(ws, rel)
            if why:
                files.append(InstructionFile(rel, folder, NOT_READ, why=why))
                continue
            chosen = rel
            recorded = store.get(_key(ws, rel))
            if everything or recorded == digest:
                files.append(InstructionFile(rel, folder, TRUSTED, digest, text))
            else:
                status = CHANGED if recorded else UNTRUSTED
                files.append(InstructionFile(rel, folder, status, digest))
    return Instructions(tuple(files))


def all_folders(ws: Path) -> list[str]:
    """Every folder of the workspace but git's and orkeon's, root first, as relative paths
    ("" the root), symlinks to folders not followed."""
    out = []
    for here, dirs, _ in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        folder = os.path.relpath(here, ws)
        out.append("" if folder == "." else Path(folder).as_posix())
    return out


def workspace_instruction_files(workspace: Path, names: Sequence[str]) -> list[tuple[str, str]]:
    """Every folder's instruction file in the workspace (git's and orkeon's folders left
    out), as (relative path, digest): what `orkeon hooks trust` records."""
    ws = Path(os.path.realpath(workspace))
    out = []
    for folder in all_folders(ws):
        for rel in found_in(ws, folder, names):
            digest, _text, why = _read(ws, rel)
            if not why:
                out.append((rel, digest))
                break
    return out


def record_instructions_trust(
    workspace: Path, names: Sequence[str], *, config_dir: Path | None = None
) -> list[tuple[Path, str]]:
    """Trust every instruction file of the workspace as it is now; (path, digest) each."""
    ws = Path(os.path.realpath(workspace))
    out = []
    for rel, digest in workspace_instruction_files(ws, names):
        store_put(_key(ws, rel), digest, config_dir)
        out.append((ws / rel, digest))
    return out
