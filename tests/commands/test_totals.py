"""Totals that add up over a run's attempts, through `orkeon run` as CI runs it (a real
process; docs/output.md, "budget"; docs/inputs.md, "budget"): "after a `--resume` the
result's `budget` is the whole run's, every attempt of it, with `attempt` (the last
attempt's own figures) and `attempts` beside it", "the budget spans attempts", and "roles
running at once pass a `turns`, `tokens` or `usd` limit by at most one answer in flight
per role: `budget.overshoot` says by how much"."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from kit.fakes import openai_api
from kit.process import orkeon
from kit.steps import environ, events, make_workspace

from orkeon_run.commands.summary import summary

FILES = {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}
WRITE_SPEC = {
    "tool_calls": [
        {"tool": "file_write", "input": {"file_path": ".orkeon/spec.md", "content": "# Spec\n"}}
    ],
    "usage": {"input_tokens": 1000, "output_tokens": 100},
}
# $1 per million input tokens, $10 per million output: each answer of 1000 in, 100 out
# costs $0.002.
PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 10.0}
USAGE = {"input_tokens": 1000, "output_tokens": 100}


def spec_doc(**budget: Any) -> dict[str, Any]:
    """dev-spec whose writer first gives up ("not yet": exit 1, no spec), and on a
    `--resume` writes the spec: 2 answers in the first attempt, 2 in the second."""
    script = {
        "analyst": [{"text": "src/app.py prints hi.", "usage": USAGE}],
        "writer": [{"text": "not yet", "usage": USAGE}, WRITE_SPEC, {"text": "ok", "usage": USAGE}],
    }
    doc: dict[str, Any] = {
        "request": "add a greeting",
        "model": {"provider": "scripted", "script": script, "price": PRICE},
    }
    if budget:
        doc["budget"] = budget
    return doc


def first_attempt(tmp: Path, doc: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    ws = make_workspace(tmp, FILES)
    rd = tmp / "run"
    proc = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--run-dir", str(rd),
        "--output", "json", "--inputs", json.dumps(doc), cwd=tmp
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    return rd, json.loads(proc.stdout)


def test_a_resumed_result_reports_the_whole_run_beside_its_last_attempt(tmp_path: Path) -> None:
    """docs/output.md, "budget": "`turns`, `usd`, … are the whole run's, every attempt of
    it; `attempt` is the last attempt's own; `attempts` counts them"; the action's
    `cost_usd` (GITHUB_OUTPUT) is the whole run's."""
    rd, first = first_attempt(tmp_path, spec_doc())
    b1 = first["budget"]
    assert (b1["turns"], b1["attempts"], b1["attempt"]["turns"]) == (2, 1, 2)
    assert b1["usd"] == b1["attempt"]["usd"] == 0.004

    out = tmp_path / "github_output"
    gh = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(out)}
    proc = orkeon(
        "run",
        "dev-spec",
        "--resume",
        str(rd),
        "--output",
        "json",
        env=environ(tmp_path, **gh),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    b2 = json.loads(proc.stdout)["budget"]
    assert b2["attempts"] == 2
    # The writer's two answers of this attempt, after the analyst's and the writer's first.
    assert b2["attempt"] == {"used_seconds": b2["attempt"]["used_seconds"], "turns": 2,
                             "tokens_in": 2000, "tokens_out": 200, "usd": 0.004}  # fmt: skip
    assert (b2["turns"], b2["tokens_in"], b2["tokens_out"], b2["usd"]) == (4, 4000, 400, 0.008)
    assert b2["used_seconds"] >= b1["used_seconds"] + b2["attempt"]["used_seconds"] - 1e-6
    assert b2["exhausted"] is None and b2["overshoot"] is None
    assert re.search(r"^cost_usd<<(\S+)\n0\.008\n\1$", out.read_text(), re.M)
    # result.json says the same; run.start told the progress views what came before.
    assert json.loads((rd / "result.json").read_text())["budget"]["turns"] == 4
    start = events(rd, "run.start")[-1]
    assert start["earlier"]["turns"] == 2 and start["attempt"] == 2
    # A third attempt counts on from the second's whole-run figures.
    again = orkeon("run", "dev-spec", "--resume", str(rd), "--output", "json", cwd=tmp_path)
    b3 = json.loads(again.stdout)["budget"]
    assert b3["attempts"] == 3
    assert " over 3 attempts (this one: " in summary(json.loads(again.stdout))
    assert b3["turns"] == b2["turns"] + b3["attempt"]["turns"]


def test_the_budget_spans_attempts(tmp_path: Path) -> None:
    """docs/inputs.md, "budget": "the budget spans a run's attempts: a `--resume` goes on
    with what the earlier attempts left". A fresh budget per attempt would let this
    resumed writer finish (exit 0); the 3-turn budget stops it after one more answer."""
    rd, first = first_attempt(tmp_path, spec_doc(turns=3))
    assert first["budget"]["turns"] == 2
    proc = orkeon("run", "dev-spec", "--resume", str(rd), "--output", "json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    result = json.loads(proc.stdout)
    assert result["budget"]["exhausted"] == "turns"
    assert (result["budget"]["turns"], result["budget"]["attempt"]["turns"]) == (3, 1)
    assert result["error"]["message"].startswith("the step's turn budget is spent")


def test_a_resume_whose_earlier_attempts_spent_a_limit_says_so_and_a_higher_one_goes_on(
    tmp_path: Path,
) -> None:
    """docs/inputs.md, "Resume": "a run whose earlier attempts spent a limit stops at once
    (exit 3) with a warning that says so; give a higher limit to go on"."""
    rd, first = first_attempt(tmp_path, spec_doc(turns=2))
    assert (first["budget"]["turns"], first["budget"]["exhausted"]) == (2, None)
    stuck = orkeon("run", "dev-spec", "--resume", str(rd), "--output", "json", cwd=tmp_path)
    assert stuck.returncode == 3, stuck.stderr
    assert (
        "--resume: the earlier attempts spent the turn budget (2 of 2 turns); the budget "
        "spans attempts: give a higher limit to go on"
    ) in stuck.stderr
    assert json.loads(stuck.stdout)["budget"]["attempt"]["turns"] == 0
    more = json.dumps({"budget": {"turns": 10}})
    proc = orkeon("run", "dev-spec", "--resume", str(rd), "--output", "json",
                  "--inputs", more, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    b = json.loads(proc.stdout)["budget"]
    assert (b["attempts"], b["turns"], b["attempt"]["turns"]) == (3, 4, 2)


PLAN = {
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": n, "roots": [f"{n}/"], "task": f"write {n}/x"}
                for n in ("api", "docs", "tests")
            ],
        }
    ]
}


