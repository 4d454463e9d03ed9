"""A kept-up sandbox's init: what each command's pid 1 does (docs/security.md, "The
kept-up sandbox"), and the messages it and the server speak. The source the server runs
is exec_words.py's text (how a program is found, and the words for one that cannot start),
then this one's, then server.py's (session.py joins them: the server imports nothing of
orkeon); imported as orkeon's module, this one and server.py import those names instead.

Everything an init needs is worked out before any fork, in the server (`make_plan`, the
C functions looked up, the capability sets built): an init is a fork of the server, and
what it costs grows with each page its first writes copy.
"""

# try/except, not contextlib.suppress: contextlib is not imported (see below).
# ruff: noqa: SIM105

# No `from __future__` here: exec_words.py's text comes first in the server's source.
import _json  # json's C half: json.py pulls in re and its compiled patterns
import _signal  # signal.py wraps every number in an enum
import _socket  # socket.py imports enum and wraps each call
import ctypes
import os
import select
import struct  # ctypes imports it: loaded anyway

if __package__:  # orkeon's module (tests, type checks); the server has the text itself
    from ...exec_words import bad_cwd, could_not_run, program

# Why these and not json, socket, signal, re, contextlib (nor array, which imports
# collections): each init is a fork of this
# server, and its cost (the fork's page tables, the pages its first writes copy, its exit)
# grows with the server's heap (docs/performance.md, "A kept-up command's CPU, whole tree").

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPS = (8, 21, 24)  # CAP_SETPCAP, CAP_SYS_ADMIN, CAP_SYS_RESOURCE: the server's, never a command's
PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")  # read-only, as bubblewrap leaves them
PASSED_ON = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
DEFAULTS = (*PASSED_ON, _signal.SIGPIPE, _signal.SIGXFSZ)  # python's own dispositions, undone
MAX_MESSAGE = 1 << 22

libc = ctypes.CDLL(None, use_errno=True)
# Each looked up once, here: a CDLL makes a function's object on its first use, which an
# init (a fork) would make again for every command.
_mount, _unshare, _setns, _prctl, _capset = (libc.mount, libc.unshare, libc.setns, libc.prctl,
                                             libc.capset)  # fmt: skip


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


# capset's arguments, built once: every set empty (_LINUX_CAPABILITY_VERSION_3).
_NO_CAPS = (_CapHeader(0x20080522, 0), (_CapData * 2)())
_NO_CAPS_ARGS = tuple(ctypes.byref(x) for x in _NO_CAPS)


class Plan:
    """What each init mounts, worked out once when the server starts (the sandbox's mount
    table does not change while it is up), so that an init only makes the calls."""

    covers: tuple[bytes, ...] = ()  # /proc's parts made read-only, those that exist
    under_tmp: tuple[tuple[tuple[str, ...], str, str, bool], ...] = ()
    # ^ each mount under /tmp: (the folders to make, its point, its path below /tmp, a file?)
    shm = False  # whether there is a /dev/shm to mount a fresh one on


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None):
    """mount(2) of bytes (None for NULL); OSError naming `target`."""
    check(_mount(source, target, fstype, flags, data), f"mount {target.decode()}")


