"""GitHub Actions: with `GITHUB_ACTIONS=true`, `orkeon run` appends its report to
`$GITHUB_STEP_SUMMARY`, its outcome to `$GITHUB_OUTPUT` and annotations to stderr.

Runs go through `commands.run.main` (what `orkeon run` calls) with temp files for
GitHub's; what GitHub would read back is parsed by the rules its runner applies
(`NAME<<DELIMITER` outputs; `::kind props::data` commands, percent-escaped)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kit.report import FILES as WS_FILES
from kit.report import HOSTILE, HOSTILE_NAME, hook_script, mixed_doc, plan, read_outputs
from kit.steps import events, make_workspace, scripted, shell, write

from orkeon_run.commands import run as run_command
from orkeon_run.report.github import MAX_EACH, command, escape_data, escape_property, output_lines


def unescape(value: str, prop: bool = False) -> str:
    value = value.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%25", "%")


def read_command(line: str) -> tuple[str, dict[str, str], str]:
    """One workflow command line, parsed as the runner does (`::` at the line's start)."""
    assert line.startswith("::") and "\n" not in line and "\r" not in line
    end = line.index("::", 2)
    kind, _, props = line[2:end].partition(" ")
    pairs = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return kind, {k: unescape(v, prop=True) for k, v in pairs.items()}, unescape(line[end + 2 :])


@pytest.fixture
def gha(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A GitHub Actions step's environment with temp files; orkeon's config in tmp."""
    for name in list(os.environ):
        if name.upper().startswith(("ORKEON", "GITHUB_", "RUNNER_")):
            monkeypatch.delenv(name)
    files = {
        "summary": tmp_path / "summary.md",
        "output": tmp_path / "output",
        "env": tmp_path / "env",
    }
    files["summary"].write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(files["summary"]))
    monkeypatch.setenv("GITHUB_OUTPUT", str(files["output"]))
    monkeypatch.setenv("GITHUB_ENV", str(files["env"]))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ORKEON_LOG_LEVEL", "error")
    monkeypatch.chdir(tmp_path)
    return files


def run(doc: dict[str, Any], ws: Path, rd: Path) -> int:
    return run_command.main(
        "dev-batches", json.dumps(doc), workspace=str(ws), run_dir=str(rd), output="json"
    )


def test_summary_outputs_and_annotations(
    gha: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_workspace(tmp_path, WS_FILES)
    rd = tmp_path / "run"
    assert run(mixed_doc(hook_script(tmp_path)), ws, rd) == 1
    out, err = capsys.readouterr()
    (line,) = out.splitlines()  # stdout: the result, nothing else
    assert json.loads(line)["status"] == "failed"
    summary = gha["summary"].read_text()
    assert summary.startswith("earlier step\n### ❌ orkeon `dev-batches`: failed (exit 1)\n")
    assert "<summary>4 refused calls, with the text the model read</summary>" in summary
    assert read_outputs(gha["output"].read_text()) == {
        "status": "failed", "exit_code": "1", "run_dir": str(rd), "cost_usd": "0.0",
    }  # fmt: skip
    commands = [read_command(x) for x in err.splitlines() if x.startswith("::")]
    assert len(commands) == len([x for x in err.splitlines() if "::" in x])
    errors = [c for c in commands if c[0] == "error"]
    assert errors == [(
        "error",
        {"title": "orkeon dev-batches: the audit of batch b1 failed"},
        "failed: test -f src/a/missing.py\n[test -f src/a/missing.py exited 1]",
    )]  # fmt: skip
    refused = {c.get("file_path", c["tool"]): c for c in _refused(rd)}
    warnings = [c for c in commands if c[0] == "warning"]
    assert [(p.get("file"), p["title"]) for _, p, _ in warnings] == [
        ("ws/src/a/generated/t.py", "orkeon: b1/a file_write refused by hook"),
        ("ws/secret/key.txt", "orkeon: b1/a file_write refused by gate"),
        (f"ws/{HOSTILE_NAME}", "orkeon: b1/a file_write refused by roots"),
        (None, "orkeon: b1/a no_such_tool refused by invalid"),
    ]
    # Each message is exactly the text the model read, hostile lines and all.
    assert [m for _, _, m in warnings] == [refused[k]["result"] for k in
        ("src/a/generated/t.py", "secret/key.txt", HOSTILE_NAME, "no_such_tool")]  # fmt: skip
    assert HOSTILE in warnings[0][2]
    assert not gha["env"].exists()  # nothing wrote GITHUB_ENV


def _refused(rd: Path) -> list[dict[str, Any]]:
    found = []
    for e in events(rd, "tool.call"):
        if e["outcome"] == "refused":
            found.append({**e["input"], "tool": e["tool"], "result": e["result"]})
    return found


def test_nothing_for_github_outside_github_actions(
    gha: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    ws = make_workspace(tmp_path, WS_FILES)
    assert run(mixed_doc(hook_script(tmp_path)), ws, tmp_path / "run") == 1
    assert "::" not in capsys.readouterr().err
    assert gha["summary"].read_text() == "earlier step\n" and not gha["output"].exists()


def test_annotations_are_capped_as_github_shows_them(
    gha: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_workspace(tmp_path, WS_FILES)
    many = [write(f"src/b/{i}.py", "") for i in range(25)]
    doc = scripted({"b1/a": [{"tool_calls": many}, {"text": "done"}]}, plan=plan(("a", ["src/a/"])))
    assert run(doc, ws, tmp_path / "run") == 0
    warnings = [
        read_command(x) for x in capsys.readouterr().err.splitlines() if x.startswith("::warning")
    ]
    assert len(warnings) == MAX_EACH
    assert warnings[-1] == (
        "warning",
        {"title": "orkeon"},
        "16 more refused calls: see the job summary",
    )
    assert [p["file"] for _, p, _ in warnings[:-1]] == [f"ws/src/b/{i}.py" for i in range(9)]


def test_a_file_github_cannot_take_is_a_warning_not_a_new_exit_code(
    gha: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path))  # a folder: cannot be appended to
    monkeypatch.setenv("ORKEON_LOG_LEVEL", "warning")
    ws = make_workspace(tmp_path, WS_FILES)
    doc = scripted({"b1/a": [{"text": "done"}]}, plan=plan(("a", ["src/a/"])))
    assert run(doc, ws, tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert f"GITHUB_OUTPUT: cannot append to {tmp_path}" in err
    assert (
        gha["summary"]
        .read_text()
        .startswith("earlier step\n### ✅ orkeon `dev-batches`: succeeded (exit 0)")
    )


def test_the_models_commands_and_the_audit_never_see_githubs_command_files(
    gha: dict[str, Path], tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path, WS_FILES)
    rd = tmp_path / "run"
    doc = scripted(
        {"b1/a": [{"tool_calls": [shell("env")]}, {"text": "done"}]},
        plan=plan(("a", ["src/a/"])),
        shell={"extra_allowed_commands": ["env"]},
        # Under the roots: the audit's sandbox writes nowhere outside the workspace, and
        # what the test changes is judged like the role's work.
        audit={"test": ["sh", "-c", "env > src/a/audit-env.txt"]},
    )
    assert run(doc, ws, rd) == 0
    (call,) = events(rd, "tool.call")
    seen = call["result"]["stdout"] + (ws / "src/a/audit-env.txt").read_text()
    assert "GITHUB_ACTIONS=true" in seen and "GITHUB_WORKSPACE=" in seen
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV"):
        assert f"{name}=" not in seen


@pytest.mark.parametrize(
    "value", ["plain", "50%0A off", "a\r\nb", "::error::x", "C:\\dir,with:colons", "%25%3A"]
)
def test_escaping_round_trips(value: str) -> None:
    line = command("warning", value, file=value, title="t")
    assert line.endswith("\n")
    kind, props, data = read_command(line[:-1])
    assert (kind, props, data) == ("warning", {"file": value, "title": "t"}, value)
    assert "\n" not in escape_data(value) and "," not in escape_property(value)


def test_outputs_hold_any_value() -> None:
    values = {"run_dir": "/tmp/a\nb=c<<EOF\nEOF", "status": "ok", "cost_usd": ""}
    assert read_outputs(output_lines(values)) == values
