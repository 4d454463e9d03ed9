"""Published Claude Code hook scripts run under `orkeon run` as they do under Claude Code
(issue 12). Each script in `tests/data/cc_hooks/published/` has the shape of a published
one: a jq transcript reader that loops the model until it prints a promise, a stop hook
that exits 2 with a JSON answer, a `$CLAUDE_PROJECT_DIR` path guard that refuses `..`, a
`CLAUDE_ENV_FILE` loader written with `set -u`, and a formatter that rewrites the file.

Each test copies the scripts into a git workspace's `.claude/hooks/`, names them from a
`.claude/settings.json` as Claude Code users write it, and runs dev-batches through the
runner (what `orkeon run` runs) with the scripted model; it checks what the model read,
which files changed, and the exit code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from kit import DATA
from kit.steps import calls, events, make_workspace, read_jsonl, run_step, scripted, shell, write
from kit.steps import user_messages as prompts

PUBLISHED = DATA / "cc_hooks" / "published"
FILES = {"README.md": "# app\n", "src/__init__.py": ""}
PLAN = {
    "title": "t",
    "batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "build it"}]}],
}

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the scripts use jq")


def cmd(name: str) -> str:
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'


def hook(name: str) -> dict[str, Any]:
    return {"type": "command", "command": cmd(name)}


def workspace(tmp_path: Path, hooks: dict[str, Any], files: dict[str, str] | None = None) -> Path:
    scripts = {f".claude/hooks/{p.name}": p.read_text() for p in PUBLISHED.iterdir()}
    settings = {"permissions": {"allow": ["Bash", "Write", "Edit"]}, "hooks": hooks}
    ws = make_workspace(
        tmp_path,
        {**FILES, **scripts, **(files or {}), ".claude/settings.json": json.dumps(settings)},
    )
    for p in (ws / ".claude" / "hooks").iterdir():
        p.chmod(0o755)
    return ws


def run(ws: Path, rd: Path, script: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    doc = scripted({"b1/api": script}, plan=PLAN, settings=[".claude/settings.json"], **more)
    return run_step("dev-batches", doc, ws, run_dir=rd)


def text(content: str) -> dict[str, Any]:
    return {"text": content}


def tool(name: str, **input: Any) -> dict[str, Any]:
    return {"tool": name, "input": input}


def hook_runs(rd: Path, event: str) -> list[dict[str, Any]]:
    return [e for e in events(rd, "hook.run") if e["event"] == event]


# --- 1. transcript_path in Claude Code's shape -------------------------------------------


def test_a_jq_transcript_reader_loops_the_model_until_the_promise(tmp_path: Path) -> None:
    """The Stop hook greps `"role":"assistant"` in the file `transcript_path` names, takes
    the last one's text blocks with jq and counts the `Write` tool_use blocks: it keeps the
    model going with what it read, then lets it finish once the promise is printed."""
    ws = workspace(tmp_path, {"Stop": [{"hooks": [hook("promise_loop.sh")]}]})
    rd = tmp_path / "run"
    script = [
        {"text": "Writing the module.", "tool_calls": [write("src/app.py", "x = 1\n")]},
        text("Still working on it."),
        text("All done. <promise>DONE</promise>"),
    ]
    result = run(ws, rd, script)
    assert result["exit_code"] == 0, result["error"]
    assert prompts(rd, "b1/api") == [
        "build it",
        f"[Stop hook ({cmd('promise_loop.sh')}) asks to keep going: Not done yet (you said: "
        "Still working on it.; Write calls so far: 1). Output <promise>DONE</promise> when "
        "the task is complete.]",
    ]
    assert [r["exit_code"] for r in hook_runs(rd, "Stop")] == [0, 0]
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"


def test_the_transcript_has_claude_codes_shape(tmp_path: Path) -> None:
    """One JSON object a line: `type` user/assistant, `message` with `role` and content
    blocks (`text`, `tool_use` with Claude Code's tool name, `tool_result`), `uuid` chained
    by `parentUuid`, `sessionId`, `timestamp`, `cwd`; written before each hook runs (the
    PostToolUse hook copies the file as it is when the hook runs)."""
    snap = tmp_path / "snap.jsonl"
    copy = {"type": "command", "command": f'jq -r .transcript_path | xargs cat > "{snap}"'}
    ws = workspace(tmp_path, {"PostToolUse": [{"matcher": "Bash", "hooks": [copy]}]})
    rd = tmp_path / "run"
    script = [
        {"text": "Let me look.", "tool_calls": [shell("ls src"), write("../out.txt", "no")]},
        text("Done."),
    ]
    result = run(ws, rd, script)
    assert result["exit_code"] == 0, result["error"]
    path = rd / "claude-transcripts" / "b1" / "api.jsonl"
    lines = read_jsonl(path)
    seen = read_jsonl(snap)  # what the hook read: up to the call it ran after
    assert seen == lines[:2]
    assert [(x["type"], x["message"]["role"]) for x in lines] == [
        ("user", "user"),
        ("assistant", "assistant"),
        ("user", "user"),
        ("user", "user"),
        ("assistant", "assistant"),
    ]
    prompt, answer, ran, refused, final = (x["message"] for x in lines)
    assert prompt == {"role": "user", "content": "build it"}
    [ls_id, write_id] = [c["id"] for c in answer["content"][1:]]
    assert answer["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": ls_id, "name": "Bash", "input": {"command": "ls src"}},
        {"type": "tool_use", "id": write_id, "name": "Write",
         "input": {"file_path": "../out.txt", "content": "no"}},
    ]  # fmt: skip
    assert answer["stop_reason"] == "tool_use" and final["stop_reason"] == "end_turn"
    out = json.dumps(
        {"exit_code": 0, "stdout": "__init__.py\n", "stderr": ""}, separators=(",", ":")
    )
    assert ran["content"] == [
        {"type": "tool_result", "tool_use_id": ls_id, "content": out, "is_error": False}
    ]
    assert refused["content"] == [
        {"type": "tool_result", "tool_use_id": write_id,
         "content": "[refused: ../out.txt is outside the workspace]", "is_error": True}
    ]  # fmt: skip
    assert final["content"] == [{"type": "text", "text": "Done."}]
    session = {x["sessionId"] for x in lines}
    assert len(session) == 1 and uuid.UUID(session.pop())
    assert all(x["cwd"] == str(ws) for x in lines)
    assert [x["parentUuid"] for x in lines] == [None] + [x["uuid"] for x in lines[:-1]]
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", x["timestamp"]) for x in lines
    )
    assert '"role":"assistant"' in path.read_text()  # compact: greps as in Claude Code
    # orkeon's own transcript is unchanged in shape.
    own = read_jsonl(rd / "transcripts" / "b1" / "api.jsonl")
    assert [x["role"] for x in own] == ["system", "user", "assistant", "tool", "tool", "assistant"]


# --- 2. exit 2 with a JSON answer ----------------------------------------------------------


def test_a_stop_hook_that_exits_2_with_json_sends_the_json_reason(tmp_path: Path) -> None:
    """The hook prints `{"decision":"block","reason":"Tests are failing:\\n…"}`, writes
    `tests failed` on stderr and exits 2: the model reads the JSON's reason (the failing
    test output), as under Claude Code, not the stderr line."""
    run_sh = (
        "test -f src/fixed.txt || { echo 'FAIL test_fixed: src/fixed.txt is missing'; exit 1; }\n"
    )
    ws = workspace(
        tmp_path, {"Stop": [{"hooks": [hook("stop_tests_exit2.sh")]}]}, {"tests/run.sh": run_sh}
    )
    rd = tmp_path / "run"
    script = [text("Done."), {"tool_calls": [write("src/fixed.txt", "ok\n")]}, text("Fixed.")]
    result = run(ws, rd, script)
    assert result["exit_code"] == 0, result["error"]
    assert prompts(rd, "b1/api")[1] == (
        f"[Stop hook ({cmd('stop_tests_exit2.sh')}) asks to keep going: Tests are failing:\n"
        "FAIL test_fixed: src/fixed.txt is missing]"
    )
    first, second = hook_runs(rd, "Stop")
    assert (first["exit_code"], first["first_line"]) == (2, "tests failed")
    assert second["exit_code"] == 0
    assert (ws / "src" / "fixed.txt").read_text() == "ok\n"


# --- 3. absolute, normalized paths -----------------------------------------------------------


def test_a_project_dir_path_guard_sees_absolute_normalized_paths(tmp_path: Path) -> None:
    """The guard refuses any `..` and any path outside `"$CLAUDE_PROJECT_DIR"/`: it lets
    `src/../src/ok2.py` through (it reads `WS/src/ok2.py`), as under Claude Code. The call's
    input stays as the model wrote it, in the events and in what the model reads."""
    log = tmp_path / "paths.log"
    record = {"type": "command", "command": f'jq -r .tool_input.file_path >> "{log}"'}
    ws = workspace(
        tmp_path,
        {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [hook("path_guard.sh"), record]}]},
        {"src/ok1.py": "a = 1\n"},
    )
    rd = tmp_path / "run"
    script = [
        {"tool_calls": [
            write("src/../src/ok2.py", "b = 2\n"),
            tool("file_edit", file_path="./src/./ok1.py", old_string="a = 1", new_string="a = 3"),
        ]},
        text("done"),
    ]  # fmt: skip
    result = run(ws, rd, script)
    assert result["exit_code"] == 0, result["error"]
    wrote, edited = calls(rd, "b1/api")
    assert (wrote["outcome"], edited["outcome"]) == ("ran", "ran")
    assert wrote["input"]["file_path"] == "src/../src/ok2.py"
    assert wrote["result"] == "created src/../src/ok2.py (6 bytes)"
    assert log.read_text().splitlines() == [f"{ws}/src/ok2.py", f"{ws}/src/ok1.py"]
    assert (ws / "src" / "ok2.py").read_text() == "b = 2\n"
    assert (ws / "src" / "ok1.py").read_text() == "a = 3\n"


def test_an_updated_input_with_an_absolute_path_is_checked_again(tmp_path: Path) -> None:
    """A rewrite that sends the call elsewhere with an absolute path: inside the role's
    roots it runs, outside them the roots refuse it (the pipeline checks it again)."""

    def rewrite(to: str) -> dict[str, Any]:
        answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "updatedInput": {"file_path": to, "content": "moved\n"}}}  # fmt: skip
        return {"type": "command", "command": f"printf '%s\\n' '{json.dumps(answer)}'"}

    ws = make_workspace(tmp_path, FILES)
    rd = tmp_path / "run"
    hooks = {"PreToolUse": [{"matcher": "Write", "hooks": [rewrite(f"{ws}/src/moved.py")]}]}
    doc = scripted(
        {"b1/api": [{"tool_calls": [write("src/x.py", "x\n")]}, text("done")]},
        plan=PLAN,
        hooks=hooks,
    )
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["exit_code"] == 0, result["error"]
    (call,) = calls(rd, "b1/api")
    assert call["outcome"] == "ran" and call["input"] == {"file_path": "src/x.py", "content": "x\n"}
    assert (ws / "src" / "moved.py").read_text() == "moved\n" and not (ws / "src" / "x.py").exists()

    outside = f"{ws}/README.md"
    hooks["PreToolUse"][0]["hooks"] = [rewrite(outside)]
    rd2 = tmp_path / "run2"
    result = run_step("dev-batches", {**doc, "hooks": hooks}, ws, run_dir=rd2)
    (call,) = calls(rd2, "b1/api")
    assert call["refused_by"] == "roots"
    assert call["result"] == f"[refused: {outside} is outside this role's roots (src/)]"
    assert (ws / "README.md").read_text() == "# app\n"


# --- 4. CLAUDE_ENV_FILE ----------------------------------------------------------------------


def test_a_set_u_env_loader_sets_variables_for_later_shell_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader (`set -euo pipefail`) writes `export` lines to `$CLAUDE_ENV_FILE` and
    prints context: the context reaches the model, `PROJECT_MODE` and the `PATH` it
    expanded reach the role's shell commands, `unset` removes a variable, and orkeon's own
    variable is never set."""
    monkeypatch.setenv("LOADER_DROPS_ME", "still here")
    ws = workspace(
        tmp_path,
        {"SessionStart": [{"hooks": [hook("env_loader.sh")]}]},
        {"CONVENTIONS.md": "Small PRs.\n", "tools/bin/.keep": ""},
    )
    rd = tmp_path / "run"
    names = ["PROJECT_MODE", "PATH", "ORKEON_CONFIG_DIR", "LOADER_DROPS_ME"]
    script = [{"tool_calls": [shell(f"printenv {n}") for n in names]}, text("done")]
    result = run(ws, rd, script, shell={"extra_allowed_commands": ["printenv"]})
    assert result["exit_code"] == 0, result["error"]
    assert prompts(rd, "b1/api")[0] == (
        f"build it\n<hook_context>Project: {ws.name} (mode ci)\nSmall PRs.</hook_context>"
    )
    mode, path, own, dropped = (c["result"] for c in calls(rd, "b1/api"))
    assert mode == {"exit_code": 0, "stdout": "ci\n", "stderr": ""}
    assert path["stdout"] == f"{ws}/tools/bin:{os.environ['PATH']}\n"
    assert own["exit_code"] == 1 and dropped["exit_code"] == 1
    [start] = hook_runs(rd, "SessionStart")
    assert start["exit_code"] == 0


