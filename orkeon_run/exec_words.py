"""How a program is found and why it did not start, in one wording for every start orkeon
makes: its own (proc.py: hooks, MCP servers, unconfined commands, and the checks made
before a sandbox or the hooks' veil would hide the reason) and those of the two servers
that start programs inside a sandbox (tools/sandbox/server_init.py, each command's init;
tools/sandbox/veil_server.py, the hooks' spawner). Those run as `python -I -S -c SOURCE`
and import nothing of orkeon: their source begins with this file's text (`server_source`),
so it imports nothing but os and errno (each init is a fork of its server, and what the
server's heap holds it copies: docs/performance.md, "A kept-up command's CPU, whole tree").
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing is not imported (see above)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

_WORDS = {
    errno.ENOENT: "no such program",
    errno.EACCES: "permission denied",
    errno.ENOEXEC: "not an executable (a script needs a #! line)",
}


def words(prog: str, code: int | None, detail: str = "") -> str:
    """`WHY: PROG` for a program that cannot start with errno `code` (for a code without
    words of ours, `detail`, the system's text)."""
    return f"{_WORDS.get(code or 0, detail)}: {prog}"


def could_not_run(prog: str, exc: OSError) -> str:
    """Why starting `prog` raised `exc`."""
    return words(prog, exc.errno, exc.strerror or str(exc))


def bad_cwd(cwd: object, reason: str | None) -> str:
    """Why a program could not start in the working directory `cwd`."""
    return f"cannot use the working directory {cwd}: {reason}"


def program(argv0: str, env: Mapping[str, str]) -> str:
    """The file `argv0` names, found on `env`'s PATH as execvp finds it (the folders
    os.get_exec_path gives, without the `warnings` module it imports); FileNotFoundError
    when there is none."""
    if "/" in argv0:
        return argv0
    path = env.get("PATH")
    for folder in (os.defpath if path is None else path).split(os.pathsep):
        candidate = os.path.join(folder, argv0)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(errno.ENOENT, "No such file or directory", argv0)


def server_source(*files: str | Path) -> str:
    """On orkeon's side: the source of a server that starts programs in a sandbox, this
    file's text, then each of `files`' (only this file may hold a `from __future__`)."""
    texts = []
    names: tuple[str | Path, ...] = (__file__, *files)
    for name in names:
        with open(name, encoding="utf-8") as f:
            texts.append(f.read())
    return "\n".join(texts)
