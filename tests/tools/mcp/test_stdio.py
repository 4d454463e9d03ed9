"""The hub with real stdio servers: `mcp-server-git` from the package index against a git
repository in tmp_path, and the SDK-built test server of tests/kit/fakes/mcp_server.py. Both
run with this venv's python, so nothing is fetched from the network."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import FAKES, ROOT
from kit.fakes.mcp_server import ODD_SCHEMA
from kit.mcp import FAKE, Events, git_server, group_running, running, with_hub

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.check import check_servers_sync
from orkeon_run.tools.mcp.hub import McpHub
from orkeon_run.tools.mcp.results import RESULT_CHARS


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("# test\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    return repo.resolve()


# --- mcp-server-git ------------------------------------------------------------------------


def test_git_server_lists_its_tools_as_declared_and_answers_calls(repo: Path) -> None:
    from mcp import Client, StdioServerParameters

    async def direct() -> list[Any]:
        params = StdioServerParameters(command=sys.executable, args=git_server(repo)["command"][1:])
        async with Client(params) as client:
            return (await client.list_tools()).tools

    declared = anyio.run(direct)
    (repo / "new.txt").write_text("x\n")

    async def body(hub: McpHub, events: Events) -> None:
        assert [t.name for t in hub.tools] == [f"mcp__git__{t.name}" for t in declared]
        for mine, theirs in zip(hub.tools, declared, strict=True):
            assert (mine.server, mine.tool) == ("git", theirs.name)
            assert mine.description == theirs.description
            assert json.dumps(mine.input_schema) == json.dumps(theirs.input_schema)
            assert mine.spec.input_schema is mine.input_schema
        started = await events.wait(server="git", state="started")
        assert started["tools"] == len(declared) and started["transport"] == "stdio"
        assert started["pid"] == hub.pid("git") and running(started["pid"])

        status = await hub.call("mcp__git__git_status", {"repo_path": str(repo)}, 30)
        assert not status.refused
        assert isinstance(status.result, str) and "new.txt" in status.result
        log = await hub.call("mcp__git__git_log", {"repo_path": str(repo), "max_count": 1}, 30)
        assert "first commit" in str(log.result)
        bad = await hub.call("mcp__git__git_log", {"repo_path": str(repo), "max_count": "x"}, 30)
        assert str(bad.result).startswith("error: ") and "max_count" in str(bad.result)
        unknown = await hub.call("mcp__git__git_push", {"repo_path": str(repo)}, 30)
        assert unknown.result == "error: there is no tool named 'mcp__git__git_push'"
        assert unknown.refused
        outside = await hub.call("mcp__git__git_status", {"repo_path": "/"}, 30)
        assert str(outside.result).startswith("error: ")  # the server's own confinement
        not_object = await hub.call("mcp__git__git_status", ["x"], 30)
        assert not_object.refused
        assert not_object.result == "error: mcp__git__git_status: the input must be a JSON object"

    with_hub({"git": git_server(repo)}, repo, body)


# --- the test server: results ---------------------------------------------------------------


def test_results_come_back_in_the_servers_form_within_the_size_cap(tmp_path: Path) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        tools = {t.name: t for t in hub.tools}
        odd = tools["mcp__fake__odd"]
        assert json.dumps(odd.input_schema) == json.dumps(ODD_SCHEMA)
        assert tools["mcp__fake__weird_name_with_spaces"].tool == "weird.name with spaces"
        assert hub.warnings == [
            f"MCP tool mcp__fake__{'x' * 60} is left out: model APIs refuse tool names longer "
            "than 64 characters",
            "MCP server fake lists two tools named mcp__fake__weird_name_with_spaces; the second "
            "is left out",
        ]
        assert all(len(t.name) <= 64 for t in hub.tools)

        async def call(name: str, args: dict[str, Any]) -> Any:
            reply = await hub.call(f"mcp__fake__{name}", args, 30)
            assert not reply.refused
            return reply.result

        assert await call("echo", {"text": "héllo\n"}) == "héllo\n"
        assert await call("structured", {"n": 3}) == {"n": 3, "squares": [0, 1, 4]}
        assert await call("fail", {}) == "error: the thing is broken"
        assert await call("image", {}) == (
            "[image (image/png) left out: orkeon passes only text to the model]\na picture"
        )
        assert await call("weird_name_with_spaces", {}) == "weird"
        big = await call("big", {"n": RESULT_CHARS + 5})
        assert big == "y" * RESULT_CHARS + (
            f"\n[mcp__fake__big: the result was cut at {RESULT_CHARS} characters; "
            "5 more were dropped]"
        )
        assert await call("big", {"n": RESULT_CHARS, "structured": True}) == (
            "a big object (see the structured content)"
        )
        assert await call("big", {"n": 100, "structured": True}) == {"data": "x" * 100}

    with_hub({"fake": FAKE}, tmp_path, body)


def test_a_server_gets_the_scrubbed_environment_plus_its_own_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("MCP_TEST_PLAIN", "plain")
    server = {**FAKE, "env": {"HANDED": "${MCP_TEST_SECRET_TOKEN}", "FIXED": "f"}}

    async def body(hub: McpHub, events: Events) -> None:
        async def env(name: str) -> Any:
            return (await hub.call("mcp__fake__env", {"name": name}, 30)).result

        assert await env("MCP_TEST_PLAIN") == "'plain'"
        assert await env("MCP_TEST_SECRET_TOKEN") == "None"  # the scrub removed it
        assert await env("HANDED") == "'s3cret'"  # the operator handed it over by name
        assert await env("FIXED") == "'f'"

    with_hub({"fake": server}, tmp_path, body)


def test_calls_from_several_tasks_share_one_server(tmp_path: Path) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        answers: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def slow() -> None:
                answers.append((await hub.call("mcp__fake__slow", {"seconds": 600}, 600)).result)

            async def quick() -> None:
                answers.append((await hub.call("mcp__fake__echo", {"text": "q"}, 60)).result)
                tg.cancel_scope.cancel()  # the slow call is still waiting

            tg.start_soon(slow)
            tg.start_soon(quick)
        assert answers == ["q"]
        assert (await hub.call("mcp__fake__echo", {"text": "after"}, 60)).result == "after"

    with_hub({"fake": FAKE}, tmp_path, body)


# --- failures ----------------------------------------------------------------------------


def test_servers_that_cannot_start_are_refused_with_the_reason(tmp_path: Path) -> None:
    exits = "import sys; sys.stderr.write('warming up\\nbad config: no --db given\\n'); sys.exit(3)"
    servers = {
        "fake": FAKE,
        "missing": {"command": str(tmp_path / "no-such-server")},
        "exits": {"command": [sys.executable, "-c", exits]},
        "needs": {"command": [sys.executable, "-c", "pass"], "env": {"KEY": "${MCP_TEST_UNSET}"}},
    }
    expected = {
        "missing": f"no such program: {tmp_path / 'no-such-server'}",
        "exits": "it exited with code 3 before it answered; its stderr ends: bad config: no --db given",
        "needs": "env.KEY: ${MCP_TEST_UNSET} is not set",
    }

    async def body(hub: McpHub, events: Events) -> None:
        assert hub.failed() == expected
        assert {t.server for t in hub.tools} == {"fake"}
        for name, reason in expected.items():
            reply = await hub.call(f"mcp__{name}__anything", {}, 30)
            assert reply.refused
            assert reply.result == f"[refused: MCP server {name} is not running: {reason}]"
            failed = await events.wait(server=name, state="failed")
            assert failed["reason"] == reason
        assert (await hub.call("mcp__fake__echo", {"text": "ok"}, 30)).result == "ok"

    with_hub(servers, tmp_path, body)


def test_a_server_that_never_answers_fails_after_the_start_time_limit(tmp_path: Path) -> None:
    hangs = {"command": [sys.executable, "-c", "import time; time.sleep(600)"]}

    async def body(hub: McpHub, events: Events) -> None:
        reason = "it did not answer within 1 s of starting"
        assert hub.failed() == {"hangs": reason}
        failed = await events.wait(server="hangs", state="failed")
        assert failed["reason"] == reason
        assert not running(failed["pid"])  # stopped when its start ran out of time
        reply = await hub.call("mcp__hangs__x", {}, 30)
        assert reply.result == f"[refused: MCP server hangs is not running: {reason}]"

    with_hub({"hangs": hangs}, tmp_path, body, start_timeout=1.0)


def test_a_server_that_dies_mid_run_gets_a_clear_text_and_nothing_crashes(
    tmp_path: Path, repo: Path
) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        # Dies while answering: the call in flight, then every later call.
        died = await hub.call("mcp__fake__die", {}, 30)
        assert not died.refused
        assert (
            died.result == "error: MCP server fake stopped during the call: it exited with code 7"
        )
        after = await hub.call("mcp__fake__echo", {"text": "x"}, 30)
        assert after.refused
        assert after.result == "[refused: MCP server fake is not running: it exited with code 7]"
        exited = await events.wait(server="fake", state="exited")
        assert exited["reason"] == "it exited with code 7"

        # Killed from outside between calls: the hub notices without a call.
        pid = hub.pid("git")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await events.wait(server="git", state="exited")
        reply = await hub.call("mcp__git__git_status", {"repo_path": str(repo)}, 30)
        assert reply.refused
        assert reply.result == (
            "[refused: MCP server git is not running: it was killed by signal 9 (SIGKILL)]"
        )
        assert hub.state("git") == ("exited", "it was killed by signal 9 (SIGKILL)")

    with_hub({"fake": FAKE, "git": git_server(repo)}, tmp_path, body)


def test_a_call_that_runs_out_of_time_is_cancelled_and_the_server_goes_on(tmp_path: Path) -> None:
    async def body(hub: McpHub, events: Events) -> None:
        # The text says it was cancelled; waiting the 600 s out would pass the suite's guard.
        reply = await hub.call("mcp__fake__slow", {"seconds": 600}, 0.5)
        assert reply.result == (
            "error: MCP server fake did not answer within 0.5 s; the call was cancelled"
        )
        assert not reply.refused
        assert (
            await hub.call("mcp__fake__echo", {"text": "still here"}, 30)
        ).result == "still here"
        assert hub.state("fake") == ("running", None)

    with_hub({"fake": FAKE}, tmp_path, body)


# --- stopping ------------------------------------------------------------------------------


def test_stopping_leaves_no_process_of_any_group_behind(tmp_path: Path, repo: Path) -> None:
    seen: dict[str, int] = {}

    async def body(hub: McpHub, events: Events) -> None:
        for server in ("fake", "git"):
            pid = hub.pid(server)
            assert pid is not None and running(pid)
            assert os.getpgid(pid) == pid  # a group of its own
            seen[server] = pid
        # Two processes the server started and left in its group; one ignores SIGTERM.
        for tool in ("spawn", "spawn_stubborn"):
            child = int(str((await hub.call(f"mcp__fake__{tool}", {}, 30)).result))
            assert running(child) and os.getpgid(child) == seen["fake"]
            seen[tool] = child
        assert len(group_running(seen["fake"])) == 3

    with_hub({"fake": FAKE, "git": git_server(repo)}, tmp_path, body, grace=0.5)
    for name, pid in seen.items():
        assert not running(pid), name
    assert group_running(seen["fake"]) == []
    assert group_running(seen["git"]) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "signum"),
    [("context", signal.SIGTERM), ("taskgroup", signal.SIGTERM), ("context", signal.SIGINT)],
)
def test_sigterm_to_an_orkeon_like_parent_leaves_no_server_behind(
    tmp_path: Path, repo: Path, mode: str, signum: int
) -> None:
    servers = json.dumps({"fake": FAKE, "git": git_server(repo)})
    parent = subprocess.Popen(
        [sys.executable, str(FAKES / "mcp_parent.py"), mode, servers, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line, "the parent ended before its servers ran"
        ready = json.loads(line)
        pids = [*ready["pids"].values(), ready["spawned"]]
        assert all(running(p) for p in pids)
        parent.send_signal(signum)
        assert parent.wait(timeout=60) == 130
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    for pid in pids:
        assert not running(pid), pid
    for pgid in ready["pids"].values():
        assert group_running(pgid) == []


# --- validate ------------------------------------------------------------------------------


def test_the_validate_check_starts_lists_and_stops_each_server(repo: Path) -> None:
    servers = parse_servers(
        {"git": git_server(repo), "missing": {"command": "/nonexistent/mcp-server"}}
    )
    checks, warnings = check_servers_sync(servers, environ=scrubbed(), cwd=repo)
    git, missing = checks
    assert git.ok and git.server == "git"
    assert "mcp__git__git_status" in git.tools
    assert git.line == (
        f"mcp server git ({servers['git'].describe()}): {len(git.tools)} tools: "
        + ", ".join(git.tools)
    )
    assert not missing.ok
    assert missing.line == (
        "mcp server missing (stdio: /nonexistent/mcp-server): not running: "
        "no such program: /nonexistent/mcp-server"
    )
    assert warnings == []
