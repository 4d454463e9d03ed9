"""Nothing the model touched runs with more rights than the model (docs/security.md,
"Guards" and "The audit"), through `orkeon run` with the scripted model playing the
hostile one:

- the guards hold whatever the roots, with the sandbox on or off;
- the audit judges what its own build and test changed, against the batch's start;
- the audit sees the history: a moved HEAD, a commit, a branch, a tag, the stash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.cli import clean_environment, run_json
from kit.sandbox import LINUX_ONLY, require_sandbox
from kit.steps import make_workspace, scripted, shell, write

pytestmark = LINUX_ONLY

OFF = {"sandbox": "off"}
EVIL = "import pathlib\npathlib.Path('/dev/null').write_text('')\n"
FILES = {
    "README.md": "# app\n",
    ".gitignore": "build/\n",
    "src/api/a.py": "a = 1\n",
    "src/evil.py": EVIL,
    ".orkeon/settings.json": "{}\n",
    ".orkeon/hooks/guard.py": "print('guard')\n",
    ".claude/settings.json": "{}\n",
    ".claude/hooks/check.py": "print('check')\n",
    ".mcp.json": '{"mcpServers": {}}\n',
}
GUARDS = [".claude/hooks/check.py", ".claude/settings.json", ".mcp.json",
          ".orkeon/hooks/guard.py", ".orkeon/settings.json"]  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(tmp_path, FILES)


def batch(calls: list[dict[str, Any]], roots: list[str], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": roots, "task": "t"}]}]}
    script = {"b1/a": [{"tool_calls": calls}, {"text": "done"}]}
    return scripted(script, plan=plan, **more)


@pytest.mark.parametrize("roots", [["."], [".orkeon"], [".claude", ".orkeon", "."]])
def test_a_guard_a_role_rewrote_with_the_sandbox_off_fails_the_audit_whatever_the_roots(
    ws: Path, capsys: pytest.CaptureFixture[str], roots: list[str]
) -> None:
    """docs/security.md, "Guards": with `"shell": {"sandbox": "off"}` and roots `.` or
    `.orkeon`, a role's `cp` over a hook script, the settings or `.mcp.json` fails the
    audit, each guard named."""
    guards_rewritten(ws, capsys, roots)


def test_the_guards_hold_in_a_workspace_that_is_no_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md, "Guards": the same where the audit works from content hashes."""
    clean_environment(tmp_path, monkeypatch)
    guards_rewritten(make_workspace(tmp_path, FILES, git=False), capsys, ["."])


def test_a_guard_git_ignores_is_still_a_guard(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/security.md, "The audit": the workspace's guards are read directly, not
    through git, whatever git's ignore rules say."""
    (ws / ".gitignore").write_text(".orkeon/\n.claude/\n.mcp.json\nbuild/\n")
    git(ws, "rm", "-rq", "--cached", ".orkeon", ".claude", ".mcp.json")
    git(ws, "commit", "-qam", "ignore them")
    guards_rewritten(ws, capsys, ["src/"])


def guards_rewritten(ws: Path, capsys: pytest.CaptureFixture[str], roots: list[str]) -> None:
    calls = [shell(f"cp src/evil.py {g}") for g in GUARDS]
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=batch(calls, roots, shell=OFF))
    (rec,) = result["audits"]
    assert (code, rec["passed"]) == (1, False), rec
    assert rec["outside_roots"] == GUARDS
    assert "changed a guard" in rec["output_tail"]
    assert (ws / ".orkeon/hooks/guard.py").read_text() == EVIL  # the sandbox was off


def test_the_file_tools_never_write_a_guard(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/security.md, "Guards": the rule set `orkeon` refuses every writing tool on
    Claude Code's hooks and settings and on `.mcp.json`, whatever the roots."""
    calls = [write(g, EVIL) for g in GUARDS[:3]]
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=batch(calls, ["."]))
    assert code == 0, result
    for g in GUARDS[:3]:
        assert (ws / g).read_text() == FILES[g]


