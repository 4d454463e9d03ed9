"""Pinned files across attempts (docs/security.md, "Guards"): a resumed run, and a
tasks-repair of a failed run, keep the digests of the run's first start, so a hook
script the model's work changed in the first attempt is still changed: its hook is not
run and the audit fails, naming it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from kit.steps import calls, make_workspace, run_step, scripted, shell, write

PY = sys.executable
PY_WORD = shlex.quote(PY)  # one word of a command: the checkout's path may hold a space
COMMAND = f"{PY_WORD} .orkeon/hooks/guard.py {{tool}} {{path}}"
CHANGED = ".orkeon/hooks/guard.py changed since the run started"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    evil = f"import pathlib\npathlib.Path({str(tmp_path / 'pwned')!r}).write_text('ran')\n"
    files = {"src/evil.py": evil, ".orkeon/hooks/guard.py": "import sys\nsys.exit(0)\n"}
    return make_workspace(tmp_path, files)


def inputs(script: dict[str, Any], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["."], "task": "t"}]}]}
    return scripted(
        script,
        plan=plan,
        hooks=[{"event": "pre-tool", "command": COMMAND}],
        shell={"sandbox": "off", "extra_allowed_commands": [PY]},
        **more,
    )


FIRST = [{"tool_calls": [shell("cp src/evil.py .orkeon/hooks/guard.py")]}, {"text": "done"}]
AGAIN = [{"tool_calls": [write("src/x.py", "x\n")]}, {"text": "done"}]


def test_a_resumed_run_keeps_the_pins_of_its_first_start(ws: Path, tmp_path: Path) -> None:
    """The first attempt's audit fails on the rewritten guard; the resumed batch does not
    run the rewritten hook (the call is refused) and its audit fails again."""
    rd = tmp_path / "run"
    first = run_step("dev-batches", inputs({"b1/a": FIRST + AGAIN}), ws, run_dir=rd)
    assert first["audits"][0]["outside_roots"] == [".orkeon/hooks/guard.py"]
    second = run_step("dev-batches", None, ws, resume_dir=rd)
    assert not (tmp_path / "pwned").exists()
    again = calls(rd, "b1/a")[-1]
    assert (again["outcome"], again["refused_by"]) == ("refused", "hook")
    assert again["result"].endswith(f"could not run: {CHANGED}]")
    (rec,) = second["audits"]
    assert (rec["passed"], rec["outside_roots"]) == (False, [".orkeon/hooks/guard.py"])
    assert second["pinned_changed"] == [".orkeon/hooks/guard.py"]


def test_a_repair_keeps_the_pins_of_the_run_it_repairs(ws: Path, tmp_path: Path) -> None:
    """A tasks-repair is a run of its own, pinned as of the failed run's start."""
    rd = tmp_path / "run"
    first = run_step("dev-batches", inputs({"b1/a": FIRST}), ws, run_dir=rd)
    assert first["status"] == "failed"
    doc = inputs({"b1/a": AGAIN}, repair={"run": str(rd), "role": "b1/a"})
    repair = run_step("tasks-repair", doc, ws, run_dir=tmp_path / "repair")
    assert not (tmp_path / "pwned").exists()
    (made,) = calls(tmp_path / "repair", "b1/a")
    assert made["result"].endswith(f"could not run: {CHANGED}]")
    assert repair["status"] == "failed" and repair["pinned_changed"] == [".orkeon/hooks/guard.py"]
