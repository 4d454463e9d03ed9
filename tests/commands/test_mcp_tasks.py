"""A server listing a tool that runs only as an MCP Task, beside a plain one, through the
`orkeon` command in a child process: `orkeon run` never offers it to the model (the
scripted model's call of it is refused as an unknown tool, the plain one runs) and says so
on stderr; `orkeon validate` names it as left out. The server is
tests/kit/fakes/mcp_tasks_server.py, a stdio server of the 2025-11-25 protocol."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from kit import FAKES, ROOT
from kit.mcp import spec_crew, use_crew
from kit.process import orkeon
from kit.steps import call, calls, environ, make_workspace, scripted, write

TASKS = {"command": [sys.executable, str(FAKES / "mcp_tasks_server.py")]}
LEFT_OUT = (
    "warning: MCP tool mcp__tasks__research is left out: it requires MCP Tasks "
    "(execution.taskSupport: required), which orkeon does not support"
)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
    return make_workspace(tmp_path, {"README.md": "# app\n"})


def test_a_tool_that_requires_tasks_is_not_offered_and_validate_names_it(
    ws: Path, tmp_path: Path
) -> None:
    """docs/tools.md: 'a tool that runs only as an MCP Task (`execution.taskSupport:
    "required"` ...) [is left out with a warning]: orkeon does not run MCP Tasks, and every
    plain call of such a tool fails. `orkeon validate` lists each tool left out, with why.'"""
    use_crew(ws, "dev-spec", spec_crew(["mcp__tasks__*"], allow=["mcp__tasks__*"]))
    script = {
        "analyst": [
            {
                "tool_calls": [
                    call("mcp__tasks__research", topic="cells"),
                    call("mcp__tasks__echo", text="plain"),
                ]
            },
            {"text": "report"},
        ],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "# Spec\n")]}, {"text": "done"}],
    }
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(scripted(script, request="r", mcp_servers={"tasks": TASKS})))
    rd = tmp_path / "run"
    env = environ(tmp_path, PYTHONPATH=str(ROOT))
    done = orkeon(
        "run", "dev-spec", "--inputs", f"@{inputs}", "--workspace", str(ws),
        "--run-dir", str(rd), "--output", "json",
        cwd=tmp_path, env=env, timeout=None,  # the suite's time-out is the hang guard
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    assert f"orkeon: {LEFT_OUT}" in done.stderr.splitlines()
    research, echo = calls(rd, "analyst")
    # Not offered: for the run it does not exist, so nothing reaches the server.
    assert (research["outcome"], research["refused_by"]) == ("refused", None)
    assert research["result"] == "error: there is no tool named 'mcp__tasks__research'"
    assert (echo["outcome"], echo["result"]) == ("ran", "plain")

    done = orkeon(
        "validate", "--inputs", f"@{inputs}", "--workspace", str(ws), "--step", "dev-spec",
        cwd=tmp_path, env=env, timeout=None,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    command = shlex.join(TASKS["command"])
    server, valid = done.stdout.splitlines()
    assert server == f"mcp server tasks (stdio: {command}): 1 tool: mcp__tasks__echo"
    assert valid == "inputs are valid"
    assert LEFT_OUT in done.stderr.splitlines()
