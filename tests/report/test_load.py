"""`orkeon report`: reading a run directory (report/load.py) and the command's contract
(formats, -o, bad RUN_DIR). Runs are real (kit/report.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kit.report import HOSTILE_NAME, Runs, make_runs

from orkeon_run.cli import run_cli
from orkeon_run.errors import InputError
from orkeon_run.report.load import load


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory)


def test_a_finished_run_is_read_as_its_result_says(runs: Runs) -> None:
    v = load(runs.mixed)
    r = runs.mixed_result
    assert (v.status, v.exit_code, v.finished, v.attempts) == ("failed", 1, True, 1)
    assert (v.error, v.error_kind) == (r["error"]["message"], "audit")
    assert v.run_id == r["run_id"] and v.step == "dev-batches"
    assert [(x.name, x.status, x.turns, x.calls, x.refused) for x in v.roles] == [
        (x["name"], x["status"], x["turns"], x["calls"], x["refused"]) for x in r["roles"]
    ]
    a = v.roles[0]
    assert a.refused_by == {"hook": 1, "gate": 1, "roots": 1, "invalid": 1}
    assert [c.target for c in v.refused_calls if c.stage == "roots"] == [HOSTILE_NAME]
    assert v.budget == r["budget"] and v.limits == {"seconds": 1800.0}
    assert [(x.batch, x.passed, x.failed_command) for x in v.audits] == [
        ("b1", False, ["test", "-f", "src/a/missing.py"])
    ]
    assert [(b.name, b.roles, b.passed) for b in v.batches] == [("b1", ["b1/a", "b1/b"], False)]
    assert v.problems == []


def test_hook_decisions_name_the_hook_that_refused_and_the_one_that_failed(runs: Runs) -> None:
    v = load(runs.mixed)
    by_target = {c.target: c for c in v.calls}
    assert [h.decision for h in by_target["src/a/generated/t.py"].hooks] == ["refused"]
    assert [h.decision for h in by_target["src/a/lint.py"].hooks] == ["passed", "failed"]
    assert [h.decision for h in by_target["src/a/ok.py"].hooks] == ["passed", "passed"]
    (failed,) = v.failed_hooks
    assert failed.event == "post-tool" and failed.n == 2 and failed.exit_code == 1
    assert failed.first_line.startswith("lint failed: <img")


def test_settings_hooks_tokens_and_cost(runs: Runs) -> None:
    v = load(runs.stopped)
    a, b = v.roles
    assert (a.name, a.status, a.error) == ("b1/a", "stopped", "a stops here")
    (call,) = [c for c in v.calls if c.role == "b1/a"]
    assert [h.decision for h in call.hooks] == ["refused"]  # continue: false, exit 0
    (call,) = [c for c in v.calls if c.role == "b1/b"]
    assert [(h.event, h.decision) for h in call.hooks] == [
        ("PreToolUse", "passed"),
        ("PostToolUse", "blocked"),
    ]
    assert "[PostToolUse hook (echo use tabs >&2; exit 2) feedback: use tabs]" in call.result
    assert (b.tokens_in, b.tokens_out) == (2400, 600)
    assert b.usd == pytest.approx(2 * (1200 * 3 + 300 * 15) / 1e6)
    assert v.budget["usd"] == pytest.approx(a.usd + b.usd)
    (stop,) = v.hooks
    assert (stop.event, stop.role, stop.decision) == ("Stop", "b1/b", "failed")
    assert v.limits == {"seconds": 600.0, "usd": 5.0}
    assert v.budget_points[-1].usd == pytest.approx(v.budget["usd"])


def test_a_killed_run_is_unfinished_and_counted_from_its_events(runs: Runs) -> None:
    assert not (runs.killed / "result.json").exists()
    v = load(runs.killed)
    assert (v.status, v.exit_code, v.finished) == ("unfinished", None, False)
    assert [(r.name, r.status, r.turns, r.calls, r.refused) for r in v.roles] == [
        ("b1/a", "unfinished", 2, 2, 1),
        ("b1/b", "not_started", 0, 0, 0),
    ]
    assert v.budget["turns"] == 2 and v.budget["from_events"] is True
    assert [b.passed for b in v.batches] == [None]


def test_torn_lines_and_a_broken_result_are_problems_not_errors(runs: Runs, tmp_path: Path) -> None:
    rd = tmp_path / "copy"
    shutil.copytree(runs.mixed, rd)
    n = len((rd / "events.jsonl").read_text().splitlines())
    with (rd / "events.jsonl").open("a") as f:
        f.write('[1, 2]\n{"type": "tool.call", "ts": 1, "ro')
    (rd / "result.json").write_text("{not json")
    v = load(rd)
    assert v.problems == [
        "result.json: unreadable (JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        f"events.jsonl line {n + 1}: not an event",
        f"events.jsonl line {n + 2}: not JSON (a torn line?)",
    ]
    assert v.status == "failed"  # the `result` event still says so
    assert len(v.calls) == 7


def test_a_result_without_events_still_reports(runs: Runs, tmp_path: Path) -> None:
    rd = tmp_path / "copy"
    shutil.copytree(runs.mixed, rd)
    (rd / "events.jsonl").unlink()
    v = load(rd)
    assert (v.status, v.exit_code) == ("failed", 1)
    assert [(r.name, r.calls, r.refused) for r in v.roles] == [("b1/a", 6, 4), ("b1/b", 1, 0)]
    assert [a.passed for a in v.audits] == [False]


def test_a_resumed_attempt_without_result_is_unfinished(runs: Runs, tmp_path: Path) -> None:
    rd = tmp_path / "copy"
    shutil.copytree(runs.mixed, rd)
    with (rd / "events.jsonl").open("a") as f:
        f.write(json.dumps({"type": "run.start", "ts": 2e9, "run_id": "r", "step": "dev-batches",
                            "workspace": "/w", "run_dir": str(rd), "resume": True}) + "\n")  # fmt: skip
    v = load(rd)
    assert (v.status, v.attempts, v.finished) == ("unfinished", 2, False)
    assert v.problems == [
        "the last attempt has no result; result.json is an earlier attempt's (failed)"
    ]


@pytest.mark.parametrize("make", ["missing", "empty", "file"])
def test_bad_run_dir_is_one_line_and_exit_2(
    tmp_path: Path, make: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "x"
    if make == "empty":
        target.mkdir()
    elif make == "file":
        target.write_text("{}")
    with pytest.raises(InputError):
        load(target)
    assert run_cli(["report", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("orkeon: RUN_DIR: not a")


@pytest.mark.parametrize("fmt", ["md", "html", "junit", "json"])
def test_each_format_to_stdout_or_a_file(
    runs: Runs, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["report", str(runs.mixed), "--format", fmt]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / f"report.{fmt}"
    assert run_cli(["report", str(runs.mixed), "--format", fmt, "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text() == printed and len(printed) > 500


def test_json_is_the_view(runs: Runs, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["report", str(runs.mixed), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "failed" and doc["exit_code"] == 1
    assert [r["name"] for r in doc["roles"]] == ["b1/a", "b1/b"]
    assert doc["roles"][0]["refused_by"]["gate"] == 1
    refused = [c for c in doc["calls"] if c["outcome"] == "refused"]
    assert [c["stage"] for c in refused] == ["hook", "gate", "roots", "invalid"]
    assert refused[1]["result"] == "[refused by the gate: Write(secret/**)]"


def test_bad_format_and_unwritable_output_are_exit_2(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["report", str(runs.mixed), "--format", "pdf"]) == 2
    assert run_cli(["report", str(runs.mixed), "-o", str(tmp_path / "no" / "such" / "f.md")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("orkeon: -o: cannot write ") and len(err) == 2
