"""What git does not look into, and what the operator tells the audit to leave out:
repositories nested in the workspace that the top one does not track (issue 11 item 3:
audited file by file, with their own `.git` guards) and `audit.ignore` (issue 12 item 6),
through `orkeon run` with the scripted model where a role does it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.steps import make_workspace, run_step, scripted, shell, write

from orkeon_run.run import audit

FILES = {"README.md": "# app\n", "src/a/x.py": "x = 1\n"}
HOOK = "#!/bin/sh\ntouch /tmp/owned\n"
# The roles here run unconfined: in the sandbox a nested `.git` is read-only (and the
# role's `cp` fails); the audit must hold without it.
OFF = {"sandbox": "off"}


def nested(ws: Path, rel: str = "vendor/lib") -> Path:
    """A repository of its own at `rel`, with a commit, that `ws` does not track."""
    lib = ws / rel
    lib.mkdir(parents=True)
    (lib / "lib.py").write_text("lib = 1\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    return lib


def batch(script: list[dict[str, Any]], roots: list[str], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": roots, "task": "t"}]}]}
    return scripted({"b1/a": [*script, {"text": "done"}]}, plan=plan, **more)


@pytest.mark.parametrize("git_workspace", [True, False], ids=["git", "hashes"])
def test_a_change_inside_a_nested_repository_is_seen_file_by_file(
    tmp_path: Path, git_workspace: bool
) -> None:
    ws = make_workspace(tmp_path, FILES, git=git_workspace)
    nested(ws)
    script = [{"tool_calls": [shell("cp README.md vendor/lib/lib.py"),
                              shell("cp README.md vendor/lib/new.py")]}]  # fmt: skip
    result = run_step("dev-batches", batch(script, ["src/a/"], shell=OFF), ws)
    (rec,) = result["audits"]
    assert rec["outside_roots"] == ["vendor/lib/lib.py", "vendor/lib/new.py"]
    inside = run_step("dev-batches", batch(script, ["vendor/lib/"], shell=OFF), ws)
    assert inside["audits"][0]["passed"] is True, inside["audits"]


@pytest.mark.parametrize("git_workspace", [True, False], ids=["git", "hashes"])
@pytest.mark.parametrize("guard", [".git/hooks/post-checkout", ".git/config", ".git/info/exclude"])
def test_a_nested_repositorys_guards_fail_the_audit_whatever_the_roots(
    tmp_path: Path, git_workspace: bool, guard: str
) -> None:
    ws = make_workspace(tmp_path, FILES, git=git_workspace)
    lib = nested(ws)
    original = (lib / guard).read_text() if (lib / guard).exists() else ""
    script = [
        {"tool_calls": [write("vendor/lib/planted", original + HOOK),
                        shell(f"cp vendor/lib/planted vendor/lib/{guard}")]},
    ]  # fmt: skip
    result = run_step("dev-batches", batch(script, ["."], shell=OFF), ws)
    (rec,) = result["audits"]
    assert rec["passed"] is False
    assert rec["outside_roots"] == [f"vendor/lib/{guard}"]
    assert "configuration or hooks" in rec["output_tail"]


def test_in_the_sandbox_a_nested_repositorys_git_folder_is_read_only(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    nested(ws)
    script = [{"tool_calls": [write("vendor/lib/planted", HOOK),
                              shell("cp vendor/lib/planted vendor/lib/.git/hooks/post-checkout")]}]  # fmt: skip
    result = run_step("dev-batches", batch(script, ["vendor/"]), ws)
    assert result["sandbox"] == "on" and result["audits"][0]["passed"] is True
    assert not (ws / "vendor/lib/.git/hooks/post-checkout").exists()


def test_a_repository_that_appears_is_its_files_and_its_git_folder(tmp_path: Path) -> None:
    """A `git init` is a change of its `.git` path (the roots decide), not of each file
    git wrote in it; a nested `.git` that goes is the same."""
    ws = make_workspace(tmp_path, FILES)
    before = audit.snapshot(ws)
    nested(ws, "src/a/new")
    changed, guards = audit.compare(ws, before)
    assert changed == ["src/a/new/.git", "src/a/new/lib.py"] and guards == []
    again = audit.snapshot(ws)
    import shutil

    shutil.rmtree(ws / "src/a/new/.git")
    assert audit.compare(ws, again) == (["src/a/new/.git"], [])


# --- audit.ignore ------------------------------------------------------------------------

# A logging hook as published ones are written: every PreToolUse payload appended to a
# file in the project.
LOGGING_HOOK = {
    "PreToolUse": [{"hooks": [{"type": "command",
                               "command": "mkdir -p logs && cat >> logs/pre_tool_use.json"}]}]
}  # fmt: skip


@pytest.mark.parametrize("patterns", [None, ["logs/"], ["/logs/*.json"], ["*.json"]])
def test_audit_ignore_leaves_out_a_logging_hooks_file(
    tmp_path: Path, patterns: list[str] | None
) -> None:
    ws = make_workspace(tmp_path, FILES)
    script = [{"tool_calls": [write("src/a/x.py", "x = 2\n")]}]
    more: dict[str, Any] = {"hooks": LOGGING_HOOK}
    if patterns is not None:
        more["audit"] = {"ignore": patterns}
    result = run_step("dev-batches", batch(script, ["src/a/"], **more), ws)
    assert (ws / "logs/pre_tool_use.json").exists()
    (rec,) = result["audits"]
    if patterns is None:
        assert (result["status"], rec["outside_roots"]) == ("failed", ["logs/pre_tool_use.json"])
    else:
        assert (result["status"], rec["passed"]) == ("succeeded", True), rec


@pytest.mark.parametrize("git_workspace", [True, False], ids=["git", "hashes"])
def test_audit_ignore_never_ignores_a_guard(tmp_path: Path, git_workspace: bool) -> None:
    ws = make_workspace(tmp_path, {**FILES, ".orkeon/settings.json": "{}\n"}, git=git_workspace)
    nested(ws)
    guards = [".orkeon/settings.json", "vendor/lib/.git/config"]
    if git_workspace:
        guards.append(".git/config")
    calls = [write("src/a/cfg", "[core]\n\tbare = false\n"), shell("cp src/a/cfg notes.md")]
    calls += [shell(f"cp src/a/cfg {g}") for g in guards]
    ignore = ["*", "**", ".git/", ".orkeon/", "vendor/", "*config*"]
    doc = batch([{"tool_calls": calls}], ["src/a/"], shell=OFF, audit={"ignore": ignore})
    result = run_step("dev-batches", doc, ws)
    (rec,) = result["audits"]
    assert rec["passed"] is False
    assert sorted(rec["outside_roots"]) == sorted(guards)  # notes.md is ignored


def test_a_bad_ignore_pattern_is_an_input_error(tmp_path: Path) -> None:
    from orkeon_run.errors import InputError

    ws = make_workspace(tmp_path, FILES)
    with pytest.raises(InputError) as exc:
        run_step("dev-batches", batch([], ["src/a/"], audit={"ignore": ["ok/", "!keep", ""]}), ws)
    assert exc.value.problems == [
        "audit.ignore[1]: a negated pattern ('!…') is not supported: list only what to leave out",
        "audit.ignore[2]: '' is not a path pattern",
    ]
