"""Trusted files pinned by content (docs/security.md, "Guards"; docs/hooks.md, "Pinned
files"), through `orkeon run` with the scripted model playing the hostile one: a role
(the sandbox off, roots `.`) rewrites the script of an operator's hook; the hook is then
not run (a pre-tool hook refuses the call, a post-tool hook adds its line), the audit
fails naming the file, and the result says it changed. A pinned file that cannot be read
at start stops the run before anything runs (exit 2, naming the file)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from kit.cli import clean_environment, orkeon, pipeline_doc, pipeline_script, run_dir, run_json
from kit.steps import calls, make_workspace, scripted, shell, write

PY = sys.executable
PY_WORD = shlex.quote(PY)  # one word of a command: the checkout's path may hold a space


def evil(marker: Path) -> str:
    """What the model's copy of a hook script does: leave a marker outside the workspace."""
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(
        tmp_path,
        {
            "README.md": "# app\n",
            "src/evil.py": evil(tmp_path / "pwned"),
            ".orkeon/hooks/guard.py": "import sys\nsys.exit(0)\n",
            ".claude/hooks/check.py": "import sys\nsys.exit(0)\n",
        },
    )


def batch(calls: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["."], "task": "t"}]}]}
    script = {"b1/a": [{"tool_calls": calls}, {"text": "done"}]}
    return scripted(script, plan=plan, **{"shell": {"sandbox": "off"}, **more})


