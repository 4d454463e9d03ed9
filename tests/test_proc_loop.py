"""`proc_loop.arun` given stdin (docs/hooks.md, "Input on stdin": a settings hook reads its
event as one JSON line on stdin; docs/performance.md, "Issue 22, per-call costs": the
event loop writes it, no worker thread): the same result as `proc.run`'s, and no hop to a
worker thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest
from kit import DATA

from orkeon_run.proc import ProcResult
from orkeon_run.proc_loop import arun

PROCS = DATA / "procs"


def script(name: str) -> str:
    path = PROCS / name
    assert os.access(path, os.X_OK), path
    return str(path)


def _arun(argv: list[str], cwd: Path, stdin: bytes | None) -> tuple[ProcResult, set[str]]:
    """arun's result, and the names of the threads that appeared while it ran (a worker
    thread of anyio's lives on after its task, for the loop's next one)."""

    async def main() -> tuple[ProcResult, set[str]]:
        before = set(threading.enumerate())
        res = await arun(argv, cwd=cwd, timeout=10, stdin=stdin)
        return res, {t.name for t in set(threading.enumerate()) - before}

    return anyio.run(main)


def test_stdin_larger_than_a_pipe_is_delivered_by_the_event_loop(tmp_path: Path) -> None:
    data = b"line one\nline two\n" * 20_000  # 360 kB: many writes, the pipe full between
    res, threads = _arun([script("read_stdin.sh")], tmp_path, data)
    assert res.exit_code == 0
    assert res.stdout.encode() == data
    assert res.stderr == "done\n"
    assert threads == set(), threads  # the loop wrote it: no worker thread


def test_empty_stdin_is_an_end_of_file_at_once(tmp_path: Path) -> None:
    res, threads = _arun([script("read_stdin.sh")], tmp_path, b"")
    assert (res.exit_code, res.stdout, res.stderr) == (0, "", "done\n")
    assert threads == set(), threads


@pytest.mark.timeout(20)
def test_a_child_that_never_reads_its_stdin_ends_as_with_proc_run(tmp_path: Path) -> None:
    # Blocked on the 4 MB nobody reads, it would run into its time-out.
    res, threads = _arun([script("ignore_stdin.sh")], tmp_path, b"x" * (4 << 20))
    assert not res.timed_out
    assert (res.exit_code, res.stdout, res.error) == (0, "not reading\n", None)
    assert threads == set(), threads


def test_no_stdin_is_dev_null(tmp_path: Path) -> None:
    res, threads = _arun([script("read_stdin.sh")], tmp_path, None)
    assert (res.exit_code, res.stdout) == (0, "")
    assert threads == set(), threads
