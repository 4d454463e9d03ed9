"""`orkeon run --github-comment` (docs/ci.md#live-progress-in-the-pull-request): one
comment on the pull request, kept up to date while the run goes and ending as the
Markdown report, against a fake GitHub REST API on 127.0.0.1 that records every comment
created and edited. The test waits for the recorded edits, never for time: a hook holds
the run until the test has seen the live comment."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit.fakes.github_api import GitHubFake
from kit.process import orkeon
from kit.steps import environ, make_workspace

from orkeon_run.github_api import GitHub
from orkeon_run.report.pr_comment import LiveComment, Target, marker

INTERVAL = 0.3  # ORKEON_GITHUB_COMMENT_INTERVAL: the documented knob, small for the test
READ = {"tool": "file_read", "input": {"file_path": "src/a.py"}}


@pytest.fixture
def github() -> Iterator[GitHubFake]:
    with GitHubFake() as fake:
        yield fake


def event(tmp: Path, doc: dict[str, Any]) -> str:
    path = tmp / "event.json"
    path.write_text(json.dumps(doc))
    return str(path)


def start(tmp: Path, github: GitHubFake, doc: dict[str, Any], **env: str) -> subprocess.Popen[str]:
    ws = make_workspace(tmp, {"src/a.py": "a = 1\n"})
    (tmp / "inputs.json").write_text(json.dumps(doc))
    argv = [sys.executable, "-m", "orkeon_run", "run", "dev-batches", "--inputs",
            f"@{tmp / 'inputs.json'}", "--workspace", str(ws), "--progress", "none",
            "--output", "json", "--github-comment"]  # fmt: skip
    base = {
        **environ(tmp),
        "ORKEON_LOG_LEVEL": "warning",
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_EVENT_PATH": env.pop("GITHUB_EVENT_PATH", None)
        or event(tmp, {"pull_request": {"number": 7}}),
        "ORKEON_GITHUB_TOKEN": "ghs_test",
        "ORKEON_GITHUB_COMMENT_INTERVAL": str(INTERVAL),
    }
    # runs on while the test answers as GitHub and lets its hook go: Popen, not kit.process
    return subprocess.Popen(argv, cwd=tmp, env={**base, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def held_run(tmp: Path) -> tuple[dict[str, Any], Path]:
    """Inputs of two batches whose pre-tool hook holds the Nth call until the file GO<N>
    exists (and records whether it saw the token); their folder."""
    hook = tmp / "hold.sh"
    hook.write_text(
        f"#!/bin/sh\necho ${{ORKEON_GITHUB_TOKEN:-unset}} > {tmp / 'token'}\n"
        f"n=$(ls {tmp} | grep -c '^held')\ntouch {tmp}/held$n\n"
        f"while [ ! -e {tmp}/GO$n ]; do sleep 0.05; done\n"
    )
    hook.chmod(0o755)
    turns = [{"tool_calls": [READ], "usage": {"input_tokens": 1000, "output_tokens": 50}},
             {"text": "done"}]  # fmt: skip
    doc = {
        "model": {"provider": "scripted", "price": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
                  "script": {"b1/api": turns, "b2/web": turns}},
        "plan": {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]},
                             {"name": "b2", "roles": [{"name": "web", "roots": ["src/"], "task": "t"}]}]},
        "hooks": [{"event": "pre-tool", "command": str(hook)}],
        "shell": {"extra_allowed_commands": [str(hook)]},
    }  # fmt: skip
    return doc, tmp


def test_one_comment_kept_up_to_date_then_the_report(tmp_path: Path, github: GitHubFake) -> None:
    """ "keeps one comment on the pull request up to date while the run goes: the roles,
    batches, audits and cost, rewritten at most every 15 s (here the knob's 0.3 s) and at
    the end with the Markdown report; never a new one per update"."""
    doc, held = held_run(tmp_path)
    proc = start(tmp_path, github, doc)
    try:
        # Held in b1's call: the comment shows the role running.
        github.wait_for(lambda g: any("`b1/api` | running" in b for _, b in g.edits))
        (held / "GO0").touch()
        # Held in b2's call: b1 passed its audit, b2 runs, the cost so far.
        github.wait_for(lambda g: any("`b2/web` | running" in b for _, b in g.edits))
        live = next(b for _, b in github.edits if "`b2/web` | running" in b)
    finally:
        for n in (0, 1):
            (held / f"GO{n}").touch()
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    result = json.loads(out)
    (created,) = github.creates  # one comment for the run
    cid = created[0]
    assert created[1].startswith(marker(result["run_id"]))
    assert {c for c, _ in github.edits} == {cid}
    assert set(github.comments) == {cid}
    assert "**Batches:** `b1` passed, `b2` running" in live
    assert "**Audits:** `b1` passed" in live
    assert "| `b1/api` | succeeded | 2 | 1 |" in live
    assert "**Cost so far:** $0.0075, 2,100 tokens" in live  # both first turns
    final = github.comments[cid]["body"]
    assert final == github.edits[-1][1] and final.startswith(marker(result["run_id"]) + "\n")
    assert "orkeon `dev-batches`: succeeded" in final and "running" not in final  # the report
    # At most one write per interval while the run went (the last is the report's).
    gaps = [b - a for a, b in zip(github.written[:-1], github.written[1:-1], strict=False)]
    assert all(g >= INTERVAL for g in gaps), gaps
    assert (tmp_path / "token").read_text() == "unset\n"  # no program sees the token


def test_the_same_comment_is_found_again(github: GitHubFake) -> None:
    """ "one comment per run (found again on --resume via a hidden marker)": a comment that
    starts with the run's marker is edited; another run's is left alone."""
    other = github.add_comment(7, marker("20260101-000000-aaaaaa") + "\nother run")
    mine = github.add_comment(7, marker("20260101-000000-bbbbbb") + "\nthis run, before")
    where = Target(GitHub(github.url, "ghs_test", "acme/app"), 7, INTERVAL)
    live = LiveComment(where, "20260101-000000-bbbbbb", "dev-batches")
    live({"type": "role.start", "role": "b1/api", "batch": "b1"})
    live.finish("### the report\n")
    assert github.creates == []
    assert {c for c, _ in github.edits} == {mine}
    assert github.comments[mine]["body"] == marker("20260101-000000-bbbbbb") + "\n### the report\n"
    assert github.comments[other]["body"].endswith("other run")


@pytest.mark.parametrize(
    ("env", "names"),
    [({"ORKEON_GITHUB_TOKEN": ""}, "ORKEON_GITHUB_TOKEN"),
     ({"GITHUB_REPOSITORY": ""}, "GITHUB_REPOSITORY"),
     ({"ORKEON_GITHUB_COMMENT_INTERVAL": "0"}, "ORKEON_GITHUB_COMMENT_INTERVAL"),
     ({"ORKEON_GITHUB_COMMENT_INTERVAL": "soon"}, "ORKEON_GITHUB_COMMENT_INTERVAL"),
     ({"GITHUB_EVENT_PATH": "/nonexistent/event.json"}, "GITHUB_EVENT_PATH")],
)  # fmt: skip
def test_what_the_comment_needs_is_checked_before_anything_runs(
    tmp_path: Path, github: GitHubFake, env: dict[str, str], names: str
) -> None:
    """Bad input: exit 2, one stderr line naming it, nothing run, nothing posted."""
    doc, _ = held_run(tmp_path)
    proc = start(tmp_path, github, doc, **env)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    (line,) = err.splitlines()
    assert names in line
    assert github.requests == [] and not (tmp_path / "ws" / ".orkeon" / "runs").exists()


def test_an_event_that_is_not_about_a_pull_request_is_exit_2(
    tmp_path: Path, github: GitHubFake
) -> None:
    doc, _ = held_run(tmp_path)
    path = event(tmp_path, {"issue": {"number": 3}})  # an issue, not a pull request
    proc = start(tmp_path, github, doc, GITHUB_EVENT_PATH=path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "not about a pull request" in err
    assert github.requests == []


def test_a_resumed_run_edits_its_own_comment(tmp_path: Path, github: GitHubFake) -> None:
    """ "found again on `--resume`": the run's second attempt edits the comment its first
    created (the marker names the run), and posts none of its own."""
    doc = {
        "model": {"provider": "scripted", "script": {"b1/api": [{"text": "done"}] * 4}},
        "plan": {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]},
        "audit": {"test": ["false"]},  # the batch fails: the run can be resumed
    }  # fmt: skip
    proc = start(tmp_path, github, doc)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    first = json.loads(out)
    (created,) = github.creates
    edits = len(github.edits)
    rd = tmp_path / "ws" / ".orkeon" / "runs" / first["run_id"]
    again = orkeon(
        "run", "dev-batches", "--resume", str(rd), "--progress", "none", "--output", "json",
        "--github-comment", cwd=tmp_path, timeout=300,
        env=environ(tmp_path, GITHUB_API_URL=github.url, GITHUB_REPOSITORY="acme/app",
                    ORKEON_GITHUB_TOKEN="ghs_test", GITHUB_EVENT_PATH=str(tmp_path / "event.json")),
    )  # fmt: skip
    assert again.returncode == 1, again.stderr
    assert json.loads(again.stdout)["run_id"] == first["run_id"]
    assert github.creates == [created]  # no second comment
    assert len(github.edits) > edits and {c for c, _ in github.edits} == {created[0]}
    assert github.comments[created[0]]["body"].startswith(marker(first["run_id"]))
