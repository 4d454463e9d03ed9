"""orkeon_run.proc: the one subprocess helper, run against the real scripts of
tests/data/procs/."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
import tracemalloc
from pathlib import Path

import anyio
import pytest
from kit import DATA

from orkeon_run.proc import ProcResult, arun, run

PROCS = DATA / "procs"


def script(name: str) -> str:
    path = PROCS / name
    assert os.access(path, os.X_OK), path
    return str(path)


def test_exit_code_and_both_streams(tmp_path: Path) -> None:
    started = time.monotonic()
    res = run([script("exit_code.sh")], cwd=tmp_path, timeout=10)
    took = time.monotonic() - started
    assert res.exit_code == 3
    assert res.stdout == "to stdout\n"
    assert res.stderr == "to stderr\n"
    assert (res.timed_out, res.error, res.stdout_dropped, res.stderr_dropped) == (
        False,
        None,
        0,
        0,
    )
    # The child's own time: some, and no more than the call around it took.
    assert 0 < res.seconds <= took


def test_exit_zero(tmp_path: Path) -> None:
    res = run([script("exit_code.sh"), "0"], cwd=tmp_path, timeout=10)
    assert res.exit_code == 0


def test_killed_by_a_signal_reads_as_a_shell_shows_it(tmp_path: Path) -> None:
    res = run([script("kill_self.sh")], cwd=tmp_path, timeout=10)
    assert res.exit_code == 128 + signal.SIGTERM
    assert not res.timed_out


def test_first_line_prefers_stderr_and_skips_blank_lines(tmp_path: Path) -> None:
    res = run([script("utf8_mixed.py")], cwd=tmp_path, timeout=10)
    assert res.first_line() == "first real line"
    only_out = ProcResult(0, "\n\nout line\n", "  \n", 0, 0, 0.0, False, None)
    assert only_out.first_line() == "out line"
    assert ProcResult(0, "", "", 0, 0, 0.0, False, None).first_line() == ""


def test_output_not_utf8_is_replaced_not_raised(tmp_path: Path) -> None:
    res = run([script("utf8_mixed.py")], cwd=tmp_path, timeout=10)
    assert res.stdout == "héllo \ufffd\n"


# Hang guard, not a speed verdict (quiet: about 1 s): the verdict is the memory peak and
# the counts; 30 s is there only so a reader that never stops fails instead of hanging.
@pytest.mark.timeout(30)
@pytest.mark.parametrize("stream", ["out", "err"])
def test_fifty_megabytes_are_counted_and_dropped(tmp_path: Path, stream: str) -> None:
    size = 50 * 1024 * 1024
    tracemalloc.start()
    try:
        res = run([script("big_output.sh"), stream, str(size)], cwd=tmp_path, timeout=30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0
    kept, dropped = (
        (res.stdout, res.stdout_dropped) if stream == "out" else (res.stderr, res.stderr_dropped)
    )
    assert len(kept) == 1 << 20
    assert dropped == size - (1 << 20)
    assert peak < 8 * 1024 * 1024, f"peak Python memory {peak} bytes"
    assert not res.timed_out


def test_cap_is_the_callers(tmp_path: Path) -> None:
    res = run([script("big_output.sh"), "out", "1000"], cwd=tmp_path, timeout=10, cap=100)
    assert (len(res.stdout), res.stdout_dropped) == (100, 900)


# The pytest time-outs on the tests below are hang guards (quiet: under 1 s; the ones that
# wait a grace, 1.5 s): each test gives the slow path a SIGKILL grace or a sleep longer
# than its guard, so returning at all is the verdict that the fast path was taken.
@pytest.mark.timeout(20)
def test_time_out_sends_sigterm_first(tmp_path: Path) -> None:
    res = run([script("term_reporter.sh")], cwd=tmp_path, timeout=0.5, kill_grace=60)
    assert res.timed_out
    assert res.exit_code is None
    assert res.stdout == "ready\n"
    # SIGTERM ended it: the script says so, and SIGKILL was 60 s away.
    assert "got SIGTERM" in res.stderr


@pytest.mark.timeout(20)
def test_plain_process_dies_of_sigterm_on_time_out(tmp_path: Path) -> None:
    # SIGKILL is 60 s away, past the 20 s guard: returning at all means SIGTERM ended it.
    res = run([script("sleeper.sh")], cwd=tmp_path, timeout=0.3, kill_grace=60)
    assert res.timed_out and res.exit_code is None
    assert res.stdout == "started\n"


@pytest.mark.timeout(20)
def test_sigterm_ignored_gets_sigkill_after_grace(tmp_path: Path) -> None:
    started = time.monotonic()
    res = run([script("ignore_term.sh")], cwd=tmp_path, timeout=0.3, kill_grace=0.5)
    took = time.monotonic() - started
    assert res.timed_out and res.exit_code is None
    assert res.stdout == "ready\n"
    # The grace was waited (a lower bound holds under any load); the script sleeps 30 s,
    # past the guard, so returning at all means SIGKILL ended it.
    assert took >= 0.75


@pytest.mark.timeout(20)
def test_sigterm_ignored_under_a_wrapper_shell_still_waits_the_grace(tmp_path: Path) -> None:
    """A wrapper shell that runs the script as a child (dash's `sh -c` does not exec its
    last command) dies of SIGTERM at once; the script under it still gets the grace."""
    started = time.monotonic()
    command = (
        f"{shlex.quote(script('ignore_term.sh'))}; echo after"  # `;` keeps any shell from exec-ing
    )
    res = run(["/bin/sh", "-c", command], cwd=tmp_path, timeout=0.3, kill_grace=1.0)
    took = time.monotonic() - started
    assert res.timed_out and res.exit_code is None
    assert res.stdout == "ready\n"
    assert took >= 1.25, "the grace is the group's, not only the wrapper's"


@pytest.mark.timeout(20)
def test_cleanup_on_sigterm_under_a_wrapper_shell_is_not_cut_short(tmp_path: Path) -> None:
    done = tmp_path / "cleaned"
    command = f"{shlex.quote(script('slow_cleanup.sh'))} {shlex.quote(str(done))}; echo after"
    # SIGKILL is 60 s away, past the guard: returning at all means it ended by itself,
    # and the file says its whole cleanup ran.
    res = run(["/bin/sh", "-c", command], cwd=tmp_path, timeout=0.3, kill_grace=60)
    assert res.timed_out
    assert done.read_text() == "cleaned\n"


def _gone_or_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.timeout(20)
def test_grandchild_holding_the_pipes_does_not_hang_us(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # The grandchild holds the pipes 30 s, past the guard: returning at all, not timed
    # out, means we stopped reading when the parent exited.
    res = run([script("fork_holder.sh"), str(pid_file)], cwd=tmp_path, timeout=60)
    assert res.exit_code == 0
    assert not res.timed_out
    assert res.stdout == "parent done\n"
    grandchild = int(pid_file.read_text())
    # Awaited, not bounded: it was sent SIGKILL; the guard ends the test if it never dies.
    while not _gone_or_zombie(grandchild):
        time.sleep(0.01)


def test_missing_program_is_a_result(tmp_path: Path) -> None:
    res = run(["orkeon-no-such-program"], cwd=tmp_path, timeout=10)
    assert res.exit_code is None
    assert res.error == "no such program: orkeon-no-such-program"
    missing = run([str(tmp_path / "nope.sh")], cwd=tmp_path, timeout=10)
    assert missing.error == f"no such program: {tmp_path / 'nope.sh'}"


def test_non_executable_file_is_a_result(tmp_path: Path) -> None:
    plain = tmp_path / "x.sh"
    plain.write_text("#!/bin/sh\necho hi\n")
    plain.chmod(0o644)
    res = run(["./x.sh"], cwd=tmp_path, timeout=10)
    assert res.exit_code is None
    assert res.error == "permission denied: ./x.sh"


def test_missing_working_directory_is_a_result(tmp_path: Path) -> None:
    res = run(["true"], cwd=tmp_path / "absent", timeout=10)
    assert res.exit_code is None
    assert res.error is not None and "working directory" in res.error


def test_empty_argv_is_a_result(tmp_path: Path) -> None:
    assert run([], cwd=tmp_path, timeout=1).error == "the command is empty"


def test_stdin_is_delivered(tmp_path: Path) -> None:
    data = b"line one\nline two\n" * 20_000  # larger than a pipe buffer
    res = run([script("read_stdin.sh")], cwd=tmp_path, timeout=10, stdin=data)
    assert res.exit_code == 0
    assert res.stdout.encode() == data
    assert res.stderr == "done\n"


def test_stdin_is_dev_null_by_default(tmp_path: Path) -> None:
    res = run([script("read_stdin.sh")], cwd=tmp_path, timeout=10)
    assert (res.exit_code, res.stdout) == (0, "")


def test_empty_stdin_bytes(tmp_path: Path) -> None:
    res = run([script("read_stdin.sh")], cwd=tmp_path, timeout=10, stdin=b"")
    assert (res.exit_code, res.stdout) == (0, "")


@pytest.mark.timeout(20)
def test_child_that_never_reads_stdin(tmp_path: Path) -> None:
    res = run([script("ignore_stdin.sh")], cwd=tmp_path, timeout=10, stdin=b"x" * (4 << 20))
    # Blocked on the 4 MB nobody reads, it would have run into its time-out.
    assert not res.timed_out
    assert res.exit_code == 0
    assert res.stdout == "not reading\n"
    assert res.error is None


def test_env_is_passed_and_replaces_ours(tmp_path: Path) -> None:
    env = {"ORKEON_TEST_VAR": "from the test", "PATH": os.environ["PATH"]}
    res = run([script("print_env.sh")], cwd=tmp_path, timeout=10, env=env)
    assert res.stdout.splitlines() == ["var=from the test", "home=unset", str(tmp_path)]


def test_env_none_inherits_orkeons_environment_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md, "What orkeon keeps for itself": no program orkeon starts gets
    the variables orkeon consumes, even one started without an environment of its own."""
    monkeypatch.setenv("ORKEON_TEST_VAR", "orkeon's own")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    res = run([script("print_env.sh")], cwd=tmp_path, timeout=10)
    assert res.stdout.splitlines()[:2] == ["var=unset", f"home={tmp_path / 'home'}"]


