"""Where a run looks for configuration beyond its `--inputs` (docs/inputs.md,
"Hermetic runs: --bare"), decided once per run.

A normal run reads, besides what the inputs name: the user configuration folder
(`$ORKEON_CONFIG_DIR`, default `~/.config/orkeon/`: its `settings.json`, and the trust
records in its `trusted.json`), and from the workspace, each only once trusted: the
`.orkeon/settings.json`, the `.mcp.json`, the crews in `.orkeon/crews/`, the review
checks in `.orkeon/checks/` and the project instruction files (`AGENTS.md`, `CLAUDE.md`:
config/instructions.py). A bare run (`--bare`, `ORKEON_BARE=1`) reads none of them:
only what its inputs name (their hooks, `settings` files, `mcp_servers`, `plugins`), and
orkeon's own built-in crews. Environment variables are the caller's, not files left on a
machine: they count in both.

`Sources` is that decision: built once when the run is prepared (run/prepare.py) and taken
by every reader (config/run_settings.py, shell_settings.py, mcp_sources.py, crews.py,
instructions.py, hooks/claude/sources.py and plugins.py, run/steps/review_checks.py), which
reads a place only when its field is not None (or, for the instruction files, true). A reader given no `Sources` uses a normal run's.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..environ import config_dir as default_config_dir
from ..errors import InputError
from .instructions import DEFAULT_FILES, load_instructions
from .trust import (
    TRUST_FILE,
    checks_dir,
    checks_trusted,
    crews_dir,
    crews_trusted,
    is_trusted,
    mcp_json_path,
    mcp_json_trusted,
    project_settings_path,
    read_settings_doc,
)

BARE_ENV = "ORKEON_BARE"
_YES = ("1", "true")
_NO = ("0", "false", "")


@dataclass(frozen=True)
class Sources:
    """The places one run reads configuration from, each None when it is not read.

    `config_dir`: the user configuration folder (settings.json, trusted.json); the other
    fields are the workspace's files, read only once trusted (config/trust.py).
    `instructions`: whether the project's instruction files (AGENTS.md, CLAUDE.md:
    config/instructions.py) are read at all: their loader's `bare` is its negation."""

    workspace: Path
    bare: bool
    config_dir: Path | None
    workspace_settings: Path | None
    mcp_json: Path | None
    crews: Path | None  # the workspace whose .orkeon/crews/STEP.toml may replace a crew
    checks: Path | None  # the workspace's .orkeon/checks/ folder
    instructions: bool

    @property
    def user_settings(self) -> Path | None:
        return None if self.config_dir is None else self.config_dir / "settings.json"

    @property
    def trust_records(self) -> bool:
        """Whether recorded trust counts (`orkeon hooks trust`): a bare run reads none,
        so only ORKEON_TRUST_PROJECT_HOOKS=1 trusts a plugin inside the workspace there."""
        return self.config_dir is not None

    @property
    def pin_guards(self) -> bool:
        """Whether the workspace's guard files are pinned by content (config/pins.py): a
        bare run does not read them (they stay guards by path: read-only to every role)."""
        return not self.bare

    def plugin_data(self) -> Path:
        """The folder plugins' data folders go in (hooks/claude/plugins.py): the user
        folder's `plugins/data/`, lasting across runs; a bare run's is new and empty, made
        for this run and removed when it ends (`release`): nothing left from an earlier
        run changes it, and it leaves nothing behind."""
        if self.config_dir is not None:
            return self.config_dir / "plugins" / "data"
        return self._fresh_data

    @cached_property
    def _fresh_data(self) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="orkeon-bare-plugins-"))
        # The console script leaves without atexit (__main__.entry); this covers a caller
        # that embeds `main()` and forgets `release`.
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return folder

    def release(self) -> None:
        """Remove what this run made for itself (a bare run's plugin data folder)."""
        if "_fresh_data" in self.__dict__:
            shutil.rmtree(self.__dict__.pop("_fresh_data"), ignore_errors=True)

    def workspace_trusted(self, environ: Mapping[str, str], stdin_is_tty: bool | None) -> bool:
        """Whether the workspace's `.orkeon/settings.json` is read (exists, trusted)."""
        if self.workspace_settings is None:
            return False
        return is_trusted(
            self.workspace,
            config_dir=self.config_dir,
            environ=environ,
            stdin_is_tty=stdin_is_tty,
        )


