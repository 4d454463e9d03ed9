"""The audit's own git (docs/security.md, "The audit's git"): a program found once, by
absolute path, outside the workspace, before any role ran; run with an environment of its
own (no key, no credential, no GIT_* variable of orkeon's) and with every setting through
which a repository makes git start a program switched off; inside a sandbox with nothing
writable when one is used, the fence behind those switches.

What the audit runs (`status`, `ls-files`, `rev-parse`, `diff --name-only`, `hash-object`,
`config --list`) could start, from a repository's configuration the model may have written
(`cp` into `.git/config`, a `.gitattributes` in its roots):

- `core.fsmonitor` (a hook program, or git's own daemon): `-c core.fsmonitor=false`;
- hooks (`post-index-change` when status refreshes the index): optional locks off, so
  nothing writes the index, and `core.hooksPath=/dev/null`;
- clean filters and long-running filter processes (`filter.NAME.clean`, `.process`), which
  `git status` runs on a file whose stat data changed, and `hash-object` on a path: every
  driver NAME the configuration defines is set to nothing, and not required; the system,
  global and attribute files outside the repository are not read at all;
- diff drivers (`diff.external`, `diff.NAME.command`, `diff.NAME.textconv`): `diff` runs
  with `--no-ext-diff --no-textconv`;
- pagers (`core.pager`, `pager.*`): never with no terminal, and `GIT_PAGER=cat`;
- transports (a lazy fetch in a partial clone runs `remote.*.uploadpack` or ssh):
  `protocol.allow=never`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ... import proc
from ...tools import sandbox
from ..git_program import find_git
from .paths import AuditError

if TYPE_CHECKING:
    from ...tools.sandbox import SandboxPolicy

GIT_TIMEOUT = 120.0
_GIT_CAP = 1 << 26

# Set on every git command line the audit runs (the command scope outranks the repository's).
SWITCHES = (
    "core.quotepath=off",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "protocol.allow=never",
    # The audit reads any repository it is given: what the ownership check guards against
    # (a repository's configuration running programs) is switched off above.
    "safe.directory=*",
)
# The environment, whole: nothing of orkeon's reaches the audit's git.
_ENV = {
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    # `git replace` (a plain git command a role may run) would make HEAD's tree read as
    # the changed index, and status report nothing.
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
_DRIVER_KEYS = ("clean", "smudge", "process")


@dataclass(frozen=True)
class AuditGit:
    """How the audit runs git for one run: `program` (None: no git outside the workspace;
    the audit then works from content hashes), and `sandbox`, a policy whose hidden paths
    each command inherits (None: unconfined, with the switches only)."""

    program: Path | None
    sandbox: SandboxPolicy | None = None
    home: str = field(default_factory=lambda: os.environ.get("HOME", "/"))

    @classmethod
    def default(cls, workspace: Path) -> AuditGit:
        """The git orkeon's PATH gives, unconfined: for callers outside a run."""
        return cls(find_git(workspace, os.environ.get("PATH")))

    def env(self) -> dict[str, str]:
        assert self.program is not None
        path = os.pathsep.join(dict.fromkeys([os.fspath(self.program.parent), "/usr/bin", "/bin"]))
        return {"PATH": path, "HOME": self.home, **_ENV}

    def bind(self, workspace: Path) -> Git:
        """A runner for the repository around `workspace` (`program` must not be None
        when it is called)."""
        return Git(self, workspace)


