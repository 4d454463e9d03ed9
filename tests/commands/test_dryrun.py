"""`orkeon run STEP --dry-run` (docs/inputs.md, "A dry run"): "what would run: steps,
roles, tools, hooks with their resolved commands, MCP servers, the sandbox and network
policy, and the price per million tokens with an estimate range for the budget given; no
model called, nothing written; exit 0, or 2 with what is wrong"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.cli import clean_environment, orkeon
from kit.fakes.anthropic_api import AnthropicFake
from kit.steps import make_workspace

KEY = "sk-ant-test-dry-run-0123456789"


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return make_workspace(tmp_path, {"README.md": "# app\n", "src/app.py": "x = 1\n"})


def test_a_pipeline_dry_run_says_what_would_run_and_calls_and_writes_nothing(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, config_before = tree(ws), tree(tmp_path / "config")
    with AnthropicFake(api_key=KEY, models=("claude-sonnet-4-5",)) as server:
        doc = {
            "model": {"provider": "anthropic", "model": "claude-sonnet-4-5", "base_url": server.url,
                      "price": {"input_per_mtok": 3, "output_per_mtok": 15}},
            "request": "add a flag",
            "budget": {"usd": 2, "tokens": 100_000},
            "hooks": [{"event": "pre-tool", "command": "python3 guard.py {tool} {path}"}],
            "shell": {"allow_interpreters": True, "network": False},
        }  # fmt: skip
        argv = ("run", "pipeline", "--dry-run", "--workspace", str(ws), "--inputs", json.dumps(doc))
        code, out, err = orkeon(capsys, *argv)
        assert code == 0, err
        assert server.requests == []  # no model called
    assert tree(ws) == before and tree(tmp_path / "config") == config_before  # nothing written
    lines = out.splitlines()
    assert lines[0] == f"dry run of pipeline in {ws}: nothing runs, nothing is written"
    assert (
        "step dev-spec" in lines and "  role analyst: file_read, list_files, search_files" in lines
    )
    assert "step dev-batches (the roles are the plan's, written by dev-plan)" in lines
    assert "hook #1 pre-tool: python3 guard.py {tool} {path}" in lines
    assert any(
        line.startswith("shell sandbox: ") and line.endswith("network: off") for line in lines
    )
    assert (
        "model: anthropic claude-sonnet-4-5, $3.00 in / $15.00 out per million tokens "
        "(cache read $3.00, write $3.00)" in lines
    )
    assert "estimate: the token budget costs $0.3000 to $1.50" in lines
    assert (
        "estimate: the cost budget buys 133,333 (all output) to 666,666 (all input) tokens" in lines
    )


def test_a_batch_dry_run_lists_the_plans_roles_as_json(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = {"title": "t", "batches": [{"name": "b1", "roles": [
        {"name": "api", "roots": ["src/api/"], "task": "x"},
        {"name": "docs", "roots": ["docs/"], "task": "y"}]}]}  # fmt: skip
    doc = {"model": {"provider": "scripted", "script": {}}, "plan": plan,
           "hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "./check.sh"}]}]}}  # fmt: skip
    code, out, err = orkeon(
        capsys, "run", "dev-batches", "--dry-run", "--output", "json", "--workspace", str(ws),
        "--inputs", json.dumps(doc), "--max-turns", "12",
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(out)
    (step,) = got["steps"]
    assert [(r["role"], r["roots"]) for r in step["roles"]] == [
        ("b1/api", ["src/api/"]),
        ("b1/docs", ["docs/"]),
    ]
    assert "shell" in step["roles"][0]["tools"]
    assert got["hooks"] == [{"contract": "settings", "event": "PreToolUse", "matcher": "Write",
                             "command": "./check.sh", "timeout": None}]  # fmt: skip
    assert got["budget"]["turns"] == 12  # the flags apply as they would to the run
    assert got["model"]["price"]["input_per_mtok"] == 0.0
    assert not (ws / ".orkeon").exists()


def test_a_dry_run_with_bad_inputs_is_exit_2_as_the_run_would_be(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = orkeon(capsys, "run", "dev-spec", "--dry-run", "--workspace", str(ws),
                            "--inputs", '{"modl": {}}')  # fmt: skip
    assert (code, out) == (2, "")
    assert err.startswith("orkeon: modl: unknown key")
    code, _, err = orkeon(capsys, "run", "dev-spec", "--dry-run", "--resume", str(ws))
    assert (
        code == 2
        and err == "orkeon: --dry-run: not with --resume or --run-dir (nothing is written)\n"
    )
    assert sorted(os.listdir(ws)) == [".git", "README.md", "src"]
