"""dev-plan end to end: the planner writes the plan; an invalid plan goes back, at most twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.steps import events, make_workspace, run_step, scripted, user_messages, write

from orkeon_run.errors import InputError

SPEC = "# Spec\n\nAdd an api and its tests.\n"
FILES = {"README.md": "# app\n", ".orkeon/spec.md": SPEC}
GOOD = {
    "title": "api",
    "batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}],
}
BAD_ROOTS = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": [], "task": "t"}]}]}
BAD_NAME = {"batches": [{"name": "b 1", "roles": [{"name": "api", "roots": ["a/"], "task": "t"}]}]}


def plan_turn(plan: Any) -> dict[str, Any]:
    text = plan if isinstance(plan, str) else json.dumps(plan)
    return {"tool_calls": [write(".orkeon/plan.json", text)]}


def done(text: str = "written") -> dict[str, Any]:
    return {"text": text}


def test_valid_plan_first_time(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    result = run_step("dev-plan", scripted({"planner": [plan_turn(GOOD), done()]}), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert result["artifacts"] == {"plan": ".orkeon/plan.json"}
    assert [(r["name"], r["status"]) for r in result["roles"]] == [("planner", "succeeded")]
    (first,) = user_messages(rd, "planner")
    assert SPEC.strip() in first and ".orkeon/plan.json" in first
    assert events(rd, "plan.invalid") == []


def test_invalid_plan_goes_back_with_the_problems(tmp_path: Path) -> None:
    """The issue: "an invalid plan is sent back to the model with the validation errors,
    at most twice"."""
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {
        "planner": [
            plan_turn("{not json"), done(),
            plan_turn(BAD_ROOTS), done(),
            plan_turn(GOOD), done(),
        ]
    }  # fmt: skip
    result = run_step("dev-plan", scripted(script), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    assert json.loads((ws / ".orkeon" / "plan.json").read_text()) == GOOD
    _, second, third = user_messages(rd, "planner")
    assert "not JSON" in second
    assert second.startswith("The plan in .orkeon/plan.json is not valid:\n- plan")
    assert "- plan.batches[0].roles[0].roots: List should have at least 1 item" in third
    assert [e["attempt"] for e in events(rd, "plan.invalid")] == [1, 2]
    assert result["roles"][0]["turns"] == 6


def test_still_invalid_after_two_retries_fails_with_the_problems(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {"planner": [plan_turn(BAD_NAME), done()] * 4}
    result = run_step("dev-plan", scripted(script), ws, run_dir=rd)
    assert result["status"] == "failed"
    assert result["exit_code"] == 1
    assert result["artifacts"] == {}
    assert result["error"]["kind"] == "role"
    assert result["error"]["message"].startswith("the plan in .orkeon/plan.json is not valid:\n")
    assert "plan.batches[0].name: String should match pattern" in result["error"]["message"]
    assert len(user_messages(rd, "planner")) == 3  # the task and two retries, no more
    assert len(events(rd, "plan.invalid")) == 3


def test_a_plan_left_unwritten_is_a_problem_too(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {**FILES, ".orkeon/plan.json": json.dumps(GOOD)})
    rd = tmp_path / "run"
    script = {"planner": [done("nothing"), done("still nothing"), plan_turn(GOOD), done()]}
    result = run_step("dev-plan", scripted(script), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    stale = ["plan: .orkeon/plan.json was not written in this step (it is the earlier file)"]
    assert [e["problems"] for e in events(rd, "plan.invalid")] == [stale, stale]


def test_the_planner_may_write_only_the_plan(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    script = {"planner": [{"tool_calls": [write("src/x.py", "")]}, plan_turn(GOOD), done()]}
    result = run_step("dev-plan", scripted(script), ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    first = events(rd, "tool.call")[0]
    assert first["refused_by"] == "rules"
    assert not (ws / "src").exists()


def test_missing_spec(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "x"})
    with pytest.raises(InputError) as exc:  # checked with the inputs: exit 2, nothing ran
        run_step("dev-plan", scripted({}), ws)
    assert exc.value.problems == [
        "spec: no such file in the workspace: .orkeon/spec.md (run dev-spec first)"
    ]