def test_the_guards_are_read_only_in_the_sandbox_whatever_the_roots(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "The shell sandbox": the guards are never writable, whatever the
    roots: Claude Code's hooks and settings, `.mcp.json` as well as `.orkeon/`."""
    require_sandbox()
    calls = [shell(f"cp src/evil.py {g}") for g in GUARDS[:3]]
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=batch(calls, ["."]))
    assert code == 0, result
    for g in GUARDS[:3]:
        assert (ws / g).read_text() == FILES[g], g


TEST_WRITES = (
    "echo pwned > README.md; mkdir -p .github/workflows build; "
    "echo ci > .github/workflows/ci.yml; echo o > build/out"
)


def test_what_the_audits_test_changed_outside_the_roots_fails_the_batch(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "The audit": after build and test the workspace is compared again
    with the batch's start; a change outside the roots fails the batch naming the path
    and the audit's command that made it. An ignored build output is allowed."""
    require_sandbox()
    argv = ["sh", "-c", TEST_WRITES]
    doc = batch([write("src/api/a.py", "a = 2\n")], ["src/api/"], audit={"test": argv})
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    (rec,) = result["audits"]
    assert (code, rec["passed"], rec["failed_command"]) == (1, False, argv), rec
    assert rec["outside_roots"] == [".github/workflows/ci.yml", "README.md"]
    assert f"(made by the audit's command {' '.join(argv)})" in rec["output_tail"]
    assert (ws / "README.md").read_text() == "pwned\n"  # the sandbox lets the test write
    assert (ws / "build/out").exists()  # git-ignored: not named


def test_a_guard_the_audits_test_rewrote_with_the_sandbox_off_fails_the_batch(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md, "The audit": the second comparison judges guards too, whatever
    the roots (the model's test rewrote the operator's hook script)."""
    argv = ["cp", "src/evil.py", ".claude/hooks/check.py"]
    doc = batch([write("src/api/a.py", "a = 2\n")], ["."], audit={"test": argv}, shell=OFF)
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    (rec,) = result["audits"]
    assert (code, rec["passed"], rec["failed_command"]) == (1, False, argv), rec
    assert rec["outside_roots"] == [".claude/hooks/check.py"]
    assert "made by the audit's command cp" in rec["output_tail"]


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@pytest.mark.parametrize(
    ("build", "refs"),
    [
        (["commit", "-qam", "m"], ["HEAD", "BRANCH"]),
        (["tag", "v1"], ["refs/tags/v1"]),
        (["branch", "side"], ["refs/heads/side"]),
        (["checkout", "-q", "-b", "side"], ["HEAD", "refs/heads/side"]),
        (["stash", "-q"], ["refs/stash"]),
    ],
    ids=["commit", "tag", "branch", "checkout", "stash"],
)
def test_a_batch_that_changed_the_history_fails_its_audit_naming_the_ref(
    ws: Path, capsys: pytest.CaptureFixture[str], build: list[str], refs: list[str]
) -> None:
    """docs/security.md, "The audit": a batch that moved HEAD, made a commit, created,
    moved or deleted a branch or tag, or changed the stash fails its audit naming the ref,
    whatever made the change (here the audit's own build, the sandbox off)."""
    branch = git(ws, "symbolic-ref", "HEAD").strip()
    argv = [*GIT, *(branch if w == "BRANCH" else w for w in build)]
    doc = batch([write("src/api/a.py", "a = 2\n")], ["src/api/"], audit={"build": argv}, shell=OFF)
    code, result, _ = run_json(capsys, "dev-batches", ws, doc=doc)
    (rec,) = result["audits"]
    assert (code, rec["passed"]) == (1, False), rec
    assert rec["outside_roots"] == [branch if r == "BRANCH" else r for r in refs]
    assert "changed the repository's history" in rec["output_tail"]
