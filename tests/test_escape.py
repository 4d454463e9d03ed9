"""One escaping rule for everything orkeon writes to stderr and stdout (escape.py;
docs/security.md, "What orkeon writes"): "no record spans two lines, no line orkeon writes
can start a workflow command, GitLab section markers are escaped, and an annotation is
written only by orkeon's own GitHub code", whatever the renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.process import orkeon
from kit.steps import environ, make_workspace, scripted

from orkeon_run import escape

# A server name an untrusted workspace chose: a line break, then GitHub workflow commands,
# then a GitLab section marker (which needs a raw carriage return and ESC).
HOSTILE = (
    "fs\n::error file=README.md::pwned\n::stop-commands::tok123\n"
    "  ::warning::indented\nsection_start:1700000000:evil\r\x1b[0Kgot it\n##[error]old form"
)


def test_text_keeps_a_value_on_one_line() -> None:
    assert escape.text("a\nb\r\x1b[0K\x00\t") == "a\\nb\\r\\x1b[0K\\x00\\t"
    assert escape.text("plain text: ok") == "plain text: ok"
    assert escape.text(12) == "12"


@pytest.mark.parametrize(
    ("given", "written"),
    [("::error::x", "\\x3a:error::x"), ("  ::warning::x", "  \\x3a:warning::x"),
     ("##[error]x", "\\x23#[error]x"), ("a ::error::x", "a ::error::x"), ("ok", "ok")],
)  # fmt: skip
def test_line_never_starts_a_workflow_command(given: str, written: str) -> None:
    assert escape.line(given) == written


def test_start_keeps_a_renderers_colours_and_one_line() -> None:
    assert escape.start("\x1b[2mts\x1b[0m msg") == "\x1b[2mts\x1b[0m msg"
    assert escape.start("::error::x\nnext") == "\\x3a:error::x\\nnext"


def hostile_workspace(tmp: Path) -> Path:
    ws = make_workspace(tmp, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {HOSTILE: {"command": "true"}}}))
    return ws


def environment(tmp: Path, env: dict[str, str]) -> dict[str, str]:
    """orkeon's environment with no colour or CI setting of this process's, then `env`."""
    base = {k: v for k, v in environ(tmp).items() if k not in ("FORCE_COLOR", "NO_COLOR", "GITHUB_ACTIONS")}  # fmt: skip
    return {**base, **env}


def assert_safe(stream: str) -> None:
    """No line starts a workflow command, none holds the marker's carriage return, and the
    hostile name was written (escaped), so the check saw it."""
    assert "pwned" in stream
    for line in stream.split("\n"):
        assert not line.lstrip(" \t").startswith(("::", "##[")), line
        assert "\r" not in line, line
        assert "section_start:1700000000:evil\x1b" not in line, line


RENDERERS = {
    "FORCE_COLOR": {"FORCE_COLOR": "1"},
    "NO_COLOR": {"NO_COLOR": "1"},
    "JSON lines": {},
}


@pytest.mark.parametrize("renderer", list(RENDERERS))
def test_an_untrusted_server_name_starts_no_workflow_command(tmp_path: Path, renderer: str) -> None:
    """`orkeon run` and `orkeon validate` warn that the workspace's MCP servers are not
    trusted, naming them: the name is written escaped under every renderer."""
    ws = hostile_workspace(tmp_path)
    env = {**RENDERERS[renderer], "ORKEON_LOG_LEVEL": "info"}
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    doc = scripted({"b1/dev": [{"text": "done"}]}, plan=plan, budget={"seconds": 60})
    ran = orkeon("run", "dev-batches", "--workspace", str(ws), "--progress", "plain",
                 "--output", "json", "--inputs", json.dumps(doc),
                 cwd=tmp_path, env=environment(tmp_path, env))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert_safe(ran.stderr)
    checked = orkeon("validate", "--workspace", str(ws), "--inputs", "{}", cwd=tmp_path,
                     env=environment(tmp_path, env))  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert_safe(checked.stderr)
    if renderer == "JSON lines":  # every log record is one JSON object on one line
        records = [json.loads(x) for x in ran.stderr.splitlines() if x.startswith("{")]
        assert any(HOSTILE in r["event"] for r in records)


def test_the_text_summary_keeps_a_hostile_path_on_its_line() -> None:
    """`--output text` (docs/output.md): a changed file's name holding a line break and a
    workflow command stays inside its line."""
    from orkeon_run.commands.summary import summary

    budget = {"used_seconds": 1.0, "limit_seconds": 60, "model_seconds": 0.0, "tool_seconds": 0.0,
              "hook_seconds": 0.0, "turns": 1, "tokens_in": 0, "tokens_out": 0, "usd": None,
              "exhausted": None}  # fmt: skip
    audit = {"batch": "b1", "passed": False, "changed": 1,
             "outside_roots": ["README.md\n::error file=x::pwned"], "failed_command": None}  # fmt: skip
    result = {"step": "dev-batches", "status": "failed", "exit_code": 1, "run_id": "r",
              "budget": budget, "roles": [], "audits": [audit], "artifacts": {},
              "error": {"kind": "audit", "message": "x\n::stop-commands::tok"}}  # fmt: skip
    text = summary(result)
    assert "pwned" in text and "tok" in text
    assert_safe(text.replace("\r", ""))