def test_roles_crossing_a_limit_together_pass_it_by_one_answer_each_and_the_result_says_so(
    tmp_path: Path,
) -> None:
    """docs/inputs.md, "When it runs out": "roles running at once pass a `turns`, `tokens`
    or `usd` limit by at most one answer in flight per role, and the result's
    `budget.overshoot` says by how much". Three roles' answers are held at the fake
    provider until all three have been asked for: each started under the 2-turn and $0.30
    limits, and all three land. Each is the role's final answer, so no role wanted more:
    the step succeeded past its limits ("a limit reached by the last answer of a finished
    step is not exhausted"), and says how far past."""
    ws = make_workspace(tmp_path, {"README.md": "# demo\n"})
    together = threading.Barrier(3, timeout=60)

    def held(_req: Any) -> Any:
        together.wait()  # all three roles' requests are in flight
        return openai_api.completion("nothing to do", usage=(12, 5))

    with openai_api.OpenAIFake() as server:
        server.push(held, held, held)
        server.answer_always(openai_api.completion("never asked"))
        model = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url,
                 "api_key_env": "TOTALS_KEY",
                 # $10,000 per million tokens: each answer (12 in, 5 out) costs $0.17.
                 "price": {"input_per_mtok": 10000.0, "output_per_mtok": 10000.0}}  # fmt: skip
        doc = {"model": model, "plan": PLAN, "concurrency": 3,
               "budget": {"turns": 2, "usd": 0.3}}  # fmt: skip
        # (the batch changes no file: a warning, not a failed audit, by default)
        proc = orkeon(
            "run", "dev-batches", "--workspace", str(ws), "--run-dir",
            str(tmp_path / "run"), "--output", "json", "--inputs", json.dumps(doc),
            env=environ(tmp_path, TOTALS_KEY="sk-test"), cwd=tmp_path
        )  # fmt: skip
        asked = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    b = json.loads(proc.stdout)["budget"]
    assert asked == 3
    assert (b["turns"], b["usd"]) == (3, 0.51)
    assert b["overshoot"] == {"turns": 1, "tokens": 0, "usd": 0.21}
    assert b["exhausted"] is None
    # --output text says it too.
    text = summary(json.loads(proc.stdout))
    assert "3 turns, 51 tokens, $0.5100; past the limit by 1 turn, $0.2100" in text
