"""MCP servers seen from the command line (issue 15): SIGTERM and SIGINT to `orkeon run`
leave no server process behind; `orkeon validate` starts, lists and stops each server;
`orkeon hooks list` shows each role's MCP tools; a workspace's `.mcp.json` starts nothing
until `orkeon hooks trust`; secrets the run directory redacted must be given again."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kit import ROOT, spawn
from kit.mcp import FAKE, git_server, group_running, namespaced, running, spec_crew, use_crew
from kit.steps import call, environ, make_workspace, read_jsonl, run_step, scripted, write

from orkeon_run.__main__ import main
from orkeon_run.errors import InputError
from orkeon_run.run.failed import repair_document
from orkeon_run.run.prepare import prepare
from orkeon_run.run.rundir import resume_document

BROKEN = {"command": "/nonexistent/mcp-server"}
WRITER = [{"tool_calls": [write(".orkeon/spec.md", "# Spec\n")]}, {"text": "done"}]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
    return make_workspace(tmp_path, {"README.md": "# app\n"})


def orkeon(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return spawn(*args, env={**environ(cwd), "PYTHONPATH": str(ROOT)}, cwd=cwd)


def wait_for(path: Path, found: Any, deadline: float) -> dict[str, Any]:
    """The first event of events.jsonl `found` accepts, once the run wrote it. `deadline` is
    a hang guard only (quiet: a second or two; the callers give 60 s)."""
    while time.monotonic() < deadline:
        if path.is_file():
            for event in read_jsonl(path):
                if found(event):
                    return event
        time.sleep(0.02)
    raise AssertionError("the event did not come in time")


# --- signals -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_orkeon_run_leaves_no_server_process_behind(
    ws: Path, tmp_path: Path, signum: int
) -> None:
    use_crew(ws, "dev-spec", spec_crew(["mcp__fake__*", "mcp__git__*"], allow=["mcp__fake"]))
    script = {
        "analyst": [
            {"tool_calls": [call("mcp__fake__spawn")]},  # a process in the server's group
            {"tool_calls": [call("mcp__fake__slow", seconds=120)]},
        ]
    }
    doc = scripted(script, request="r", mcp_servers={"fake": FAKE, "git": git_server(ws)})
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(doc))
    rd = tmp_path / "run"
    args = ["run", "dev-spec", "--inputs", f"@{inputs}", "--workspace", str(ws)]
    proc = orkeon(*args, "--run-dir", str(rd), "--output", "json", cwd=tmp_path)
    events = rd / "events.jsonl"
    try:
        deadline = time.monotonic() + 60
        spawned = wait_for(
            events, lambda e: e["type"] == "tool.call" and e["tool"] == "mcp__fake__spawn", deadline
        )
        wait_for(events, lambda e: e["type"] == "tool.start" and e["seq"] == 2, deadline)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert json.loads(out)["status"] == "interrupted"
    started = {
        e["server"]: e["pid"]
        for e in read_jsonl(events)
        if e["type"] == "mcp.server" and e["state"] == "started"
    }
    assert set(started) == {"fake", "git"}
    # The spawned process is the sandbox's pid of it (the server runs confined).
    pids = [*started.values(), *namespaced(int(spawned["result"]), ws)]
    for pid in pids:
        assert not running(pid), pid
    for pgid in started.values():
        assert group_running(pgid) == []
    stopped = [
        e["server"]
        for e in read_jsonl(events)
        if e["type"] == "mcp.server" and e["state"] == "stopped"
    ]
    assert sorted(stopped) == ["fake", "git"]


# --- validate and hooks list -----------------------------------------------------------------


def validate(ws: Path, inputs: dict[str, Any], *more: str) -> int:
    return main(["validate", "--inputs", json.dumps(inputs), "--workspace", str(ws), *more])


def test_validate_starts_lists_and_stops_each_server(ws: Path, capsys) -> None:
    servers = {"fake": FAKE, "git": git_server(ws)}
    assert validate(ws, {"mcp_servers": servers}) == 0
    captured = capsys.readouterr()
    fake, git, valid = captured.out.splitlines()
    command = shlex.join([sys.executable, FAKE["command"][1], "stdio"])
    assert fake.startswith(f"mcp server fake (stdio: {command}): 15 tools: mcp__fake__echo, ")
    assert git.startswith("mcp server git (stdio: ") and "mcp__git__git_status" in git
    assert valid == "inputs are valid"
    assert "warning: MCP tool mcp__fake__xxx" in captured.err  # a name too long, left out


def test_validate_with_a_server_that_cannot_start_is_exit_2(ws: Path, capsys) -> None:
    assert validate(ws, {"mcp_servers": {"fake": FAKE, "broken": BROKEN}}) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "orkeon: mcp server broken (stdio: /nonexistent/mcp-server): not running: "
        "no such program: /nonexistent/mcp-server\n"
    )


def test_validate_step_checks_the_crews_entries_against_the_servers(ws: Path, capsys) -> None:
    use_crew(ws, "dev-spec", spec_crew(["mcp__fake__echo", "mcp__nope__*"], allow=[]))
    inputs = {"request": "r", "model": {"provider": "scripted"}, "mcp_servers": {"fake": FAKE}}
    assert validate(ws, inputs, "--step", "dev-spec") == 2
    crew = ws / ".orkeon" / "crews" / "dev-spec.toml"
    assert capsys.readouterr().err == (
        f"orkeon: {crew}: roles[0].tools[1]: 'mcp__nope__*': there is no MCP server 'nope' (fake)\n"
    )
    use_crew(ws, "dev-spec", spec_crew(["mcp__fake__echo", "mcp__fake__ehco"], allow=[]))
    assert validate(ws, inputs, "--step", "dev-spec") == 0
    err = capsys.readouterr().err
    assert f"warning: {crew}: role analyst: mcp__fake__ehco selects no tool the server lists" in err


def test_validate_starts_each_server_confined_as_a_run_would(
    ws: Path, tmp_path: Path, off_tmp: Path, capsys
) -> None:
    """docs/tools.md, "Checking servers": what `validate` starts runs with the confinement a
    run gives it. A stdio server whose start writes a file outside the workspace and one in
    it gets neither (the roles' sandbox, no roots: only its private /tmp is writable); the
    same server with `"sandbox": "off"` runs as the operator said, with the operator's
    rights. Both start and list their tools."""
    from kit import DATA
    from kit.sandbox import require_sandbox

    require_sandbox()
    planting = str(DATA / "mcp" / "planting_server.py")

    def server(tag: str, **more: Any) -> dict[str, Any]:
        files = [str(off_tmp / f"{tag}.txt"), str(ws / f"{tag}.md")]
        return {"command": [sys.executable, planting, *files], **more}

    servers = {"boxed": server("boxed"), "free": server("free", sandbox="off")}
    assert validate(ws, {"mcp_servers": servers}) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:2]] == ["mcp server boxed", "mcp server free"]
    assert all(": 15 tools: " in line for line in out[:2]), out
    assert not (off_tmp / "boxed.txt").exists() and not (ws / "boxed.md").exists()
    assert (off_tmp / "free.txt").is_file() and (ws / "free.md").is_file()


def test_an_allow_list_of_a_server_run_unconfined_is_a_warning(ws: Path, capsys) -> None:
    """docs/tools.md, "How servers run": a `network` allow-list holds only in the sandbox;
    a `"sandbox": "off"` server with one is named with a warning (validate and run)."""
    servers = {"free": {**FAKE, "sandbox": "off", "network": ["pypi.org"]}}
    assert validate(ws, {"mcp_servers": servers}) == 0
    assert (
        "warning: MCP server free: its network allow-list holds only in the sandbox; with "
        '"sandbox": "off" it runs unconfined and can reach every host\n'
    ) in capsys.readouterr().err


def test_hooks_list_shows_each_roles_mcp_tools(ws: Path, capsys) -> None:
    use_crew(
        ws,
        "dev-spec",
        spec_crew(["file_read", "mcp__fake__echo", "mcp__fake__env", "mcp__broken"], allow=[]),
    )
    hooks = {"PreToolUse": [{"matcher": "mcp__fake__.*", "hooks": [{"type": "command", "command": "true"}]}]}  # fmt: skip
    inputs = {"hooks": hooks, "mcp_servers": {"fake": FAKE, "broken": BROKEN}}
    code = main(["hooks", "list", "--inputs", json.dumps(inputs), "--workspace", str(ws)])
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "PreToolUse [mcp__fake__.*] true",
        "mcp dev-spec analyst: mcp__fake__echo, mcp__fake__env, "
        "mcp__broken (not running: no such program: /nonexistent/mcp-server)",
    ]


# --- a workspace's .mcp.json -----------------------------------------------------------------


def test_a_workspace_mcp_json_starts_nothing_until_trusted(
    ws: Path, tmp_path: Path, capsys
) -> None:
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": FAKE}}))
    use_crew(ws, "dev-spec", spec_crew(["mcp__proj__echo"], allow=["mcp__proj"]))
    script = {"analyst": [{"tool_calls": [call("mcp__proj__echo", text="hi")]}, {"text": "r"}], "writer": WRITER}  # fmt: skip
    doc = scripted(script, request="r")

    assert validate(ws, {}) == 0
    captured = capsys.readouterr()
    assert "mcp server" not in captured.out
    assert (
        f"warning: {ws / '.mcp.json'}: the workspace's MCP servers are not trusted and were not "
        "started (proj); trust them as they are now with `orkeon hooks trust --workspace "
    ) in captured.err
    with pytest.raises(InputError) as caught:
        run_step("dev-spec", doc, ws, run_dir=tmp_path / "run1")
    assert "'mcp__proj__echo': there is no MCP server 'proj' (none is configured)" in str(
        caught.value
    )

    assert main(["hooks", "trust", "--workspace", str(ws)]) == 0
    assert f"trusted {ws / '.mcp.json'} (" in capsys.readouterr().out
    assert validate(ws, {}) == 0
    assert "mcp server proj (stdio: " in capsys.readouterr().out
    result = run_step("dev-spec", doc, ws, run_dir=tmp_path / "run2")
    assert result["status"] == "succeeded", result["error"]

    # Any change of its servers drops the trust.
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {**FAKE, "args": ["x"]}}}))
    assert validate(ws, {}) == 0
    captured = capsys.readouterr()
    assert "mcp server" not in captured.out and "are not trusted" in captured.err


# --- what the run directory keeps ------------------------------------------------------------


def test_a_redacted_env_value_must_be_given_again_on_resume(ws: Path, tmp_path: Path) -> None:
    use_crew(ws, "dev-spec", spec_crew(["mcp__local__env"], allow=["mcp__local"]))
    local = {**FAKE, "env": {"DB_URL": "postgres://app:hunter2@db/app", "HOME_DIR": "${HOME}"}}
    script = {"analyst": [{"text": "r"}], "writer": WRITER}
    rd = tmp_path / "run"
    run_step(
        "dev-spec", scripted(script, request="r", mcp_servers={"local": local}), ws, run_dir=rd
    )
    saved = json.loads((rd / "inputs.json").read_text())
    assert saved["mcp_servers"]["local"]["env"] == {"DB_URL": "[redacted]", "HOME_DIR": "${HOME}"}

    env = environ(tmp_path)
    with pytest.raises(InputError) as caught:
        prepare(resume_document(rd, saved, None), step=None, environ=env)
    assert caught.value.problems == [
        "mcp_servers.local.env.DB_URL: the saved inputs hold [redacted] here (the value was "
        "written out, not as ${VAR}); give mcp_servers again in --inputs"
    ]
    again = prepare(
        resume_document(rd, saved, {"mcp_servers": {"local": local}}), step=None, environ=env
    )
    assert again.mcp_servers["local"].env["DB_URL"] == "postgres://app:hunter2@db/app"
    # A repair takes the failed run's servers unless given again.
    repair = repair_document({"repair": {"run": str(rd), "role": "b1/x"}}, env)
    assert repair["mcp_servers"] == saved["mcp_servers"]
