"""The audit's `changed` (docs/output.md, "audits"): how many files a batch changed; a
batch that changed none says so in its record, in the summary and as a `warning` event,
and fails its audit with `"audit": {"require_changes": true}`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.process import orkeon
from kit.steps import events, make_workspace, run_step, write

from orkeon_run.commands.summary import summary
from orkeon_run.run import audit

FILES = {"README.md": "# demo\n", "src/a.py": "a = 1\n", "docs/d.md": "# d\n"}
PLAN = {
    "batches": [
        {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]},
        {"name": "b2", "roles": [{"name": "docs", "roots": ["docs/"], "task": "t"}]},
    ]
}


def audited(ws: Path, before: audit.Snapshot, **kw: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        return await audit.run_audit(ws, "b1", ["src/"], before, **kw)

    return anyio.run(go)


@pytest.mark.parametrize("git", [True, False], ids=["repo", "plain"])
def test_the_record_counts_the_files_the_batch_changed(tmp_path: Path, git: bool) -> None:
    ws = make_workspace(tmp_path, FILES, git=git)
    before = audit.snapshot(ws)
    assert audited(ws, before)["changed"] == 0
    (ws / "src" / "a.py").write_text("a = 2\n")
    (ws / "src" / "b.py").write_text("b = 1\n")
    (ws / ".orkeon").mkdir()
    (ws / ".orkeon" / "notes.md").write_text("orkeon's own: not counted\n")
    record = audited(ws, before, require_changes=True)
    assert (record["passed"], record["changed"]) == (True, 2)
    (ws / "docs" / "d.md").unlink()  # a removed file is a change too, outside the roots
    record = audited(ws, before)
    assert (record["passed"], record["changed"], record["outside_roots"]) == (
        False,
        3,
        ["docs/d.md"],
    )


def test_require_changes_fails_a_batch_that_changed_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    before = audit.snapshot(ws)
    ran = tmp_path / "build-ran"
    build = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    assert audited(ws, before, build=build)["passed"] is True and ran.exists()
    ran.unlink()
    record = audited(ws, before, build=build, require_changes=True)
    assert record == {
        "batch": "b1",
        "passed": False,
        "changed": 0,
        "outside_roots": [],
        "failed_command": None,
        "output_tail": "no role of batch b1 changed any file (audit.require_changes is set)",
    }
    assert not ran.exists()  # no build for a batch that did nothing


def script(docs_writes: bool) -> dict[str, Any]:
    """b1/api writes src/b.py; b2/docs only talks, or writes docs/e.md."""
    docs = [{"tool_calls": [write("docs/e.md", "# e\n")]}] if docs_writes else []
    return {
        "b1/api": [{"tool_calls": [write("src/b.py", "b = 1\n")]}, {"text": "done"}],
        "b2/docs": [*docs, {"text": "The docs look fine to me."}],
    }


def batches(tmp_path: Path, docs_writes: bool, **audit_inputs: Any) -> dict[str, Any]:
    ws = make_workspace(tmp_path, FILES)
    doc = {"model": {"provider": "scripted", "script": script(docs_writes)}, "plan": PLAN,
           "audit": audit_inputs}  # fmt: skip
    return run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")


def test_a_batch_that_changed_nothing_is_warned_about(tmp_path: Path) -> None:
    result = batches(tmp_path, docs_writes=False)
    assert (result["status"], result["exit_code"]) == ("succeeded", 0)
    assert [(a["batch"], a["passed"], a["changed"]) for a in result["audits"]] == [
        ("b1", True, 1),
        ("b2", True, 0),
    ]
    warnings = events(tmp_path / "run", "warning")
    assert [(w["step"], w["batch"], w["message"]) for w in warnings] == [
        ("dev-batches", "b2", "no role changed any file")
    ]
    text = summary(result)
    assert "  audit b1: passed\n" in text
    assert "  audit b2: passed (no file changed)\n" in text


def test_require_changes_fails_the_step(tmp_path: Path) -> None:
    result = batches(tmp_path, docs_writes=False, require_changes=True)
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    assert result["error"] == {
        "kind": "audit",
        "message": "the audit of batch b2 failed: no role changed any file",
    }
    assert [(a["batch"], a["passed"], a["changed"]) for a in result["audits"]] == [
        ("b1", True, 1),
        ("b2", False, 0),
    ]
    assert "  audit b2: FAILED (no file changed)\n" in summary(result)


def test_require_changes_passes_batches_that_did_their_work(tmp_path: Path) -> None:
    result = batches(tmp_path, docs_writes=True, require_changes=True)
    assert (result["status"], result["exit_code"]) == ("succeeded", 0), result["error"]
    assert [a["changed"] for a in result["audits"]] == [1, 1]
    assert events(tmp_path / "run", "warning") == []


def test_require_changes_takes_only_true_or_false(tmp_path: Path) -> None:
    doc = {"model": {"provider": "scripted"}, "plan": PLAN, "audit": {"require_changes": "yes"}}
    proc = orkeon("validate", "--step", "dev-batches", "--workspace", str(tmp_path),
                  "--inputs", json.dumps(doc), cwd=tmp_path)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (
        2,
        "orkeon: audit.require_changes: Input should be a valid boolean\n",
    )
