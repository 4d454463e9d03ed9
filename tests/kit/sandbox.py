"""Shared by the sandbox tests: a workspace with what the sandbox must guard, a role's
policy, and a shell call through the real shell tool."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from orkeon_run.calls import CheckedCall
from orkeon_run.pipeline import check_call
from orkeon_run.policy.programs import ShellRules
from orkeon_run.tools import sandbox as sb
from orkeon_run.tools.sandbox import SandboxPolicy, session
from orkeon_run.tools.sandbox.bwrap import unseen
from orkeon_run.tools.shell import shell

from . import DATA, ROOT

LINUX_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the shell sandbox is built on Linux namespaces"
)
SCRIPTS = DATA / "sandbox"  # programs run inside the sandbox
PY = sys.executable
RULES = ShellRules(extra_allowed_commands=(PY,))
ENV = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"}


def q(path: str | Path) -> str:
    """A path as one word of a shell command: the checkout's path may hold a space."""
    return shlex.quote(os.fspath(path))


def require_sandbox() -> None:
    """Fail (never skip) where no sandbox can be made: CI must run these tests. The tests
    run this interpreter and scripts of this checkout inside the sandbox: the sandbox
    shows the Python environment orkeon runs from (its import path, this checkout's among
    them) wherever it lies, the host's /tmp included (docs/security.md, "What the sandbox
    shows"); should it not, this says so once instead of each test failing its own way."""
    avail = sb.probe()
    assert avail.ok, f"no shell sandbox on this machine: {avail.reason}; fix: {avail.fix}"
    policy = SandboxPolicy.for_role(Path("/nonexistent-workspace"), None, run_dir=None)
    for path in (os.path.realpath(PY), os.fspath(ROOT)):
        assert not unseen(policy, path), (
            f"{path} is in a folder the shell sandbox hides, and the policy does not show "
            "it as part of the Python environment orkeon runs from"
        )


def make_ws(tmp_path: Path) -> Path:
    """A git repository with src/ (a role's root), docs/, a nested untracked repository
    under src/, orkeon's folder with settings and a run directory (`.orkeon/runs/r1`)."""
    ws = tmp_path / "ws"
    for d in ("src/vendor/lib", "docs", ".orkeon/hooks", ".orkeon/runs/r1"):
        (ws / d).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "init", "-q", str(ws / "src/vendor/lib")], check=True)
    (ws / "README.md").write_text("# readme\n")
    (ws / ".orkeon/settings.json").write_text("{}\n")
    (ws / ".orkeon/runs/r1/state.json").write_text('{"secret": "run-state"}\n')
    return ws.resolve()


def role(ws: Path, roots: list[str] | None, config: Path | None = None, **kw: Any) -> SandboxPolicy:
    return SandboxPolicy.for_role(
        ws, roots, run_dir=ws / ".orkeon/runs/r1", config_dir=config, **kw
    )


def words(command: str) -> dict[str, Any]:
    """What the pipeline's check makes of `command` for the shell tool (`shell(**words(c),
    ...)`): its words, or why it cannot be split."""
    call = check_call(Path("/"), "shell", {"command": command})
    assert isinstance(call, CheckedCall), call
    return {"words": call.words or (), "unsplit": call.unsplit}


def sh(
    ws: Path, command: str, policy: SandboxPolicy, timeout: float = 30, rules: ShellRules = RULES
) -> Any:
    """The shell tool's answer to `command` in `ws` under `policy`."""
    return anyio.run(
        lambda: shell(
            **words(command),
            workspace=ws,
            rules=rules,
            timeout=timeout,
            environ=ENV,
            sandbox=policy,
        )
    )


# The two ways a policy's commands run (docs/security.md, "The kept-up sandbox"): each in
# the policy's kept-up sandbox, or each in a sandbox of its own (the fallback).
MODES = ("kept-up", "per-call")


@pytest.fixture(params=MODES)
def sandbox_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with the policy's commands in its kept-up sandbox, then again with a
    sandbox per command; the kept-up run fails where no kept-up sandbox can be made (it
    would silently have tested the fallback twice)."""
    monkeypatch.setattr(session, "ENABLED", request.param == "kept-up")
    try:
        yield request.param
        if request.param == "kept-up":
            assert session.refused() is None, f"no kept-up sandbox here: {session.refused()}"
    finally:
        session.close_all()
