"""`orkeon hooks list | check | trust` (docs/output.md, docs/hooks.md), through typer's test
runner and through the entry point that maps errors to exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orkeon_run.__main__ import main
from orkeon_run.cli import app

NATIVE = {
    "hooks": [
        {"event": "pre-tool", "command": "true {tool} {path}"},
        {"event": "stop", "command": "true"},
        {"event": "post-tool", "command": "false {event}"},
    ]
}
PROJECT = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo hi"}]}]
    }
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    config = tmp_path / "config"
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(config))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
    return {"ORKEON_CONFIG_DIR": str(config)}


def test_list_numbers_native_hooks_across_events(tmp_path, env):
    result = CliRunner().invoke(
        app,
        ["hooks", "list", "--inputs", json.dumps(NATIVE), "--workspace", str(tmp_path)],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "#1 pre-tool true {tool} {path}",
        "#2 stop true",
        "#3 post-tool false {event}",
    ]


def test_check_exits_1_when_a_hook_fails_and_shows_what_the_model_reads(tmp_path, env, capsys):
    (tmp_path / "README.md").write_text("hello\n")
    code = main(["hooks", "check", "--inputs", json.dumps(NATIVE), "--workspace", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "#1 pre-tool true file_read README.md -> exit 0 (" in out
    assert "#3 post-tool false post-tool -> exit 1 (" in out
    assert "[post-tool hook #3 (false post-tool) exited 1: (no output)]" in out
    assert (
        "#2 stop true -> not run (stop hooks are stored, not run)" in out
    )  # the hooks contract: nothing runs a stop hook


def test_check_exits_0_when_every_hook_passes(tmp_path, env, capsys):
    inputs = {"hooks": [{"event": "pre-tool", "command": "true {path}"}]}
    code = main(
        ["hooks", "check", "--inputs", json.dumps(inputs), "--workspace", str(tmp_path),
         "--tool", "Write", "--path", "src/x.py"]
    )  # fmt: skip
    assert code == 0
    assert "#1 pre-tool true src/x.py -> exit 0" in capsys.readouterr().out


def test_check_with_an_unknown_tool_is_a_usage_error(tmp_path, env, capsys):
    code = main(["hooks", "check", "--inputs", "{}", "--tool", "rm", "--workspace", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.startswith("orkeon: --tool: unknown tool 'rm'")


def test_trust_then_project_hooks_are_listed(tmp_path, env):
    """The OrbCode page: project hooks are disabled until trusted; trust is bound to the
    exact configuration and asked again when it changes."""
    ws = tmp_path / "ws"
    (ws / ".orkeon").mkdir(parents=True)
    settings = ws / ".orkeon" / "settings.json"
    settings.write_text(json.dumps(PROJECT))
    runner = CliRunner()
    listing = ["hooks", "list", "--inputs", "{}", "--workspace", str(ws)]

    before = runner.invoke(app, listing, env=env)
    assert before.exit_code == 0
    assert before.stdout == ""
    assert "project hooks are not trusted and were skipped" in before.stderr

    trusted = runner.invoke(app, ["hooks", "trust", "--workspace", str(ws)], env=env)
    assert trusted.exit_code == 0, trusted.output
    assert trusted.stdout.startswith(f"trusted {settings}")

    after = runner.invoke(app, listing, env=env)
    assert after.stdout.splitlines() == ["PreToolUse [Bash] echo hi"]

    PROJECT["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = "echo changed"
    settings.write_text(json.dumps(PROJECT))
    changed = runner.invoke(app, listing, env=env)
    assert changed.stdout == ""
    assert "not trusted" in changed.stderr


def test_trust_of_a_missing_workspace_is_a_usage_error(tmp_path, env, capsys):
    assert main(["hooks", "trust", "--workspace", str(tmp_path / "nope")]) == 2
    assert "--workspace: not a directory" in capsys.readouterr().err
