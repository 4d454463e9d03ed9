"""dev-spec end to end with the scripted model in a temporary git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.steps import (
    calls,
    make_workspace,
    read_jsonl,
    role_status,
    run_step,
    scripted,
    user_messages,
    write,
)

from orkeon_run.config.trust import record_crews_trust
from orkeon_run.errors import InputError

FILES = {"README.md": "# app\n", "src/app.py": "def main():\n    return 1\n"}
REQUEST = "Add a --verbose flag to main."
REPORT = "main() lives in src/app.py and takes no arguments."


def test_analyst_reports_then_writer_writes_the_spec(tmp_path: Path) -> None:
    """docs/inputs.md: "dev-spec `analyst` then `writer`"."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "analyst": [
            {"tool_calls": [{"tool": "file_read", "input": {"file_path": "src/app.py"}}]},
            {"text": REPORT},
        ],
        "writer": [
            {"tool_calls": [write(".orkeon/spec.md", "# Spec\n\nverbose flag\n")]},
            {"text": "spec written"},
        ],
    }
    result = run_step("dev-spec", scripted(script, request=REQUEST), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["exit_code"] == 0
    assert [r["name"] for r in result["roles"]] == ["analyst", "writer"]
    assert role_status(result) == {"analyst": "succeeded", "writer": "succeeded"}
    assert result["artifacts"] == {"spec": ".orkeon/spec.md"}
    assert (ws / ".orkeon" / "spec.md").read_text() == "# Spec\n\nverbose flag\n"
    assert REQUEST in user_messages(rd, "analyst")[0]
    (first,) = user_messages(rd, "writer")
    assert REQUEST in first and REPORT in first and ".orkeon/spec.md" in first


def test_rule_sets_let_the_writer_write_only_the_spec(tmp_path: Path) -> None:
    """The issue: "its rule sets let it read anywhere in the workspace and write only the
    spec"."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "analyst": [{"tool_calls": [write("notes.md", "analyst notes")]}, {"text": "r"}],
        "writer": [
            {"tool_calls": [write("src/app.py", "oops"), write("docs/spec.md", "# S\n")]},
            {"text": "ok"},
        ],
    }
    doc = scripted(script, request=REQUEST, spec="docs/spec.md")
    result = run_step("dev-spec", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["artifacts"] == {"spec": "docs/spec.md"}
    (analyst_call,) = calls(rd, "analyst")
    assert analyst_call["refused_by"] == "rules"
    assert analyst_call["result"].startswith("[refused by rule set read-only: ")
    refused, ran = calls(rd, "writer")
    assert refused["refused_by"] == "rules"
    assert refused["result"].startswith("[refused by rule set write-spec: ")
    assert ran["outcome"] == "ran"
    assert (ws / "src" / "app.py").read_text() == FILES["src/app.py"]
    assert not (ws / "notes.md").exists()


def test_fails_when_the_spec_was_not_written(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {**FILES, ".orkeon/spec.md": "# an old spec\n"})
    script = {"analyst": [{"text": "r"}], "writer": [{"text": "I wrote nothing"}]}
    result = run_step("dev-spec", scripted(script, request=REQUEST), ws)
    assert result["status"] == "failed"
    assert result["exit_code"] == 1
    assert result["error"] == {
        "kind": "role",
        "message": "the writer did not write the spec (.orkeon/spec.md)",
    }
    assert result["artifacts"] == {}


def test_budget_spent_by_the_analyst_ends_the_step_with_exit_3(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    script = {"analyst": [{"tool_calls": [{"tool": "list_files", "input": {}}]}, {"text": "r"}]}
    doc = scripted(script, request=REQUEST, budget={"seconds": None, "turns": 1})
    result = run_step("dev-spec", doc, ws)
    assert result["status"] == "budget_exhausted"
    assert result["exit_code"] == 3
    assert result["budget"]["exhausted"] == "turns"
    assert [r["name"] for r in result["roles"]] == ["analyst"]  # the writer never started


def test_a_workspace_crew_overrides_the_builtin_one(tmp_path: Path, monkeypatch) -> None:
    """The issue: "A workspace can override a crew with `.orkeon/crews/STEP.toml`"."""
    crew = """
step = "dev-spec"
[[roles]]
name = "analyst"
prompt = "prompts/analyst.md"
tools = ["file_read"]
[[roles]]
name = "writer"
prompt = "writer.md"
tools = ["file_write"]
rule_sets = ["nothing"]
[[rule_sets]]
name = "nothing"
deny = ["file_write"]
"""
    ws = make_workspace(
        tmp_path,
        {**FILES, ".orkeon/crews/dev-spec.toml": crew, ".orkeon/crews/writer.md": "Write ${spec}."},
    )
    trust_crews(ws, tmp_path, monkeypatch)
    rd = tmp_path / "run"
    script = {
        "analyst": [{"text": "r"}],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "")]}],
    }
    result = run_step("dev-spec", scripted(script, request=REQUEST), ws, run_dir=rd)
    assert result["status"] == "failed"
    (call,) = calls(rd, "writer")
    assert call["result"] == "[refused by rule set nothing: file_write]"
    system = [m for m in read_jsonl(rd / "transcripts" / "writer.jsonl") if m["role"] == "system"]
    assert system[0]["content"].startswith("Write .orkeon/spec.md.\n\n")


def trust_crews(ws: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    record_crews_trust(ws)


def test_a_bad_workspace_crew_is_named(tmp_path: Path, monkeypatch) -> None:
    ws = make_workspace(tmp_path, {**FILES, ".orkeon/crews/dev-spec.toml": 'step = "dev-spec"\n'})
    trust_crews(ws, tmp_path, monkeypatch)
    with pytest.raises(InputError) as exc:  # checked with the inputs: exit 2, nothing ran
        run_step("dev-spec", scripted({}, request=REQUEST), ws)
    assert exc.value.problems == [f"{ws}/.orkeon/crews/dev-spec.toml: roles: Field required"]
    assert not (ws / ".orkeon" / "runs").exists()


def test_resume_keeps_the_analysts_report(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "analyst": [{"tool_calls": [{"tool": "list_files", "input": {}}]}, {"text": REPORT}],
        "writer": [
            {"text": "I wrote nothing"},
            {"tool_calls": [write(".orkeon/spec.md", "# S\n")]},
            {"text": "now it is written"},
        ],
    }
    first = run_step("dev-spec", scripted(script, request=REQUEST), ws, run_dir=rd)
    assert first["status"] == "failed"
    second = run_step("dev-spec", None, ws, resume_dir=rd)
    assert second["status"] == "succeeded", second["error"]
    assert role_status(second) == {"analyst": "succeeded", "writer": "succeeded"}
    assert len(calls(rd, "analyst")) == 1  # not run again
    first_message, again = user_messages(rd, "writer")
    assert REPORT in first_message and REPORT in again
