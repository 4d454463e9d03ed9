"""One cap for the whole batch (docs/scale.md, "One cap for the whole batch"): "`orkeon jobs
run --max-usd/--max-tokens/--max-seconds` caps the sum over every job the process runs:
no job starts once the total is spent, a job that starts gets its share of what is left,
and the jobs not started are `skipped` with `skipped: "budget"`, not failed; K concurrent
jobs overshoot the cap by at most one in-flight model turn each, and the summary says by
how much"; `jobs matrix` splits a cap across the shards, `jobs merge` shows spent
against cap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kit.jobs import environ, template
from kit.process import orkeon
from kit.steps import scripted, write

from orkeon_run.commands.jobs import batch_caps
from orkeon_run.errors import InputError
from orkeon_run.jobs.cap import BatchCap

# Each job's writer answers once with 1000 input tokens at $1000 per million: $1 a job.
PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 0.0}
TURN_USD = 1.0


def job_list(folder: Path, count: int, model: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    repo = template(folder)
    lines = []
    for n in range(count):
        ws = folder / "ws" / f"job-{n:03d}"
        ws.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(repo, ws, symlinks=True)
        turn = {
            "tool_calls": [write(".orkeon/spec.md", f"# spec {n}\n")],
            "usage": {"input_tokens": 1000, "output_tokens": 0},
        }
        doc = {"request": "r", **scripted({"writer": [turn]})}
        doc["model"]["price"] = PRICE
        if model is not None:
            doc["model"] = model
        line = {"id": f"job-{n:03d}", "step": "dev-spec", "workspace": str(ws), "inputs": doc}
        lines.append(json.dumps(line))
    path = folder / "jobs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_30_job_batch_whose_shared_cap_runs_out_half_way(tmp_path: Path) -> None:
    jobs = job_list(tmp_path / "list", 30)
    out = tmp_path / "out"
    env = environ(tmp_path)
    res = orkeon("jobs", "run", str(jobs), "--out", str(out), "--concurrency", "1",
                 "--max-usd", "15.5", env=env, cwd=tmp_path)  # fmt: skip
    # Jobs skipped for the cap are a budget that ran out: exit 3, not a failure.
    assert res.returncode == 3, res.stderr
    summary = json.loads(res.stdout)
    # 15 jobs at $1 fit; the 16th starts on the $0.50 left and its one turn passes it;
    # then nothing is left and the other 14 never start.
    assert summary["jobs"]["succeeded"] == 15
    assert summary["jobs"]["budget_exhausted"] == 1
    assert summary["jobs"]["skipped"] == 14
    assert summary["jobs"]["failed"] == 0
    assert summary["cap"] == {
        "usd": {"cap": 15.5, "spent": 16.0, "overshoot": 0.5},
        "skipped": 14,
    }
    assert summary["cap"]["usd"]["overshoot"] <= TURN_USD  # one in-flight turn, K = 1
    skipped = [r for r in summary["rows"] if r["status"] == "skipped"]
    assert [r["id"] for r in skipped] == [f"job-{n:03d}" for n in range(16, 30)]
    assert all(r["skipped"] == "budget" and r["attempts"] == 0 for r in skipped)
    assert not (out / "job-020" / "result.json").exists()  # never started
    assert "job job-016: skipped: the batch's cap is spent" in res.stderr
    # The 16th job ran on its share, not on its own (unlimited) cost budget.
    start = json.loads((out / "job-015" / "events.jsonl").read_text().splitlines()[0])
    assert start["type"] == "run.start" and start["budget"]["usd"] == pytest.approx(0.5)

    merged = orkeon("jobs", "merge", str(out), env=env, cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    report = json.loads(merged.stdout)
    assert report["jobs"]["skipped"] == 14
    assert report["cap"] == {
        "shards": 1,
        "skipped": 14,
        "usd": {"cap": 15.5, "spent": 16.0, "overshoot": 0.5},
    }
    md = orkeon("jobs", "merge", str(out), "--format", "md", env=env, cwd=tmp_path)
    assert "$16.00 of a $15.50 cap (over by $0.5000; 14 jobs skipped)" in md.stdout
    junit = orkeon("jobs", "merge", str(out), "--format", "junit", env=env, cwd=tmp_path)
    assert junit.stdout.count("<skipped ") == 14 and 'skipped="14"' in junit.stdout

    # A later run with more cap runs the skipped jobs only.
    again = orkeon("jobs", "run", str(jobs), "--out", str(out), "--concurrency", "1",
                   "--max-usd", "100", env=env, cwd=tmp_path)  # fmt: skip
    later = json.loads(again.stdout)
    assert later["jobs"]["skipped"] == 0 and later["jobs"]["succeeded"] == 29
    assert later["cap"]["usd"]["spent"] == 14.0  # only what this process ran


def test_concurrent_jobs_overshoot_by_at_most_one_turn_each(tmp_path: Path) -> None:
    jobs = job_list(tmp_path / "list", 12)
    out = tmp_path / "out"
    k = 3
    res = orkeon("jobs", "run", str(jobs), "--out", str(out), "--concurrency", str(k),
                 "--max-usd", "4.5", env=environ(tmp_path), cwd=tmp_path)  # fmt: skip
    summary = json.loads(res.stdout)
    counts = summary["jobs"]
    assert counts["skipped"] > 0 and counts["failed"] == 0
    assert counts["succeeded"] + counts["budget_exhausted"] + counts["skipped"] == 12
    spent = summary["cap"]["usd"]["spent"]
    assert spent == summary["usd"]  # the cap counts what the jobs' results say they spent
    assert spent <= 4.5 + k * TURN_USD
    assert summary["cap"]["usd"]["overshoot"] == round(max(0.0, spent - 4.5), 6)


def test_the_share_rule() -> None:
    cap = BatchCap({"usd": 9.0, "tokens": 100}, slots=3)
    a, b = cap.take("a"), cap.take("b")
    assert a == {"usd": 3.0, "tokens": 33} and b == {"usd": 3.0, "tokens": 33}
    cap.give_back("a", {"budget": {"usd": 1.0, "tokens_in": 10, "tokens_out": 0}})
    # What a spent is counted; the rest of its share is free again: (9 - 1 - 3) / 2.
    assert cap.take("c") == {"usd": 2.5, "tokens": 28}
    cap.give_back("b", {"budget": {"usd": 3.0, "tokens_in": 30, "tokens_out": 0}})
    cap.give_back("c", {"budget": {"usd": 5.0, "tokens_in": 60, "tokens_out": 0}})
    assert cap.take("d") is None  # $9 spent of $9: nothing more starts
    assert cap.summary() == {
        "usd": {"cap": 9.0, "spent": 9.0, "overshoot": 0.0},
        "tokens": {"cap": 100, "spent": 100.0, "overshoot": 0.0},
        "skipped": 1,
    }


def test_a_cost_cap_with_a_model_that_has_no_price_is_refused(tmp_path: Path) -> None:
    model = {"provider": "openai", "model": "my-local-model", "base_url": "http://127.0.0.1:9/v1",
             "api_key_env": "CAP_TEST_KEY"}  # fmt: skip
    jobs = job_list(tmp_path / "list", 2, model=model)
    env = environ(tmp_path, CAP_TEST_KEY="sk-test")
    out = tmp_path / "out"
    res = orkeon("jobs", "run", str(jobs), "--out", str(out), "--max-usd", "5", env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and all("--max-usd: model.price: no price" in x for x in lines)
    assert not out.exists()  # nothing ran
    # Without a cost cap the same list is fine to start (a token cap needs no price).
    assert "--max-usd" not in orkeon("jobs", "validate", str(jobs), env=env).stderr


@pytest.mark.parametrize(
    ("given", "environ_", "problem"),
    [
        ({"usd": "0"}, {}, "--max-usd: must be greater than 0"),
        ({"tokens": "ten"}, {}, "--max-tokens: 'ten' is not a number"),
        ({}, {"ORKEON_JOBS_MAX_SECONDS": "-5"}, "ORKEON_JOBS_MAX_SECONDS: must be greater"),
    ],
)
def test_bad_caps_name_their_flag(
    given: dict[str, str], environ_: dict[str, str], problem: str
) -> None:
    with pytest.raises(InputError) as caught:
        batch_caps(given, environ_)
    assert problem in str(caught.value)


def test_a_flag_wins_over_the_variable_and_none_lifts_the_cap() -> None:
    env = {"ORKEON_JOBS_MAX_USD": "3"}
    assert batch_caps({}, env) == {"usd": 3.0}
    assert batch_caps({"usd": "7"}, env) == {"usd": 7.0}
    assert batch_caps({"usd": "none"}, env) == {}


def test_matrix_splits_the_cap_across_the_shards(tmp_path: Path) -> None:
    jobs = job_list(tmp_path / "list", 8)
    env = environ(tmp_path)
    gh = orkeon("jobs", "matrix", str(jobs), "--shards", "4", "--for", "github",
                "--max-usd", "100", env=env)  # fmt: skip
    include = json.loads(gh.stdout)["include"]
    assert include and {e["max_usd"] for e in include} == {"25"}
    whole = orkeon("jobs", "matrix", str(jobs), "--shards", "4", "--for", "github",
                   "--max-usd", "100", "--per-shard", env=env)  # fmt: skip
    assert {e["max_usd"] for e in json.loads(whole.stdout)["include"]} == {"100"}
    k8s = orkeon("jobs", "matrix", str(jobs), "--shards", "4", "--for", "kubernetes",
                 "--max-tokens", "1000", env=env)  # fmt: skip
    assert "--max-tokens 250" in k8s.stdout
    gl = orkeon("jobs", "matrix", str(jobs), "--shards", "2", "--for", "gitlab",
                "--max-seconds", "600", env=env)  # fmt: skip
    assert (
        "ORKEON_JOBS_MAX_SECONDS: '300'" in gl.stdout
        or 'ORKEON_JOBS_MAX_SECONDS: "300"' in gl.stdout
    )
