"""Where every hook's process starts (native hooks, settings-shape command hooks, and the
sourcing of the files SessionStart hooks wrote): `proc_loop.arun` under the veil that hides
orkeon's processes (tools/sandbox/veil.py; docs/security.md, "Hooks"). The one place
to tune what a hook's start costs.

    res = await spawn.arun(argv, cwd=workspace, timeout=limit, env=env)

Same contract as `proc_loop.arun`, error texts included: a program that cannot start is
found before bubblewrap runs (inside, bubblewrap would only exit 1 with its own words),
and a script without a `#!` line is "not an executable" as proc says, not run by /bin/sh
as bubblewrap's execvp would. Where no veil can be made here, the hook runs as it is.

Hooks start in the veil kept up for the process (veil.kept_veil: one bubblewrap, its
spawner starting each hook), else each in a bubblewrap of its own.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import proc, proc_loop
from ..exec_words import bad_cwd, words

_bwrap: Path | None = None
_probed = False


async def arun(argv: list[str], *, cwd: Path, env: Mapping[str, str] | None, **kw: Any) -> Any:
    """`proc_loop.arun(argv, cwd=cwd, env=env, **kw)` where /proc/<orkeon> is not visible."""
    bwrap = await _veil()
    if bwrap is None:
        return await proc_loop.arun(argv, cwd=cwd, env=env, **kw)
    from ..tools.sandbox.veil import veil_args

    why, found = _check(argv, cwd, env if env is not None else os.environ)
    if why is not None:
        return proc.ProcResult(None, "", "", 0, 0, 0.0, False, why)
    kept = await _kept(bwrap)
    if kept is None:
        return await proc_loop.arun(veil_args(bwrap, argv), cwd=cwd, env=env, **kw)
    started: list[Any] = []

    def start(argv: list[str], **how: Any) -> Any:
        child = kept.start(argv, program=found, **how)
        if child is None:  # the spawner cannot take it: a bubblewrap of its own
            child = proc.spawn(veil_args(bwrap, argv), **how)
        started.append(child)
        return child

    res = await proc_loop.arun(argv, cwd=cwd, env=env, start=start, **kw)
    error = getattr(started[0], "error", None) if started else None
    if error is not None:  # it could not start, in proc's words
        return proc.ProcResult(None, "", "", 0, 0, res.seconds, False, error)
    return res


async def _veil() -> Path | None:
    """The veil's bubblewrap, probed once (in a worker thread: it starts the kept-up veil,
    whose start is the probe, or a veiled `true`)."""
    global _bwrap, _probed
    if not _probed:
        from anyio import to_thread

        from ..tools.sandbox.veil import hooks_bwrap

        _bwrap = await to_thread.run_sync(hooks_bwrap)
        _probed = True
    return _bwrap


async def _kept(bwrap: Path) -> Any:
    """The kept-up veil, started in a worker thread the first time (None: there is none)."""
    from ..tools.sandbox import veil

    ready = veil.kept_veil_ready()
    if ready is not None or not veil.ENABLED:
        return ready
    from anyio import to_thread

    return await to_thread.run_sync(veil.kept_veil, bwrap)


def cannot_start(argv: list[str], cwd: Path, env: Mapping[str, str]) -> str | None:
    """Why `argv` would not start in `cwd`, in proc's words; None when it would."""
    return _check(argv, cwd, env)[0]


def _check(argv: list[str], cwd: Path, env: Mapping[str, str]) -> tuple[str | None, str]:
    """(why `argv` would not start in `cwd`, in proc's words, or None; the file it starts:
    the first executable one on its PATH, as execvp takes)."""
    if not os.path.isdir(cwd):
        return bad_cwd(cwd, os.strerror(errno.ENOENT)), ""
    prog = argv[0] if argv else ""
    if not prog:
        return words(prog, errno.ENOENT), ""
    from ..tools.sandbox import each_program_file  # the sandbox's own check uses it too

    found = False
    for candidate in each_program_file(prog, cwd, env):  # up to the first executable one
        found = True
        if os.access(candidate, os.X_OK):
            break
    else:
        return words(prog, errno.EACCES if found else errno.ENOENT), ""
    try:
        fd = os.open(candidate, os.O_RDONLY | os.O_CLOEXEC)
        try:
            head = os.read(fd, 4)
        finally:
            os.close(fd)
    except OSError:
        return words(prog, errno.EACCES), ""
    if not (head.startswith(b"#!") or head == b"\x7fELF"):
        return words(prog, errno.ENOEXEC), ""
    return None, candidate


__all__ = ["arun", "cannot_start"]