# --- 5. a formatter that rewrites the file ----------------------------------------------------


NOTE = (
    "Note: src/app.py changed on disk since you last read it. That's usually deliberate, so "
    "take it as the current state rather than reverting it; if the change looks wrong, say so "
    "rather than undoing it yourself — otherwise no need to call it out. Here are the "
    "relevant changes (shown with line numbers):\n"
)


def test_a_formatter_that_rewrites_the_file_is_reported_to_the_model(tmp_path: Path) -> None:
    """The formatter expands the tab the model wrote: the model reads, after the write's
    result, that the file changed and its lines as they are now, so its next edit (written
    against those lines) applies. An edit the formatter leaves alone adds no note."""
    ws = workspace(
        tmp_path,
        {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [hook("format_on_write.sh")]}]},
    )
    rd = tmp_path / "run"
    script = [
        {"tool_calls": [write("src/app.py", "def f():\n\treturn 1   \n")]},
        {"tool_calls": [
            tool("file_edit", file_path="src/app.py", old_string="    return 1", new_string="    return 2")
        ]},
        text("done"),
    ]  # fmt: skip
    result = run(ws, rd, script)
    assert result["exit_code"] == 0, result["error"]
    wrote, edited = calls(rd, "b1/api")
    assert wrote["result"] == (
        "created src/app.py (22 bytes)\n" + NOTE + "1\tdef f():\n2\t    return 1"
    )
    assert edited["result"] == "edited src/app.py: replaced 1 occurrence"
    assert (ws / "src" / "app.py").read_text() == "def f():\n    return 2\n"
