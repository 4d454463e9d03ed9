"""The OS sandbox for the commands the model starts (the shell tool) and for the audit's
build and test, which run the model's code. See docs/security.md, "The shell sandbox".

    policy = SandboxPolicy.for_role(workspace, roots, run_dir=run_dir)
    avail = probe(policy.bwrap)           # cached; False with a reason and a fix
    result = await arun(policy, argv, cwd=workspace, timeout=60, env=scrubbed_env)

`run`/`arun` are `proc.run`/`proc_loop.arun` around a bubblewrap command line: time-outs,
output caps, cancellation and the group kill are proc's, and the sandbox's PID namespace
and `--die-with-parent` make sure nothing the command started outlives it. Each command
gets a private /tmp (TMPDIR): in memory, or a folder made before it starts and removed
once it ended. Where it can, a policy's commands share one sandbox kept up for it, each
in namespaces of its own (session.py, server.py); `release(policy)` ends it.

With an allow-list (`policy.egress`, docs/security.md "Network"), the command keeps its
own network namespace and runs behind a forwarder (forwarder.py) that reaches only the
run's proxy (proxy.py), through a Unix socket of its own mounted into the sandbox.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

from ... import logs, proc
from ...environ import traced
from ...exec_words import words
from . import forwarder
from .bwrap import command, make_temp, remove_temp, unseen
from .policy import (
    CREDENTIAL_STORES,
    SandboxPolicy,
    find_git_dirs,
    named_files,
    python_environment,
)
from .probe import Availability, diagnose, prefetch, probe

__all__ = [
    "CREDENTIAL_STORES",
    "Availability",
    "NoProxy",
    "SandboxPolicy",
    "arun",
    "diagnose",
    "each_program_file",
    "egress_socket",
    "find_git_dirs",
    "named_files",
    "prefetch",
    "probe",
    "python_environment",
    "release",
    "release_workspace",
    "run",
    "server_command",
    "warn_unconfined_once",
]

_warned = False


def release(policy: SandboxPolicy) -> None:
    """End the kept-up sandbox of `policy`, if one is up (its role has ended)."""
    from . import session

    session.release(policy)


def release_workspace(workspace: Path) -> None:
    """End the kept-up sandboxes of a workspace whose run ended (session.py)."""
    from . import session

    session.release_workspace(workspace)


def warn_unconfined_once(allow_list: bool = False) -> None:
    """The one stderr warning of a process whose shell commands run unconfined
    (`"shell": {"sandbox": "off"}`); with `allow_list`, that shell.network's list does not
    hold there."""
    global _warned
    if not _warned:
        _warned = True
        hosts = "; shell.network's allow-list holds only in the sandbox" if allow_list else ""
        logs.warn(
            "shell.sandbox is \"off\": the model's shell commands and the audit's build and "
            f"test run unconfined, with every right of the user running orkeon{hosts}"
        )


def _not_run(why: str) -> proc.ProcResult:
    return proc.ProcResult(None, "", "", 0, 0, 0.0, False, why)


def each_program_file(prog: str, cwd: Path | str, env: Mapping[str, str]) -> Iterator[str]:
    """The files `prog` would name when started in `cwd` with `env`, one at a time: itself
    when it holds a `/` (relative to `cwd`), else in each folder of PATH's, in order; only
    those that are files. For the checks made before a wrapper (a sandbox, the hooks'
    veil, hooks/spawn.py) would hide why a program cannot start; a caller stops at the one
    it wants, and the folders after it are not looked at."""
    if "/" in prog:
        candidate = os.path.join(cwd, prog)
        if os.path.isfile(candidate):
            yield candidate
        return
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(cwd, folder or ".", prog)
        if os.path.isfile(candidate):
            yield candidate


def _unrunnable(
    policy: SandboxPolicy, argv: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> str | None:
    """What `proc` would say of a program that cannot start, found before the sandbox is
    made (inside it, bubblewrap would only exit 1 with its own words): the command sees
    the same files, less those the policy hides."""
    if not argv or not argv[0]:
        return "the command is empty"
    prog = argv[0]
    first: str | None = None  # the first file found
    seen = runnable = False
    for c in each_program_file(prog, cwd, env):  # up to the first it would run
        first = first or c
        if unseen(policy, c) or unseen(policy, os.path.realpath(c)):
            continue
        seen = True
        if os.access(c, os.X_OK):
            runnable = True
            break
    if first is None:
        return words(prog, errno.ENOENT)
    if not seen:
        return (
            f"no such program in the sandbox: {prog} ({first} is in a folder the "
            "sandbox hides: the host's /tmp and /run, orkeon's run and configuration folders)"
        )
    if not runnable:
        return words(prog, errno.EACCES)
    if policy.egress is not None and unseen(policy, forwarder.interpreter()):
        return (
            "the network allow-list's forwarder cannot run: the Python orkeon runs from "
            f"({forwarder.interpreter()}) is in a folder the sandbox hides"
        )
    return None


def _start(
    policy: SandboxPolicy, argv: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> Path | proc.ProcResult:
    """The bubblewrap program, or the result of a command that cannot run."""
    avail = probe(policy.bwrap)
    if not avail.ok or avail.bwrap is None:
        return _not_run(f"the shell sandbox is not available here: {avail.reason}")
    why = _unrunnable(policy, argv, cwd, env)
    if why is not None:
        return _not_run(why)
    return avail.bwrap


class NoProxy(Exception):
    """The allow-list's proxy could not give a command its socket (a full disk, say)."""


