"""`orkeon run` as CI uses it: a real process, its stdout, stderr, exit code and run
directory (docs/output.md)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import DATA
from kit.process import orkeon
from kit.steps import environ, make_workspace

CC_HOOKS = DATA / "cc_hooks" / "claude"
FILES = {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}


def spec_inputs(writer_turns: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "request": "add a greeting",
        "model": {
            "provider": "scripted",
            "script": {
                "analyst": [{"text": "src/app.py prints hi."}],
                "writer": writer_turns,
            },
        },
        **extra,
    }


WRITE_SPEC = {
    "tool_calls": [
        {"tool": "file_write", "input": {"file_path": ".orkeon/spec.md", "content": "# Spec\n"}}
    ]
}


def dev_spec(
    tmp: Path, ws: Path, doc: dict[str, Any], output: str = "json"
) -> subprocess.CompletedProcess[str]:
    """`orkeon run dev-spec` on `ws` with `doc` as its inputs."""
    return orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--output", output,
        "--inputs", json.dumps(doc), cwd=tmp
    )  # fmt: skip


def test_output_json_is_the_result_document_and_nothing_else(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    proc = dev_spec(tmp_path, ws, spec_inputs([WRITE_SPEC]))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # one object, nothing around it
    assert proc.stdout.count("\n") == 1
    assert result["status"] == "succeeded" and result["exit_code"] == 0
    assert result["artifacts"] == {"spec": ".orkeon/spec.md"}
    run_dir = ws / ".orkeon" / "runs" / result["run_id"]
    assert json.loads((run_dir / "result.json").read_text()) == result
    assert (ws / ".orkeon" / "spec.md").read_text() == "# Spec\n"
    # Off a terminal stderr is the plain progress view's, a line per notable event; the
    # log records are JSON lines in the run directory (docs/output.md, "stdout and stderr").
    lines = proc.stderr.splitlines()
    assert not any(line.startswith("{") for line in lines)
    logged = [json.loads(line) for line in (run_dir / "logs.jsonl").read_text().splitlines()]
    assert [e["event"] for e in logged] == ["step started", "step ended"]
    progress = lines
    assert progress[0] == f"dev-spec: started run {result['run_id']} (budget: 30 min 00 s)"
    assert "writer: #1 file_write .orkeon/spec.md: ran (" in progress[4]
    assert progress[-1].startswith("dev-spec: succeeded (exit 0) in ")


def test_stream_json_is_the_events_then_the_result(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    proc = dev_spec(tmp_path, ws, spec_inputs([WRITE_SPEC]), "stream-json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["type"] == "run.start"
    assert events[-1]["type"] == "result"
    assert {"tool.call", "model.turn"} <= {e["type"] for e in events}
    result = {k: v for k, v in events[-1].items() if k not in ("type", "ts")}
    run_dir = ws / ".orkeon" / "runs" / result["run_id"]
    assert json.loads((run_dir / "result.json").read_text()) == result
    on_disk = (run_dir / "events.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in on_disk] == events


def test_text_output_is_a_short_summary(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    proc = dev_spec(tmp_path, ws, spec_inputs([WRITE_SPEC]), "text")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("dev-spec: succeeded (exit 0)")
    assert "role writer: succeeded" in proc.stdout


def test_a_failed_step_exits_1(tmp_path):
    """The contract: "1 | the step ran and failed" — here the writer never writes the spec."""
    ws = make_workspace(tmp_path, FILES)
    proc = dev_spec(tmp_path, ws, spec_inputs([{"text": "I will not write it"}]))
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "failed"
    assert result["error"]


def test_a_spent_budget_exits_3_and_says_which(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    doc = spec_inputs([WRITE_SPEC], budget={"seconds": 60, "turns": 1})
    proc = dev_spec(tmp_path, ws, doc)
    assert proc.returncode == 3, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "budget_exhausted"
    assert result["budget"]["exhausted"] == "turns"
    assert result["budget"]["turns"] == 1
    assert result["error"]["kind"] == "budget"
    assert result["error"]["message"].startswith("the step's turn budget is spent")


def test_bad_inputs_exit_2_and_write_nothing(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    proc = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--inputs", '{"request": 5}', cwd=tmp_path
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["orkeon: request: Input should be a valid string"]
    assert not (ws / ".orkeon").exists()


def test_inputs_from_stdin_and_an_explicit_run_dir(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "runs" / "one"
    proc = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--run-dir", str(rd),
        "--inputs", "-", "--output", "json", stdin=json.dumps(spec_inputs([WRITE_SPEC])), cwd=tmp_path
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in rd.iterdir()) == [
        "events.jsonl",
        "inputs.json",
        "lock",
        "logs.jsonl",
        "result.json",
        "state.json",
        "transcripts",
    ]
    saved = json.loads((rd / "inputs.json").read_text())
    assert saved["workspace"] == str(ws)  # so --resume acts on the same tree
    # A run directory is never reused by a new run: what it holds is not overwritten.
    again = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--run-dir", str(rd),
        "--inputs", json.dumps(spec_inputs([WRITE_SPEC])), cwd=tmp_path
    )  # fmt: skip
    assert again.returncode == 2
    assert "already holds a run" in again.stderr


def test_resume_of_a_missing_run_is_a_usage_error(tmp_path):
    proc = orkeon("run", "dev-batches", "--resume", str(tmp_path / "nope"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a run directory" in proc.stderr


@pytest.mark.skipif(shutil.which("jq") is None, reason="the Claude Code script reads JSON with jq")
def test_a_claude_code_hook_script_runs_unchanged_in_a_real_run(tmp_path):
    """The OrbCode page: scripts written for Claude Code work here. protect_files.sh is
    Claude Code's documented example (jq on .tool_input.file_path, exit 2 blocks)."""
    ws = make_workspace(tmp_path, FILES)
    command = shlex.quote(str(CC_HOOKS / "protect_files.sh"))
    hooks = {
        "PreToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": command}]}
        ]
    }
    plan = {
        "batches": [{"name": "b1", "roles": [{"name": "cfg", "roots": ["config/"], "task": "t"}]}]
    }

    def write(path: str) -> dict[str, Any]:
        return {
            "tool_calls": [{"tool": "file_write", "input": {"file_path": path, "content": "A=1\n"}}]
        }

    doc = {
        "plan": plan,
        "hooks": hooks,
        "model": {
            "provider": "scripted",
            "script": {"b1/cfg": [write("config/.env"), write("config/app.ini")]},
        },
    }
    proc = orkeon(
        "run", "dev-batches", "--workspace", str(ws), "--output", "stream-json",
        "--inputs", json.dumps(doc), cwd=tmp_path
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    calls = [e for e in events if e["type"] == "tool.call"]
    assert calls[0]["outcome"] == "refused" and calls[0]["refused_by"] == "hook"
    assert calls[0]["result"] == (  # the script reads the path absolute, as from Claude Code
        f"[PreToolUse hook ({command}) blocked the call: "
        f"Blocked: {ws}/config/.env matches protected pattern '.env']"
    )
    assert [(h["event"], h["exit_code"]) for h in calls[0]["hooks"]] == [("PreToolUse", 2)]
    assert calls[1]["outcome"] == "ran"
    assert not (ws / "config" / ".env").exists()
    assert (ws / "config" / "app.ini").read_text() == "A=1\n"


def test_resume_keeps_the_run_id_and_refuses_another_step(tmp_path):
    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "runs" / "nightly"
    doc = spec_inputs([{"text": "not yet"}, WRITE_SPEC])
    first = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--run-dir", str(rd),
        "--output", "json", "--inputs", json.dumps(doc), cwd=tmp_path
    )  # fmt: skip
    assert first.returncode == 1, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    assert run_id != "nightly"
    wrong = orkeon("run", "dev-plan", "--resume", str(rd), cwd=tmp_path)
    assert wrong.returncode == 2
    assert f"{rd} is a dev-spec run, not dev-plan" in wrong.stderr
    again = orkeon("run", "dev-spec", "--resume", str(rd), "--output", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["run_id"] == run_id


def test_a_step_that_ends_exactly_on_its_turn_limit_succeeded(tmp_path):
    """docs/inputs.md: at the limit "no new turn or call starts". A step that needs no
    new one has finished within its budget: exit 0, `exhausted` null."""
    ws = make_workspace(tmp_path, FILES)
    # analyst: 1 turn; writer: the write, then its final answer: 3 turns in all.
    doc = spec_inputs([WRITE_SPEC], budget={"seconds": 60, "turns": 3})
    proc = dev_spec(tmp_path, ws, doc)
    assert proc.returncode == 0, proc.stderr
    budget = json.loads(proc.stdout)["budget"]
    assert budget["turns"] == 3
    assert budget["exhausted"] is None


def test_a_crash_inside_a_step_still_leaves_a_result_naming_its_cause(
    tmp_path, monkeypatch, capsys
):
    """Fault injection (no input is known to crash a step): a bug raised inside a role's
    task group ends the run with status "error", exit 1, the real exception named, and
    result.json and the events written."""
    import anyio

    from orkeon_run.__main__ import main
    from orkeon_run.run.steps import spec

    async def broken(sr):
        async def role():
            raise KeyError("no such thing")

        async with anyio.create_task_group() as tg:
            tg.start_soon(role)

    monkeypatch.setattr(spec, "run", broken)
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    ws = make_workspace(tmp_path, FILES)
    code = main(
        ["run", "dev-spec", "--workspace", str(ws), "--output", "json",
         "--inputs", json.dumps(spec_inputs([WRITE_SPEC]))]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1
    result = json.loads(out)
    assert result["status"] == "error"
    assert result["error"] == {"kind": "internal", "message": "KeyError: 'no such thing'"}
    run_dir = ws / ".orkeon" / "runs" / result["run_id"]
    assert json.loads((run_dir / "result.json").read_text()) == result
    # One plain line on stderr; the record with its traceback in the run's logs.jsonl.
    assert any(x.startswith("orkeon: error: step crashed") for x in err.splitlines())
    logged = (run_dir / "logs.jsonl").read_text().splitlines()
    crash = [json.loads(x) for x in logged if "step crashed" in x]
    assert "KeyError: 'no such thing'" in crash[0]["exception"]


def test_on_a_terminal_the_summary_is_text_and_logs_are_for_people(tmp_path):
    """docs/output.md: `text` is the default on a terminal; logs are human-readable on
    a terminal (JSON lines otherwise, as the tests above show)."""
    import os
    import pty

    ws = make_workspace(tmp_path, FILES)
    leader, follower = pty.openpty()  # a terminal on its output: Popen, not kit.process
    proc = subprocess.Popen(
        [sys.executable, "-m", "orkeon_run", "run", "dev-spec", "--workspace", str(ws),
         "--inputs", json.dumps(spec_inputs([WRITE_SPEC]))],
        stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
        env=environ(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode()
    assert "dev-spec: succeeded (exit 0)" in text
    assert "role writer: succeeded" in text
    assert "step started" in text
    for line in text.splitlines():
        assert not line.lstrip().startswith("{"), line  # no JSON on a terminal
