"""`orkeon jobs run` and `orkeon jobs merge` (docs/scale.md): many tiny scripted jobs in
tiny git workspaces, run as one shard and as one process a shard, killed and run again,
cloned from a local bare repository, failing at their provider."""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kit import DATA, git, spawn
from kit.fakes import openai_api
from kit.fakes.server import Recorded, Reply
from kit.jobs import KINDS, environ, make_list, template
from kit.process import orkeon
from kit.steps import calls, scripted, shell, write

from orkeon_run.cli import run_cli
from orkeon_run.jobs.shards import shard_of

HOOKS = DATA / "jobs"
PLAN_ONE = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """`orkeon ARGS` in this process: (exit code, stdout as JSON or None, stderr)."""
    code = run_cli(list(args))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def merged(capsys: pytest.CaptureFixture[str], *dirs: Path) -> dict[str, Any]:
    code, report, err = in_process(capsys, "jobs", "merge", *map(str, dirs))
    assert code == 0, err
    return report


def untimed(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what a clock measured or where the folders were."""
    keep = {k: v for k, v in report.items() if k not in ("seconds", "slowest", "rows")}
    keep["rows"] = [
        {k: v for k, v in r.items() if k not in ("seconds", "dir")} for r in report["rows"]
    ]
    return keep


# 42 jobs: each kind seven times and each `n % 7` of the tokens six times (two hundred proved
# no more, at five times the cost); four shards, each its own process, prove the split as
# eight did.
JOBS, SHARDS = 42, 4


@pytest.mark.slow
def test_jobs_add_up_the_same_as_one_shard_and_as_one_process_a_shard(tmp_path, capsys):
    a = tmp_path / "a"
    make_list(a, JOBS)
    b = tmp_path / "b"
    shutil.copytree(a, b, symlinks=True)  # the same list, the same workspaces, untouched
    env = environ(tmp_path)
    run = ["jobs", "run", "--concurrency", "4"]
    procs = [spawn(*run, str(a / "jobs.jsonl"), "--shard", "1/1", "--out", str(a / "out"), env=env)]
    procs += [
        spawn(
            *run,
            str(b / "jobs.jsonl"),
            "--shard",
            f"{i}/{SHARDS}",
            "--out",
            str(b / f"out{i}"),
            env=env,
        )
        for i in range(1, SHARDS + 1)
    ]
    # No time-out of its own: awaited to the end (the suite's time-out is the hang guard).
    done = [(p, *p.communicate()) for p in procs]
    summaries = [json.loads(out) for _, out, _ in done]
    for (p, _, err), summary in zip(done, summaries, strict=True):
        assert p.returncode == summary["exit_code"] == 1, err  # some jobs fail, by design

    ids = [f"job-{n:03d}" for n in range(JOBS)]
    for i, summary in enumerate(summaries[1:], start=1):
        assert [r["id"] for r in summary["rows"]] == [j for j in ids if shard_of(j, SHARDS) == i]
    assert sorted(r["id"] for s in summaries[1:] for r in s["rows"]) == ids

    one = merged(capsys, a / "out")
    shards = merged(capsys, *(b / f"out{i}" for i in range(1, SHARDS + 1)))
    assert untimed(one) == untimed(shards)
    summary = {k: v for k, v in summaries[0].items() if k in one}
    assert untimed(one) == untimed(summary)

    # What the kinds of job (kit.jobs.inputs) add up to, counted here by hand.
    kind = {n: KINDS[n % len(KINDS)] for n in range(JOBS)}
    count = {k: sum(v == k for v in kind.values()) for k in KINDS}
    assert one["jobs"] == {
        "total": JOBS,
        "succeeded": count["spec"] + count["batches"] + count["refused"] + count["hooked"],
        "failed": count["failing"],
        "provider_failed": 0,
        "budget_exhausted": count["budget"],
        "interrupted": 0,
        "error": 0,
        "not_started": 0,
        "skipped": 0,
        "unfinished": 0,
    }
    assert one["calls"] == JOBS - count["budget"] + count["refused"]
    assert one["refused"] == one["refused_by"]["gate"] == count["refused"]
    assert sum(one["refused_by"].values()) == one["refused"]
    assert one["hook_failures"] == count["hooked"]
    used = [n for n in range(JOBS) if kind[n] != "budget"]
    assert one["tokens_in"] == sum(100 + n for n in used)
    assert one["tokens_out"] == sum(10 + n % 7 for n in used)
    assert one["usd"] == 0.0 and one["usd_unknown"] == 0
    # Each row's time is what its result charged (one attempt each).
    for row in one["rows"][:5]:
        result = json.loads((Path(row["dir"]) / "result.json").read_text())
        assert row["seconds"] == pytest.approx(result["budget"]["used_seconds"])
        assert row["exit_code"] == result["exit_code"]
    assert one["seconds"] == pytest.approx(sum(r["seconds"] for r in one["rows"]))


def blocking_list(folder: Path, tmp: Path) -> tuple[Path, Path, Path]:
    """Eight jobs; the fourth's pre-tool hook marks MARK and waits until GO exists (its
    writer writes the spec three times, so each resumed attempt has a write left)."""
    jobs = make_list(folder, 8, ("spec",))
    mark, go = tmp / "mark", tmp / "go"
    hook = str(HOOKS / "wait_for.sh")
    lines = [json.loads(line) for line in jobs.read_text().splitlines()]
    spec = write(".orkeon/spec.md", "# spec\n")
    lines[3]["inputs"] = {
        "request": "r",
        "hooks": [{"event": "pre-tool", "command": f"{shlex.quote(hook)} {mark} {go}"}],
        "shell": {"extra_allowed_commands": [hook]},
        **scripted({"writer": [{"tool_calls": [spec]}] * 3}),
    }
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return jobs, mark, go


def wait_until(check: Any, what: str, proc: subprocess.Popen[str]) -> None:
    """Awaits `check()`, failing at once if the process ends first; no deadline of its own
    (the test's time-out is the hang guard), so a loaded machine only makes it slower."""
    while not check():
        assert proc.poll() is None, f"exited {proc.returncode} before {what}: {proc.communicate()}"
        time.sleep(0.01)


def starts(jd: Path) -> list[bool]:
    """The `resume` flag of each attempt recorded in the job's events."""
    lines = (jd / "events.jsonl").read_text().splitlines()
    return [e["resume"] for e in map(json.loads, lines) if e["type"] == "run.start"]


def test_a_killed_then_interrupted_shard_redoes_only_what_did_not_finish(tmp_path):
    jobs, mark, go = blocking_list(tmp_path / "list", tmp_path)
    out = tmp_path / "out"
    env = environ(tmp_path)
    args = ("jobs", "run", str(jobs), "--concurrency", "1", "--out", str(out))
    ids = [f"job-{n:03d}" for n in range(8)]

    # SIGKILL while the fourth job waits in its hook: the first three have finished.
    proc = spawn(*args, env=env)
    try:
        wait_until(mark.exists, "the fourth job's hook", proc)
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert [(out / i / "result.json").is_file() for i in ids[:4]] == [True, True, True, False]
    assert not any((out / i).exists() for i in ids[4:])
    finished = {i: (out / i / "result.json").stat().st_mtime_ns for i in ids[:3]}

    # Again: the three are skipped, the fourth resumes and waits again; SIGINT this time.
    mark.unlink()
    proc = spawn(*args, env=env)
    try:
        wait_until(mark.exists, "the resumed job's hook", proc)
        proc.send_signal(signal.SIGINT)
        out_text, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    summary = json.loads(out_text)
    assert summary["interrupted"] is True and summary["skipped"] == 3
    assert [r["status"] for r in summary["rows"]] == ["succeeded"] * 3 + ["interrupted"] + [
        "unfinished"
    ] * 4
    assert json.loads((out / ids[3] / "result.json").read_text())["status"] == "interrupted"
    assert not any((out / i).exists() for i in ids[4:])  # none started after the signal
    for i in ids[:3]:
        assert f"job {i}: succeeded earlier, skipped" in err

    # Once more, with the hook let through: everything finishes.
    go.touch()
    done = orkeon(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in json.loads(done.stdout)["rows"]] == ["succeeded"] * 8
    assert {i: (out / i / "result.json").stat().st_mtime_ns for i in ids[:3]} == finished
    assert [starts(out / i) for i in ids[:3]] == [[False]] * 3
    assert starts(out / ids[3]) == [False, True, True]
    assert [starts(out / i) for i in ids[4:]] == [[False]] * 4
    assert json.loads((out / ids[3] / "job.json").read_text())["attempts"] == 3


def test_git_workspaces_are_cloned_shallow_from_a_branch_a_tag_or_a_commit(tmp_path, capsys):
    repo = template(tmp_path)
    (repo / "src" / "second.py").write_text("y = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    git(repo, "tag", "v1")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "-M", "main")
    bare = tmp_path / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    url = bare.as_uri()  # file://: a real transport, so --depth holds, and no network
    spec = write(".orkeon/spec.md", "# spec\n")
    job_inputs = {"request": "r", **scripted({"writer": [{"tool_calls": [spec]}]})}
    refs = {"branch": "main", "tag": "v1", "commit": head, "default": None, "missing": "nope"}
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        "".join(
            json.dumps(
                {
                    "id": name,
                    "step": "dev-spec",
                    "workspace": {"git": url, "ref": ref},
                    "inputs": job_inputs,
                }
            )
            + "\n"
            for name, ref in refs.items()
        )
        # Checked only once cloned: the repository has no plan file.
        + json.dumps(
            {
                "id": "no-plan",
                "step": "dev-batches",
                "workspace": {"git": url},
                "inputs": scripted({}),
            }
        )
        + "\n"
    )
    out = tmp_path / "out"
    code, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))
    assert code == 1, err
    status = {r["id"]: r["status"] for r in summary["rows"]}
    assert status == {
        "branch": "succeeded",
        "tag": "succeeded",
        "commit": "succeeded",
        "default": "succeeded",
        "missing": "not_started",
        "no-plan": "not_started",
    }
    for name in ("branch", "tag", "commit", "default"):
        ws = out / name / "workspace"
        assert (ws / "src" / "second.py").read_text() == "y = 2\n"
        assert (ws / ".orkeon" / "spec.md").is_file()
        assert git(ws, "rev-parse", "HEAD").strip() == head
        assert git(ws, "rev-parse", "--is-shallow-repository").strip() == "true"
    row = next(r for r in summary["rows"] if r["id"] == "missing")
    assert row["error"].startswith("workspace: git clone exited 128: ")
    assert "job missing: not started: workspace: git clone exited 128" in err
    assert not (out / "missing" / "workspace").exists()
    assert "job no-plan: not started: plan: no such file in the workspace: .orkeon/plan.json" in err
    assert (out / "no-plan" / "workspace" / "README.md").is_file()  # cloned, then refused
    assert not (out / "no-plan" / "inputs.json").exists()

    # A job that could not start is not finished: the next run tries it again, alone.
    git(bare, "branch", "nope")
    code, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))
    assert code == 1, err
    status = {r["id"]: r["status"] for r in summary["rows"]}
    assert status == {**dict.fromkeys(refs, "succeeded"), "no-plan": "not_started"}
    assert summary["skipped"] == 4
    assert json.loads((out / "missing" / "job.json").read_text())["attempts"] == 2


