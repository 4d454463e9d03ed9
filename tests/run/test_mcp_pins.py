"""Stdio MCP servers re-checked against the run's pins when they start (docs/security.md,
"Guards"; docs/tools.md, "How servers run"), through `orkeon run` with the scripted model:
a confined server's process for a role starts at that role's first call, mid-run. When a
file the server's command names (its script inside the workspace), or the workspace's
`.mcp.json` it was configured in, changed since the run started (here an operator's
pre-tool hook rewrites it, just before the call), that process is not started: the call is
refused with a text naming the file, the `mcp.server` event says why, and the result's
`pinned_changed` names the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import FAKES
from kit.cli import clean_environment, run_dir, run_json
from kit.mcp import use_crew, worker_crew
from kit.sandbox import LINUX_ONLY, require_sandbox
from kit.steps import call, calls, events, make_workspace, scripted

pytestmark = LINUX_ONLY
PY = sys.executable
PLAN = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}
SERVER = {"command": [PY, "tools/srv.py", "stdio"]}
# The pre-tool hook: rewrites FILE (argv[1]) with a line of the model's added, once.
REWRITE = """import pathlib, sys
p = pathlib.Path(sys.argv[1])
text = p.read_text()
if "planted" not in text:
    p.write_text(text + "\\n# planted by the model's work\\n")
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require_sandbox()
    clean_environment(tmp_path, monkeypatch)
    server = (FAKES / "mcp_server.py").read_text()
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/x.py": "", "tools/srv.py": server})
    use_crew(ws, "dev-batches", worker_crew(["mcp__fake__*"]))
    (tmp_path / "rewrite.py").write_text(REWRITE)
    return ws


def run(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: Path, **more: Any
) -> tuple[int, dict[str, Any]]:
    hook = {"event": "pre-tool", "command": f"{PY} {tmp_path / 'rewrite.py'} {target}"}
    script = {"b1/a": [{"tool_calls": [call("mcp__fake__echo", text="hi")]}, {"text": "done"}]}
    shell = {"extra_allowed_commands": [PY]}  # the hook's program, given by its path
    doc = scripted(script, plan=PLAN, hooks=[hook], shell=shell, **more)
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    return code, result


def test_a_server_whose_script_changed_is_not_started_and_its_call_refused_naming_it(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = run(ws, tmp_path, capsys, ws / "tools/srv.py", mcp_servers={"fake": SERVER})
    rd = run_dir(ws, result)
    (echo,) = calls(rd, "b1/a")
    assert echo["result"].startswith(
        "[refused: MCP server fake is not running: tools/srv.py changed since the run started"
    ), echo
    started = [e for e in events(rd, "mcp.server") if e["state"] == "started"]
    failed = [e for e in events(rd, "mcp.server") if e["state"] == "failed"]
    assert [e["roots"] for e in started] == [None]  # the hub's, before any role
    (fail,) = failed
    assert fail["roots"] == ["src/"] and "tools/srv.py changed" in fail["reason"], fail
    assert result["pinned_changed"] == ["tools/srv.py"]
    assert code == 1 and result["audits"][0]["passed"] is False  # a guard changed


def test_a_server_whose_mcp_json_changed_is_not_started(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server comes from the workspace's trusted `.mcp.json` (its script outside the
    workspace); the hook rewrites `.mcp.json`: the role's process is not started."""
    from orkeon_run.config.trust import record_mcp_json_trust

    fake = {"command": PY, "args": [str(FAKES / "mcp_server.py"), "stdio"]}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": fake}}))
    record_mcp_json_trust(ws)
    code, result = run(ws, tmp_path, capsys, ws / ".mcp.json")
    (echo,) = calls(run_dir(ws, result), "b1/a")
    assert echo["result"].startswith(
        "[refused: MCP server fake is not running: .mcp.json changed since the run started"
    ), echo
    assert result["pinned_changed"] == [".mcp.json"] and code == 1


def test_an_unchanged_pinned_script_starts_and_answers(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same run whose hook rewrites a file outside the workspace."""
    (tmp_path / "notes.txt").write_text("x\n")
    code, result = run(ws, tmp_path, capsys, tmp_path / "notes.txt", mcp_servers={"fake": SERVER})
    (echo,) = calls(run_dir(ws, result), "b1/a")
    assert echo["result"] == "hi", echo
    assert (code, result["pinned_changed"]) == (0, [])
