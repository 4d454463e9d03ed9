"""The kept-up sandbox (docs/security.md, "The kept-up sandbox"): one sandbox for a
policy's commands, each command in namespaces of its own, nothing of one command left
for the next, the server out of the commands' reach, and the sandbox per command where
no kept-up one can be made. The policy itself is tested in both modes by test_sandbox.py
and test_sandbox_policy.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest
from kit import ROOT
from kit.sandbox import ENV, LINUX_ONLY, PY, SCRIPTS, make_ws, q, require_sandbox, role, sh

from orkeon_run.tools import sandbox as sb
from orkeon_run.tools.sandbox import session

pytestmark = LINUX_ONLY


@pytest.fixture(autouse=True)
def fresh_sessions(monkeypatch: pytest.MonkeyPatch) -> object:
    require_sandbox()
    monkeypatch.setattr(session, "ENABLED", True)
    monkeypatch.setattr(session, "_refused", [])  # a test's refusal stays its own
    yield
    session.close_all()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


def bwrap() -> Path:
    found = sb.probe().bwrap
    assert found is not None
    return found


def user_ns(ws: Path, policy: sb.SandboxPolicy) -> str:
    """The user namespace a command runs in: the sandbox's."""
    res = sb.run(policy, ["readlink", "/proc/self/ns/user"], cwd=ws, timeout=30, env=ENV)
    assert res.exit_code == 0 and res.stdout.startswith("user:["), res
    return res.stdout


def running(mark: str) -> list[str]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", mark.encode()]:
            found.append(entry)
    return found


def test_a_policys_commands_share_one_sandbox_started_on_the_first(ws: Path) -> None:
    policy = role(ws, ["src"])
    assert session._sessions.get(policy) is None  # nothing started before the first command
    first = user_ns(ws, policy)
    kept = session.kept_up(policy, bwrap())
    assert kept is not None and kept.popen.poll() is None
    assert user_ns(ws, policy) == first  # the same sandbox
    assert session.kept_up(policy, bwrap()) is kept
    other = role(ws, ["docs"])
    assert user_ns(ws, other) != first  # another role's roots: another sandbox
    session.ENABLED = False
    assert user_ns(ws, policy) != user_ns(ws, policy)  # per call: one each


def test_nothing_of_a_command_is_left_for_the_next(ws: Path) -> None:
    """Its processes (a daemon in a session of its own among them), its /tmp and
    /dev/shm files and its SysV IPC objects end with it."""
    policy = role(ws, ["src"])
    mark = f"3600.{uuid.uuid4().int % 10**9:09d}"
    got = sh(ws, f"{q(PY)} {q(SCRIPTS / 'traces.py')} leave {mark}", policy)
    assert got["stdout"] == "left\n", got
    assert running(mark) == []  # gone when the call returned, not later
    seen = json.loads(sh(ws, f"{q(PY)} {q(SCRIPTS / 'traces.py')} look", policy)["stdout"])
    # /tmp holds only the folders leading to the workspace's mount and to the files the
    # command names (this checkout's scripts), when they lie there.
    shown = {p.parts[2] for p in (ws, SCRIPTS) if p.is_relative_to("/tmp")}
    assert sorted(seen["tmp"]) == sorted(shown)
    assert seen["shm"] == [] and seen["sysv"] == []
    assert seen["pids"] == [1, 2]  # the command's init and itself: no server, no daemon
    assert seen["fds"] == [0, 1, 2, 3]  # 3: the listing's own


def test_a_command_cannot_reach_the_server(ws: Path) -> None:
    policy = role(ws, ["src"])
    before = user_ns(ws, policy)
    kept = session.kept_up(policy, bwrap())
    assert sh(ws, f"{q(PY)} {q(SCRIPTS / 'killall.py')}", policy)["stdout"] == "done\n"
    assert session.kept_up(policy, bwrap()) is kept and kept.popen.poll() is None
    assert user_ns(ws, policy) == before


def test_a_path_the_policy_hides_that_appears_later_is_hidden(ws: Path) -> None:
    """The sandbox is made again when the mounts a command would get changed since."""
    config = ws / "config"  # in sight (the host's /tmp, where tmp_path lies, is hidden)
    policy = role(ws, ["."], config)
    assert sh(ws, "true", policy)["exit_code"] == 0
    first = session.kept_up(policy, bwrap())
    config.mkdir()
    (config / "settings.json").write_text("secret\n")
    got = sh(ws, f"cat {config}/settings.json", policy)
    assert got["exit_code"] == 1 and "secret" not in got["stdout"], got
    assert session.kept_up(policy, bwrap()) is not first


def test_stdin_output_caps_and_errors_read_as_proc_gives_them(ws: Path) -> None:
    policy = role(ws, None)
    res = sb.run(policy, ["cat"], cwd=ws, timeout=30, env=ENV, stdin=b"given")
    assert (res.exit_code, res.stdout) == (0, "given")
    res = sb.run(policy, [PY, "-c", "print('x' * 5000)"], cwd=ws, timeout=30, env=ENV, cap=100)
    assert (len(res.stdout), res.stdout_dropped) == (100, 4901)
    res = sb.run(policy, ["sh", "-c", "kill -9 $$"], cwd=ws, timeout=30, env=ENV)
    assert res.exit_code == 137
    res = sb.run(policy, ["true"], cwd=ws / "nowhere", timeout=30, env=ENV)
    assert res.error is not None and res.error.startswith("cannot use the working directory")
    assert session.kept_up(policy, bwrap()) is not None


