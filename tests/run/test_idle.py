"""The no-progress watchdog (docs/inputs.md, "The no-progress watchdog"): "a role whose
model sends no bytes, or whose tool, hook or MCP call prints nothing and does not end, for
`budget.idle_seconds` is ended, its process tree killed; the role's outcome is
`budget_exhausted` with `exhausted: "idle"` and what was silent named in the result, the
events and the progress; exit 3". Idle values here are small (0.5 s) so the suite stays
fast; every verdict waits on the run's end (its events and result), never on a sleep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.fakes import openai_api
from kit.mcp import FAKE, namespaced, running, with_hub
from kit.process import orkeon
from kit.steps import calls, environ, events, make_workspace, run_step, shell, write

from orkeon_run import proc
from orkeon_run.config.run_settings import resolve
from orkeon_run.errors import Idle
from orkeon_run.run.progress.plain_lines import PlainLines
from orkeon_run.run.progress.tracker import Tracker
from orkeon_run.tools.sandbox.veil import veil_status

IDLE = 0.5
PLAN = {
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": "api", "roots": ["src/"], "task": "write src/"},
                {"name": "docs", "roots": ["docs/"], "task": "write docs/"},
            ],
        }
    ]
}
# Prints nothing, forks a child that prints nothing, records the child's pid, never ends.
SHELL = {"sandbox": "off", "extra_allowed_commands": ["./hang.sh", "./tick.sh"]}
HANG = '#!/bin/sh\nsleep 300 &\necho $! > "$1"\nwait\n'


def workspace(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/__init__.py": "", "hang.sh": HANG})
    (ws / "hang.sh").chmod(0o755)
    return ws


def batches(tmp_path: Path, script: dict[str, Any], **more: Any) -> dict[str, Any]:
    ws = workspace(tmp_path)
    doc = {
        "model": {"provider": "scripted", "script": script},
        "plan": PLAN,
        "concurrency": 1,
        "shell": SHELL,
        "budget": {"idle_seconds": IDLE},
        **more,
    }
    return run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")


SIBLING = {"b1/docs": [{"tool_calls": [write("docs/x.md", "# x\n")]}, {"text": "done"}]}


def test_a_shell_command_that_prints_nothing_ends_its_role_and_its_process_tree(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "child.pid"
    script = {"b1/api": [{"tool_calls": [shell(f"./hang.sh {pidfile}")]}], **SIBLING}
    result = batches(tmp_path, script)
    api, docs = result["roles"]
    silent = {"kind": "tool", "name": "shell", "command": f"./hang.sh {pidfile}", "seconds": IDLE}
    assert (api["status"], api["idle"]) == ("budget_exhausted", silent)
    assert api["error"].startswith(f"no progress for {IDLE:g} s: the shell tool (./hang.sh")
    # The sibling goes on: the watchdog ends the silent role, not the step's budget.
    assert docs["status"] == "succeeded"
    assert (result["status"], result["exit_code"]) == ("budget_exhausted", 3)
    assert (result["budget"]["exhausted"], result["error"]["kind"]) == ("idle", "budget")
    # The forked child, which never printed either, was killed with the group.
    assert not running(int(pidfile.read_text()))
    run = tmp_path / "run"
    (idle,) = events(run, "role.idle")
    assert (idle["role"], idle["silent"]) == ("b1/api", silent)
    (call,) = calls(run, "b1/api")
    assert call["result"].startswith("[stopped: no progress for")
    ended = [e for e in events(run, "role.end") if e["role"] == "b1/api"]
    assert ended[0]["idle"] == silent
    assert ended[0]["error"] == api["error"]  # what the progress views show of the role


def test_output_keeps_a_command_alive_past_the_idle_limit(tmp_path: Path) -> None:
    # Prints a line every 0.1 s for 1.5 s in all: three times the idle limit, never silent
    # for a fifth of it (a 5x margin for a loaded machine).
    tick = "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo $i; sleep 0.1; done\n"
    ws = workspace(tmp_path)
    (ws / "tick.sh").write_text(tick)
    (ws / "tick.sh").chmod(0o755)
    script = {"b1/api": [{"tool_calls": [shell("./tick.sh")]}, {"text": "done"}], **SIBLING}
    doc = {"model": {"provider": "scripted", "script": script}, "plan": PLAN,
           "shell": SHELL, "budget": {"idle_seconds": IDLE}}  # fmt: skip
    result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    assert result["status"] == "succeeded", result["error"]
    (call,) = calls(tmp_path / "run", "b1/api")
    assert call["result"]["stdout"].split() == [str(i) for i in range(1, 16)]


def test_a_pre_tool_hook_that_hangs_silently_ends_its_role(tmp_path: Path) -> None:
    pidfile = tmp_path / "hook-child.pid"
    script = {"b1/api": [{"tool_calls": [write("src/a.py", "a = 1\n")]}], **SIBLING}
    hook = {"event": "pre-tool", "command": f"./hang.sh {pidfile}"}
    result = batches(tmp_path, script, hooks=[hook])
    api = result["roles"][0]
    assert api["status"] == "budget_exhausted"
    assert api["idle"]["kind"] == "hook"
    assert api["idle"]["command"] == f"./hang.sh {pidfile}"
    assert result["budget"]["exhausted"] == "idle" and result["exit_code"] == 3
    assert not (tmp_path / "ws" / "src" / "a.py").exists()  # the call never ran
    # The hook wrote its child's pid as its PID namespace numbers it (hooks run behind a
    # veil, docs/security.md): the host's pids of that child, in the workspace.
    pid = int(pidfile.read_text())
    pids = namespaced(pid, tmp_path / "ws") if veil_status()[0] is not None else [pid]
    assert not any(running(p) for p in pids)


def test_a_provider_that_stalls_mid_stream_ends_its_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IDLE_TEST_KEY", "sk-test")
    ws = workspace(tmp_path)
    stalled = openai_api.completion("never finished")
    stalled.stall_after = 20  # headers and 20 bytes of the body, then silence
    with openai_api.OpenAIFake() as server:
        server.push(stalled)
        model = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url,
                 "api_key_env": "IDLE_TEST_KEY", "max_retries": 3}  # fmt: skip
        plan = {
            "batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "x"}]}]
        }
        doc = {"model": model, "plan": plan, "budget": {"idle_seconds": IDLE}}
        result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
        assert server.hang_up.wait(30)  # the client dropped the stalled request
        assert len(server.requests) == 1  # and did not retry it
    (api,) = result["roles"]
    assert api["status"] == "budget_exhausted"
    assert api["idle"] == {"kind": "provider", "name": "openai gpt-4o-mini", "command": None,
                           "seconds": IDLE}  # fmt: skip
    assert "the model provider openai gpt-4o-mini sent no bytes" in api["error"]
    assert (result["budget"]["exhausted"], result["exit_code"]) == ("idle", 3)


def test_an_mcp_call_with_no_answer_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    server = {"fake": FAKE}

    async def body(hub: Any, _events: Any) -> Any:
        with pytest.raises(Idle) as caught:
            await hub.call("mcp__fake__slow", {"seconds": 60}, 60.0, idle=IDLE)
        # The server, shared by the run's roles, still answers.
        reply = await hub.call("mcp__fake__echo", {"text": "still here"}, 30.0)
        return caught.value.silent, reply.result

    silent, after = with_hub(server, tmp_path, body)
    assert silent == {"kind": "mcp", "name": "fake", "command": "slow", "seconds": IDLE}
    assert "still here" in json.dumps(after)


def test_proc_kills_a_silent_program_but_not_one_that_prints(tmp_path: Path) -> None:
    quiet = proc.run(["sleep", "30"], cwd=tmp_path, timeout=60, idle=IDLE)
    assert (quiet.idle, quiet.timed_out, quiet.exit_code) == (True, True, None)
    loud = proc.run(["sh", "-c", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done"],
                    cwd=tmp_path, timeout=60, idle=IDLE)  # fmt: skip
    assert (loud.idle, loud.exit_code, loud.stdout.split()[-1]) == (False, 0, "6")


def test_the_plain_progress_names_what_was_silent() -> None:
    tracker = Tracker(clock=lambda: 0.0)
    lines = PlainLines(tracker, github=False, color=False)
    error = "no progress for 0.5 s: the shell tool (./hang.sh) printed nothing and did not end"
    for e in (
        {"type": "run.start", "ts": 0.0, "step": "dev-batches", "budget": {"idle_seconds": 0.5}},
        {"type": "role.start", "ts": 0.0, "role": "b1/api", "batch": "b1"},
    ):
        tracker.update(e)
        lines.lines(e)
    end = {"type": "role.end", "ts": 1.0, "role": "b1/api", "batch": "b1",
           "status": "budget_exhausted", "error": error, "turns": 1, "calls": 1, "refused": 1}  # fmt: skip
    tracker.update(end)
    (line,) = lines.lines(end)
    assert "budget_exhausted" in line and "the shell tool (./hang.sh)" in line


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--inputs", json.dumps({"plan": PLAN, "budget": {"idle_seconds": 0}})], {},
         "budget.idle_seconds"),
        (["--max-idle", "-1"], {}, "--max-idle"),
        ([], {"ORKEON_MAX_IDLE": "0"}, "ORKEON_MAX_IDLE"),
    ],
)  # fmt: skip
def test_a_zero_or_negative_idle_limit_is_refused_naming_it(
    tmp_path: Path, args: list[str], env: dict[str, str], named: str
) -> None:
    ws = workspace(tmp_path)
    model = {"provider": "scripted", "script": {}}
    if "--inputs" not in args:
        args = ["--inputs", json.dumps({"plan": PLAN}), *args]
    doc = {**json.loads(args[1]), "model": model}
    res = orkeon("run", "dev-batches", "--workspace", str(ws), "--inputs", json.dumps(doc),
                 *args[2:], cwd=tmp_path, env=environ(tmp_path, **env))  # fmt: skip
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert named in line and "Traceback" not in res.stderr
    assert not (ws / ".orkeon" / "runs").exists()  # nothing ran


def test_max_idle_takes_the_knobs_precedence() -> None:
    """docs/inputs.md, "Knobs": flags > environment > --inputs > settings files."""
    doc = {"budget": {"idle_seconds": 30}}
    env = {"ORKEON_MAX_IDLE": "20"}
    assert resolve(doc, flags={"idle": "10"}, environ=env, files=())["budget"] == {
        "idle_seconds": 10.0
    }
    assert resolve(doc, flags={}, environ=env, files=())["budget"]["idle_seconds"] == 20.0
    off = resolve(doc, flags={"idle": "none"}, environ={}, files=())
    assert off["budget"]["idle_seconds"] is None  # the watchdog turned off
