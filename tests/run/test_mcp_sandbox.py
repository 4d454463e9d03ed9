"""Stdio MCP servers confined by default (docs/tools.md, "How servers run"; docs/security.md,
"Who is trusted"), black box: `orkeon run dev-batches` through the runner, the
scripted model calling a real stdio server (tests/kit/fakes/mcp_server.py, built with the
SDK) as a hostile model would, on the real kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.mcp import FAKE, use_crew, worker_crew
from kit.process import orkeon
from kit.sandbox import LINUX_ONLY, require_sandbox
from kit.steps import call, calls, events, make_workspace, run_step, scripted

pytestmark = LINUX_ONLY

FILES = {"README.md": "# app\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}
PLAN = {
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": "a", "roots": ["src/a/"], "task": "t"},
                {"name": "b", "roots": ["src/b/"], "task": "t"},
            ],
        }
    ]
}


@pytest.fixture(scope="module", autouse=True)
def sandbox_works_here() -> None:
    require_sandbox()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
    ws = make_workspace(tmp_path, FILES)
    use_crew(ws, "dev-batches", worker_crew(["file_write", "mcp__fake__*"]))
    return ws


def writes(*paths: str) -> list[dict[str, Any]]:
    return [call("mcp__fake__write", path=p, text="planted\n") for p in paths]


def results(rd: Path, role: str) -> list[Any]:
    return [c["result"] for c in calls(rd, role) if c["tool"].startswith("mcp__")]


def test_a_stdio_server_runs_in_the_calling_roles_sandbox(
    ws: Path, tmp_path: Path, off_tmp: Path
) -> None:
    """Writes only under the calling role's roots (another role's, the workspace's top,
    .git and a folder outside are refused by the OS); one server process per role whose
    roots differ; each is told its role's roots (MCP roots/list); the result says "on"."""
    outside = off_tmp / "outside.txt"
    script = {
        "b1/a": [
            {
                "tool_calls": [
                    *writes(
                        "src/a/ok.txt", "README.md", "src/b/x.txt", ".git/config", str(outside)
                    ),
                    call("mcp__fake__roots"),
                ]
            },
            {"text": "done"},
        ],
        "b1/b": [{"tool_calls": [call("mcp__fake__roots")]}, {"text": "done"}],
    }
    doc = scripted(script, plan=PLAN, mcp_servers={"fake": FAKE})
    rd = tmp_path / "run"
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["mcp_sandbox"] == {"fake": "on"}

    ok, top, other, git, away, roots_a = results(rd, "b1/a")
    assert ok == "wrote" and (ws / "src/a/ok.txt").read_text() == "planted\n"
    for refused in (top, other, git, away):
        assert "Read-only file system" in refused or "OSError" in refused, refused
    assert (ws / "README.md").read_text() == "# app\n"
    assert not (ws / "src/b/x.txt").exists() and not outside.exists()
    assert "planted" not in (ws / ".git/config").read_text()
    (roots_b,) = results(rd, "b1/b")
    assert roots_a.startswith("["), roots_a
    assert json.loads(roots_a) == [{"uri": (ws / "src/a").as_uri(), "name": "src/a"}]
    assert json.loads(roots_b) == [{"uri": (ws / "src/b").as_uri(), "name": "src/b"}]

    started = [e for e in events(rd, "mcp.server") if e["state"] == "started"]
    assert {tuple(e["roots"] or ()) for e in started} == {(), ("src/a/",), ("src/b/",)}
    assert all(e["sandbox"] == "on" for e in started)
    assert len({e["pid"] for e in started}) == 3


def test_sandbox_off_runs_the_server_unconfined_and_the_result_says_so(
    ws: Path, tmp_path: Path, off_tmp: Path
) -> None:
    """`"sandbox": "off"` keeps the behaviour of before: one process for every role, the
    operator's rights (a write outside the workspace goes through), recorded in the result."""
    outside = off_tmp / "outside.txt"
    script = {
        "b1/a": [{"tool_calls": writes(str(outside))}, {"text": "done"}],
        "b1/b": [{"text": "done"}],
    }
    doc = scripted(script, plan=PLAN, mcp_servers={"fake": {**FAKE, "sandbox": "off"}})
    rd = tmp_path / "run"
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["mcp_sandbox"] == {"fake": "off"}
    assert results(rd, "b1/a") == ["wrote"] and outside.read_text() == "planted\n"
    started = [e for e in events(rd, "mcp.server") if e["state"] == "started"]
    assert [(e["sandbox"], e["roots"]) for e in started] == [("off", None)]


def test_a_sandbox_other_than_auto_or_off_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    """docs/inputs.md, "mcp_servers": `sandbox` is "auto" or "off"; anything else is an
    input error naming the field, nothing run."""

    doc = {"model": "scripted:x", "mcp_servers": {"fake": {**FAKE, "sandbox": "on"}}}
    done = orkeon("validate", "--inputs", json.dumps(doc), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "mcp_servers.fake.sandbox" in x]
    assert 'must be "auto"' in line and "Traceback" not in done.stderr
