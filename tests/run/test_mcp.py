"""MCP tools in real runs (issue 15): `run.runner.run`, the code behind `orkeon run`, with
the scripted model calling the tools of real servers: `mcp-server-git` over stdio against
the workspace's own repository, and the SDK-built test server of tests/kit/fakes over stdio and
over streamable HTTP on 127.0.0.1. Every call passes the pipeline: budget, stage 2, gate,
rule sets, pre-tool hooks, the server, post-tool hooks, one `tool.call` event."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kit.fakes.mcp_server import LEFT_OUT, ODD_SCHEMA, TOOLS
from kit.fakes.openai_api import OpenAIFake, completion
from kit.hooks import ans
from kit.mcp import FAKE, KILL_SERVER, HttpServer, commits, git_server, spec_crew, use_crew
from kit.steps import call, calls, events, make_workspace, read_jsonl, run_step, scripted, write

FILES = {"README.md": "# app\n"}
SPEC = write(".orkeon/spec.md", "# Spec\n")
WRITER = [{"tool_calls": [SPEC]}, {"text": "spec written"}]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git workspace; the trust store where kit.steps' runs look for it."""
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
    return make_workspace(tmp_path, FILES)


def result_of(rd: Path, role: str, tool: str) -> list[dict[str, Any]]:
    return [c for c in calls(rd, role) if c["tool"] == tool]


def test_rules_gate_and_crew_decide_which_mcp_calls_run(ws: Path, tmp_path: Path) -> None:
    """A rule set allowing a whole server (`mcp__git`) and denying one of its tools
    (`mcp__git__git_commit`); the gate denying a tool of another server; a role that did not
    list a server's tools cannot call them."""
    use_crew(
        ws,
        "dev-spec",
        spec_crew(
            ["file_read", "mcp__git__git_status", "mcp__git__git_commit", "mcp__fake__*"],
            allow=["file_read", "mcp__git", "mcp__fake__*"],
            deny=["mcp__git__git_commit"],
        ),
    )
    repo = str(ws)
    script = {
        "analyst": [
            {
                "tool_calls": [
                    call("mcp__git__git_status", repo_path=repo),
                    call("mcp__git__git_commit", repo_path=repo, message="by the model"),
                    call("mcp__git__git_log", repo_path=repo),  # the server has it; not listed
                    call("mcp__fake__echo", text="hello"),
                    call("mcp__fake__env", name="HOME"),
                ]
            },
            {"text": "report"},
        ],
        "writer": [{"tool_calls": [call("mcp__fake__echo", text="x"), SPEC]}, {"text": "done"}],
    }
    doc = scripted(
        script,
        request="r",
        gate={"deny": ["mcp__fake__env"]},
        mcp_servers={"git": git_server(ws), "fake": FAKE},
    )
    rd = tmp_path / "run"
    result = run_step("dev-spec", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]

    seen = [(c["tool"], c["outcome"], c["refused_by"]) for c in calls(rd, "analyst")]
    assert seen == [
        ("mcp__git__git_status", "ran", None),
        ("mcp__git__git_commit", "refused", "rules"),
        ("mcp__git__git_log", "refused", None),
        ("mcp__fake__echo", "ran", None),
        ("mcp__fake__env", "refused", "gate"),
    ]
    status, commit, log, echo, env = calls(rd, "analyst")
    assert "On branch" in status["result"]
    assert commit["result"] == "[refused by rule set analyst: mcp__git__git_commit]"
    assert commits(ws) == 1  # the server never got the call
    assert log["result"] == "error: there is no tool named 'mcp__git__git_log'"
    assert echo["result"] == "hello"
    assert env["result"] == "[refused by the gate: mcp__fake__env]"
    assert status["input"] == {"repo_path": repo}  # as the model wrote it
    # The writer listed no MCP tool: for it they do not exist.
    mcp_call, _ = calls(rd, "writer")
    assert (mcp_call["outcome"], mcp_call["refused_by"]) == ("refused", None)
    assert mcp_call["result"] == "error: there is no tool named 'mcp__fake__echo'"

    states = [(e["server"], e["state"]) for e in events(rd, "mcp.server")]
    assert sorted(states[:2]) == [("fake", "started"), ("git", "started")]
    assert sorted(states[2:]) == [("fake", "stopped"), ("git", "stopped")]
    # The servers started before the first role and stopped after the last.
    types = [e["type"] for e in events(rd)]
    assert types.index("mcp.server") < types.index("role.start")
    last_stop = max(i for i, t in enumerate(types) if t == "mcp.server")
    assert last_stop > max(i for i, t in enumerate(types) if t == "role.end")
    assert (rd / "mcp" / "git.stderr.log").is_file()


