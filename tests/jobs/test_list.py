"""`orkeon jobs validate`, `orkeon jobs matrix` and the report formats of `orkeon jobs
merge` (docs/scale.md)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml
from kit import ORKEON
from kit.jobs import environ, make_list
from kit.process import orkeon
from kit.steps import scripted, write

from orkeon_run.cli import run_cli
from orkeon_run.jobs.shards import shard_of
from orkeon_run.report.html_assets import STYLE
from orkeon_run.run.records import RunRecords
from orkeon_run.run.steps import STEPS

STEP_LIST = ", ".join(STEPS)  # the step registry's, in its order

SPEC = {"request": "r", **scripted({"writer": [{"tool_calls": [write(".orkeon/spec.md", "s")]}]})}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def job(job_id: object, **more: object) -> str:
    """A job line whose workspace is `w-ID` (each job needs its own)."""
    line = {"id": job_id, "step": "dev-spec", "workspace": f"w-{job_id}", "inputs": SPEC}
    return json.dumps({**line, **more})


def folders(root: Path, *ids: str) -> None:
    for i in ids:
        (root / f"w-{i}").mkdir()


def test_validate_names_every_problem_by_line_and_field(tmp_path, capsys, monkeypatch):
    folders(tmp_path, "a", "c", "e", "g", "h", "i")
    (tmp_path / "other.json").write_text(json.dumps({"request": "r", "colour": "red"}))
    git = {"git": "https://example.invalid/r.git", "ref": "--upload-pack=touch /tmp/x"}
    lines = [
        job("a"),
        "{not json",
        job("a"),
        json.dumps({"id": "bad id", "step": "dev-foo", "workspace": "nope", "inputs": 3, "x": 1}),
        job("c", inputs={"request": "r", "colour": "red", "budget": {"seconds": 0}}),
        job("d", workspace=git),
        job("e", inputs={"model": {"provider": "scripted"}}),
        job("f", workspace={"git": "https://example.invalid/r.git"}, inputs={}),
        job("g", inputs="@missing.json"),
        job("h", inputs="@other.json"),
        job("i", inputs={"request": "r", "workspace": "elsewhere"}),
        job("k", workspace="./w-a/"),
        "",
        "[1, 2]",
        json.dumps({"step": "dev-plan"}),
    ]
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, "jobs", "validate", str(jobs))
    assert (code, out) == (2, "")
    j = str(jobs)
    assert err.splitlines() == [
        f"orkeon: {j}:2: not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        f"orkeon: {j}:3: id: 'a' is also the id of line 1",
        f"orkeon: {j}:4: x: unknown key",
        f"orkeon: {j}:4: id: 'bad id' is not a job id (letters, digits, `_.-`, starting with a letter or digit, at most 128 characters)",
        f"orkeon: {j}:4: step: unknown step 'dev-foo' (one of: {STEP_LIST}; a step is registered in orkeon_run/run/steps/__init__.py)",
        f"orkeon: {j}:4: workspace: not a directory: nope",
        f'orkeon: {j}:4: inputs: an object or "@PATH"',
        f"orkeon: {j}:6: workspace.ref: '--upload-pack=touch /tmp/x' is not a branch, tag or commit name",
        f"orkeon: {j}:9: inputs: no such file: {tmp_path / 'missing.json'}",
        f"orkeon: {j}:11: inputs.workspace: the job's workspace is used; remove this key",
        f"orkeon: {j}:12: workspace: also the workspace of line 1 (jobs run at the same time: give each its own)",
        f"orkeon: {j}:14: a job must be a JSON object",
        f"orkeon: {j}:15: id: required",
        f"orkeon: {j}:15: workspace: required",
        f"orkeon: {j}:15: inputs: required",
    ]

    # With the shape right, each job's inputs are checked as `orkeon validate` checks them.
    jobs.write_text("\n".join(lines[i] for i in (0, 4, 6, 7, 9)) + "\n")
    code, out, err = cli(capsys, "jobs", "validate", str(jobs))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"orkeon: {j}:2: inputs.budget.seconds: Input should be greater than 0",
        f"orkeon: {j}:2: inputs.colour: unknown key",
        f"orkeon: {j}:3: inputs.request: dev-spec needs a request (what to build, as text)",
        f'orkeon: {j}:4: inputs.model: required; "provider": "scripted" runs a script with no network',
        f"orkeon: {j}:4: inputs.request: dev-spec needs a request (what to build, as text)",
        f"orkeon: {j}:5: inputs.colour: unknown key",
    ]

    # A tasks-repair job takes the plan from the failed run's saved inputs, as its run will.
    failed = tmp_path / "failed-run"
    failed.mkdir()
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    # Written as a run writes them, sealed (run/records.py): a repair reads nothing else.
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    records = RunRecords.create(failed, "20260101-000000-abcdef")
    records.write("inputs.json", {"plan": plan, "model": {"provider": "scripted"}})
    records.write("state.json", {"run_id": "20260101-000000-abcdef", "step": "dev-batches"})
    repair = {"repair": {"run": str(failed), "role": "b1/api"}}
    jobs.write_text(
        lines[0]
        + "\n"
        + job("b", workspace={"git": "file:///nowhere", "ref": "v1.2"})
        + "\n"
        + job("h", step="tasks-repair", inputs=repair)
        + "\n"
    )
    assert cli(capsys, "jobs", "validate", str(jobs)) == (0, "3 jobs are valid\n", "")


def test_a_json_array_is_a_job_list_too_and_its_problems_name_their_lines(tmp_path, capsys):
    folders(tmp_path, "a", "b")
    jobs = tmp_path / "jobs.json"
    jobs.write_text(f"[\n  {job('a')},\n\n  {job('b', step='dev-nope')}\n]\n")
    code, _, err = cli(capsys, "jobs", "validate", str(jobs))
    assert code == 2
    assert (
        err
        == f"orkeon: {jobs}:4: step: unknown step 'dev-nope' (one of: {STEP_LIST}; a step is registered in orkeon_run/run/steps/__init__.py)\n"
    )
    jobs.write_text(f"[{job('a')}, {job('b')}]")
    assert cli(capsys, "jobs", "validate", str(jobs)) == (0, "2 jobs are valid\n", "")


def test_a_jobs_shard_depends_on_its_id_only(tmp_path, capsys):
    jobs = make_list(tmp_path / "list", 40, ("spec",))
    lines = jobs.read_text().splitlines()
    code, out, _ = cli(capsys, "jobs", "matrix", str(jobs), "--shards", "5", "--for", "github")
    assert code == 0
    jobs.write_text("\n".join(reversed(lines)) + "\n")
    assert cli(capsys, "jobs", "matrix", str(jobs), "--shards", "5", "--for", "github")[1] == out
    include = json.loads(out)["include"]
    ids = [json.loads(line)["id"] for line in lines]
    assert include == [
        {"shard": f"{i}/5", "jobs": sum(shard_of(j, 5) == i for j in ids)}
        for i in range(1, 6)
        if any(shard_of(j, 5) == i for j in ids)
    ]
    assert sum(e["jobs"] for e in include) == 40
    assert len({shard_of(j, 5) for j in ids}) > 1  # the hash spreads them


def test_the_github_matrix_stays_within_256_entries(tmp_path, capsys):
    jobs = tmp_path / "jobs.jsonl"
    folders(tmp_path, *(f"j{n}" for n in range(600)))
    jobs.write_text("".join(job(f"j{n}") + "\n" for n in range(600)))
    code, out, _ = cli(capsys, "jobs", "matrix", str(jobs), "--shards", "256", "--for", "github")
    assert code == 0 and "\n" not in out.rstrip("\n")  # one line, for $GITHUB_OUTPUT
    include = json.loads(out)["include"]
    assert 200 < len(include) <= 256
    assert sum(e["jobs"] for e in include) == 600
    code, out, err = cli(capsys, "jobs", "matrix", str(jobs), "--shards", "257", "--for", "github")
    assert (code, out) == (2, "")
    assert err == (
        "orkeon: --shards: GitHub Actions runs at most 256 jobs from one matrix; "
        "ask for 256 shards or fewer (each shard runs --concurrency jobs at a time)\n"
    )
    code, _, err = cli(capsys, "jobs", "matrix", str(jobs), "--shards", "201", "--for", "gitlab")
    assert code == 2 and "GitLab makes at most 200 jobs from one parallel:matrix" in err


def test_the_gitlab_matrix_is_yaml_a_job_can_extend(tmp_path, capsys):
    jobs = make_list(tmp_path / "list", 12, ("spec",))
    code, out, _ = cli(capsys, "jobs", "matrix", str(jobs), "--shards", "4", "--for", "gitlab")
    assert code == 0
    doc = yaml.safe_load(out)
    assert list(doc) == [".orkeon-shards"]
    values = doc[".orkeon-shards"]["parallel"]["matrix"][0]["SHARD"]
    ids = [json.loads(line)["id"] for line in jobs.read_text().splitlines()]
    assert values == [f"{i}/4" for i in sorted({shard_of(j, 4) for j in ids})]


def test_the_kubernetes_manifest_runs_shard_index_plus_one_in_each_pod(tmp_path, capsys):
    jobs = make_list(tmp_path / "list", 6, ("spec",))
    args = (
        "jobs",
        "matrix",
        str(jobs),
        "--shards",
        "3",
        "--for",
        "kubernetes",
        "--image",
        "ghcr.io/acme/orkeon:1",
    )
    code, out, _ = cli(capsys, *args, "--parallelism", "2")
    assert code == 0
    manifest = yaml.safe_load(out)
    spec = manifest["spec"]
    assert (manifest["apiVersion"], manifest["kind"]) == ("batch/v1", "Job")
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 2)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/acme/orkeon:1"
    sh, dash_c, script = container["command"]
    assert (sh, dash_c) == ("sh", "-c") and "JOB_COMPLETION_INDEX" in script
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/jobs", "/out"}

    # The pod's command, run here for each index (the mounts pointed at tmp_path): every
    # job runs once, in the shard its id hashes to.
    here = script.replace("/jobs/jobs.jsonl", str(jobs)).replace("/out/", f"{tmp_path}/out/")
    env = environ(tmp_path)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "orkeon"
    shim.write_text(f'#!/bin/sh\nexec {shlex.join(ORKEON)} "$@"\n')
    shim.chmod(0o755)
    pods = [
        subprocess.Popen(
            ["sh", "-c", here],
            env={**env, "JOB_COMPLETION_INDEX": str(i)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    for pod_proc in pods:
        _, err = pod_proc.communicate(timeout=120)
        assert pod_proc.returncode == 0, err
    ids = [json.loads(line)["id"] for line in jobs.read_text().splitlines()]
    for i in range(1, 4):
        folders = sorted(p.name for p in (tmp_path / "out" / f"shard-{i}").iterdir())
        ran = [j for j in ids if shard_of(j, 3) == i]
        assert folders == (["_seals", *ran] if ran else [])  # the runs' seals beside them


def test_merge_renders_markdown_html_and_junit_with_what_runs_wrote_escaped(tmp_path, capsys):
    jobs = make_list(tmp_path / "list", 3, ("spec", "failing", "budget"))
    lines = [json.loads(line) for line in jobs.read_text().splitlines()]
    hostile = ["false", "<script>alert(1)</script>|*x*\x01"]
    lines[1]["inputs"]["audit"] = {"test": hostile}
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    env = environ(tmp_path)
    assert orkeon("jobs", "run", str(jobs), "--out", str(out), env=env).returncode == 1

    code, md, _ = cli(capsys, "jobs", "merge", str(out), "--format", "md")
    assert code == 0
    assert "| jobs | 3: 1 succeeded, 1 failed, 1 budget\\_exhausted |" in md
    assert "<script>" not in md and "\\<script\\>alert(1)\\</script\\>\\|\\*x\\*" in md
    assert md.count("\n| job-001 |") == 2  # in the table of failures, and of every job

    code, page, _ = cli(capsys, "jobs", "merge", str(out), "--format", "html")
    assert code == 0 and "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # The run report's style and policy: one look for both pages, nothing runs or loads.
    assert f"<style>{STYLE}" in page and "default-src &#x27;none&#x27;" in page
    assert 'name="viewport"' in page

    target = tmp_path / "report.xml"
    code, stdout, _ = cli(capsys, "jobs", "merge", str(out), "--format", "junit", "-o", str(target))
    assert (code, stdout) == (0, "")
    suites = ET.fromstring(target.read_text())
    assert (suites.get("tests"), suites.get("failures"), suites.get("errors")) == ("3", "2", "0")
    cases = {c.get("name"): c for c in suites.iter("testcase")}
    assert list(cases) == ["job-000", "job-001", "job-002"]
    assert cases["job-000"].find("failure") is None
    failure = cases["job-001"].find("failure")
    assert failure is not None and failure.get("type") == "failed"
    assert "<script>alert(1)</script>|*x*\ufffd" in failure.get("message", "")
    assert cases["job-002"].find("failure").get("type") == "budget_exhausted"

    # Found below a folder that holds other things too, the same folder given twice, and
    # a copy of one job elsewhere: each job counts once.
    code, twice, err = cli(capsys, "jobs", "merge", str(tmp_path), str(out))
    assert (code, err) == (0, "")
    assert json.loads(twice)["jobs"]["total"] == 3
    shutil.copytree(out / "job-001", tmp_path / "elsewhere" / "a" / "job-001")
    code, copied, err = cli(capsys, "jobs", "merge", str(out), str(tmp_path / "elsewhere"))
    assert json.loads(copied)["jobs"]["total"] == 3
    assert err == (
        f"orkeon: job job-001 found twice: using {out / 'job-001'}, "
        f"not {tmp_path / 'elsewhere' / 'a' / 'job-001'}\n"
    )

    code, _, err = cli(capsys, "jobs", "merge", str(tmp_path / "nowhere"))
    assert (code, err) == (2, f"orkeon: DIR: not a folder: {tmp_path / 'nowhere'}\n")


def test_bad_command_lines_are_one_line_and_exit_2_and_an_empty_shard_is_exit_0(tmp_path, capsys):
    folders(tmp_path, "a")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(job("a") + "\n")
    (tmp_path / "file").write_text("")
    run = ("jobs", "run", str(jobs), "--out")
    out = str(tmp_path / "out")
    cases = {
        (
            *run,
            out,
            "--shard",
            "0/8",
        ): "orkeon: --shard: '0/8' is not I/N with 1 <= I <= N <= 100000 (e.g. 1/8)",
        (
            *run,
            out,
            "--shard",
            "9/8",
        ): "orkeon: --shard: '9/8' is not I/N with 1 <= I <= N <= 100000 (e.g. 1/8)",
        (
            *run,
            out,
            "--shard",
            "x",
        ): "orkeon: --shard: 'x' is not I/N with 1 <= I <= N <= 100000 (e.g. 1/8)",
        (*run, out, "--concurrency", "0"): "orkeon: --concurrency: 0 is not between 1 and 256",
        (*run, str(tmp_path / "file")): f"orkeon: --out: not a folder: {tmp_path / 'file'}",
        (
            "jobs",
            "run",
            str(tmp_path / "nope.jsonl"),
            "--out",
            out,
        ): f"orkeon: JOBS: no such file: {tmp_path / 'nope.jsonl'}",
        (
            "jobs",
            "matrix",
            str(jobs),
            "--shards",
            "0",
            "--for",
            "gitlab",
        ): "orkeon: --shards: 0 is not between 1 and 100000",
    }
    for args, line in cases.items():
        assert cli(capsys, *args) == (2, "", line + "\n"), args
    assert not (tmp_path / "out").exists()

    # Shard 1 of 2 of a one-job list is empty for one of the two: nothing runs, exit 0.
    empty = "1/2" if shard_of("a", 2) == 2 else "2/2"
    code, stdout, err = cli(capsys, *run, out, "--shard", empty)
    summary = json.loads(stdout)
    assert (code, summary["jobs"]["total"], summary["rows"]) == (0, 0, [])
    assert err == f"jobs: shard {empty}: 0 jobs (exit 0)\n"