def test_child_runs_in_its_own_session(tmp_path: Path) -> None:
    """New session, so the group kill reaches everything the child forks and nothing else."""
    res = run(
        ["python3", "-c", "import os; print(os.getsid(0) == os.getpid(), os.getsid(0))"],
        cwd=tmp_path,
        timeout=10,
    )
    same, sid = res.stdout.split()
    assert same == "True" and int(sid) != os.getsid(0)


@pytest.mark.timeout(20)
def test_arun_runs_concurrently_in_threads(tmp_path: Path) -> None:
    # A barrier, not a stopwatch: each child says it started, then waits until all three
    # have. Run one after another, the first would wait alone until its time-out.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    wait_all = 'touch "$1"; until [ "$(ls | wc -l)" -ge 3 ]; do sleep 0.01; done'

    async def main() -> list[ProcResult]:
        results: list[ProcResult] = []

        async def one(n: int) -> None:
            argv = ["/bin/sh", "-c", wait_all, "sh", str(n)]
            results.append(await arun(argv, cwd=barrier, timeout=10))

        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(one, n)
        return results

    results = anyio.run(main)
    assert [(r.exit_code, r.timed_out) for r in results] == [(0, False)] * 3


@pytest.mark.timeout(20)
def test_grandchild_that_left_the_group_does_not_hang_us(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    res = run([script("escaped_holder.py"), str(pid_file)], cwd=tmp_path, timeout=60)
    escaped = int(pid_file.read_text())
    try:
        # It holds the pipes until it is killed: alive now, so we did not wait for them.
        assert not _gone_or_zombie(escaped)
        assert not res.timed_out
        assert res.exit_code == 0
        assert res.stdout == "parent done\n"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


@pytest.mark.timeout(20)
def test_cancelling_arun_stops_the_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"

    async def main() -> None:
        with anyio.move_on_after(0.5):
            await arun([script("pid_then_sleep.sh"), str(pid_file)], cwd=tmp_path, timeout=60)
            raise AssertionError("arun returned instead of being cancelled")

    # The child sleeps 30 s, past the guard: returning at all means the cancel stopped it.
    anyio.run(main)
    assert _gone_or_zombie(int(pid_file.read_text()))


def test_cancel_check_exception_is_raised_after_the_child_is_stopped(tmp_path: Path) -> None:
    calls = []

    def check() -> None:
        calls.append(time.monotonic())
        if len(calls) >= 3:
            raise KeyError("stop")

    pid_file = tmp_path / "child.pid"
    with pytest.raises(KeyError):
        run(
            [script("pid_then_sleep.sh"), str(pid_file)],
            cwd=tmp_path,
            timeout=60,
            cancel_check=check,
        )
    assert _gone_or_zombie(int(pid_file.read_text()))