def test_a_pretooluse_hook_matching_mcp_names_denies_the_call(ws: Path, tmp_path: Path) -> None:
    """Settings-shape hooks written for Claude Code: the matcher `mcp__.*` sees the MCP
    tool's name, the payload names it as Claude Code does, exit 2 refuses the call before
    the server gets it; a `Bash` matcher does not fire for it."""
    use_crew(
        ws,
        "dev-spec",
        spec_crew(["file_read", "mcp__git__*"], allow=["file_read", "mcp__git__*"]),
    )
    pre, bash = tmp_path / "pre.jsonl", tmp_path / "bash.jsonl"
    hooks = {
        "PreToolUse": [
            {
                "matcher": "mcp__.*",
                "hooks": [
                    {
                        "type": "command",
                        "command": ans(record=pre, stderr="no commits here", exit=2),
                    }
                ],
            },
            {"matcher": "Bash", "hooks": [{"type": "command", "command": ans(record=bash)}]},
        ]
    }  # fmt: skip
    commit = call("mcp__git__git_commit", repo_path=str(ws), message="by the model")
    script = {
        "analyst": [{"tool_calls": [commit, call("file_read", file_path="README.md")]}, {"text": "r"}],
        "writer": WRITER,
    }  # fmt: skip
    doc = scripted(script, request="r", hooks=hooks, mcp_servers={"git": git_server(ws)})
    rd = tmp_path / "run"
    assert run_step("dev-spec", doc, ws, run_dir=rd)["status"] == "succeeded"

    refused, read = calls(rd, "analyst")
    assert (refused["outcome"], refused["refused_by"]) == ("refused", "hook")
    assert "no commits here" in refused["result"]
    assert [h["event"] for h in refused["hooks"]] == ["PreToolUse"]
    assert read["outcome"] == "ran"  # `mcp__.*` does not match file_read
    assert commits(ws) == 1
    (seen,) = read_jsonl(pre)
    payload = json.loads(seen["stdin"])
    assert payload["tool_name"] == payload["orkeon_tool_name"] == "mcp__git__git_commit"
    assert payload["tool_input"] == commit["input"]
    assert not bash.exists()


def test_an_mcp_calls_time_is_charged_and_capped_by_the_budget(ws: Path, tmp_path: Path) -> None:
    """The call's time is charged as tool time; its limit is what is left of the step's
    time budget, after which the step ends budget_exhausted (exit 3)."""
    use_crew(ws, "dev-spec", spec_crew(["mcp__fake__slow"], allow=["mcp__fake__slow"]))
    script = {
        "analyst": [
            {"tool_calls": [call("mcp__fake__slow", seconds=0.3)]},
            {"tool_calls": [call("mcp__fake__slow", seconds=120)]},
            {"text": "never"},
        ],
        "writer": WRITER,
    }
    doc = scripted(script, request="r", budget={"seconds": 3}, mcp_servers={"fake": FAKE})
    rd = tmp_path / "run"
    result = run_step("dev-spec", doc, ws, run_dir=rd)
    assert (result["status"], result["exit_code"]) == ("budget_exhausted", 3)

    first, second = calls(rd, "analyst")
    assert first["result"] == "slept" and first["tool_seconds"] >= 0.3
    assert second["outcome"] == "ran"
    assert second["result"].startswith("error: MCP server fake did not answer within ")
    assert second["result"].endswith(" s; the call was cancelled")
    budget = result["budget"]
    assert budget["exhausted"] == "seconds"
    assert budget["tool_seconds"] == pytest.approx(
        first["tool_seconds"] + second["tool_seconds"], abs=1e-5
    )
    # Cut at the budget, not the 600 s tool limit: the text above says so, and the 120 s
    # sleep would have run past the suite's 120 s hang guard.
    assert budget["used_seconds"] >= 3


