"""How a run confines the model's code (docs/security.md), decided once per run by
`prepare` into its configuration:

- whether the shell sandbox is "on" (`"shell": {"sandbox": "auto"}` and the machine can make
  one), "off" (`"sandbox": "off"`: unconfined, said once on stderr) or "unavailable"
  ("auto" and it cannot: every shell call is refused with the reason, and the audit's
  build and test do not run);
- the audit's git, found by absolute path outside the workspace before any role runs.

The step (run/context.py `StepRun`) makes from it, with the run directory (a pipeline's
own, for its steps) to hide: the role's `SandboxPolicy`, which the shell tool narrows to
each calling role's roots; the audit's git and its build and test (`audit_git`,
`audit_commands`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from .. import logs
from ..catalog import TOOLS
from ..environ import config_dir
from ..tools.sandbox import SandboxPolicy, probe, warn_unconfined_once
from ..tools.sandbox import prefetch as start
from .git_program import find_git

if TYPE_CHECKING:
    from ..config.inputs import Inputs
    from ..tools.sandbox import SandboxPolicy
    from ..tools.sandbox.proxy import EgressProxy
    from .audit import AuditGit, Commands

SandboxState = Literal["on", "off", "unavailable"]
_said: set[str] = set()  # the reasons `announce` gave
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Confinement:
    """The run's confinement. `reason` and `fix` say why no sandbox can be made ("unavailable"
    only). `git`: the audit's git program (None: no git outside the workspace). `config_dir`:
    orkeon's configuration folder, hidden from sandboxed commands. `hidden`: more folders
    every sandbox of the run hides (the seals; a `jobs run` output folder, every sibling
    job's records with it: `hiding`). `visible`: the files and programs the operator's own
    commands name (`operator_files`), shown read-only wherever they lie."""

    state: SandboxState
    # `shell.network`: True (every host), False (none) or the allow-list's entries.
    network: bool | tuple[str, ...] = False
    reason: str = ""
    fix: str = ""
    bwrap: Path | None = None
    git: Path | None = None
    config_dir: Path | None = None
    # The run's pinned files (config/pins.py), read-only in every sandbox.
    pinned: tuple[str, ...] = ()
    hidden: tuple[Path, ...] = ()
    visible: tuple[Path, ...] = ()

    def hiding(self, folders: Sequence[Path]) -> Confinement:
        """The same confinement hiding `folders` too (resolved)."""
        more = tuple(Path(os.path.realpath(f)) for f in folders)
        return dataclasses.replace(self, hidden=tuple(dict.fromkeys(self.hidden + more)))

    def mcp_states(self, servers: Mapping[str, Any]) -> dict[str, str] | None:
        """How each stdio MCP server of the run is confined, for the result: "on" (in the
        roles' sandbox), "off" (its `"sandbox": "off"`, or the shell sandbox's), or
        "unavailable" (it could not start); None when the run has no stdio server."""
        out: dict[str, str] = {}
        for name, server in servers.items():
            if server.transport == "stdio":
                off = server.sandbox == "off" or self.state == "off"
                out[name] = "off" if off else self.state
        return out or None

    def refusal(self) -> str:
        """What a shell call answers the model when there is no sandbox here."""
        return f"[refused: the shell sandbox is not available here: {self.reason}]"

    def unavailable_check(self) -> Callable[[str], str | None] | None:
        """The check a role's catalog asks first (`calls.Catalog.unavailable`): the shell's
        refusal where no sandbox can be made here, so the pipeline refuses the call in
        stage 2, before the gate and the hooks. None when every tool can run."""
        if self.state != "unavailable":
            return None
        text = self.refusal()
        # The tools that run a command line run it in the sandbox (the catalog's fact).
        sandboxed = {n for n, t in TOOLS.items() if t.command_field is not None}
        return lambda name: text if name in sandboxed else None

    def announce(self) -> None:
        """Say on stderr, when a run starts, that its commands run unconfined (once a
        process) or that no sandbox can be made here (once a process and reason)."""
        if self.state == "off":
            warn_unconfined_once(allow_list=not isinstance(self.network, bool))
        elif self.state == "unavailable" and self.reason not in _said:
            _said.add(self.reason)  # a pipeline runs several steps

            logs.warn(
                f"the shell sandbox is not available here: {self.reason}; every shell call "
                "will be refused and the audit's build and test will not run",
                fix=self.fix,
            )

    def role_policy(
        self, workspace: Path, run_dir: Path, egress: EgressProxy | None = None
    ) -> SandboxPolicy | None:
        """The step's sandbox for its roles' commands (no roots: the shell tool narrows it
        to each calling role's), hiding `run_dir`; made now (it finds the workspace's
        `.git` folders, makes `.orkeon/` when missing). None when the sandbox is off. An
        unavailable sandbox gets one too: the pipeline refuses shell calls before they
        reach the tool, and the tool itself refuses to run without a sandbox."""
        if self.state == "off":
            return None

        return SandboxPolicy.for_role(
            workspace,
            None,
            run_dir=run_dir,
            config_dir=self.config_dir,
            network=self.network is True,
            bwrap=self.bwrap,
            egress=egress,
            hidden=self.hidden,
            visible=self.visible,
            pinned=self.pinned,
        )

    def audit_git(self, run_dir: Path) -> AuditGit:
        """How the audit runs git: its own program, in a sandbox with nothing writable when
        the sandbox is on (the fence behind the switches; `run_dir` hidden), unconfined
        otherwise. The same for every look of one run (found once: 1.4 ms each)."""
        return _audit_git(self, run_dir)

    def audit_commands(
        self,
        workspace: Path,
        env: Mapping[str, str],
        run_dir: Path,
        egress: EgressProxy | None = None,
    ) -> Commands:
        """How the audit's build and test run: in the audit's sandbox (the workspace
        writable except its `.git` folders, `.orkeon/` and the run directory), refused
        when it cannot be made, unconfined when it is off."""
        from .audit import Commands

        if self.state == "off":
            return Commands(env=env)
        if self.state == "unavailable":
            return Commands(
                env=env, refused=f"the shell sandbox is not available here: {self.reason}"
            )

        def policy() -> SandboxPolicy:
            return SandboxPolicy.for_audit(
                workspace,
                run_dir=run_dir,
                config_dir=self.config_dir,
                network=self.network is True,
                bwrap=self.bwrap,
                egress=egress,
                hidden=self.hidden,
                visible=self.visible,
                pinned=self.pinned,
            )

        return Commands(env=env, sandbox=policy)


@functools.lru_cache(maxsize=16)
def _audit_git(confinement: Confinement, run_dir: Path) -> AuditGit:
    from .audit import AuditGit  # not at import: `validate` decides and runs no audit

    box = None
    if confinement.state == "on":
        box = SandboxPolicy.for_git(
            Path("/"),
            run_dir=run_dir,
            config_dir=confinement.config_dir,
            bwrap=confinement.bwrap,
            hidden=confinement.hidden,
        )
    return AuditGit(confinement.git, box)


def prefetch(doc: Any) -> threading.Thread | None:
    """Start the probe in a thread when the run may ask for it (see `decide`): unless the
    inputs document `doc`, as given, turns the sandbox off."""
    shell = doc.get("shell") if isinstance(doc, dict) else None
    if isinstance(shell, dict) and shell.get("sandbox") == "off":
        return None

    return start()


def while_probing(prepare: Callable[P, R]) -> Callable[P, R]:
    """`prepare(doc, ...)` with the sandbox probed in a thread meanwhile (`prefetch`): the
    probe makes one sandbox, and the other checks need not wait for it. The thread is
    joined however `prepare` ends."""

    @functools.wraps(prepare)
    def wrapper(*args: P.args, **kw: P.kwargs) -> R:
        probing = prefetch(args[0] if args else kw.get("doc"))
        try:
            return prepare(*args, **kw)
        finally:
            if probing is not None:
                probing.join()

    return wrapper


def decide(
    inputs: Inputs,
    workspace: Path,
    environ: Mapping[str, str],
    commands: Iterable[Sequence[str]] = (),
) -> Confinement:
    """The run's confinement from its inputs and this machine (the probe makes one
    sandbox, once per process). `commands`: the operator's commands beyond the inputs'
    own (settings-shape hooks, MCP servers: `operator_commands`), whose files every
    sandbox shows."""
    from .records import seals_dir

    try:
        cfg: Path | None = config_dir(environ)
        hidden: tuple[Path, ...] = (Path(os.path.realpath(seals_dir(environ))),)
    except RuntimeError:  # no home folder to find ~/.config in
        cfg, hidden = None, ()
    path = environ.get("PATH", os.defpath)
    git = find_git(workspace, path)
    given = inputs.shell.network
    network = given if isinstance(given, bool) else tuple(given)
    shown = operator_files(inputs, commands, path)
    if inputs.shell.sandbox == "off":
        return Confinement("off", network, git=git, config_dir=cfg, hidden=hidden, visible=shown)

    avail = probe()
    if not avail.ok:
        return Confinement(
            "unavailable", network, avail.reason, avail.fix, avail.bwrap, git, cfg,
            hidden=hidden, visible=shown,
        )  # fmt: skip
    return Confinement("on", network, "", "", avail.bwrap, git, cfg, hidden=hidden, visible=shown)


def operator_commands(
    settings: Mapping[str, Sequence[Any]], servers: Mapping[str, Any]
) -> list[list[str]]:
    """The argv of every settings-shape hook command (split as a shell would, as far as
    words go) and of every stdio MCP server of the run."""
    import shlex

    out: list[list[str]] = []
    for groups in settings.values():
        for group in groups:
            for handler in getattr(group, "hooks", ()):
                with contextlib.suppress(ValueError):  # an unbalanced quote: no words
                    out.append(shlex.split(getattr(handler, "command", "") or ""))
    out += [list(s.argv) for s in servers.values() if getattr(s, "argv", None)]
    return out


def operator_files(
    inputs: Inputs, commands: Iterable[Sequence[str]], search_path: str
) -> tuple[Path, ...]:
    """The files and programs the operator's own commands name (docs/security.md, "What
    the sandbox shows"): the audit's build and test argv, the native hooks' commands and
    `commands`; shown read-only in every sandbox wherever they lie, the host's /tmp too."""
    import shlex

    from ..tools.sandbox import named_files

    every: list[Sequence[str]] = [c for c in (inputs.audit.build, inputs.audit.test) if c]
    for hook in inputs.native_hooks:
        with contextlib.suppress(ValueError):
            every.append(shlex.split(hook.command))
    every += list(commands)
    return named_files(every, search_path)