def test_a_native_hook_whose_script_changed_refuses_the_call(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/hooks.md, "Pinned files": a hook whose file changed since the run started is
    not run: a pre-tool hook refuses the call,
    `[pre-tool hook #N (CMD) could not run: FILE changed since the run started]`, a
    post-tool hook adds that line after the result."""
    command = f"{PY_WORD} .orkeon/hooks/guard.py {{tool}} {{path}}"
    hooks = [{"event": "pre-tool", "command": command}, {"event": "post-tool", "command": command}]
    doc = batch(
        [shell("cp src/evil.py .orkeon/hooks/guard.py"), write("src/x.py", "x\n")],
        hooks=hooks,
        shell={"sandbox": "off", "extra_allowed_commands": [PY]},
    )
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    assert not (tmp_path / "pwned").exists()  # the model's script never ran
    cp, second = calls(run_dir(ws, result), "b1/a")
    assert cp["outcome"] == "ran"  # its pre-tool hook ran the script as it was
    assert cp["result"].endswith(  # its post-tool hook did not run the model's copy
        f"[post-tool hook #2 ({PY_WORD} .orkeon/hooks/guard.py shell -) could not run: "
        ".orkeon/hooks/guard.py changed since the run started]"
    )
    assert (second["outcome"], second["refused_by"]) == ("refused", "hook")
    assert second["result"] == (
        f"[pre-tool hook #1 ({PY_WORD} .orkeon/hooks/guard.py file_write src/x.py) could not run: "
        ".orkeon/hooks/guard.py changed since the run started]"
    )
    assert not (ws / "src/x.py").exists()
    (rec,) = result["audits"]
    assert (code, rec["passed"], rec["outside_roots"]) == (1, False, [".orkeon/hooks/guard.py"])
    assert result["pinned_changed"] == [".orkeon/hooks/guard.py"]


CHECK = f'{PY_WORD} "$CLAUDE_PROJECT_DIR"/.claude/hooks/check.py'


def settings(event: str) -> dict[str, Any]:
    return {event: [{"hooks": [{"type": "command", "command": CHECK}]}]}


def test_a_settings_shape_pre_tool_use_hook_whose_script_changed_refuses_the_call(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/hooks.md, "Pinned files": laid out as Claude Code's hooks are
    (`$CLAUDE_PROJECT_DIR/.claude/hooks/x.py`), a changed script is never run; the
    PreToolUse hook refuses the call (fail closed)."""
    doc = batch(
        [shell("cp src/evil.py .claude/hooks/check.py"), shell("ls")],
        hooks=settings("PreToolUse"),
    )
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    assert not (tmp_path / "pwned").exists()
    _, second = calls(run_dir(ws, result), "b1/a")
    assert (second["outcome"], second["refused_by"]) == ("refused", "hook")
    assert second["result"] == (
        f"[PreToolUse hook ({CHECK}) could not run: "
        ".claude/hooks/check.py changed since the run started]"
    )
    assert result["audits"][0]["outside_roots"] == [".claude/hooks/check.py"]
    assert (code, result["pinned_changed"]) == (1, [".claude/hooks/check.py"])


def test_a_post_tool_use_hook_whose_script_changed_adds_its_failure_line(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/hooks.md, "Pinned files": a post-tool hook whose file changed is not run and
    adds its failure line; the call itself ran."""
    doc = batch(
        [shell("cp src/evil.py .claude/hooks/check.py"), write("src/y.py", "y\n")],
        hooks=settings("PostToolUse"),
    )
    _, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    assert not (tmp_path / "pwned").exists()
    _, second = calls(run_dir(ws, result), "b1/a")
    assert second["outcome"] == "ran"
    assert (
        f"[PostToolUse hook ({CHECK}) could not run: "
        ".claude/hooks/check.py changed since the run started]"
    ) in second["result"]
    assert (ws / "src/y.py").read_text() == "y\n"


def test_a_pinned_file_that_cannot_be_read_stops_the_run(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "Guards" (bad input): a file a trusted command names that cannot
    be read at start: exit 2, one line naming the file, nothing run."""
    os.symlink("loop.py", ws / ".orkeon/hooks/loop.py")  # a loop: no one can read it
    doc = batch([write("src/x.py", "x\n")], hooks=settings("PreToolUse"))
    doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = f"{PY_WORD} .orkeon/hooks/loop.py"
    code, out, err = orkeon(
        capsys, "run", "dev-batches", "--workspace", str(ws), "--inputs", json.dumps(doc)
    )
    assert (code, out) == (2, "")
    (line,) = [x for x in err.splitlines() if ".orkeon/hooks/loop.py" in x]
    assert "cannot be read" in line and "Traceback" not in err
    assert not (ws / "src/x.py").exists()
    assert not (ws / ".orkeon/runs").exists()


def test_validate_warns_of_a_hook_program_found_inside_the_workspace(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md, "Guards": a hook that runs a program resolved from the workspace
    (`.venv/bin`, `node_modules/.bin`) is named by `orkeon validate` with a warning."""
    tool = ws / "node_modules/.bin/lint-hook"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    doc = scripted({}, hooks={"PostToolUse": [{"hooks": [{"type": "command",
                                                          "command": "lint-hook --fix"}]}]})  # fmt: skip
    code, _, err = orkeon(capsys, "validate", "--workspace", str(ws), "--inputs", json.dumps(doc))
    assert code == 0, err
    assert (
        "warning: hooks: lint-hook is found on PATH inside the workspace "
        "(node_modules/.bin/lint-hook)"
    ) in err


def test_a_pipeline_starts_no_step_after_a_pinned_file_changed(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "Guards": a pinned file changed mid-run is never run. In a
    pipeline the batch role's change fails its audit, and the repair that would follow
    (a step of its own, which pins at its start) does not start: its hook would run the
    model's script."""
    script = pipeline_script()
    script["b1/api"] = [{"tool_calls": [shell("cp src/evil.py .claude/hooks/check.py")]}]
    script["tasks-repair"] = [{"tool_calls": [write("src/x.py", "x\n")]}, {"text": "done"}]
    doc = {
        **pipeline_doc(),
        "model": {"provider": "scripted", "script": script},
        "shell": {"sandbox": "off"},
        "hooks": settings("PostToolUse"),
        "repair": {"attempts": 1},
    }
    code, result, _ = run_json(capsys, "pipeline", ws, doc=doc)
    assert not (tmp_path / "pwned").exists()
    assert (code, result["status"]) == (1, "error")
    assert result["error"]["message"] == (
        "tasks-repair-1 could not start: .claude/hooks/check.py changed since the run "
        "started (pinned files)"
    )
    assert result["pinned_changed"] == [".claude/hooks/check.py"]
