"""dev-batches end to end: concurrent roles, roots, the audit, resume."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from kit import DATA
from kit.steps import (
    calls,
    events,
    make_workspace,
    rewrite_record,
    role_status,
    run_step,
    scripted,
    shell,
    state,
    user_messages,
    write,
)

from orkeon_run.errors import InputError

FILES = {"README.md": "# app\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}
RENDEZVOUS = str(DATA / "steps" / "rendezvous.sh")


def role(name: str, roots: list[str], task: str = "") -> dict[str, Any]:
    return {"name": name, "roots": roots, "task": task or f"the task of {name}"}


def plan(*batches: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"title": "t", "batches": [{"name": n, "roles": roles} for n, roles in batches]}


TWO = plan(("b1", [role("a", ["src/a/"]), role("b", ["src/b/"])]))
# The tests of what the audit catches run the model's commands unconfined: in the sandbox
# the same writes fail (tests/run/test_confine.py), and the audit must hold without it too.
UNCONFINED = {"sandbox": "off"}


def rendezvous_doc(tmp: Path, concurrency: int, seconds: int) -> dict[str, Any]:
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "a")]}, {"text": "a done"}],
        "b1/b": [{"tool_calls": [write("src/b/y.py", "b")]}, {"text": "b done"}],
    }
    command = f"{shlex.quote(RENDEZVOUS)} {shlex.quote(str(tmp / 'marks'))} 2 {seconds} {{tool}}"
    return scripted(
        script,
        plan=TWO,
        concurrency=concurrency,
        hooks=[{"event": "pre-tool", "command": command}],
        shell={"extra_allowed_commands": [RENDEZVOUS]},
        audit={"build": ["test", "-f", "src/a/x.py"], "test": ["test", "-f", "src/b/y.py"]},
    )


def test_two_roles_run_concurrently_with_disjoint_roots(tmp_path: Path) -> None:
    """docs/inputs.md: "the roles of one batch run concurrently". Each role's first
    write waits in a pre-tool hook until the other role's first write arrives."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    result = run_step("dev-batches", rendezvous_doc(tmp_path, 4, 20), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert role_status(result) == {"b1/a": "succeeded", "b1/b": "succeeded"}
    assert [(c["role"], c["outcome"]) for c in events(rd, "tool.call")] in (
        [("b1/a", "ran"), ("b1/b", "ran")],
        [("b1/b", "ran"), ("b1/a", "ran")],
    )
    assert (ws / "src/a/x.py").read_text() == "a" and (ws / "src/b/y.py").read_text() == "b"
    assert result["audits"] == [
        {"batch": "b1", "passed": True, "changed": 2, "outside_roots": [],
         "failed_command": None, "output_tail": ""}
    ]  # fmt: skip
    assert state(rd)["batches_passed"] == ["b1"]
    assert (rd / "transcripts" / "b1" / "a.jsonl").is_file()
    assert user_messages(rd, "b1/a")[0] == "the task of a"