def drop_capabilities():
    """No capability left in any set; the bounding set emptied of what the server kept."""
    for cap in CAPS:
        check(_prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set")
    check(_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    check(_capset(*_NO_CAPS_ARGS), "capset")


def unescape(field):
    """A mountinfo field as the path it names: the kernel writes a space, a tab, a newline
    and a backslash as \\ooo (octal)."""
    if "\\" not in field:
        return field
    head, *rest = field.split("\\")
    return head + "".join(chr(int(part[:3], 8)) + part[3:] for part in rest)


def mounted_under(top):
    """The mount points right under the mount that shows `top` (the workspace and the
    policy's paths, when they lie in /tmp), from this sandbox's mount table; those the
    mounts on `top` cover (the host's own, under the host's /tmp) are not among them."""
    entries = []  # (mount id, parent id, mount point)
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split(" ", 5)
            entries.append((fields[0], fields[1], unescape(fields[4])))
    on_top = [e for e in entries if e[2] == top]
    covered = {e[1] for e in on_top}
    shown = [e[0] for e in on_top if e[0] not in covered]
    if not shown:
        return []
    return sorted({point for _id, parent, point in entries if parent == shown[-1] and point != top})


def make_plan():
    """Plan's fields, from the server's own view (an init's starts as a copy of it)."""
    Plan.covers = tuple(f"/proc/{name}".encode() for name in PROC_COVERS
                        if os.path.exists(f"/proc/{name}"))  # fmt: skip
    under = []
    for point in mounted_under("/tmp"):
        is_file = not os.path.isdir(point)
        folder = os.path.dirname(point) if is_file else point
        folders: list[str] = []
        while folder not in ("/tmp", "/"):
            folders.insert(0, folder)
            folder = os.path.dirname(folder)
        under.append((tuple(folders), point, point[len("/tmp") :], is_file))
    Plan.under_tmp = tuple(under)
    Plan.shm = os.path.isdir("/dev/shm")


def fresh_tmp():
    """A new, empty /tmp holding again what the sandbox mounted under its own, bound from
    the old one with every mount below (their read-only state with them)."""
    old = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755")
    for folders, point, below, is_file in Plan.under_tmp:
        for folder in folders:
            try:
                os.mkdir(folder)
            except FileExistsError:
                pass
        if is_file:
            os.close(os.open(point, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        mount(f"/proc/self/fd/{old}{below}".encode(), point.encode(), None, MS_BIND | MS_REC)
    os.close(old)


def own_namespace():
    """In the init: the command's mounts, in a mount namespace of its own."""
    mount(None, b"/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the server's
    mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in Plan.covers:
        mount(path, path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
              | MS_NOEXEC)  # fmt: skip
    fresh_tmp()
    # /dev is the sandbox's, shared by every command: read-only here (its devices, each a
    # mount of its own, stay usable), /dev/shm a fresh one.
    mount(None, b"/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if Plan.shm:
        mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777")


class _Parsing:
    """What `_json`'s scanner reads off its context: json.loads's defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int, parse_constant = float, int, float


_scan = _json.make_scanner(_Parsing())  # type: ignore[arg-type]  # any object with json's attributes


def parse(data):
    """A message from orkeon (json.dumps's text) as json.loads reads it; ValueError or
    StopIteration when it is not one JSON value."""
    text = data.decode()
    value, end = _scan(text, 0)
    if end != len(text):
        raise ValueError("extra data after the message")
    return value


def message(key, value):
    """`{key: value}` (an int or a text) as json.dumps writes it."""
    said = str(value) if type(value) is int else _json.encode_basestring_ascii(value)
    return f'{{"{key}": {said}}}'.encode()


def send(sock, key, value):
    try:
        sock.send(message(key, value))
    except OSError:  # orkeon has gone: nothing to tell
        pass


_INT = struct.calcsize("i")  # a descriptor in SCM_RIGHTS: a C int


def recv_fds(sock, size, most):
    """socket.recv_fds (the descriptors close-on-exec): the message and the descriptors."""
    msg, ancillary, _flags, _addr = sock.recvmsg(
        size, _socket.CMSG_LEN(most * _INT), _socket.MSG_CMSG_CLOEXEC
    )
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += struct.unpack(f"{len(data) // _INT}i", data[: len(data) - len(data) % _INT])
    return msg, fds


def send_fds(sock, data, fds):
    """socket.send_fds."""
    packed = struct.pack(f"{len(fds)}i", *fds)
    sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, packed)])


INIT_FAILED = "the sandbox's init failed: "  # session.py makes a sandbox per command then


UNUSED = 3  # an init's exit code when orkeon let go of it before any command


def spare(link):
    """pid 1 of a new PID namespace, made ready before a command asks for it: its mount
    and IPC namespaces made, capabilities dropped; then it waits on `link` for one
    command from orkeon. Never returns. When the namespaces cannot be made, the command
    is answered INIT_FAILED and why."""
    code = 127
    failed = None
    try:
        check(_prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "die with the server")
        check(_unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
        own_namespace()
        drop_capabilities()
    except OSError as exc:
        failed = str(exc)
    try:
        woken = rehearse()
        msg, fds = recv_fds(link, MAX_MESSAGE, 3)
        if not msg:
            os._exit(UNUSED)  # orkeon let go of it, or the server is closing
        if failed is not None:
            raise RuntimeError(failed)
        stdin = fds[2] if len(fds) > 2 else os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        code = run(parse(msg), link, [stdin, fds[0], fds[1]], woken)
    except BaseException as exc:  # an init must end, whatever went wrong
        send(link, "error", INIT_FAILED + str(exc))
    os._exit(code)


REHEARSAL = f'{{"argv": ["true"], "cwd": "/", "env": {{"PATH": "{os.defpath}"}}}}'.encode()


def rehearse():
    """What a command's start does that needs no command, done while the init waits for
    one: SIGCHLD's wake-up pipe (its read end returned), and a rehearsal of the rest. An
    init is a fork of the server, and the first touch of each page of the interpreter's
    memory copies it: 0.5 ms of a command's start, moved off its path."""
    woken, wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    _signal.set_wakeup_fd(wake)  # SIGCHLD wakes the command's poll
    _signal.signal(_signal.SIGCHLD, _ignore)
    request = parse(REHEARSAL)
    try:
        os.chdir(request["cwd"])
        program(request["argv"][0], request["env"])
    except OSError:
        pass
    select.poll().register(woken, select.POLLIN)
    return woken


def _ignore(_signum, _frame):
    """SIGCHLD's handler: the signal only wakes the poll (its wake-up pipe)."""


def sweep():
    """Kill every other process of this namespace and reap them: none is left after."""
    try:
        os.kill(-1, _signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        while True:
            os.waitpid(-1, 0)
    except ChildProcessError:
        pass


def run(request, link, stdio, woken):
    """Start the command, wait for it (passing on the signals orkeon sends on `link`),
    kill what it left, say how it ended."""
    env = request["env"]
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        send(link, "error", bad_cwd(request["cwd"], exc.strerror))
        return 127
    actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(stdio)]
    try:
        child = os.posix_spawn(
            program(request["argv"][0], env), request["argv"], env,
            file_actions=actions, setsid=True, setsigdef=DEFAULTS, setsigmask=(),
        )  # fmt: skip
    except OSError as exc:
        send(link, "error", could_not_run(request["argv"][0], exc))
        return 127
    for fd in stdio:
        os.close(fd)
    poller = select.poll()
    poller.register(woken, select.POLLIN)
    poller.register(link, select.POLLIN)
    status = None
    while status is None:
        for fd, _ev in poller.poll():
            if fd == woken:
                try:
                    os.read(woken, 512)
                except BlockingIOError:
                    pass
            else:
                try:
                    said = link.recv(256)
                except OSError:
                    said = b""
                if not said:  # orkeon let go of the command: it goes, and all it started
                    sweep()
                    return 0
                try:
                    os.kill(-1, int(parse(said)["signal"]))
                except ProcessLookupError:
                    pass
        # Every process that ended, reaped (orphans come to pid 1), the command's status.
        try:
            while True:
                pid, got = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == child:
                    status = got
        except ChildProcessError:
            pass
    # Whatever the command left goes before orkeon hears it ended: nothing of it is left
    # when its call returns.
    sweep()
    got = os.waitstatus_to_exitcode(status)
    send(link, "exit", 128 - got if got < 0 else got)
    return 0