def kill_on_request(request: Path, rd: Path) -> None:
    """SIGKILL to the server kill_server.py names in `request`, once it wrote it (the hook
    cannot see orkeon's processes to do it itself)."""
    deadline = time.monotonic() + 60
    # The file may be there before its text (the hook writes it in place): await both.
    while not (request.exists() and request.read_text()) and time.monotonic() < deadline:
        time.sleep(0.01)
    server = request.read_text()
    (pid,) = [
        e["pid"]
        for e in events(rd, "mcp.server")
        if (e["server"], e["state"]) == (server, "started")
    ]
    os.kill(pid, signal.SIGKILL)


def test_a_server_killed_mid_run_refuses_its_next_call_and_the_run_goes_on(
    ws: Path, tmp_path: Path
) -> None:
    """A PostToolUse hook (matcher `mcp__fake__echo`) kills the server with SIGKILL from
    outside and waits until the run saw it end. The next call of its tools is refused with
    the reason, nothing was sent; other calls and the run go on."""
    use_crew(
        ws,
        "dev-spec",
        spec_crew(["file_read", "mcp__fake__*"], allow=["file_read", "mcp__fake__*"]),
    )
    rd = tmp_path / "run"
    request = tmp_path / "kill-request"
    argv = [sys.executable, str(KILL_SERVER), str(rd / "events.jsonl"), "fake", str(request)]
    kill = shlex.join(argv)
    hooks = {"PostToolUse": [{"matcher": "mcp__fake__echo", "hooks": [{"type": "command", "command": kill}]}]}  # fmt: skip
    script = {
        "analyst": [
            {"tool_calls": [call("mcp__fake__echo", text="one")]},
            {"tool_calls": [call("mcp__fake__structured", n=2)]},
            {"tool_calls": [call("file_read", file_path="README.md")]},
            {"text": "report"},
        ],
        "writer": WRITER,
    }
    doc = scripted(script, request="r", hooks=hooks, mcp_servers={"fake": FAKE})
    killer = threading.Thread(target=kill_on_request, args=(request, rd), daemon=True)
    killer.start()
    result = run_step("dev-spec", doc, ws, run_dir=rd)
    killer.join(60)
    assert result["status"] == "succeeded", result["error"]

    echo, after, read = calls(rd, "analyst")
    assert echo["result"] == "one"
    assert echo["hooks"][0]["exit_code"] == 0  # the hook saw the server end
    assert (after["outcome"], after["refused_by"]) == ("refused", None)
    assert after["result"].startswith(
        "[refused: MCP server fake is not running: it was killed by signal 9 (SIGKILL)"
    )
    assert read["outcome"] == "ran"
    states = [e["state"] for e in events(rd, "mcp.server")]
    assert states == ["started", "exited"]  # no `stopped`: it was gone before the end


def test_a_server_that_does_not_start_is_refused_with_its_reason(ws: Path, tmp_path: Path) -> None:
    use_crew(
        ws,
        "dev-spec",
        spec_crew(["mcp__broken__*", "mcp__fake__echo"], allow=["mcp__broken", "mcp__fake"]),
    )
    script = {
        "analyst": [
            {"tool_calls": [call("mcp__broken__anything"), call("mcp__fake__echo", text="up")]},
            {"text": "r"},
        ],
        "writer": WRITER,
    }
    servers = {"broken": {"command": "/nonexistent/mcp-server"}, "fake": FAKE}
    rd = tmp_path / "run"
    result = run_step(
        "dev-spec", scripted(script, request="r", mcp_servers=servers), ws, run_dir=rd
    )
    assert result["status"] == "succeeded", result["error"]
    broken, echo = calls(rd, "analyst")
    # The server never listed its tools, so its entry selected none; its name still says why.
    assert (broken["outcome"], broken["refused_by"]) == ("refused", None)
    assert broken["result"] == (
        "[refused: MCP server broken is not running: no such program: /nonexistent/mcp-server]"
    )
    assert echo["result"] == "up"
    failed = [e for e in events(rd, "mcp.server") if e["server"] == "broken"]
    assert [(e["state"], e["reason"]) for e in failed] == [
        ("failed", "no such program: /nonexistent/mcp-server")
    ]