def test_concurrency_limit_runs_one_role_at_a_time(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    result = run_step("dev-batches", rendezvous_doc(tmp_path, 1, 1), ws, run_dir=rd)
    first, second = events(rd, "tool.call")
    assert first["refused_by"] == "hook"
    assert first["result"].endswith("exited 1: alone after 1 s]")
    assert second["outcome"] == "ran"
    assert result["status"] == "failed"  # the first role's file is missing: the audit fails
    assert result["audits"][0]["failed_command"] is not None


def test_a_write_outside_the_roots_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {"b1/a": [{"tool_calls": [write("src/b/x.py", "mine now")]}, {"text": "tried"}]}
    doc = scripted(script, plan=plan(("b1", [role("a", ["src/a/"])])))
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    (call,) = calls(rd, "b1/a")
    assert call["refused_by"] == "roots"
    assert call["result"] == "[refused: src/b/x.py is outside this role's roots (src/a/)]"
    assert not (ws / "src/b/x.py").exists()
    assert result["roles"][0]["refused"] == 1


@pytest.mark.parametrize("git", [True, False], ids=["git", "snapshot"])
def test_a_shell_write_outside_the_roots_is_caught_by_the_audit(tmp_path: Path, git: bool) -> None:
    """The issue: "a failed audit stops the step (exit 1); the result names the batch, the
    offending paths, and the tail of the failing output"."""
    ws = make_workspace(tmp_path, FILES, git=git)
    rd = tmp_path / "run"
    script = {
        "b1/a": [
            {"tool_calls": [write("src/a/ok.py", ""), shell("touch src/b/sneaky.txt")]},
            {"tool_calls": [shell("cp README.md notes.md")]},
            {"text": "done"},
        ],
        "b2/b": [{"tool_calls": [write("src/b/late.py", "")]}],
    }
    doc = scripted(
        script,
        plan=plan(("b1", [role("a", ["src/a/"])]), ("b2", [role("b", ["src/b/"])])),
        audit={"build": ["touch", "build-ran"]},
        shell=UNCONFINED,
    )
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "failed"
    assert result["exit_code"] == 1
    (rec,) = result["audits"]
    assert rec["batch"] == "b1" and rec["passed"] is False
    assert rec["outside_roots"] == ["notes.md", "src/b/sneaky.txt"]
    assert rec["failed_command"] is None
    assert "src/b/sneaky.txt" in rec["output_tail"]
    assert result["error"] == {
        "kind": "audit",
        "message": "the audit of batch b1 failed: changed outside the roots: notes.md, src/b/sneaky.txt",
    }
    assert [r["name"] for r in result["roles"]] == ["b1/a"]  # b2 never ran
    assert not (ws / "src/b/late.py").exists()
    assert not (ws / "build-ran").exists()  # the paths check failed first
    assert "batches_passed" not in state(rd)


@pytest.mark.parametrize("which", ["build", "test"])
def test_failing_build_or_tests_fail_the_step(tmp_path: Path, which: str) -> None:
    ws = make_workspace(tmp_path, FILES)
    failing = ["sh", "-c", "echo compiling; echo 'E: src/a/x.py:1: boom' >&2; exit 4"]
    audit = {"build": ["true"], "test": ["true"], which: failing}
    script = {"b1/a": [{"tool_calls": [write("src/a/x.py", "boom")]}]}
    doc = scripted(script, plan=plan(("b1", [role("a", ["src/a/"])])), audit=audit)
    result = run_step("dev-batches", doc, ws)
    assert result["status"] == "failed"
    (rec,) = result["audits"]
    assert rec["failed_command"] == failing
    assert rec["outside_roots"] == []
    assert "compiling\nE: src/a/x.py:1: boom" in rec["output_tail"]
    assert role_status(result) == {"b1/a": "succeeded"}


def test_resume_skips_finished_batches(tmp_path: Path) -> None:
    """The issue: "a dev-batches run that was interrupted or failed continues from the first
    batch that did not pass; finished batches are not run again"."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "a")]}, {"text": "a done"}],
        # The first attempt leaves a broken file; resumed, the role goes on and fixes it.
        "b2/b": [
            {"tool_calls": [write("src/b/out.txt", "broken")]}, {"text": "b done"},
            {"tool_calls": [write("src/b/out.txt", "fixed")]}, {"text": "b fixed"},
        ],
    }  # fmt: skip
    doc = scripted(
        script,
        plan=plan(("b1", [role("a", ["src/a/"])]), ("b2", [role("b", ["src/b/"])])),
        audit={"test": ["sh", "-c", "! grep -qs broken src/b/out.txt"]},
    )
    first = run_step("dev-batches", doc, ws, run_dir=rd)
    assert first["status"] == "failed"
    assert [a["passed"] for a in first["audits"]] == [True, False]
    assert state(rd)["batches_passed"] == ["b1"]

    second = run_step("dev-batches", None, ws, resume_dir=rd)
    assert second["status"] == "succeeded", second["error"]
    assert [a["passed"] for a in second["audits"]] == [True, True]
    assert role_status(second) == {"b1/a": "succeeded", "b2/b": "succeeded"}
    assert len(calls(rd, "b1/a")) == 1  # b1 ran once, in the first attempt
    assert [e["batch"] for e in events(rd, "batch.skipped")] == ["b1"]
    assert (ws / "src/b/out.txt").read_text() == "fixed"
    # The repeated batch's message carries the failed audit.
    resumed = user_messages(rd, "b2/b")[-1]
    assert resumed.startswith("the task of b\n") and "The audit after batch b2 failed." in resumed
    assert state(rd)["batches_passed"] == ["b1", "b2"]


def test_plan_file_in_the_workspace(tmp_path: Path) -> None:
    import json

    ws = make_workspace(tmp_path, {**FILES, ".orkeon/plan.json": json.dumps(TWO)})
    result = run_step("dev-batches", scripted({}), ws)
    assert result["status"] == "succeeded", result["error"]
    assert [r["name"] for r in result["roles"]] == ["b1/a", "b1/b"]


def test_invalid_plan_file_is_an_input_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {**FILES, ".orkeon/plan.json": '{"batches": []}'})
    with pytest.raises(InputError, match=r"plan\.batches: List should have at least 1 item"):
        run_step("dev-batches", scripted({}), ws)


def test_a_shell_copy_into_git_config_fails_the_step(tmp_path: Path) -> None:
    """docs/security.md: `cp` can write `.git/config` (the gate only denies `git config`);
    the audit names it, even for a role whose root is the whole workspace."""
    ws = make_workspace(tmp_path, {**FILES, "cfg": "[alias]\n\tst = !touch owned\n"}, git=True)
    script = {"b1/a": [{"tool_calls": [shell("cp cfg .git/config")]}, {"text": "done"}]}
    doc = scripted(script, plan=plan(("b1", [role("a", ["."])])), shell=UNCONFINED)
    result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    (rec,) = result["audits"]
    assert rec["outside_roots"] == [".git/config"]
    assert result["error"] == {
        "kind": "audit",
        "message": "the audit of batch b1 failed: changed outside the roots: .git/config",
    }


@pytest.mark.parametrize("first_root", ["src/a/", "."])
def test_git_init_in_a_plain_workspace_cannot_blind_the_audit(
    tmp_path: Path, first_root: str
) -> None:
    """Review finding: in a workspace that is no repository, batch 1 ran `git init` with
    an info/exclude of `*`; batch 2's audit then went through git and saw nothing. The
    audit mode is the step's, decided at its first batch; a `.git` that appears is a
    change like any other."""
    ws = make_workspace(tmp_path, FILES, git=False)
    script = {
        "b1/a": [
            {"tool_calls": [write("src/a/ex", "*\n"), shell("git init -q"),
                            shell("mkdir -p .git/info"), shell("cp src/a/ex .git/info/exclude")]},
            {"text": "done"},
        ],
        "b2/b": [{"tool_calls": [shell("cp src/a/ex README.md")]}, {"text": "done"}],
    }  # fmt: skip
    doc = scripted(
        script,
        plan=plan(("b1", [role("a", [first_root])]), ("b2", [role("b", ["src/b/"])])),
        shell=UNCONFINED,
    )
    result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    last = result["audits"][-1]
    if first_root == ".":  # the whole workspace is batch 1's: its .git too
        assert [a["passed"] for a in result["audits"]] == [True, False]
        assert last["outside_roots"] == ["README.md"]
    else:
        assert last["batch"] == "b1" and last["outside_roots"] == [".git"]
    assert state(tmp_path / "run")["audit_git"] is False


def test_a_git_step_resumed_without_its_repository_fails_its_audit(tmp_path: Path) -> None:
    """Second review: the step's audit mode is git, and on --resume the repository is
    gone: the batch's audit fails with a line that says so, no crash."""
    import shutil

    ws = make_workspace(tmp_path, FILES, git=True)
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "")]}, {"text": "done"}],
        "b2/b": [{"tool_calls": [shell("touch stray.txt")]}, {"text": "done"}],
    }
    doc = scripted(
        script,
        plan=plan(("b1", [role("a", ["src/a/"])]), ("b2", [role("b", ["src/b/"])])),
        shell=UNCONFINED,
    )
    rd = tmp_path / "run"
    first = run_step("dev-batches", doc, ws, run_dir=rd)
    assert [a["passed"] for a in first["audits"]] == [True, False]
    shutil.rmtree(ws / ".git")
    (ws / "stray.txt").unlink()
    second = run_step("dev-batches", None, ws, resume_dir=rd)
    assert (second["status"], second["exit_code"]) == ("failed", 1)
    last = second["audits"][-1]
    assert last["batch"] == "b2" and last["passed"] is False
    assert "not a git repository" in last["output_tail"], last  # b2's saved snapshot
    # Killed between batches: b2 starts afresh and cannot take a git snapshot.
    saved = json.loads((rd / "state.json").read_text())
    del saved["current"]
    rewrite_record(ws, rd, "state.json", saved)
    third = run_step("dev-batches", None, ws, resume_dir=rd)
    assert (third["status"], third["exit_code"]) == ("failed", 1)
    assert third["error"] == {
        "kind": "audit",
        "message": "the audit of batch b2 failed: the workspace is no longer a git repository",
    }