@contextlib.contextmanager
def egress_socket(policy: SandboxPolicy, command: str) -> Iterator[str | None]:
    """The proxy's socket for one sandboxed program (None: the policy has no allow-list),
    closed once the block ends. `command` is what its refused hosts are recorded under
    (`network.refused`'s `command`: a shell command line, `MCP server NAME`). Raises
    NoProxy when the proxy cannot start."""
    if policy.egress is None:
        yield None
        return
    with contextlib.ExitStack() as stack:
        try:
            path = stack.enter_context(policy.egress.session(command))
        except OSError as exc:
            raise NoProxy(f"the network allow-list's proxy could not start: {exc}") from None
        yield path


def server_command(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    bwrap: Path,
    egress: str | None = None,
) -> tuple[list[str], str | None]:
    """The command line of a long-lived program confined by `policy` (a stdio MCP server,
    docs/tools.md): bubblewrap around `argv`, its /tmp in memory (gone with the sandbox);
    `([], why)` when the program cannot start, in proc's words. `egress`: the proxy's
    socket from `egress_socket`, held open while the program runs (an allow-list: the
    program runs behind the forwarder, in a network namespace of its own). The caller
    starts it (in a process group of its own) and stops it; `--die-with-parent` ends it
    with orkeon."""
    why = _unrunnable(policy, argv, cwd, env)
    if why is not None:
        return [], why
    return command(policy, argv, cwd=cwd, tmp=None, bwrap=bwrap, egress=egress), None


def run(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    cap: int = 1 << 20,
    kill_grace: float = 2.0,
    cancel_check: Callable[[], None] | None = None,
    errors: str = "replace",
    idle: float | None = None,
) -> proc.ProcResult:
    """`proc.run(argv, ...)` inside a sandbox made from `policy`: the policy's kept-up
    sandbox (session.py) where one can be made (not with an allow-list: each command
    then has its own proxy socket), else one made for this command. `env` is required:
    the sandbox passes it on as given (scrub it first). A sandbox that cannot be made, or
    a program that cannot start, is a result with `error`, as in proc. The command gets
    the trace context of the span it runs under (`environ.traced`), in a kept-up sandbox
    too."""
    env = traced(env)
    bwrap = _start(policy, argv, cwd, env)
    if isinstance(bwrap, proc.ProcResult):
        return bwrap
    if policy.egress is None:
        from . import session

        kept = session.kept_up(policy, bwrap)
        if kept is not None:
            res = kept.run(
                argv, cwd=cwd, timeout=timeout, env=env, stdin=stdin, cap=cap,
                kill_grace=kill_grace, cancel_check=cancel_check, errors=errors, idle=idle,
            )  # fmt: skip
            if res is not None:
                return res
    tmp = make_temp(policy)
    try:
        with egress_socket(policy, shlex.join(argv)) as egress:
            wrapped = command(policy, argv, cwd=cwd, tmp=tmp, bwrap=bwrap, egress=egress)
            return proc.run(
                wrapped, cwd=cwd, timeout=timeout, env=env, stdin=stdin, cap=cap,
                kill_grace=kill_grace, cancel_check=cancel_check, errors=errors, idle=idle,
            )  # fmt: skip
    except NoProxy as exc:
        return _not_run(str(exc))
    finally:
        remove_temp(tmp)


async def arun(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    cap: int = 1 << 20,
    kill_grace: float = 2.0,
    errors: str = "replace",
    idle: float | None = None,
) -> proc.ProcResult:
    """`run` in a worker thread: as with `proc_loop.arun`, cancelling the task stops the sandbox
    (SIGTERM, SIGKILL after `kill_grace`) and waits until it is gone and its private
    folder removed. A command of a kept-up sandbox that is up already is watched by the
    event loop instead (no thread: a hand-off costs a quarter of a millisecond)."""
    from anyio import from_thread, to_thread

    if stdin is None and errors == "replace" and policy.egress is None:
        from . import session

        box = session.ready(policy)
        if box is not None:
            env = traced(env)
            bwrap = _start(policy, argv, cwd, env)
            if isinstance(bwrap, proc.ProcResult):
                return bwrap
            res = await box.arun(
                argv, cwd=cwd, timeout=timeout, env=env, cap=cap, kill_grace=kill_grace,
                idle=idle,
            )  # fmt: skip
            if res is not None:
                return res

    call = partial(
        run, policy, argv, cwd=cwd, timeout=timeout, env=env, stdin=stdin, cap=cap,
        kill_grace=kill_grace, cancel_check=from_thread.check_cancelled, errors=errors,
        idle=idle,
    )  # fmt: skip
    return await to_thread.run_sync(call)