def run_sources(
    workspace: Path,
    environ: Mapping[str, str],
    *,
    bare: bool = False,
    config_dir: Path | None = None,
) -> Sources:
    """The sources of a run in `workspace`: a normal run's, or with `bare` only the
    inputs'. `config_dir` overrides `$ORKEON_CONFIG_DIR` (tests, `orkeon hooks`)."""
    if bare:
        return Sources(workspace, True, None, None, None, None, None, instructions=False)
    try:
        folder: Path | None = config_dir or default_config_dir(environ)
    except RuntimeError:  # no home folder to find ~/.config in: no user folder to read
        folder = None
    return Sources(
        workspace,
        False,
        folder,
        project_settings_path(workspace),
        mcp_json_path(workspace),
        workspace,
        checks_dir(workspace),
        instructions=True,
    )


def bare_requested(flag: bool, environ: Mapping[str, str]) -> bool:
    """`--bare`, or `ORKEON_BARE` (1/true, 0/false, any case; empty: not given). Another
    value is an InputError naming the variable."""
    if flag:
        return True
    raw = environ.get(BARE_ENV, "")
    value = raw.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise InputError(f"environment variable {BARE_ENV}: must be 0, 1, true or false, not {raw!r}")


def listing(
    workspace: Path,
    environ: Mapping[str, str],
    stdin_is_tty: bool | None,
    *,
    config_dir: Path | None = None,
    instruction_files: Sequence[str] = DEFAULT_FILES,
) -> list[dict[str, Any]]:
    """What a normal run in `workspace` would read beyond its inputs (`orkeon validate
    --bare`): each place, its path, whether it exists and, for the workspace's, whether
    it is trusted (None: a user file, which needs no trust); then each project instruction
    file (config/instructions.py, by `instruction_files`' names) of every folder, trusted
    when it would be given."""
    src = run_sources(workspace, environ, config_dir=config_dir)
    out: list[dict[str, Any]] = []

    def add(kind: str, path: Path | None, trusted: bool | None = None) -> None:
        if path is not None:
            out.append({"kind": kind, "path": str(path), "exists": path.exists(),
                        "trusted": trusted if path.exists() else None})  # fmt: skip

    def doc_trusted(path: Path) -> bool:
        try:
            doc = read_settings_doc(path)
        except InputError:
            return False
        return mcp_json_trusted(
            workspace, doc, config_dir=src.config_dir, environ=environ, stdin_is_tty=stdin_is_tty
        )

    folder = src.config_dir
    add("user settings", src.user_settings)
    add("trust records", None if folder is None else folder / TRUST_FILE)
    add("workspace settings", src.workspace_settings, src.workspace_trusted(environ, stdin_is_tty))
    mcp = src.mcp_json
    add("workspace .mcp.json", mcp, mcp is not None and mcp.is_file() and doc_trusted(mcp))
    kw: dict[str, Any] = {"config_dir": folder, "environ": environ, "stdin_is_tty": stdin_is_tty}
    add("workspace crews", crews_dir(workspace), _unless_unreadable(crews_trusted, workspace, kw))
    add("workspace review checks", src.checks, _unless_unreadable(checks_trusted, workspace, kw))
    found = load_instructions(workspace, instruction_files, everywhere=True, **kw)
    for f in found.files:
        add("instruction file", workspace / f.rel, f.given)
    return out


def _unless_unreadable(
    trusted: Callable[..., bool], workspace: Path, kw: Mapping[str, Any]
) -> bool:
    """A folder's trust, which hashes every file in it: a file it cannot read is no trust
    (a normal run would stop on it), never a traceback."""
    try:
        return trusted(workspace, **kw)
    except OSError:
        return False


__all__ = ["BARE_ENV", "Sources", "bare_requested", "listing", "run_sources"]
