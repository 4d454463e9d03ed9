"""The action's trigger check (docs/ci.md#who-may-start-a-run), run as the action runs it
(`python -m orkeon_run.commands.trigger`, its inputs in the environment) against a fake
GitHub REST API on 127.0.0.1 that answers permission levels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import ROOT
from kit.fakes.github_api import GitHubFake
from kit.fakes.server import unreachable_url


@pytest.fixture
def github() -> Iterator[GitHubFake]:
    with GitHubFake() as fake:
        fake.permissions.update(
            {"alice": "admin", "bob": "write", "carol": "read", "dave": "none", "Erin": "maintain"}
        )
        yield fake


def check(github: GitHubFake, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_TOKEN": "ghs_test",
    }
    return subprocess.run(
        [sys.executable, "-m", "orkeon_run.commands.trigger"],
        env={**base, **env}, cwd=tmp, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one annotation of a refusal (exit 2)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("::error title=orkeon: run refused::"), lines
    return lines[0]


@pytest.mark.parametrize("actor", ["alice", "bob", "Erin"])
def test_an_actor_with_write_permission_runs(
    github: GitHubFake, tmp_path: Path, actor: str
) -> None:
    """ "an actor with write permission on the repository (admin, maintain or write) runs"."""
    done = check(github, tmp_path, GITHUB_ACTOR=actor)
    assert done.returncode == 0, done.stderr
    assert "permission on acme/app" in done.stdout
    (req,) = github.requests
    assert req.path == f"/repos/acme/app/collaborators/{actor}/permission"
    assert req.headers["authorization"] == "Bearer ghs_test"


@pytest.mark.parametrize("actor", ["carol", "dave", "mallory"])
def test_an_actor_without_write_permission_is_refused(
    github: GitHubFake, tmp_path: Path, actor: str
) -> None:
    """ "an actor without write permission on the repository is refused" (read, none, or no
    collaborator at all: GitHub's 404)."""
    line = refused(check(github, tmp_path, GITHUB_ACTOR=actor))
    assert f"{actor} has " in line and "not write" in line


def test_allowed_actors_widens_it(github: GitHubFake, tmp_path: Path) -> None:
    """ "`allowed-actors` lets these logins run without write permission"."""
    done = check(github, tmp_path, GITHUB_ACTOR="Carol", INPUT_ALLOWED_ACTORS="zed, carol\nyan")
    assert done.returncode == 0, done.stderr
    assert "Carol is listed in allowed-actors" in done.stdout
    assert github.requests == []  # no question asked


def test_a_bot_runs_only_when_listed(github: GitHubFake, tmp_path: Path) -> None:
    """ "a `[bot]` actor not listed in `allowed-bots` is refused", even one the repository
    gives write permission (a bot's permission is the app's, not a person's)."""
    github.permissions["renovate[bot]"] = "write"
    line = refused(check(github, tmp_path, GITHUB_ACTOR="renovate[bot]"))
    assert "renovate[bot] is a bot not listed in allowed-bots" in line
    for listed in ("renovate", "renovate[bot]", "dependabot Renovate[bot]"):
        done = check(github, tmp_path, GITHUB_ACTOR="renovate[bot]", INPUT_ALLOWED_BOTS=listed)
        assert done.returncode == 0, (listed, done.stderr)
    assert github.requests == []


def test_an_allowed_bots_entry_that_is_not_a_login_is_exit_2(
    github: GitHubFake, tmp_path: Path
) -> None:
    """ "An `allowed-bots` entry that is not a login: exit 2" naming the field, nothing asked."""
    for bad in ("github-actions[bot]; rm -rf /", "-dash", "a--b", "x" * 40, "name[bot][bot]"):
        line = refused(check(github, tmp_path, GITHUB_ACTOR="alice", INPUT_ALLOWED_BOTS=bad))
        assert "allowed-bots: " in line and "is not a GitHub login" in line, line
    line = refused(check(github, tmp_path, GITHUB_ACTOR="alice", INPUT_ALLOWED_ACTORS="a b/c"))
    assert "allowed-actors: 'b/c' is not a GitHub login" in line
    assert github.requests == []


def test_the_re_running_actor_is_checked_too(github: GitHubFake, tmp_path: Path) -> None:
    """ "`GITHUB_TRIGGERING_ACTOR`, the one who re-ran the job, is checked as well"."""
    line = refused(check(github, tmp_path, GITHUB_ACTOR="alice", GITHUB_TRIGGERING_ACTOR="carol"))
    assert "carol has read permission" in line


def event(tmp: Path, head: str | None) -> str:
    doc = {
        "repository": {"full_name": "acme/app"},
        "pull_request": {"number": 7, "head": {"repo": {"full_name": head} if head else None}},
    }
    path = tmp / "event.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_fork_pull_request_target_runs_only_when_told_so(
    github: GitHubFake, tmp_path: Path
) -> None:
    """ "fork pull requests run with `pull_request_target` only when
    `allow-fork-pull-requests: true`"; a branch of the repository itself runs."""
    target = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_ACTOR": "alice"}
    line = refused(check(github, tmp_path, **target, GITHUB_EVENT_PATH=event(tmp_path, "eve/app")))
    assert "pull_request_target event from a fork" in line
    line = refused(check(github, tmp_path, **target, GITHUB_EVENT_PATH=event(tmp_path, None)))
    assert "from a fork" in line  # a deleted fork
    done = check(github, tmp_path, **target, GITHUB_EVENT_PATH=event(tmp_path, "eve/app"),
                 INPUT_ALLOW_FORK_PULL_REQUESTS="true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = check(github, tmp_path, **target, GITHUB_EVENT_PATH=event(tmp_path, "ACME/app"))
    assert done.returncode == 0, done.stderr
    # The actor is still checked when forks are allowed.
    target["GITHUB_ACTOR"] = "carol"
    refused(check(github, tmp_path, **target, GITHUB_EVENT_PATH=event(tmp_path, "eve/app"),
                  INPUT_ALLOW_FORK_PULL_REQUESTS="true"))  # fmt: skip
    line = refused(
        check(github, tmp_path, GITHUB_ACTOR="alice", INPUT_ALLOW_FORK_PULL_REQUESTS="yes")
    )
    assert "allow-fork-pull-requests: 'yes'" in line


def test_an_api_that_does_not_answer_refuses_the_run(github: GitHubFake, tmp_path: Path) -> None:
    """ "The check fails closed": no token, a token GitHub refuses, a server error, no
    server at all."""
    assert "no github-token" in refused(
        check(github, tmp_path, GITHUB_ACTOR="alice", GITHUB_TOKEN="")
    )
    line = refused(check(github, tmp_path, GITHUB_ACTOR="alice", GITHUB_TOKEN="wrong"))
    assert "HTTP 401: Bad credentials" in line and "wrong" not in line
    github.fail_status = 502
    assert "HTTP 502" in refused(check(github, tmp_path, GITHUB_ACTOR="alice"))
    line = refused(check(github, tmp_path, GITHUB_ACTOR="alice", GITHUB_API_URL=unreachable_url()))
    assert "no answer" in line