def test_an_http_server_and_what_the_run_directory_keeps_of_the_secrets(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamable HTTP on 127.0.0.1 with a header holding `${WEB_TOKEN}`, expanded from
    orkeon's environment; a stdio server gets the scrubbed environment plus its `env`.
    inputs.json keeps `${VAR}` references and redacts values written out."""
    monkeypatch.setenv("WEB_TOKEN", "s3cret-value")
    use_crew(
        ws,
        "dev-spec",
        spec_crew(["mcp__web__echo", "mcp__local__env"], allow=["mcp__web", "mcp__local"]),
    )
    local = {**FAKE, "env": {"LITERAL": "hunter2", "FROM_REF": "${WEB_TOKEN}"}}
    script = {
        "analyst": [
            {
                "tool_calls": [
                    call("mcp__web__echo", text="over http"),
                    call("mcp__local__env", name="LITERAL"),
                    call("mcp__local__env", name="FROM_REF"),
                    call("mcp__local__env", name="WEB_TOKEN"),  # credential-like: scrubbed
                ]
            },
            {"text": "r"},
        ],
        "writer": WRITER,
    }
    rd = tmp_path / "run"
    with HttpServer("--require-header", "Authorization=Bearer s3cret-value") as url:
        web = {"url": url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}
        doc = scripted(script, request="r", mcp_servers={"web": web, "local": local})
        result = run_step("dev-spec", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded", result["error"]
    # The server got the value of ${WEB_TOKEN}; WEB_TOKEN names a credential, so what the
    # model reads of it (and the records) has it redacted (docs/security.md).
    assert [c["result"] for c in calls(rd, "analyst")] == [
        "over http",
        "'hunter2'",
        "'[redacted]'",
        "None",
    ]
    web_events = [e for e in events(rd, "mcp.server") if e["server"] == "web"]
    assert [(e["transport"], e["state"], e["pid"]) for e in web_events] == [
        ("http", "started", None),
        ("http", "stopped", None),
    ]
    saved = json.loads((rd / "inputs.json").read_text())["mcp_servers"]
    assert saved["web"]["headers"] == {"Authorization": "Bearer ${WEB_TOKEN}"}
    assert saved["local"]["env"] == {"LITERAL": "[redacted]", "FROM_REF": "${WEB_TOKEN}"}
    saved_text = (rd / "inputs.json").read_text()
    assert "hunter2" not in saved_text and "s3cret" not in saved_text


def test_the_model_is_offered_the_selected_tools_with_their_declared_schemas(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an HTTP provider sends: the analyst's request lists `file_read` and every tool
    `mcp__fake__*` selects (the server's order, its schema as declared, the two the hub
    leaves out missing); the writer's lists no MCP tool."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    use_crew(ws, "dev-spec", spec_crew(["file_read", "mcp__fake__*"], allow=["file_read"]))
    with OpenAIFake() as server:
        server.push(completion("report"))
        server.push(completion(calls=[("c1", "file_write", SPEC["input"])]))
        server.push(completion("done"))
        model = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url}
        doc = {"model": model, "request": "r", "mcp_servers": {"fake": FAKE}}
        result = run_step("dev-spec", doc, ws, run_dir=tmp_path / "run")
    assert result["status"] == "succeeded", result["error"]
    analyst, writer = (
        {t["function"]["name"]: t["function"] for t in r.body["tools"]} for r in server.requests[:2]
    )
    offered = [t.name for t in TOOLS if t.name not in LEFT_OUT]
    expected = ["file_read"] + [
        "mcp__fake__" + n.replace(".", "_").replace(" ", "_") for n in offered
    ]
    assert list(analyst) == expected
    assert analyst["mcp__fake__odd"]["parameters"] == ODD_SCHEMA
    assert analyst["mcp__fake__odd"]["description"] == "A schema to pass on as it is."
    assert list(writer) == ["file_read", "file_write"]
