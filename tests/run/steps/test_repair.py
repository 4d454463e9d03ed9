"""tasks-repair end to end: a dev-batches run fails its audit, then the failed role starts
again with its task and the audit's output, and the audit runs again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.steps import calls, environ, make_workspace, role_status, run_step, scripted, shell, write

from orkeon_run.errors import InputError
from orkeon_run.run.failed import repair_document

FILES = {"README.md": "# app\n", "src/api/__init__.py": "", "tests/__init__.py": ""}
PLAN = {
    "batches": [
        {"name": "b1", "roles": [
            {"name": "api", "roots": ["src/api/"], "task": "Write src/api/value.txt saying 42."},
            {"name": "docs", "roots": ["README.md"], "task": "Mention the api."}]}]
}  # fmt: skip
TEST = ["sh", "-c", "grep -q 42 src/api/value.txt || { echo 'FAILED: value is not 42'; exit 1; }"]


def failed_batches_run(tmp_path: Path) -> tuple[Path, Path]:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "first"
    script = {"b1/api": [{"tool_calls": [write("src/api/value.txt", "41")]}]}
    doc = scripted(script, plan=PLAN, audit={"test": TEST}, shell={"allow_interpreters": True})
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "failed"
    assert result["audits"][0]["failed_command"] == TEST
    return ws, rd


def repair_doc(rd: Path, script: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return scripted({"b1/api": script}, repair={"run": str(rd), "role": "b1/api"}, **more)


def test_repair_fixes_a_failed_role(tmp_path: Path) -> None:
    """The hooks contract: "/tasks repair hands the registry to the agent it starts
    again"; docs/inputs.md: "The repaired role's first message holds its task and the
    failing audit's output." Plan and audit come from the failed run's saved inputs."""
    ws, first = failed_batches_run(tmp_path)
    rd = tmp_path / "repair"
    fix = [{"tool_calls": [write("src/api/value.txt", "42")]}, {"text": "fixed: 41 -> 42"}]
    log = tmp_path / "hook.log"
    hook = {"event": "post-tool", "command": f"touch {log}"}
    result = run_step("tasks-repair", repair_doc(first, fix, hooks=[hook]), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["step"] == "tasks-repair"
    assert role_status(result) == {"b1/api": "succeeded"}
    assert result["audits"] == [
        {"batch": "b1", "passed": True, "changed": 1, "outside_roots": [],
         "failed_command": None, "output_tail": ""}
    ]  # fmt: skip
    assert (ws / "src/api/value.txt").read_text() == "42"
    assert log.exists()  # the hooks reached the repaired role's calls
    from kit.steps import user_messages

    (message,) = user_messages(rd, "b1/api")
    assert message.startswith("Write src/api/value.txt saying 42.\n")
    assert "The audit after batch b1 failed." in message
    assert "Failed command: sh -c grep -q 42" in message
    assert "FAILED: value is not 42" in message
    (call,) = calls(rd, "b1/api")
    assert call["batch"] == "b1" and call["outcome"] == "ran"


def test_repair_keeps_the_roles_roots_and_audits_again(tmp_path: Path) -> None:
    ws, first = failed_batches_run(tmp_path)
    rd = tmp_path / "repair"
    script = [
        {"tool_calls": [write("README.md", "42"), shell("cp README.md src/api/value.txt")]},
        {"tool_calls": [shell("touch stray.txt")]},
    ]
    # Unconfined, so that the audit is what catches the stray write.
    doc = repair_doc(first, script, shell={"sandbox": "off"})
    result = run_step("tasks-repair", doc, ws, run_dir=rd)
    refused, copied = calls(rd, "b1/api")[:2]
    assert refused["refused_by"] == "roots"
    assert copied["outcome"] == "ran"
    assert result["status"] == "failed"
    (rec,) = result["audits"]
    assert rec["outside_roots"] == ["stray.txt"]
    assert result["error"] == {
        "kind": "audit",
        "message": "the audit of batch b1 failed: changed outside the roots: stray.txt",
    }


def test_repair_still_failing_tests(tmp_path: Path) -> None:
    ws, first = failed_batches_run(tmp_path)
    script = [{"tool_calls": [write("src/api/value.txt", "43")]}]
    result = run_step("tasks-repair", repair_doc(first, script), ws)
    assert result["status"] == "failed"
    assert result["audits"][0]["failed_command"] == TEST
    assert "FAILED: value is not 42" in result["audits"][0]["output_tail"]


def test_repair_of_a_role_the_plan_lacks(tmp_path: Path) -> None:
    ws, first = failed_batches_run(tmp_path)
    doc = scripted({}, repair={"run": str(first), "role": "b1/nobody"})
    with pytest.raises(InputError) as exc:  # checked with the inputs: exit 2, nothing ran
        run_step("tasks-repair", doc, ws)
    assert exc.value.problems == ["repair.role: the plan has no role b1/nobody (b1/api, b1/docs)"]


def test_shell_settings_come_from_the_failed_run(tmp_path: Path) -> None:
    """docs/inputs.md: "the plan, audit and shell settings come from that run's saved
    inputs unless given again"."""
    ws, first = failed_batches_run(tmp_path)  # it allowed interpreters
    script = [{"tool_calls": [shell("python3 -c 'print(6 * 7)'")]}]
    rd = tmp_path / "inherited"
    run_step("tasks-repair", repair_doc(first, script), ws, run_dir=rd)
    (call,) = calls(rd, "b1/api")
    assert call["result"]["exit_code"] == 0 and call["result"]["stdout"] == "42\n"
    rd = tmp_path / "given"
    doc = repair_doc(first, script, shell={"allow_interpreters": False})
    run_step("tasks-repair", doc, ws, run_dir=rd)
    (call,) = calls(rd, "b1/api")
    assert "interpreter" in json.dumps(call["result"])


def test_repair_document_takes_plan_audit_and_shell_from_the_run(tmp_path: Path) -> None:
    _, first = failed_batches_run(tmp_path)
    doc = {"repair": {"run": str(first), "role": "b1/api"}, "audit": {"test": None}}
    merged = repair_document(doc, environ(tmp_path))
    assert merged["plan"] == PLAN
    assert merged["audit"] == {"test": None}  # given again: kept
    assert merged["shell"] == {"allow_interpreters": True}


def test_a_resumed_repair_is_audited_from_its_first_start(tmp_path: Path) -> None:
    """Second review: a resumed tasks-repair took a new snapshot, so what the first
    attempt changed outside the roots was never audited."""
    ws, first = failed_batches_run(tmp_path)
    rd = tmp_path / "repair"
    script = [{"tool_calls": [shell("touch stray.txt")]}, {"text": "done"}]
    doc = repair_doc(first, script, shell={"sandbox": "off"})  # the audit must catch it
    result = run_step("tasks-repair", doc, ws, run_dir=rd)
    assert result["audits"][0]["outside_roots"] == ["stray.txt"]
    again = run_step("tasks-repair", None, ws, resume_dir=rd)
    assert again["status"] == "failed"
    assert again["audits"][-1]["outside_roots"] == ["stray.txt"]