def test_a_provider_failure_is_exit_4_and_the_next_run_redoes_only_that_job(
    tmp_path, capsys, monkeypatch
):
    server = openai_api.OpenAIFake(api_key="sk-right")

    def answer(req: Recorded) -> Reply:
        if req.body["messages"][-1]["role"] == "tool":
            return openai_api.completion("done")
        return openai_api.completion(
            None, [("c1", "file_write", {"file_path": "src/x.py", "content": "x"})]
        )

    server.fallback = answer
    jobs = make_list(tmp_path / "list", 3, ("spec", "failing", "spec"))
    lines = [json.loads(line) for line in jobs.read_text().splitlines()]
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    out = tmp_path / "out"
    with server:
        model = {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "base_url": server.base_url,
            "api_key_env": "JOBS_TEST_KEY",
            "max_retries": 0,
        }
        lines[2].update(id="remote", step="dev-batches", inputs={"plan": plan, "model": model})
        jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
        monkeypatch.setenv("JOBS_TEST_KEY", "sk-wrong")
        code, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))
        assert code == 4, err  # before the failed job's 1: running again is the remedy
        status = {r["id"]: r["status"] for r in summary["rows"]}
        assert status == {"job-000": "succeeded", "job-001": "failed", "remote": "provider_failed"}
        assert "authentication" in summary["rows"][2]["error"]

        monkeypatch.setenv("JOBS_TEST_KEY", "sk-right")
        code, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))
    assert code == 1, err  # job-001 still failed, and is not run again
    assert summary["skipped"] == 2
    assert [r["status"] for r in summary["rows"]] == ["succeeded", "failed", "succeeded"]
    assert starts(out / "remote") == [False, True]
    assert starts(out / "job-001") == [False]


