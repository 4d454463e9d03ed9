"""Where a hook's process starts (hooks/spawn.py): under the veil that hides orkeon's
processes, kept up for the process (docs/security.md, "Hooks"; docs/performance.md,
"The hooks' veil kept up"), or a bubblewrap per hook where it cannot be kept up. Both
ways give the same results: exit codes, output, stdin, time-outs, the words for a program
that cannot start."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orkeon_run.hooks import spawn
from orkeon_run.tools.sandbox import veil

ENV = {"PATH": os.defpath}


@pytest.fixture(params=["kept-up", "per-hook"])
def veil_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    veil.close_kept_veil()
    veil.ENABLED = request.param == "kept-up"
    try:
        yield request.param
    finally:
        veil.ENABLED = True
        veil.close_kept_veil()


def run(argv: list[str], ws: Path, **kw: object) -> object:
    return asyncio.run(spawn.arun(argv, cwd=ws, env=ENV, timeout=kw.pop("timeout", 30), **kw))


def test_hooks_share_the_kept_up_veil_and_never_see_orkeon(tmp_path: Path) -> None:
    """docs/security.md, "Hooks": the veil is kept up for the process, one PID namespace
    that every hook starts in, not orkeon's; /proc/<orkeon> does not exist there."""
    veil.close_kept_veil()
    probe = ["sh", "-c", f"readlink /proc/self/ns/pid; test -e /proc/{os.getpid()}/environ"
             f" && cat /proc/{os.getpid()}/cmdline || echo hidden"]  # fmt: skip
    first, second = (run(probe, tmp_path) for _ in range(2))
    ours = os.readlink("/proc/self/ns/pid")
    assert first.exit_code == second.exit_code == 0, (first, second)  # type: ignore[attr-defined]
    ns1, seen1 = first.stdout.split()  # type: ignore[attr-defined]
    ns2, _seen2 = second.stdout.split()  # type: ignore[attr-defined]
    assert ns1 == ns2 != ours
    assert seen1 == "hidden"
    assert veil.kept_veil_ready() is not None


def test_per_hook_veils_when_it_is_not_kept_up(tmp_path: Path) -> None:
    """docs/security.md, "Hooks": where the veil cannot be kept up, each hook gets a
    bubblewrap (a PID namespace) of its own."""
    veil.close_kept_veil()
    veil.ENABLED = False
    try:
        probe = ["readlink", "/proc/self/ns/pid"]
        first, second = (run(probe, tmp_path) for _ in range(2))
    finally:
        veil.ENABLED = True
    assert first.stdout != second.stdout  # type: ignore[attr-defined]
    assert veil.kept_veil_ready() is None


def test_exit_code_output_and_stdin(tmp_path: Path, veil_mode: str) -> None:
    """docs/hooks.md: a hook's exit code, stdout and stderr are what it gave; stdin is
    what orkeon wrote to it."""
    res = run(["sh", "-c", "cat; echo out; echo err >&2; exit 3"], tmp_path, stdin=b"in:")
    assert (res.exit_code, res.stdout, res.stderr, res.error) == (3, "in:out\n", "err\n", None)  # type: ignore[attr-defined]
    killed = run(["sh", "-c", "kill -9 $$"], tmp_path)
    assert killed.exit_code == 137, killed  # type: ignore[attr-defined]


def test_what_cannot_start_is_said_in_procs_words(tmp_path: Path, veil_mode: str) -> None:
    """proc.py: a program that cannot run is a result with `error`, never an exception."""
    missing = run(["no-such-program-here"], tmp_path)
    assert missing.error == "no such program: no-such-program-here"  # type: ignore[attr-defined]
    gone = run(["true"], tmp_path / "nowhere")
    assert gone.error.startswith(f"cannot use the working directory {tmp_path / 'nowhere'}")  # type: ignore[attr-defined]