def test_cancelling_a_call_kills_its_namespace(ws: Path) -> None:
    policy = role(ws, ["src"])
    mark = f"3600.{uuid.uuid4().int % 10**9:09d}"
    started = ws / "src" / "started"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: sb.arun(
                policy, [PY, str(SCRIPTS / "daemon.py"), "src/started", mark],
                cwd=ws, timeout=3600, env=ENV,
            ))  # fmt: skip
            with anyio.fail_after(60):
                while not started.exists():
                    await anyio.sleep(0.02)
            assert running(mark)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert running(mark) == []  # the cancelled call waited until its namespace was gone
    assert session.kept_up(policy, bwrap()) is not None  # the sandbox stays up


def test_a_sandbox_per_command_where_no_kept_up_one_can_be_made(ws: Path, tmp_path: Path) -> None:
    assert session.kept_up(role(ws, None, temp_root=tmp_path), bwrap()) is None  # /tmp on disk
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: no server for you' >&2\nexit 1\n")
    broken.chmod(0o755)
    policy = role(ws, None)
    assert session.kept_up(policy, broken) is None
    assert session.refused() == "bwrap: no server for you"
    assert sh(ws, "cat README.md", policy)["stdout"] == "# readme\n"  # one of its own
    assert session._sessions == {}


def test_a_roles_sandbox_starts_with_its_first_shell_call_and_ends_with_it(ws: Path) -> None:
    from kit.pipeline import make_pipeline, shell_call
    from kit.sandbox import RULES

    from orkeon_run.calls import CallContext

    step = role(ws, None)
    pipeline = make_pipeline(ws, rules=RULES, environ=ENV, sandbox=step)
    mine = step.with_roots(("src",))
    assert session._sessions == {}
    assert shell_call(pipeline, "touch src/x", ("src",))["exit_code"] == 0
    kept = session._sessions[mine]
    ctx = CallContext(step=pipeline.step, role="b1/a", workspace=ws, batch="b1", roots=("src",))
    pipeline.end_role(ctx)
    assert mine not in session._sessions and kept.popen.poll() is not None


def test_the_audits_git_commands_share_one_sandbox(ws: Path) -> None:
    """docs/security.md, "The kept-up sandbox": the audit's git uses it too."""
    from orkeon_run.run.audit.gitcmd import AuditGit
    from orkeon_run.run.audit.snapshot import changed_paths, snapshot
    from orkeon_run.run.confine import find_git

    policy = sb.SandboxPolicy.for_git(Path("/"), run_dir=ws / ".orkeon/runs/r1")
    how = AuditGit(find_git(ws, os.environ.get("PATH")), policy)
    before = snapshot(ws, tools=how)
    (ws / "README.md").write_text("changed\n")
    assert changed_paths(ws, before, how) == ["README.md"]
    assert len(session._sessions) == 1  # every git command of both, in one sandbox


def test_commands_of_one_sandbox_may_run_at_the_same_time(ws: Path) -> None:
    """Each in its own namespaces: two at once, neither sees the other."""
    policy = role(ws, ["src"])
    started = ws / "src" / "first"
    look = f"{q(PY)} {q(SCRIPTS / 'traces.py')} look"
    seen: list[str] = []

    async def first() -> None:
        res = await sb.arun(
            policy, [PY, "-c", f"open({str(started)!r}, 'w'); import time; time.sleep(3600)"],
            cwd=ws, timeout=3600, env=ENV,
        )  # fmt: skip
        seen.append(f"first ended: {res.exit_code}")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            with anyio.fail_after(60):
                while not started.exists():
                    await anyio.sleep(0.02)
            res = await sb.arun(policy, shlex.split(look), cwd=ws, timeout=60, env=ENV)
            seen.append(res.stdout)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert json.loads(seen[0])["pids"] == [1, 2]  # the first command is not in sight
    assert len(session._sessions) == 1


def test_a_workspace_beside_a_mount_in_the_hosts_tmp(in_tmp: Path) -> None:
    """The host's own mounts under its /tmp (covered in the sandbox) are not among those
    each command's fresh /tmp holds again: with one beside the workspace, the command
    runs (a kept-up sandbox refused it once)."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False).returncode:
        pytest.skip("needs `unshare -rm` (a user namespace with its own mounts)")
    from orkeon_run.tools.sandbox import server_init as server

    assert server.INIT_FAILED == session.INIT_FAILED
    ws = make_ws(in_tmp)
    other = in_tmp / "other"
    other.mkdir()
    script = (
        "import os, sys; from pathlib import Path; from orkeon_run.tools import sandbox as sb;"
        "from orkeon_run.tools.sandbox import session;"
        f"ws = Path({str(ws)!r}); policy = sb.SandboxPolicy.for_role(ws, None, run_dir=None);"
        "r = sb.run(policy, ['cat', 'README.md'], cwd=ws, timeout=60, env={'PATH': os.defpath});"
        "print(r.stdout.strip(), session.refused())"
    )
    mount = f"mount -t tmpfs tmpfs {other}"
    got = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$0" -c "$1"', PY, script],
        capture_output=True, text=True, env={**ENV, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert got.stdout == "# readme None\n", got.stderr
