"""The built-in rule set `orkeon` (policy/guards.py, docs/security.md "orkeon's own files"):
the file tools never write orkeon's settings, hooks, crews, runs, any `.git`, or the run
directory, whatever a role's roots; a step's own output stays writable by the role that
produces it. Through real runs with hostile scripted roles."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.steps import calls, make_workspace, run_step, scripted, write

from orkeon_run.catalog import TOOLS
from orkeon_run.policy.guards import guard, writing_tools

FILES = {
    "README.md": "# app\n",
    "src/__init__.py": "",
    ".orkeon/settings.json": "{}\n",
    ".orkeon/hooks/pre.py": "print('guard')\n",
    ".orkeon/crews/dev-batches.toml": "# crew\n",
    ".orkeon/spec.md": "# spec\n",
    "vendor/lib/README": "lib\n",
}


def refused(rule: str) -> str:
    return f"[refused by rule set orkeon: {rule}]"


def edit(path: str) -> dict[str, Any]:
    return {"tool": "file_edit", "input": {"file_path": path, "old_string": "a", "new_string": "b"}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path, FILES)
    git(ws, "init", "-q", "vendor/lib")
    (ws / "vendor" / "wt").mkdir()
    (ws / "vendor" / "wt" / ".git").write_text("gitdir: ../../.git/worktrees/wt\n")
    (ws / "lnk").symlink_to(".git")
    return ws


def test_no_role_writes_orkeons_own_files_whatever_its_roots(tmp_path: Path, ws: Path) -> None:
    rd = ws / "records" / "r1"  # a run directory inside the workspace, not under .orkeon
    attempts = [
        (write(".orkeon/settings.json", "{}"), "file_write(/.orkeon/settings.json)"),
        (edit(".orkeon/hooks/pre.py"), "file_edit(/.orkeon/hooks)"),
        (write(".orkeon/hooks/new.py", "x"), "file_write(/.orkeon/hooks)"),
        (write(".orkeon/crews/dev-batches.toml", "x"), "file_write(/.orkeon/crews)"),
        (write(".git/config", "x"), "file_write(.git)"),
        (write(".git/hooks/pre-commit", "x"), "file_write(.git)"),
        (write("vendor/lib/.git/hooks/post-checkout", "x"), "file_write(.git)"),
        (write("vendor/wt/.git", "gitdir: /tmp/x"), "file_write(.git)"),
        (write("lnk/config", "x"), "file_write(.git)"),  # a symlink to .git
        (write("src/../.git/config", "x"), "file_write(.git)"),
        (write(".orkeon/runs/old/state.json", "{}"), "file_write(/.orkeon/runs)"),
        (write("records/r1/state.json", "{}"), "file_write(/records/r1)"),
        (write(".orkeon/spec.md", "x"), "file_write(/.orkeon)"),  # not this role's output
        (write(".orkeon/plan.json", "x"), "file_write(/.orkeon)"),
    ]
    plan = {"batches": [{"name": "b1", "roles": [{"name": "all", "roots": ["."], "task": "t"}]}]}
    allowed = [write("src/ok.py", "ok\n"), write(".gitignore", "x\n"),
               {"tool": "file_read", "input": {"file_path": ".git/config"}}]  # fmt: skip
    script = {"b1/all": [{"tool_calls": [c for c, _ in attempts] + allowed}, {"text": "done"}]}
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git/" not in str(p)}
    git_config = (ws / ".git" / "config").read_bytes()
    result = run_step("dev-batches", scripted(script, plan=plan), ws, run_dir=rd)
    got = calls(rd, "b1/all")
    assert [(c["result"], c["refused_by"]) for c in got[: len(attempts)]] == [
        (refused(rule), "rules") for _, rule in attempts
    ]
    assert [c["outcome"] for c in got[len(attempts) :]] == ["ran", "ran", "ran"]
    assert got[-1]["result"].startswith("[core]")
    for path, data in before.items():
        assert path.read_bytes() == data, path
    assert (ws / ".git" / "config").read_bytes() == git_config
    assert not (ws / ".orkeon" / "hooks" / "new.py").exists()
    assert not (ws / "vendor" / "lib" / ".git" / "hooks" / "post-checkout").exists()
    assert (ws / "src" / "ok.py").read_text() == "ok\n"
    assert result["status"] == "succeeded", result["error"]  # roots ".": the rest ran


def test_the_writer_and_the_planner_still_write_their_own_output(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# app\n"})
    script = {
        "analyst": [{"text": "report"}],
        "writer": [{"tool_calls": [write(".orkeon/plan.json", "{}"),
                                   write(".orkeon/spec.md", "# Spec\n")]},
                   {"text": "done"}],
    }  # fmt: skip
    rd = tmp_path / "spec-run"
    result = run_step("dev-spec", scripted(script, request="r"), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    first, second = calls(rd, "writer")
    assert first["result"] == refused("file_write(/.orkeon)")
    assert second["result"] == "created .orkeon/spec.md (7 bytes)"

    plan = '{"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}'
    script = {"planner": [{"tool_calls": [write(".orkeon/spec.md", "x"),
                                          write("./.orkeon//plan.json", plan)]},
                          {"text": "done"}]}  # fmt: skip
    rd = tmp_path / "plan-run"
    result = run_step("dev-plan", scripted(script), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    first, second = calls(rd, "planner")
    assert first["result"] == refused("file_write(/.orkeon)")
    assert second["outcome"] == "ran"
    assert (ws / ".orkeon" / "spec.md").read_text() == "# Spec\n"


# --- one list of guards, every writing tool of the catalog ------------------------------

GUARD_PATHS = [
    ".git", ".git/config", ".git/hooks/pre-commit", "vendor/lib/.git/hooks/post-checkout",
    ".orkeon/settings.json", ".orkeon/hooks/guard.py", ".orkeon/crews/dev-batches.toml",
    ".orkeon/checks/security.md", ".orkeon/runs/r1/state.json", ".orkeon/spec.md", ".claude/settings.json",
    ".claude/settings.local.json", ".claude/hooks/check.py", ".mcp.json",
]  # fmt: skip


def test_every_writing_tool_of_the_catalog_is_refused_on_every_guard() -> None:
    """docs/security.md, "Guards": which paths are guards comes from one list, and the
    rule set `orkeon` refuses every tool the catalog marks `writes` on them, a tool added
    to the catalog as well as the built-ins; reading tools are not refused."""
    added = dataclasses.replace(TOOLS["file_write"], name="file_append")
    catalog = [*TOOLS.values(), added]
    rules = guard(tools=catalog)
    writing = [t.name for t in catalog if t.writes]
    assert writing_tools() == ("file_write", "file_edit")
    assert "file_append" in writing
    for name in writing:
        for path in GUARD_PATHS:
            assert rules.refusal(name, (path,)) is not None, (name, path)
        assert rules.refusal(name, ("src/app.py",)) is None
    for name in (t.name for t in catalog if not t.writes and t.path_field):
        assert rules.refusal(name, (".git/config",)) is None, name


def test_a_pinned_file_is_a_guard_for_the_file_tools() -> None:
    """docs/security.md, "Guards": a file a trusted command names is pinned, and a guard."""
    rules = guard(pinned=["scripts/check.js"])
    assert rules.refusal("file_edit", ("scripts/check.js",)) == "file_edit(/scripts/check.js)"
    assert rules.refusal("file_edit", ("scripts/other.js",)) is None
