"""The shell sandbox (tools/sandbox) on the real kernel: through the shell tool with a real
policy, and through `sandbox.run`. Nothing is mocked; a machine where no sandbox can be
made fails these tests with the probe's reason and fix (CI must run them), except off
Linux, where there is no sandbox to test."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from kit import ROOT
from kit.pipeline import make_pipeline, shell_call
from kit.sandbox import ENV, LINUX_ONLY, PY, RULES, SCRIPTS, make_ws, q, require_sandbox, role, sh

from orkeon_run.policy.programs import ShellRules
from orkeon_run.tools import sandbox as sb
from orkeon_run.tools.shell import shell

pytestmark = [LINUX_ONLY, pytest.mark.usefixtures("sandbox_mode")]


@pytest.fixture(scope="module", autouse=True)
def sandbox_works_here() -> None:
    require_sandbox()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "settings.json").write_text('{"secret": "user-config"}\n')
    return cfg.resolve()


def wait_until(cond: Callable[[], bool], seconds: float = 60) -> bool:
    """Poll `cond` until true or `seconds` passed (a bound, not an expected duration)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def running(mark: str) -> list[int]:
    """Host pids of live `sleep MARK` processes (zombies count as gone)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", mark.encode()] and state != "Z":
            found.append(int(entry))
    return found


def mark() -> str:
    return f"3600.{uuid.uuid4().int % 10**9:09d}"


# --- writes ---------------------------------------------------------------------------


def test_writes_land_under_the_roots_only(ws: Path, tmp_path: Path) -> None:
    policy = role(ws, ["src/"])
    assert sh(ws, "touch src/new.py", policy)["exit_code"] == 0
    assert (ws / "src/new.py").is_file()
    for target in ("docs/x.md", "README.md"):
        got = sh(ws, f"touch {target}", policy)
        assert got["exit_code"] == 1 and "Read-only file system" in got["stderr"], (target, got)
    assert (ws / "README.md").read_text() == "# readme\n"
    assert not (ws / "docs/x.md").exists()
    # /tmp is the command's private folder: beside a workspace under /tmp, a write lands
    # there, never in the host's folder of that name.
    sh(ws, f"touch {tmp_path / 'outside.txt'}", policy)
    assert not (tmp_path / "outside.txt").exists()
    home_file = Path.home() / f"orkeon-sandbox-{uuid.uuid4().hex}"
    try:
        assert sh(ws, f"touch {home_file}", policy)["exit_code"] == 1
        assert not home_file.exists()
    finally:
        home_file.unlink(missing_ok=True)


def test_a_role_without_roots_writes_only_its_tmpdir(ws: Path) -> None:
    policy = role(ws, None)
    got = sh(ws, "touch src/x.py", policy)
    assert got["exit_code"] == 1 and "Read-only file system" in got["stderr"]
    assert sh(ws, "touch /tmp/scratch", policy)["exit_code"] == 0
    assert not (ws / "src/x.py").exists()


def test_git_and_orkeon_are_read_only_under_any_root(ws: Path) -> None:
    policy = role(ws, ["."])
    before = (ws / ".git/config").read_bytes()
    for command in (
        "cp README.md .git/config",
        "touch .git/hooks/pre-commit",
        "mv .git moved",
        "cp README.md .orkeon/settings.json",
        "touch .orkeon/hooks/pre.sh",
        "touch src/vendor/lib/.git/hooks/post-checkout",
        "cp README.md src/vendor/lib/.git/config",
    ):
        got = sh(ws, command, policy)
        assert got["exit_code"] != 0, (command, got)
    assert (ws / ".git/config").read_bytes() == before
    assert (ws / ".orkeon/settings.json").read_text() == "{}\n"
    assert not (ws / ".git/hooks/pre-commit").exists()
    assert not (ws / "src/vendor/lib/.git/hooks/post-checkout").exists()
    # The rest of the root is the role's.
    assert sh(ws, "touch docs/ok.md", policy)["exit_code"] == 0


def test_the_command_cannot_lift_the_mounts(ws: Path) -> None:
    """No capabilities inside, even for root: the read-only and hiding mounts stay."""
    policy = role(ws, ["."])
    got = sh(ws, f"{q(PY)} {q(SCRIPTS / 'unmount.py')} .git .orkeon .orkeon/runs/r1 /", policy)
    assert got == {"exit_code": 0, "stdout": "\n", "stderr": ""}
    assert not (ws / ".git/probe").exists() and not (ws / ".orkeon/runs/r1/probe").exists()


def test_the_command_cannot_make_a_user_namespace(ws: Path) -> None:
    """No nested user namespace (docs/security.md): in one, a command would hold every
    capability and could rearrange its own mounts."""
    got = sh(ws, f"{q(PY)} {q(SCRIPTS / 'userns.py')}", role(ws, ["."]))
    assert got == {"exit_code": 0, "stdout": "refused\n", "stderr": ""}


def test_a_root_that_leaves_the_workspace_grants_nothing(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)
    policy = role(ws, ["escape", "../outside", "/etc"])
    assert policy.writable == ()
    assert sh(ws, "touch escape/x", policy)["exit_code"] == 1
    assert not (outside / "x").exists()


def test_a_root_swapped_for_a_symlink_after_the_policy_grants_nothing(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    policy = role(ws, ["docs"])
    (ws / "docs").rmdir()
    (ws / "docs").symlink_to(outside)
    assert sh(ws, "touch docs/x", policy)["exit_code"] == 1
    assert not (outside / "x").exists()


def test_a_root_that_does_not_exist_yet_is_made_and_writable(ws: Path) -> None:
    policy = role(ws, ["src/api/"])
    assert sh(ws, "mkdir -p src/api/v1", policy)["exit_code"] == 0
    assert (ws / "src/api/v1").is_dir()


def test_a_missing_root_is_never_made_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    """Another role's command turned a parent of this role's root into a link out of the
    workspace: nothing is made out there, and the root grants nothing."""
    outside = tmp_path / "outside"
    outside.mkdir()
    policy = role(ws, ["docs/gen/api"])
    (ws / "docs").rmdir()
    (ws / "docs").symlink_to(outside)
    assert sh(ws, "touch docs/gen/api/x", policy)["exit_code"] == 1
    assert list(outside.iterdir()) == []


def test_the_pipeline_confines_a_call_to_the_calling_roles_roots(ws: Path) -> None:
    pipeline = make_pipeline(ws, rules=RULES, environ=ENV, sandbox=role(ws, None))
    assert shell_call(pipeline, "touch src/from-role.py", ("src",))["exit_code"] == 0
    assert shell_call(pipeline, "touch docs/no", ("src",))["exit_code"] == 1
    assert shell_call(pipeline, "touch src/no")["exit_code"] == 1  # a role without roots
    assert (ws / "src/from-role.py").exists() and not (ws / "src/no").exists()


# --- reads ----------------------------------------------------------------------------


def test_the_run_directory_and_the_config_folder_cannot_be_read(ws: Path, config: Path) -> None:
    policy = role(ws, ["."], config)
    for command in (
        "cat .orkeon/runs/r1/state.json",
        f"cat {config}/settings.json",
        "touch .orkeon/runs/r1/state.json",
    ):
        got = sh(ws, command, policy)
        assert got["exit_code"] == 1 and "secret" not in got["stdout"], (command, got)
    assert sh(ws, "ls -A .orkeon/runs/r1", policy) == {"exit_code": 0, "stdout": "", "stderr": ""}
    assert sh(ws, f"ls -A {config}", policy)["stdout"] == ""
    assert (ws / ".orkeon/runs/r1/state.json").read_text() == '{"secret": "run-state"}\n'


def test_other_processes_are_invisible(ws: Path) -> None:
    policy = role(ws, ["src"])
    # orkeon's process (this test's) and the one that started it (the CI shell's role).
    for pid in (os.getpid(), os.getppid()):
        assert pid > 3  # the sandbox's own pids are 1 (bubblewrap's init), 2 (the command)
        got = sh(ws, f"cat /proc/{pid}/environ", policy)
        assert got["exit_code"] == 1 and got["stdout"] == "", (pid, got)
    pids = [p for p in sh(ws, "ls /proc", policy)["stdout"].split() if p.isdigit()]
    assert len(pids) <= 3, pids  # init, ls and nothing else


def test_the_environment_is_the_callers_with_a_private_tmpdir(ws: Path) -> None:
    env = {**ENV, "ORKEON_SB_TEST": "given"}
    (ws / "env.py").write_text("import json, os\nprint(json.dumps(dict(os.environ)))\n")
    got = anyio.run(
        lambda: shell(
            (PY, "env.py"),
            workspace=ws,
            rules=RULES,
            timeout=30,
            environ=env,
            sandbox=role(ws, None),
        )
    )
    out = json.loads(got["stdout"])
    assert out["ORKEON_SB_TEST"] == "given" and out["TMPDIR"] == "/tmp"
    assert not set(out) - {*env, "TMPDIR", "TMP", "TEMP", "PWD"}  # bubblewrap sets PWD


# --- network --------------------------------------------------------------------------


def test_the_network_is_off_unless_the_policy_allows_it(ws: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        command = f"{q(PY)} {q(SCRIPTS / 'connect.py')} {port}"
        off = sh(ws, command, role(ws, None))
        assert off["exit_code"] == 1 and off["stdout"].startswith("refused"), off
        on = sh(ws, command, role(ws, None, network=True))
        assert on == {"exit_code": 0, "stdout": "connected\n", "stderr": ""}


# --- the private TMPDIR ---------------------------------------------------------------


@pytest.mark.parametrize("on_disk", [False, True], ids=["in-memory", "on-disk"])
def test_tmpdir_is_private_and_removed_afterwards(ws: Path, tmp_path: Path, on_disk: bool) -> None:
    temps = tmp_path / "temps"
    temps.mkdir()
    policy = role(ws, None, temp_root=temps if on_disk else None)
    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="orkeon-host-") as host_file:
        first = sh(ws, f"{q(PY)} {q(SCRIPTS / 'tmpdir.py')} one {host_file.name}", policy)
        out = json.loads(first["stdout"])
        assert out["TMPDIR"] == "/tmp" and out["gettempdir"] == "/tmp"
        assert out["other_seen"] is False  # the host's /tmp is not the command's
        assert list(temps.iterdir()) == []  # on disk: removed once the command ended
        second = json.loads(sh(ws, f"{q(PY)} {q(SCRIPTS / 'tmpdir.py')} two", policy)["stdout"])
        assert "mark.txt" not in second["before"]  # a new folder for every command
        assert not Path("/tmp/mark.txt").exists()


def test_a_tmpdir_made_hard_to_remove_is_removed_anyway(ws: Path, tmp_path: Path) -> None:
    """On disk (the audit's /tmp): a chain deeper than Python's recursion limit and than a
    path may be long, and folders with no permission at all."""
    temps = tmp_path / "temps"
    temps.mkdir()
    policy = role(ws, None, temp_root=temps)
    assert sh(ws, f"{q(PY)} {q(SCRIPTS / 'deep.py')} 3000", policy) == {
        "exit_code": 0, "stdout": "made\n", "stderr": ""
    }  # fmt: skip
    assert list(temps.iterdir()) == []


# --- lifetime -------------------------------------------------------------------------


def test_the_command_dies_with_a_sigkilled_orkeon(
    ws: Path, tmp_path: Path, sandbox_mode: str
) -> None:
    sleep_mark, pid_file = mark(), tmp_path / "parent.pid"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen(
        [PY, str(SCRIPTS / "parent.py"), str(ws), sleep_mark, str(pid_file), sandbox_mode],
        env=env,
    )
    try:
        assert wait_until(lambda: bool(running(sleep_mark))), "the sandboxed sleep never started"
        assert int(pid_file.read_text()) == parent.pid
        sleepers = running(sleep_mark)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert wait_until(lambda: not running(sleep_mark)), f"still running: {sleepers}"
    finally:
        parent.kill()
        for pid in running(sleep_mark):
            os.kill(pid, signal.SIGKILL)


def test_a_time_out_stops_everything_in_the_sandbox(ws: Path, tmp_path: Path) -> None:
    """The command starts a daemon in a session of its own, beyond the reach of proc's
    group kill; the PID namespace takes it down. A time-out that came before the daemon
    started proves nothing, so the time-out grows until it came after."""
    policy = role(ws, ["src"])
    for timeout in (2, 8, 30):
        sleep_mark, started = mark(), ws / "src" / "started"
        started.unlink(missing_ok=True)
        got = sh(
            ws, f"{q(PY)} {q(SCRIPTS / 'daemon.py')} src/started {sleep_mark}", policy, timeout
        )
        assert got["exit_code"] is None
        assert got["stderr"].endswith(f"ran longer than {timeout:.3g} s and was stopped")
        if started.exists():
            assert wait_until(lambda m=sleep_mark: not running(m)), running(sleep_mark)
            return
    pytest.fail("the daemon script never started within 30 s")


def test_cancelling_the_call_stops_everything_and_removes_tmpdir(ws: Path, tmp_path: Path) -> None:
    temps = tmp_path / "temps"
    temps.mkdir()
    policy = role(ws, ["src"], temp_root=temps)
    sleep_mark, started = mark(), ws / "src" / "started"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: sb.arun(
                    policy,
                    [PY, str(SCRIPTS / "daemon.py"), "src/started", sleep_mark],
                    cwd=ws,
                    timeout=3600,
                    env=ENV,
                )
            )
            with anyio.fail_after(60):
                while not started.exists():
                    await anyio.sleep(0.02)
            assert running(sleep_mark)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert wait_until(lambda: not running(sleep_mark)), running(sleep_mark)
    assert list(temps.iterdir()) == []


# --- results as proc gives them ---------------------------------------------------------


def test_exit_codes_and_missing_programs_read_as_unconfined(ws: Path) -> None:
    policy = role(ws, None)
    assert sh(ws, "cat nope.txt", policy)["exit_code"] == 1
    assert sh(ws, "cat README.md", policy) == {"exit_code": 0, "stdout": "# readme\n", "stderr": ""}
    rules = ShellRules(extra_allowed_commands=("./missing.sh",))
    got = anyio.run(
        lambda: shell(
            ("./missing.sh",), workspace=ws, rules=rules, timeout=30, environ=ENV, sandbox=policy
        )
    )
    assert got == {"exit_code": 127, "stdout": "", "stderr": "shell: no such program: ./missing.sh"}


def test_a_program_in_a_hidden_folder_is_not_found(ws: Path) -> None:
    tool = ws / ".orkeon/runs/r1/tool.sh"
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    rules = ShellRules(extra_allowed_commands=(str(tool),))
    got = anyio.run(
        lambda: shell(
            (str(tool),), workspace=ws, rules=rules, timeout=30, environ=ENV, sandbox=role(ws, None)
        )
    )
    assert got["exit_code"] == 127 and got["stdout"] == ""
    assert got["stderr"].startswith(f"shell: no such program in the sandbox: {tool} ("), got


def test_one_probe_a_process_however_the_bwrap_is_named() -> None:
    """docs/performance.md, "One sandbox probe a process": the run's confinement asks with
    no path, the shell tool with the path that answer gave; both get one answer, made once."""
    first = sb.probe()
    assert first.ok and first.bwrap is not None
    assert sb.probe(first.bwrap) is first and sb.probe() is first
