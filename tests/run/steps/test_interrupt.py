"""SIGINT in the middle of a batch, through the real `orkeon` command: exit 130, a valid
result.json, a state.json that records only what finished, and a resume that finishes."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kit import ROOT, spawn
from kit.hooks import ans, payloads
from kit.steps import environ, events, make_workspace, read_jsonl, scripted, shell, state, write

FILES = {"README.md": "# app\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}


def wait_for_call(run_dir: Path, role: str, proc: subprocess.Popen[str]) -> None:
    """Awaits `role`'s first tool.call in the run's events; fails at once if the run ends
    first. No deadline of its own: the test's time-out is the hang guard."""
    path = run_dir / "events.jsonl"
    while not (
        path.is_file()
        and any(e.get("type") == "tool.call" and e.get("role") == role for e in read_jsonl(path))
    ):
        assert proc.poll() is None, f"the run ended ({proc.returncode}) before {role} made a call"
        time.sleep(0.02)


def orkeon_env(tmp: Path) -> dict[str, str]:
    env = environ(tmp)
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_then_signal(
    doc: dict[str, Any], ws: Path, rd: Path, role: str, sig: int, *, cwd: Path, env: dict[str, str]
) -> dict[str, Any]:
    """Start `orkeon run dev-batches`, send `sig` once `role` has made a call, and check
    what docs/output.md promises: exit 130 and the result written. The result."""
    inputs = cwd / "inputs.json"
    inputs.write_text(json.dumps(doc))
    args = ["run", "dev-batches", "--inputs", f"@{inputs}", "--workspace", str(ws)]
    proc = spawn(*args, "--run-dir", str(rd), "--output", "json", cwd=cwd, env=env)
    try:
        wait_for_call(rd, role, proc)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result == json.loads((rd / "result.json").read_text())
    assert (result["status"], result["exit_code"]) == ("interrupted", 130)
    assert result["error"] == {"kind": "interrupted", "message": "interrupted by a signal"}
    # Ctrl-C prints the command that goes on where the run stopped.
    resume = shlex.join(["orkeon", "run", "dev-batches", "--resume", str(rd)])
    assert f"orkeon: interrupted; to go on: {resume}" in err.splitlines(), err
    return result


@pytest.mark.slow
def test_sigint_mid_batch_then_resume(tmp_path: Path) -> None:
    """docs/output.md: exit 130 "interrupted (SIGINT/SIGTERM); what finished is kept"."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    slow = [{"tool_calls": [shell("sleep 0.1")]} for _ in range(12)]
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "a")]}, {"text": "a done"}],
        "b2/b": [{"tool_calls": [write("src/b/y.py", "b")]}, *slow, {"text": "b done"}],
    }
    plan = {
        "batches": [
            {"name": "b1", "roles": [{"name": "a", "roots": ["src/a/"], "task": "a"}]},
            {"name": "b2", "roles": [{"name": "b", "roots": ["src/b/"], "task": "b"}]},
        ]
    }
    env = orkeon_env(tmp_path)
    result = run_then_signal(
        scripted(script, plan=plan), ws, rd, "b2/b", signal.SIGINT, cwd=tmp_path, env=env
    )
    saved = state(rd)
    assert saved["batches_passed"] == ["b1"]
    assert saved["current"]["batch"] == "b2"
    assert saved["current"]["roles"] == {}  # b2/b did not finish
    b_calls = [e for e in events(rd, "tool.call") if e["role"] == "b2/b"]
    assert 1 <= len(b_calls) < 13

    args = ["run", "dev-batches", "--resume", str(rd), "--workspace", str(ws), "--output", "json"]
    proc = spawn(*args, cwd=tmp_path, env=env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "succeeded"
    assert [(r["name"], r["status"]) for r in result["roles"]] == [
        ("b1/a", "succeeded"),
        ("b2/b", "succeeded"),
    ]
    a_calls = [e for e in events(rd, "tool.call") if e["role"] == "b1/a"]
    assert len(a_calls) == 1
    b_calls = [e for e in events(rd, "tool.call") if e["role"] == "b2/b"]
    # The resumed role went on where it stopped: 13 calls, the one cut by the signal
    # (if any) has no event and is not run again.
    assert 12 <= len(b_calls) <= 13
    assert (ws / "src/b/y.py").read_text() == "b"
    assert state(rd)["batches_passed"] == ["b1", "b2"]


def test_sigterm_mid_batch_keeps_the_roles_that_ran(tmp_path: Path) -> None:
    """docs/output.md: SIGTERM too ends the run with exit 130, the result written, and
    the role that was running listed as interrupted with what it did."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    slow = [{"tool_calls": [shell("sleep 0.1")]} for _ in range(30)]
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/a/"], "task": "a"}]}]}
    doc = scripted({"b1/a": slow}, plan=plan)
    result = run_then_signal(
        doc, ws, rd, "b1/a", signal.SIGTERM, cwd=tmp_path, env=orkeon_env(tmp_path)
    )
    (role,) = result["roles"]
    assert role["name"] == "b1/a" and role["status"] == "interrupted"
    assert 1 <= role["calls"] < 30
    assert read_jsonl(rd / "events.jsonl")[-1]["type"] == "result"


def test_session_end_says_how_each_role_ended(tmp_path: Path) -> None:
    """docs/hooks.md: SessionEnd's `reason` is `other` when a role ended, as at the end of a
    headless Claude Code session, and `prompt_input_exit` when the run was quit (SIGINT or
    SIGTERM) before it ended. A real hook records its stdin."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    rec = tmp_path / "session-end.jsonl"
    slow = [{"tool_calls": [shell("sleep 0.1")]} for _ in range(30)]
    script = {"b1/a": [{"text": "a done"}], "b2/b": slow}
    plan = {
        "batches": [
            {"name": "b1", "roles": [{"name": "a", "roots": ["src/a/"], "task": "a"}]},
            {"name": "b2", "roles": [{"name": "b", "roots": ["src/b/"], "task": "b"}]},
        ]
    }
    hooks = {"SessionEnd": [{"hooks": [{"type": "command", "command": ans(record=rec)}]}]}
    doc = scripted(script, plan=plan, hooks=hooks)
    run_then_signal(doc, ws, rd, "b2/b", signal.SIGTERM, cwd=tmp_path, env=orkeon_env(tmp_path))
    ended = [(p["hook_event_name"], p["reason"]) for p in payloads(rec)]
    assert ended == [("SessionEnd", "other"), ("SessionEnd", "prompt_input_exit")]
