"""One look at what a batch changed, for its record and its audit (docs/output.md,
"Changes": "The record and the audit read one look at the workspace: what the audit
judges is what the record shows, and the look's git commands run once a batch, not once
for each").

A real dev-batches step with the scripted model; the audit's git is a wrapper on PATH (found
outside the workspace, as the audit finds its git) that logs each git command it runs, the
sandbox off so that the wrapper can write its log."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from kit.steps import make_workspace, run_step, scripted, write


def git_wrapper(tmp: Path) -> Path:
    """A `git` in tmp/bin that appends its arguments to tmp/git.log, then runs git."""
    real = shutil.which("git")
    assert real is not None
    log = tmp / "git.log"
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return log


def test_a_batch_is_looked_at_once_for_its_record_and_its_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/a.py": "x = 1\n"})
    log = git_wrapper(tmp_path)
    monkeypatch.setenv("PATH", f"{log.parent / 'bin'}{os.pathsep}{os.environ['PATH']}")
    plan = {"title": "t", "batches": [{"name": "b1", "roles": [
        {"name": "dev", "roots": ["src/"], "task": "t"}]}]}  # fmt: skip
    script = {"b1/dev": [{"tool_calls": [write("src/a.py", "x = 2\n")]}, {"text": "done"}]}
    doc = scripted(script, plan=plan, shell={"sandbox": "off"}, audit={"build": None, "test": None})
    rd = tmp_path / "run"
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result
    looks = [line for line in log.read_text().splitlines() if " status --porcelain" in line]
    # One look before the batch (its snapshot), one after it: the record and the audit share it.
    assert len(looks) == 2, log.read_text()
    # Both still say the same: the one changed file, recorded and audited.
    lines = [json.loads(x) for x in (rd / "changes.jsonl").read_text().splitlines()]
    assert [f["path"] for f in lines[-1]["files"]] == ["src/a.py"]
    events = [json.loads(x) for x in (rd / "events.jsonl").read_text().splitlines()]
    (audited,) = [e for e in events if e["type"] == "audit"]
    assert audited["passed"] is True and audited["changed"] == 1