class Git:
    """Runs the audit's git in one workspace: `git(*args)`. The filter drivers the
    repository's configuration (and each submodule's) defines are found on the first call
    and switched off on every call, submodules' included (git passes `-c` settings on to
    the git it runs in a submodule)."""

    def __init__(self, how: AuditGit, workspace: Path) -> None:
        self.how = how
        self.workspace = workspace
        self.folders = repository_folders(workspace)
        self._policy: SandboxPolicy | None = None
        if how.sandbox is not None:
            self._policy = dataclasses.replace(
                how.sandbox, workspace=workspace, visible=self.folders
            )
        self._switches: list[str] | None = None

    def __call__(
        self, *args: str, stdin: bytes | None = None, index: Path | None = None
    ) -> proc.ProcResult:
        """git `args`, `stdin` its input; `index`: the index file it reads and writes
        instead of the repository's (GIT_INDEX_FILE; `orkeon apply` tries a patch there)."""
        if self._switches is None:
            names = self._names(None)
            for module in submodule_git_dirs(self.folders):
                names += self._names(module)
            self._switches = [*SWITCHES, *driver_switches(names)]
        return self._run([*_c(self._switches), *args], stdin, index)

    def _names(self, git_dir: Path | None) -> list[str]:
        """The configuration's variable names (`filter.x.clean`): the workspace's
        repository's, or those of the git folder `git_dir` (a submodule's). AuditError
        when git cannot list them all: a driver left out would run."""
        where = ["--git-dir", os.fspath(git_dir)] if git_dir is not None else []
        r = self._run([*_c(SWITCHES), *where, "config", "--list", "--name-only", "-z"])
        must_have_worked(r, "git config --list")
        return [n for n in r.stdout.split("\0") if n]

    def _run(
        self, args: Sequence[str], stdin: bytes | None = None, index: Path | None = None
    ) -> proc.ProcResult:
        assert self.how.program is not None
        argv = [os.fspath(self.how.program), *args]
        env = self.how.env()
        if index is not None:
            env["GIT_INDEX_FILE"] = os.fspath(index)
        # errors: a file name that is not UTF-8 must name the same file when fingerprinted.
        if self._policy is None:
            return proc.run(
                argv, cwd=self.workspace, timeout=GIT_TIMEOUT, cap=_GIT_CAP, env=env,
                stdin=stdin, errors="surrogateescape",
            )  # fmt: skip

        return sandbox.run(
            self._policy, argv, cwd=self.workspace, timeout=GIT_TIMEOUT, cap=_GIT_CAP, env=env,
            stdin=stdin, errors="surrogateescape",
        )  # fmt: skip


def _c(settings: Sequence[str]) -> list[str]:
    return [a for s in settings for a in ("-c", s)]


def driver_switches(names: Sequence[str]) -> list[str]:
    """`-c` settings that switch off each filter driver `names` defines. A driver whose name
    git's `-c` cannot spell (an `=` in it) cannot be switched off: AuditRefused."""
    drivers = []
    for name in names:
        section, _, rest = name.partition(".")
        sub, _, key = rest.rpartition(".")
        if section.lower() == "filter" and sub and key.lower() in (*_DRIVER_KEYS, "required"):
            drivers.append(sub)
    out = []
    for sub in dict.fromkeys(drivers):
        if "=" in sub or "\n" in sub:
            raise AuditError(
                f"the repository's configuration defines a filter driver the audit cannot "
                f"switch off ({sub!r}): a clean filter would run a program of its choosing"
            )
        out += [f"filter.{sub}.{k}=" for k in _DRIVER_KEYS] + [f"filter.{sub}.required=false"]
    return out


def repository_folders(workspace: Path) -> tuple[Path, ...]:
    """The folders of the repository around `workspace`, found as git finds them (the
    nearest `.git` upwards, a `gitdir:` file's folder and its `commondir`), resolved: the
    top, the git folder, the common git folder when it differs. A sandboxed git is shown
    them even where the sandbox hides the host's folders (/tmp). () outside a repository."""
    folder = workspace
    while True:
        dot = folder / ".git"
        if dot.is_dir():
            return _with_common(folder, dot)
        if dot.is_file():
            try:
                first = dot.read_text(errors="replace").split("\n", 1)[0]
            except OSError:
                return (folder,)
            if first.startswith("gitdir:"):
                return _with_common(folder, folder / first[len("gitdir:") :].strip())
            return (folder,)
        if folder.parent == folder:
            return ()
        folder = folder.parent


def _with_common(top: Path, git_dir: Path) -> tuple[Path, ...]:
    found = [top, git_dir]
    try:
        common = (git_dir / "commondir").read_text(errors="replace").strip()
    except OSError:
        common = ""
    if common:
        found.append(git_dir / common)
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in found if p.exists()))


def submodule_git_dirs(folders: Sequence[Path]) -> list[Path]:
    """The git folders of the repository's submodules (`modules/NAME`, nested ones under
    theirs), in its common git folder (the last of `repository_folders`)."""
    if len(folders) < 2:
        return []
    found = []
    for top, dirs, files in os.walk(folders[-1] / "modules"):
        if "HEAD" in files:  # a git folder: only its own `modules/` may hold more
            found.append(Path(top))
            dirs[:] = [d for d in dirs if d == "modules"]
    return found


def must_have_worked(r: proc.ProcResult, what: str) -> None:
    """AuditError unless `what` exited 0 with all of its output read: a partial list of
    paths would pass changes unseen."""
    if r.exit_code != 0 or r.stdout_dropped:
        why = r.error or r.first_line() or "its output was too long"
        raise AuditError(f"{what} failed: {why}")
