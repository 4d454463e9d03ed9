"""Git-shaped MCP servers in a batch (docs/tools.md, "Git-shaped servers";
docs/security.md, "The audit"), through `orkeon run` with the scripted model playing the
hostile one: the batch rule set's git allow-list covers their tools too, so a tool of
`mcp-server-git` that commits, checks out or makes a branch is refused unless the
operator's gate allows it, its reading tools run, and a server flagged `"git": true` gets
every tool refused. What an allowed tool did to the history fails the audit, naming the
ref."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.cli import clean_environment, run_dir, run_json
from kit.mcp import FAKE, commits, git_server, use_crew
from kit.steps import call, calls, make_workspace, scripted

TOOLS = ["file_read", "file_write", "shell", "mcp__git__*", "mcp__fake__*"]
CREW = f"""step = "dev-batches"
[[roles]]
name = "worker"
prompt = "prompts/worker.md"
tools = {TOOLS!r}
[[rule_sets]]
name = "batch"
program_checks = ["git-read-only"]
""".replace("'", '"')


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/a.py": "a = 1\n"})
    use_crew(ws, "dev-batches", CREW)
    return ws


def batch(calls: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}
    script = {"b1/a": [{"tool_calls": calls}, {"text": "done"}]}
    return scripted(script, plan=plan, **more)


def test_the_writing_tools_of_a_git_shaped_server_are_refused_in_a_batch(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/tools.md, "Git-shaped servers": in a batch, mcp-server-git's git_commit,
    git_checkout and git_create_branch are refused (`refused_by: "rules"`), its git_status
    runs; every tool of a server with `"git": true` is refused."""
    repo = str(ws)
    (ws / "src/a.py").write_text("a = 2\n")
    git(ws, "add", "src/a.py")
    attempts = [
        call("mcp__git__git_status", repo_path=repo),
        call("mcp__git__git_commit", repo_path=repo, message="by the model"),
        call("mcp__git__git_create_branch", repo_path=repo, branch_name="side"),
        call("mcp__git__git_checkout", repo_path=repo, branch_name="side"),
        call("mcp__fake__echo", text="hello"),
    ]
    servers = {"git": git_server(ws), "fake": {**FAKE, "git": True}}
    code, result, err = run_json(
        capsys, "dev-batches", ws, doc=batch(attempts, mcp_servers=servers)
    )
    got = calls(run_dir(ws, result), "b1/a")
    assert [(c["tool"], c["outcome"], c["refused_by"]) for c in got] == [
        ("mcp__git__git_status", "ran", None),
        ("mcp__git__git_commit", "refused", "rules"),
        ("mcp__git__git_create_branch", "refused", "rules"),
        ("mcp__git__git_checkout", "refused", "rules"),
        ("mcp__fake__echo", "refused", "rules"),
    ], err
    assert got[1]["result"] == "[refused by rule set batch: mcp__git__git_commit]"
    assert commits(ws) == 1
    assert git(ws, "branch", "--list", "side") == ""
    assert (code, result["audits"][0]["passed"]) == (0, True), result["audits"]


def test_a_branch_an_allowed_mcp_tool_made_fails_the_audit_naming_the_ref(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "The audit": the operator's gate may allow a git-shaped tool; a
    batch that then made a branch fails its audit naming the ref, whatever made it. The
    server runs unconfined here (`"sandbox": "off"`): confined, its git could not write
    `.git/` at all (tests/run/test_mcp_sandbox.py)."""
    repo = str(ws)
    attempts = [call("mcp__git__git_create_branch", repo_path=repo, branch_name="side")]
    gate = {"allow": ["file_read", "file_write", "mcp__git__git_create_branch"]}
    server = {**git_server(ws), "sandbox": "off"}
    doc = batch(attempts, mcp_servers={"git": server, "fake": FAKE}, gate=gate)
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    (made,) = calls(run_dir(ws, result), "b1/a")
    assert made["outcome"] == "ran", made
    (rec,) = result["audits"]
    assert (code, rec["passed"], rec["outside_roots"]) == (1, False, ["refs/heads/side"])