def test_a_time_out_stops_the_hook(tmp_path: Path, veil_mode: str) -> None:
    """proc.py: on time-out the group gets SIGTERM, then SIGKILL after the grace."""
    res = run(["sh", "-c", "trap '' TERM; echo started; sleep 600"], tmp_path,
              timeout=0.5, kill_grace=0.2)  # fmt: skip
    assert res.timed_out and res.exit_code is None and res.stdout == "started\n", res  # type: ignore[attr-defined]


def test_what_a_hook_leaves_behind_ends(tmp_path: Path, veil_mode: str) -> None:
    """docs/security.md, "Hooks": a process a hook leaves in its group ends with it; one it
    moved out of its group (setsid) ends once no hook runs, with the veil's namespace.
    Both hold a FIFO open: it reads its end once the last of them is gone."""
    fifo = tmp_path / "held"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        script = f"exec 3>{fifo}; sleep 600 >&3 & setsid sleep 601 >&3 & echo up >&3"
        res = run(["sh", "-c", script], tmp_path)
        assert res.exit_code == 0, res  # type: ignore[attr-defined]
        got = b""
        while True:  # "up", then the end once every writer has gone (30 s: a loaded machine)
            assert select.select([reader], [], [], 30.0)[0], f"still held after {got!r}"
            chunk = os.read(reader, 64)
            if not chunk:
                break
            got += chunk
        assert got == b"up\n"
    finally:
        os.close(reader)


def test_a_hook_holds_no_descriptor_but_its_own(tmp_path: Path, veil_mode: str) -> None:
    """proc.py: a hook gets stdin, stdout and stderr, nothing of orkeon's or the veil's."""
    res = run(["sh", "-c", "ls /proc/self/fd"], tmp_path)
    held = sorted(int(fd) for fd in res.stdout.split())  # type: ignore[attr-defined]
    assert held[:3] == [0, 1, 2] and len(held) <= 4, held  # 3: the directory ls reads


def test_a_running_hook_dies_with_orkeon(tmp_path: Path) -> None:
    """docs/security.md, "Hooks": the veil kept up ends with orkeon, SIGKILL included, and
    every hook in it. A process runs a hook that holds a FIFO open and is killed: the FIFO
    reads its end once the hook has gone."""
    fifo = tmp_path / "held"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    hook = ["sh", "-c", f"exec 3>{fifo}; echo up >&3; exec sleep 600 >&3"]
    code = (
        "import asyncio, sys; from pathlib import Path; from orkeon_run.hooks import spawn\n"
        f"asyncio.run(spawn.arun({hook!r}, cwd=Path({str(tmp_path)!r}), env={ENV!r}, "
        "timeout=3600))\n"
    )
    orkeon = subprocess.Popen([sys.executable, "-c", code])
    try:
        assert select.select([reader], [], [], 60.0)[0], "the hook did not start"
        assert os.read(reader, 64) == b"up\n"
        os.kill(orkeon.pid, signal.SIGKILL)
        orkeon.wait()
        # The end once the hook has gone (30 s: a loaded machine; it goes in milliseconds).
        assert select.select([reader], [], [], 30.0)[0], "the hook outlived orkeon"
        assert os.read(reader, 64) == b""
    finally:
        os.close(reader)
        if orkeon.poll() is None:
            orkeon.kill()
            orkeon.wait()


def test_the_kept_up_veils_start_is_its_probe(tmp_path: Path) -> None:
    """docs/performance.md, "Start-up, after the third round's merges": where the veil is
    kept up, its spawner's start answers whether a veil can be made here, so a process's
    first hook starts one bubblewrap, not a veiled `true` before it. A fresh process runs
    one hook: the probe was never made, and the hook ran in the kept-up veil."""
    code = (
        "import asyncio, os, sys; from pathlib import Path; from orkeon_run.hooks import spawn\n"
        "from orkeon_run.tools.sandbox import veil\n"
        "res = asyncio.run(spawn.arun(['true'], cwd=Path(sys.argv[1]), env={'PATH': os.defpath},"
        " timeout=600))\n"
        "print(res.exit_code, veil._probe.cache_info().misses, veil.kept_veil_ready() is not None)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True
    )
    assert out.stdout.split() == ["0", "0", "True"], out.stderr