@pytest.mark.parametrize(
    ("kinds", "code"),
    [(("spec", "budget"), 3), (("budget", "failing"), 1), (("spec", "batches"), 0)],
    ids=["only-budgets", "failed-before-budget", "all-succeeded"],
)
def test_the_exit_code_of_a_shard(tmp_path, capsys, kinds, code):
    jobs = make_list(tmp_path / "list", len(kinds), kinds)
    got, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(tmp_path / "out"))
    assert (got, summary["exit_code"]) == (code, code), err


def test_a_changed_job_or_a_foreign_folder_in_out_is_refused_before_anything_runs(tmp_path, capsys):
    jobs = make_list(tmp_path / "list", 2, ("spec",))
    out = tmp_path / "out"
    assert in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))[0] == 0
    lines = [json.loads(line) for line in jobs.read_text().splitlines()]
    lines[1]["inputs"]["request"] = "something else"
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (out / "job-002").mkdir()
    (out / "job-002" / "notes.txt").write_text("mine")
    shutil.copytree(jobs.parent / "ws" / "job-000", jobs.parent / "ws" / "job-002")
    lines.append({**lines[0], "id": "job-002", "workspace": "ws/job-002"})
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = sorted(p.name for p in out.iterdir())
    code, summary, err = in_process(capsys, "jobs", "run", str(jobs), "--out", str(out))
    assert (code, summary) == (2, None)
    assert err.splitlines() == [
        f"orkeon: --out: {out / 'job-001'} holds job job-001 as it was defined before (its "
        "step, workspace or inputs changed): remove that folder, or choose another --out",
        f"orkeon: --out: {out / 'job-002'} holds files but no job.json: not a job's folder",
    ]
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_job_sees_no_sibling_and_no_seal_and_runs_sandboxed_in_its_clone(
    tmp_path, capsys, off_tmp
):
    """docs/scale.md, "Jobs are isolated from each other": a job's sandboxes hide the
    whole `--out` folder (every sibling's records, the seals), not only its own; a job
    whose workspace is a git clone (OUT/ID/workspace) runs with the sandbox on (its
    shell, its audit's git and test)."""
    repo = template(tmp_path)
    bare = tmp_path / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    out = off_tmp / "out"  # under /tmp, the sandbox's cover of /tmp would hide it anyway
    audit = {"test": ["git", "status", "--short"]}

    def job(name: str, other: str) -> str:
        peek = f"cat {out}/{other}/events.jsonl {out}/{other}/workspace/README.md"
        seals = f"ls {out}/_seals"
        calls = [write("src/x.py", "x = 1\n"), shell(peek), shell(seals), shell("cat README.md")]
        doc = {"plan": PLAN_ONE, "audit": audit, **scripted({"b1/api": [{"tool_calls": calls}]})}
        line = {"id": name, "step": "dev-batches", "workspace": {"git": bare.as_uri()}}
        return json.dumps({**line, "inputs": doc}) + "\n"

    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(job("first", "second") + job("second", "first"))
    code, summary, err = in_process(
        capsys, "jobs", "run", str(jobs), "--out", str(out), "--concurrency", "1"
    )
    assert code == 0, err
    assert {r["id"]: r["status"] for r in summary["rows"]} == {
        "first": "succeeded",
        "second": "succeeded",
    }
    for name in ("first", "second"):
        result = json.loads((out / name / "result.json").read_text())
        assert result["sandbox"] == "on"
        assert result["audits"][0]["passed"] is True
        made = [c["result"] for c in calls(out / name, "b1/api") if c["tool"] == "shell"]
        peeked, seals, own = made
        for refused in (peeked, seals):
            assert refused["exit_code"] != 0 and refused["stdout"] == ""
            assert "No such file" in refused["stderr"]
        assert own["exit_code"] == 0 and own["stdout"] == "# tiny\n"  # its own clone: shown
        assert (out / name / "workspace" / "src" / "x.py").read_text() == "x = 1\n"
    # The sibling "second" peeked at had run before it: there was something to see.
    assert (out / "first" / "events.jsonl").is_file() and any((out / "_seals").iterdir())


def test_merge_offers_only_the_formats_it_writes(tmp_path: Path, capsys) -> None:
    """docs/scale.md: `jobs merge --format` is json, md, html or junit; `patch` (one
    workspace's change) is no merged report: its --help does not offer it, and asking for
    it is one line and exit 2."""
    code, _, err = in_process(capsys, "jobs", "merge", str(tmp_path), "--format", "patch")
    assert code == 2
    assert "'patch' is not one of 'md', 'html', 'junit', 'json'" in err
    assert "Traceback" not in err
    assert run_cli(["jobs", "merge", "--help"]) == 0
    out = capsys.readouterr().out
    assert "<md|html|junit|json>" in out and "patch" not in out
