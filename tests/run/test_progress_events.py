"""The events progress and traces are built from (docs/output.md, "Events"): `role.start`
and `role.end` where roles start and end, a `tool.start` as each call begins, the budget's
limits in `run.start`, and the model's first 200 characters in `model.turn`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.steps import events, make_workspace, run_step, scripted, write

READ = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
PLAN = {
    "batches": [
        {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"},
                                 {"name": "docs", "roots": ["docs/"], "task": "t"}]},
    ]
}  # fmt: skip


def run_dir_of(ws: Path, result: dict[str, Any]) -> Path:
    return ws / ".orkeon" / "runs" / result["run_id"]


def test_roles_start_and_end_with_their_status_and_counts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    script = {
        "b1/api": [{"tool_calls": [READ, write("docs/x.md", "x")]}, {"text": "done"}],
        "b1/docs": [{"tool_calls": [write("docs/y.md", "y")]}],
    }
    result = run_step("dev-batches", scripted(script, plan=PLAN), ws)
    assert result["exit_code"] == 0
    rd = run_dir_of(ws, result)
    seen = [e for e in events(rd) if e["type"] in ("role.start", "role.end", "tool.call")]
    for role in ("b1/api", "b1/docs"):
        mine = [e["type"] for e in seen if e["role"] == role]
        assert mine[0] == "role.start" and mine[-1] == "role.end"
        assert set(mine[1:-1]) == {"tool.call"}
    ends = {e["role"]: e for e in events(rd, "role.end")}
    for r in result["roles"]:
        end = ends[r["name"]]
        assert end["batch"] == "b1" and end["step"] == "dev-batches"
        assert (end["status"], end["turns"], end["calls"], end["refused"], end["error"]) == (
            r["status"], r["turns"], r["calls"], r["refused"], r.get("error"),
        )  # fmt: skip
    assert (ends["b1/api"]["calls"], ends["b1/api"]["refused"]) == (2, 1)


def test_a_role_cut_by_the_budget_ends_with_that_status(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    script = {"b1/api": [{"tool_calls": [READ]}] * 5}
    doc = scripted(script, plan=plan, budget={"seconds": 600, "turns": 2})
    result = run_step("dev-batches", doc, ws)
    assert result["status"] == "budget_exhausted"
    (end,) = events(run_dir_of(ws, result), "role.end")
    assert (end["role"], end["status"], end["turns"]) == ("b1/api", "budget_exhausted", 2)


def test_each_call_starts_with_a_tool_start_naming_what_it_acts_on(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    shell = {"tool": "shell", "input": {"command": "  ls src\necho two"}}
    script = {"b1/api": [{"tool_calls": [READ, shell, {"tool": "nope", "input": {}}]}]}
    rd = run_dir_of(ws, result := run_step("dev-batches", scripted(script, plan=plan), ws))
    assert result["exit_code"] == 0
    kinds = [e["type"] for e in events(rd) if e["type"] in ("tool.start", "tool.call")]
    assert kinds == ["tool.start", "tool.call"] * 3
    starts = events(rd, "tool.start")
    assert [(e["seq"], e["tool"], e["target"]) for e in starts] == [
        (1, "file_read", "src/a.py"),
        (2, "shell", "ls src"),  # the command's first line
        (3, "nope", None),
    ]
    assert {(e["step"], e["batch"], e["role"]) for e in starts} == {("dev-batches", "b1", "b1/api")}


def test_run_start_carries_the_budget_and_model_turn_the_models_text(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# r\n"})
    long = "I will read the README first. " * 12  # 360 characters
    script = {"analyst": [{"text": long}], "writer": [{"text": "no spec"}]}
    doc = scripted(script, request="r", budget={"seconds": 90, "usd": 2.5})
    doc["model"]["price"] = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    result = run_step("dev-spec", doc, ws)
    rd = run_dir_of(ws, result)
    (start,) = events(rd, "run.start")
    assert start["budget"] == {"seconds": 90.0, "turns": None, "tokens": None, "usd": 2.5,
                               "idle_seconds": 600.0, "stop_blocks": 8}  # fmt: skip
    turns = events(rd, "model.turn")
    assert turns[0]["text"] == long[:200]
    assert turns[1]["text"] == "no spec"
