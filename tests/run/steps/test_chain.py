"""`orkeon run pipeline`: dev-spec, dev-plan and dev-batches in one run, a failed batch
repaired and resumed, one budget, `--resume` (docs/output.md, "pipeline"). Black box,
through the entry point, with the scripted model and real hook scripts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import process
from kit.cli import (
    clean_environment,
    orkeon,
    pipeline_doc,
    pipeline_script,
    refusing_hook,
    run_dir,
    run_json,
    with_hook,
)
from kit.steps import environ, events, make_workspace, read_jsonl, write

from orkeon_run.run.result import Result

STEP_FILES = ("inputs.json", "events.jsonl", "result.json", "state.json")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(tmp_path, {"README.md": "# demo\n"})


def names(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["name"], s["status"]) for s in result["steps"]]


def test_a_pipeline_runs_the_three_steps_each_in_its_own_folder_of_one_run(ws, capsys):
    code, result, _ = run_json(capsys, "pipeline", ws, doc=pipeline_doc())
    assert code == 0, result["error"]
    Result.model_validate(result)  # the documented shape
    assert result["step"] == "pipeline" and result["status"] == "succeeded"
    assert names(result) == [
        ("dev-spec", "succeeded"), ("dev-plan", "succeeded"), ("dev-batches", "succeeded")
    ]  # fmt: skip
    assert [r["name"] for r in result["roles"]] == ["analyst", "writer", "planner", "b1/api",
                                                    "b2/docs"]  # fmt: skip
    assert result["artifacts"] == {"spec": ".orkeon/spec.md", "plan": ".orkeon/plan.json"}
    assert [(a["batch"], a["passed"]) for a in result["audits"]] == [("b1", True), ("b2", True)]
    assert (ws / "src/hello.txt").read_text() == "hello\n" and (ws / "docs/x.md").is_file()

    rd = run_dir(ws, result)
    assert json.loads((rd / "result.json").read_text()) == result
    for entry in result["steps"]:
        step_dir = rd / entry["run_dir"]
        assert entry["run_dir"] == f"steps/{entry['name']}"
        assert all((step_dir / f).is_file() for f in STEP_FILES), step_dir
        own = json.loads((step_dir / "result.json").read_text())
        assert own == {k: v for k, v in entry.items() if k not in ("name", "run_dir")}
        assert own["step"] == entry["name"]
    assert (rd / "steps/dev-batches/transcripts/b1/api.jsonl").is_file()

    # The pipeline's log: one run.start and one result, each step's events between its
    # step.start and step.end, every call of every step.
    top = events(rd)
    kinds = [e["type"] for e in top]
    assert kinds[0] == "run.start" and top[0]["step"] == "pipeline"
    assert kinds[-1] == "result" and kinds.count("run.start") == kinds.count("result") == 1
    marks = [(e["type"], e["name"]) for e in top if e["type"].startswith("step.")]
    assert marks == [(t, n) for n in ("dev-spec", "dev-plan", "dev-batches")
                     for t in ("step.start", "step.end")]  # fmt: skip
    own_calls = [
        e for s in result["steps"] for e in events(rd / s["run_dir"]) if e["type"] == "tool.call"
    ]
    assert [e for e in top if e["type"] == "tool.call"] == own_calls

    # One budget: each step ran on what the ones before it left.
    budget = result["budget"]
    spent = [s["budget"] for s in result["steps"]]
    assert budget["limit_seconds"] == 5400  # the three crews' 1800 s
    assert budget["turns"] == sum(b["turns"] for b in spent) == 9
    # Each block is rounded to the microsecond: the sums may differ in the last digit.
    assert budget["used_seconds"] == pytest.approx(sum(b["used_seconds"] for b in spent), abs=1e-5)
    plan_inputs = json.loads((rd / "steps/dev-plan/inputs.json").read_text())
    assert plan_inputs["budget"]["seconds"] == pytest.approx(5400 - spent[0]["used_seconds"])

    # `orkeon report` reads the pipeline and each of its steps.
    code, out, _ = orkeon(capsys, "report", str(rd), "--format", "json")
    report = json.loads(out)
    assert (code, report["step"], report["status"], report["attempts"]) == (
        0, "pipeline", "succeeded", 1
    )  # fmt: skip
    assert sum(r["calls"] for r in report["roles"]) == len(own_calls) == 4
    code, out, _ = orkeon(capsys, "report", str(rd / "steps/dev-plan"), "--format", "json")
    assert json.loads(out)["step"] == "dev-plan" and code == 0


def test_a_failed_batch_is_repaired_then_the_batches_resume(ws, tmp_path, capsys):
    """b1's only write is refused the first time (a hook): the audit fails; tasks-repair
    runs b1/api again, the write goes through, then dev-batches resumes: b1 is audited
    again as it stands, b2 runs."""
    command, program = refusing_hook(tmp_path, once=True)
    code, result, _ = run_json(
        capsys, "pipeline", ws, doc=with_hook(pipeline_doc(), command, program)
    )
    assert code == 0, result["error"]
    assert names(result) == [
        ("dev-spec", "succeeded"),
        ("dev-plan", "succeeded"),
        ("dev-batches", "failed"),
        ("tasks-repair-1", "succeeded"),
        ("dev-batches", "succeeded"),
    ]
    failed = result["steps"][2]
    assert failed["error"]["kind"] == "audit"
    assert failed["error"]["message"].startswith(
        "every call of role b1/api was refused (1 call; the first by a hook: [pre-tool hook #1 ("
    )
    assert failed["error"]["message"].endswith(
        "the audit of batch b1 failed: test -f src/hello.txt"
    )
    assert (ws / "src/hello.txt").read_text() == "hello\n"
    assert {r["name"]: r["status"] for r in result["roles"]}["b1/api"] == "succeeded"

    rd = run_dir(ws, result)
    repair_inputs = json.loads((rd / "steps/tasks-repair-1/inputs.json").read_text())
    assert repair_inputs["repair"] == {"run": str(rd / "steps/dev-batches"), "role": "b1/api"}
    batches = events(rd / "steps/dev-batches")
    assert [e["type"] for e in batches].count("run.start") == 2  # run, then resumed
    assert [e["role"] for e in batches if e["type"] == "role.start"] == ["b1/api", "b2/docs"]
    assert [(e["batch"], e["passed"]) for e in batches if e["type"] == "audit"] == [
        ("b1", False), ("b1", True), ("b2", True)
    ]  # fmt: skip
    # In the pipeline's log: b2 starts after the repair ended.
    order = [(e["type"], e.get("name") or e.get("role")) for e in events(rd)
             if e["type"] in ("step.end", "role.start")]  # fmt: skip
    assert order.index(("step.end", "tasks-repair-1")) < order.index(("role.start", "b2/docs"))


@pytest.mark.parametrize("attempts", [0, 1, 2])
def test_a_batch_that_still_fails_after_its_repairs_fails_the_pipeline(
    ws, tmp_path, capsys, attempts
):
    command, program = refusing_hook(tmp_path, once=False)
    doc = with_hook(pipeline_doc(repair={"attempts": attempts}), command, program)
    code, result, _ = run_json(capsys, "pipeline", ws, doc=doc)
    assert code == 1 and result["status"] == "failed"
    expected = [("dev-spec", "succeeded"), ("dev-plan", "succeeded"), ("dev-batches", "failed")]
    for n in range(attempts):  # each repair's write is refused too: its audit fails
        expected += [(f"tasks-repair-{n + 1}", "failed"), ("dev-batches", "failed")]
    assert names(result) == expected
    assert result["error"]["message"].startswith(
        "dev-batches: every call of role b1/api was refused"
    )
    if attempts:
        word = "round" if attempts == 1 else "rounds"
        assert result["error"]["message"].endswith(
            f"(after {attempts} {word} of repairs of batch b1)"
        )
    assert not (ws / "docs").exists()  # b2 never ran
    assert "b2/docs" not in {r["name"] for r in result["roles"]}


def test_resume_continues_a_pipeline_where_it_stopped(ws, capsys):
    """--max-turns 7: the analyst (1), the writer (2), the planner (2) and b1/api (2) use
    them all; b2 cannot start. The resume, with more turns, runs neither dev-spec nor
    dev-plan again, and dev-batches goes on with b2."""
    code, first, _ = run_json(capsys, "pipeline", ws, "--max-turns", "7", doc=pipeline_doc())
    assert code == 3 and first["status"] == "budget_exhausted", first["error"]
    assert first["budget"]["exhausted"] == "turns" and first["budget"]["turns"] == 7
    assert names(first) == [
        ("dev-spec", "succeeded"), ("dev-plan", "succeeded"), ("dev-batches", "budget_exhausted")
    ]  # fmt: skip
    assert first["error"]["message"].startswith("dev-batches: the step's turn budget is spent")
    rd = run_dir(ws, first)
    assert json.loads((rd / "inputs.json").read_text())["budget"]["turns"] == 7  # the flag, kept
    assert json.loads((rd / "steps/dev-batches/inputs.json").read_text())["budget"]["turns"] == 2

    argv = ["run", "pipeline", "--resume", str(rd), "--output", "json", "--progress", "none"]
    code, out, err = orkeon(capsys, *argv, "--max-turns", "40")
    result = json.loads(out)
    assert code == 0, (result["error"], err)
    assert result["run_id"] == first["run_id"]
    assert names(result) == [*names(first), ("dev-batches", "succeeded")]
    # docs/output.md, "A pipeline's result": the budget is the whole run's, every attempt
    # of it, and its steps' entries add up to it; this attempt's: b2/docs' two answers.
    assert result["budget"]["turns"] == 9
    assert sum(s["budget"]["turns"] for s in result["steps"]) == 9
    assert (result["budget"]["attempts"], result["budget"]["attempt"]["turns"]) == (2, 2)
    assert result["budget"]["limit_seconds"] == 5400
    assert [e["type"] for e in events(rd / "steps/dev-spec")].count("run.start") == 1
    assert [e["type"] for e in events(rd / "steps/dev-plan")].count("run.start") == 1
    batches = events(rd / "steps/dev-batches")
    assert [e["type"] for e in batches].count("run.start") == 2
    assert [e["batch"] for e in batches if e["type"] == "batch.skipped"] == ["b1"]
    top = [e["type"] for e in events(rd)]
    assert top.count("run.start") == top.count("result") == 2
    assert read_jsonl(rd / "events.jsonl")[-1]["status"] == "succeeded"
    assert (ws / "docs/x.md").is_file()


def test_a_step_the_spent_budget_does_not_let_start(ws, capsys):
    """--max-turns 5: dev-plan ends on its last turn within the budget; dev-batches, the
    work that wanted to start, is what the budget stopped."""
    code, result, _ = run_json(capsys, "pipeline", ws, "--max-turns", "5", doc=pipeline_doc())
    assert code == 3 and result["budget"]["exhausted"] == "turns"
    assert names(result) == [("dev-spec", "succeeded"), ("dev-plan", "succeeded")]
    assert result["error"] == {
        "kind": "budget",
        "message": "the step's turn budget is spent: dev-batches did not start",
    }
    assert result["artifacts"] == {"spec": ".orkeon/spec.md", "plan": ".orkeon/plan.json"}
    assert not (run_dir(ws, result) / "steps" / "dev-batches").exists()


def test_the_pipeline_stops_at_the_first_step_that_fails(ws, capsys):
    """The writer writes no spec: dev-spec fails, and nothing after it runs."""
    script = {"writer": [{"tool_calls": []}]}
    doc = pipeline_doc(model={"provider": "scripted", "script": script})
    code, result, _ = run_json(capsys, "pipeline", ws, doc=doc)
    assert code == 1 and names(result) == [("dev-spec", "failed")]
    assert result["error"] == {
        "kind": "role",
        "message": "dev-spec: the writer did not write the spec (.orkeon/spec.md)",
    }
    assert result["artifacts"] == {} and "steps" in result


def test_the_pipeline_needs_what_dev_spec_needs_and_a_plan_path(ws, capsys):
    code, out, err = orkeon(capsys, "run", "pipeline", "--workspace", str(ws), "--inputs", "{}")
    assert (code, out) == (2, "")
    assert "request: dev-spec needs a request" in err
    doc = pipeline_doc(plan={"batches": [{"name": "b", "roles": [{"name": "r", "roots": ["x"],
                                                                  "task": "t"}]}]})  # fmt: skip
    code, out, err = orkeon(capsys, "run", "pipeline", "--workspace", str(ws),
                            "--inputs", json.dumps(doc))  # fmt: skip
    assert (code, out) == (2, "")
    assert "plan: the pipeline's dev-plan writes the plan: give its path" in err
    assert not (ws / ".orkeon" / "runs").exists()


def test_the_text_summary_lists_the_steps(ws, tmp_path, capsys):
    command, program = refusing_hook(tmp_path, once=True)
    doc = with_hook(pipeline_doc(), command, program)
    code, out, _ = orkeon(capsys, "run", "pipeline", "--workspace", str(ws), "--output", "text",
                          "--progress", "none", "--inputs", json.dumps(doc))  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("pipeline: succeeded (exit 0)  run ")
    steps = [line for line in lines if line.startswith("  step ")]
    assert [s.split(":")[0] for s in steps] == [
        "  step dev-spec", "  step dev-plan", "  step dev-batches", "  step tasks-repair-1",
        "  step dev-batches",
    ]  # fmt: skip
    assert steps[3].endswith("(steps/tasks-repair-1)")


def test_an_interrupted_pipeline_keeps_what_finished_and_resumes(ws, tmp_path):
    """A real process: SIGINT while b1/api's write waits on its hook. The pipeline ends
    interrupted (130) with dev-spec and dev-plan done and dev-batches interrupted; the
    resume continues dev-batches, whose cut-off write never happened: the audit fails,
    tasks-repair writes it, and the batches go on to the end."""
    block = tmp_path / "block"
    block.touch()
    hook = tmp_path / "wait.sh"
    hook.write_text(
        f'#!/bin/sh\nif [ "$2" = src/hello.txt ] && [ -e "{block}" ]; then sleep 60; fi\nexit 0\n'
    )
    hook.chmod(0o755)
    doc = with_hook(pipeline_doc(), f"{hook} {{tool}} {{path}}", hook)
    env = environ(tmp_path)
    argv = [sys.executable, "-m", "orkeon_run", "run", "pipeline", "--workspace", str(ws),
            "--output", "stream-json", "--progress", "none", "--inputs", json.dumps(doc)]  # fmt: skip
    # read while it runs, then stopped: Popen, not kit.process
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)  # fmt: skip
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # the events as they happen
            event = json.loads(line)
            if event["type"] == "tool.start" and event["role"] == "b1/api":
                proc.send_signal(signal.SIGINT)
                break
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 130, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
    result = json.loads(rest.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "interrupted"
    assert names(result) == [
        ("dev-spec", "succeeded"), ("dev-plan", "succeeded"), ("dev-batches", "interrupted")
    ]  # fmt: skip
    rd = run_dir(ws, result)
    assert json.loads((rd / "result.json").read_text())["status"] == "interrupted"

    block.unlink()
    resumed = process.orkeon("run", "pipeline", "--resume", str(rd), "--output", "json",
                             "--progress", "none", cwd=tmp_path, env=env)  # fmt: skip
    final = json.loads(resumed.stdout)
    assert resumed.returncode == 0, (final["error"], resumed.stderr)
    assert names(final)[3:] == [
        ("dev-batches", "failed"), ("tasks-repair-1", "succeeded"), ("dev-batches", "succeeded")
    ]  # fmt: skip
    assert [e["type"] for e in events(rd / "steps/dev-spec")].count("run.start") == 1
    assert (ws / "src/hello.txt").is_file() and (ws / "docs/x.md").is_file()


def test_a_pipeline_job_is_counted_once_by_jobs_merge(ws, tmp_path, capsys):
    """A job list may run the pipeline; `jobs merge` counts its calls and turns once (from
    the pipeline's own log), and its charged time from its result."""
    jobs = tmp_path / "jobs.jsonl"
    job = {"id": "p1", "step": "pipeline", "workspace": str(ws), "inputs": pipeline_doc()}
    jobs.write_text(json.dumps(job) + "\n")
    code, _, err = orkeon(capsys, "jobs", "run", str(jobs), "--out", str(tmp_path / "out"))
    assert code == 0, err
    result = json.loads((tmp_path / "out/p1/result.json").read_text())
    assert result["step"] == "pipeline" and (tmp_path / "out/p1/steps/dev-batches").is_dir()
    code, out, _ = orkeon(capsys, "jobs", "merge", str(tmp_path / "out"))
    (row,) = json.loads(out)["rows"]
    assert (row["status"], row["calls"], row["turns"]) == ("succeeded", 4, 9)
    assert row["seconds"] == result["budget"]["used_seconds"]


def test_plain_progress_shows_each_step_start_and_end(ws, tmp_path, capsys):
    command, program = refusing_hook(tmp_path, once=True)
    doc = with_hook(pipeline_doc(), command, program)
    code, _, err = orkeon(capsys, "run", "pipeline", "--workspace", str(ws), "--output", "json",
                          "--progress", "plain", "--inputs", json.dumps(doc))  # fmt: skip
    assert code == 0
    steps = [line for line in err.splitlines() if ": step " in line]
    assert steps[:5] == [
        "dev-spec: step started", "dev-spec: step succeeded (exit 0)",
        "dev-plan: step started", "dev-plan: step succeeded (exit 0)",
        "dev-batches: step started",
    ]  # fmt: skip
    assert steps[5].startswith("dev-batches: step failed (exit 1): every call of role b1/api")
    assert steps[6:] == [
        "tasks-repair-1: step started", "tasks-repair-1: step succeeded (exit 0)",
        "dev-batches: step resumed", "dev-batches: step succeeded (exit 0)",
    ]  # fmt: skip
    plain = [line for line in err.splitlines() if not line.startswith("{")]  # not the logs
    assert plain[-1].startswith("pipeline: succeeded (exit 0) in ")


@pytest.mark.parametrize(
    ("first", "repaired"), [("api", ["b1/api"]), ("web", ["b1/web", "b1/api"])]
)
def test_when_only_the_audit_failed_roles_are_repaired_in_plan_order_until_it_passes(
    ws, tmp_path, capsys, first, repaired
):
    """Both roles of b1 succeeded, the audit failed (b1/api's write was refused once): the
    roles are repaired in plan order, and the round ends at the first repair whose own
    audit passes."""
    roles = {
        "api": {"name": "api", "roots": ["src/"], "task": "write src/hello.txt"},
        "web": {"name": "web", "roots": ["web/"], "task": "write web/x.txt"},
    }
    order = [roles[first], *(r for n, r in roles.items() if n != first)]
    plan = {"batches": [{"name": "b1", "roles": order}]}
    script = {**pipeline_script(plan), "b1/web": [{"tool_calls": [write("web/x.txt", "x\n")]}]}
    command, program = refusing_hook(tmp_path, once=True)
    doc = with_hook(
        pipeline_doc(model={"provider": "scripted", "script": script}), command, program
    )
    code, result, _ = run_json(capsys, "pipeline", ws, doc=doc)
    assert code == 0, result["error"]
    repairs = [s for s in result["steps"] if s["step"] == "tasks-repair"]
    assert [s["name"] for s in repairs] == [f"tasks-repair-{n + 1}" for n in range(len(repaired))]
    assert [s["roles"][0]["name"] for s in repairs] == repaired
    assert [s["audits"][0]["passed"] for s in repairs] == [False] * (len(repaired) - 1) + [True]