def test_a_role_that_does_not_succeed_fails_the_step_after_the_audit(tmp_path: Path) -> None:
    """The brief: "A role that fails also fails the step (after the batch's audit)". A
    settings-shape PostToolUse hook answering `continue: false` stops role b1/a."""
    ws = make_workspace(tmp_path, FILES)
    stop = """echo '{"continue": false, "stopReason": "enough for today"}'"""
    group = {"matcher": "file_write", "hooks": [{"type": "command", "command": stop}]}
    hooks = {"PostToolUse": [group]}
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "a")]}, {"text": "never sent"}],
        "b1/b": [{"tool_calls": [{"tool": "list_files", "input": {}}]}, {"text": "b done"}],
        "b2/c": [{"text": "c"}],
    }
    two_batches = plan(
        ("b1", [role("a", ["src/a/"]), role("b", ["src/b/"])]), ("b2", [role("c", ["docs/"])])
    )
    doc = scripted(script, plan=two_batches, hooks=hooks, audit={"test": ["true"]})
    result = run_step("dev-batches", doc, ws)
    assert result["status"] == "failed"
    assert role_status(result) == {"b1/a": "stopped", "b1/b": "succeeded"}
    assert result["error"] == {"kind": "role", "message": "role b1/a stopped: enough for today"}
    assert [(a["batch"], a["passed"]) for a in result["audits"]] == [("b1", True)]


def test_budget_spent_mid_batch_checks_paths_only_and_exits_3(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "b1/a": [{"tool_calls": [write("src/a/x.py", "a"), shell("touch stray.txt")]}],
        "b1/b": [{"tool_calls": [write("src/b/y.py", "b")]}],
    }
    doc = scripted(
        script,
        plan=TWO,
        concurrency=1,
        budget={"seconds": None, "turns": 2},  # b1/a's two turns spend it
        audit={"build": ["touch", "build-ran"]},
        shell=UNCONFINED,
    )
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "budget_exhausted"
    assert result["exit_code"] == 3
    assert role_status(result) == {"b1/a": "succeeded", "b1/b": "budget_exhausted"}
    (rec,) = result["audits"]
    assert rec["outside_roots"] == ["stray.txt"]  # the paths are still checked
    assert not (ws / "build-ran").exists()  # the build is not run on a spent budget
    assert not (ws / "src/b/y.py").exists()
    assert "batches_passed" not in state(rd)
