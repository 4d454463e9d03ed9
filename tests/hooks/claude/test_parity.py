"""Settings-shape hooks behave as under Claude Code (issue 12), part by part: the reason of
an exit 2 with a JSON answer, absolute paths in `tool_input`, `CLAUDE_ENV_FILE`, the note
on a file a PostToolUse hook rewrote, and the Claude Code-shaped transcript. Real hook
processes, real files; the end-to-end runs are in test_published.py."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.agent import Rig as AgentRig
from kit.hooks import SETTINGS, Rig, ans, group, payloads
from kit.pipeline import make_pipeline, refusal_lines, sample_call

from orkeon_run.calls import CallContext
from orkeon_run.config.inputs import ScriptedModel
from orkeon_run.events import NullLog
from orkeon_run.hooks import PreToolVerdict
from orkeon_run.hooks.claude.payloads import claude_input
from orkeon_run.hooks.claude.rewrites import SNIPPET_CHARS, snippet
from orkeon_run.hooks.claude.settings import SettingsHooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.models.base import Message, ToolCall
from orkeon_run.models.claude_transcript import ClaudeTranscript
from orkeon_run.models.scripted import ScriptedProvider
from orkeon_run.models.transcript import TranscriptWriter

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "src/ is frozen",
    }
}
BLOCK = {"decision": "block", "reason": "3 tests failed:\ntest_a\ntest_b\ntest_c"}


# --- exit 2 with a JSON answer -------------------------------------------------------------


def test_pre_exit2_takes_the_reason_of_a_json_deny_over_stderr(workspace: Path) -> None:
    cmd = ans(exit=2, stderr="see stdout", stdout=DENY)
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: src/ is frozen]"]
    assert v.runs[0].first_line == "see stdout"  # the record still shows stderr first


def test_pre_exit2_takes_the_reason_of_a_decision_block(workspace: Path) -> None:
    cmd = ans(exit=2, stderr="x", stdout={"decision": "block", "reason": "not now"})
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: not now]"]


@pytest.mark.parametrize(
    "stdout",
    [
        {"reason": "a reason with no decision"},
        {"decision": "approve", "reason": "fine"},
        {"hookSpecificOutput": {**DENY["hookSpecificOutput"], "hookEventName": "PostToolUse"}},
        "plain text { not json",
    ],
    ids=["no-decision", "approve", "other-event", "not-json"],
)
def test_exit2_without_a_blocking_json_answer_keeps_stderr(workspace: Path, stdout: Any) -> None:
    cmd = ans(exit=2, stderr="from stderr", stdout=stdout)
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: from stderr]"]


def test_post_stop_and_prompt_exit2_take_the_json_reason(workspace: Path) -> None:
    cmd = ans(exit=2, stderr="tests failed", stdout=BLOCK)
    rig = Rig(
        workspace,
        {e: [group(cmd)] for e in ("PostToolUse", "Stop", "UserPromptSubmit")},
    )
    assert rig.post().lines == [f"[PostToolUse hook ({cmd}) feedback: {BLOCK['reason']}]"]
    assert rig.stop() == f"[Stop hook ({cmd}) asks to keep going: {BLOCK['reason']}]"
    assert rig.prompt().blocked_reason == (
        f"[UserPromptSubmit hook ({cmd}) blocked the prompt: {BLOCK['reason']}]"
    )


# --- absolute paths -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "given", "shown"),
    [
        ("file_write", "src/../src/a.py", "WS/src/a.py"),
        ("file_write", "./src/./a.py", "WS/src/a.py"),
        ("file_read", "WS/src/a.py", "WS/src/a.py"),
        ("file_read", "WS/src/../README.md", "WS/README.md"),
        ("file_read", "src//a.py", "WS/src/a.py"),
        ("list_files", "src/", "WS/src"),
        ("list_files", ".", "WS"),
        ("search_files", "src/..", "WS"),
    ],
)
def test_paths_are_absolute_and_normalized_as_text(
    workspace: Path, tool: str, given: str, shown: str
) -> None:
    ws = str(workspace)
    field = "file_path" if tool.startswith("file_") else "path"
    given = given.replace("WS", ws)
    model = {field: given, **({"pattern": "x"} if tool == "search_files" else {})}
    out = claude_input(tool, model, ws)
    assert out[field] == shown.replace("WS", ws)
    assert model[field] == given  # the model's input is left as it was


def test_symlinks_are_not_resolved_and_inputs_without_a_path_stay(workspace: Path) -> None:
    ws = str(workspace)
    (workspace / "link").symlink_to(workspace / "src", target_is_directory=True)
    assert (
        claude_input("file_read", {"file_path": "link/a.py"}, ws)["file_path"] == f"{ws}/link/a.py"
    )
    listing = {"pattern": "*.py"}
    assert claude_input("list_files", listing, ws) is listing
    assert claude_input("shell", {"command": "ls .."}, ws) == {"command": "ls .."}
    assert claude_input("mcp__x__y", {"path": "a/../b"}, ws) == {"path": "a/../b"}


def test_payloads_carry_absolute_paths_and_edits_replace_all(
    workspace: Path, tmp_path: Path
) -> None:
    """PreToolUse and PostToolUse `tool_input` (and `tool_response.filePath`), as Claude
    Code sends them: absolute, and Edit with `replace_all: false` added."""
    rec = tmp_path / "rec.jsonl"
    rig = Rig(workspace, {e: [group(ans(record=rec))] for e in ("PreToolUse", "PostToolUse")})
    edit = {"file_path": "src/../x.py", "old_string": "a", "new_string": "b"}
    rig.pre("file_edit", edit)
    rig.post("file_edit", edit, "edited")
    pre, post = payloads(rec)
    want = {**edit, "file_path": f"{workspace}/x.py", "replace_all": False}
    assert pre["tool_input"] == want and post["tool_input"] == want
    assert post["tool_response"]["filePath"] == f"{workspace}/x.py"


def test_native_hooks_path_stays_as_written(workspace: Path, tmp_path: Path) -> None:
    """The native contract: `{path}` is the path as the model wrote it."""
    out = tmp_path / "native.txt"
    script = tmp_path / "rec.sh"
    script.write_text(f'#!/bin/sh\necho "$1" > {shlex.quote(str(out))}\n')
    script.chmod(0o755)
    from orkeon_run.policy.programs import ShellRules

    p = make_pipeline(
        workspace,
        native=[("pre-tool", f"{script} {{path}}")],
        rules=ShellRules(extra_allowed_commands=(str(script),)),
    )
    ctx = CallContext(step="dev-batches", role="analyst", workspace=workspace)
    anyio.run(p.call, ctx, "file_write", {"file_path": "src/../y.py", "content": ""}, "c1")
    assert out.read_text() == "src/../y.py\n"


# --- CLAUDE_ENV_FILE ---------------------------------------------------------------------------


def loader(*lines: str) -> str:
    """A SessionStart command that appends `lines` to $CLAUDE_ENV_FILE (`set -u`)."""
    body = "".join(
        f"printf '%s\\n' {shlex.quote(line)} >> \"$CLAUDE_ENV_FILE\"; " for line in lines
    )
    return f"set -u; {body}echo loaded"


def start(rig: Rig) -> Any:
    return rig.start(), rig.hooks.session_env(rig.ctx)


def test_env_file_exports_apply_and_expand(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GONE_SOON", "1")
    cmd = loader(
        "export MODE=ci",
        'export PATH="$CLAUDE_PROJECT_DIR/bin:$PATH"',
        "NOT_EXPORTED=1",
        "unset GONE_SOON",
        "echo printed by the file",
        "echo '{\"a\": 1}'",
    )
    ctx, env = start(Rig(workspace, {"SessionStart": [group(cmd)]}))
    assert ctx == "<hook_context>loaded</hook_context>"
    assert env == {"MODE": "ci", "PATH": f"{workspace}/bin:{os.environ['PATH']}", "GONE_SOON": None}


def test_env_file_never_sets_the_key_or_orkeons_own_variables(workspace: Path, caplog: Any) -> None:
    cmd = loader(
        "export MODEL_KEY=stolen",
        "export ORKEON_CONFIG_DIR=/tmp/x",
        "export ORKEON_TRUST_PROJECT_HOOKS=1",
        "export ORKEON_MAX_USD=999",
        "export GITHUB_ENV=/tmp/env",
        "export CLAUDE_ENV_FILE=/tmp/f",
        "export GH_TOKEN=given-on-purpose",
    )
    rig = Rig(workspace, {"SessionStart": [group(cmd)]}, remove=("MODEL_KEY",))
    _, env = start(rig)
    assert env == {"GH_TOKEN": "given-on-purpose"}


def test_each_hook_has_its_own_file_read_in_configuration_order(
    workspace: Path, tmp_path: Path
) -> None:
    rec = tmp_path / "rec.jsonl"
    first = loader("export WHO=first", "export ONLY_FIRST=1") + " # 1"
    second = loader("export WHO=second") + f"; {ans(record=rec)}"
    _, env = start(Rig(workspace, {"SessionStart": [group(first, second)]}))
    assert env == {"WHO": "second", "ONLY_FIRST": "1"}
    [seen] = [json.loads(line)["env"] for line in rec.read_text().splitlines()]
    path = Path(seen["CLAUDE_ENV_FILE"])
    assert path.name == "sessionstart-hook-1.sh"
    assert not path.parent.exists()  # the private folder is gone once read


def test_env_file_is_set_for_session_start_only(workspace: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    rig = Rig(workspace, {e: [group(ans(record=rec))] for e in ("SessionStart", "PreToolUse")})
    rig.start()
    rig.pre()
    start_env, pre_env = (json.loads(line)["env"] for line in rec.read_text().splitlines())
    assert start_env["CLAUDE_ENV_FILE"].endswith("/sessionstart-hook-0.sh")
    assert "CLAUDE_ENV_FILE" not in pre_env


def test_a_file_that_ends_the_shell_sets_nothing(workspace: Path) -> None:
    cmd = loader("export GOOD=1", "exit 3")
    ctx, env = start(Rig(workspace, {"SessionStart": [group(cmd)]}))
    assert ctx == "<hook_context>loaded</hook_context>" and env == {}


def test_a_later_session_start_replaces_the_changes(workspace: Path) -> None:
    rig = Rig(workspace, {"SessionStart": [group(loader("export A=1"))]})
    assert start(rig)[1] == {"A": "1"}
    rig.hooks = SettingsHooks(
        SETTINGS.validate_python({"SessionStart": [group("echo nothing to export")]}),
        workspace=workspace,
        events=NullLog(),
    )
    assert start(rig)[1] == {}


def test_the_shell_tool_runs_with_the_sessions_changes(workspace: Path) -> None:
    from orkeon_run.policy.programs import ShellRules

    hooks = SettingsHooks(
        SETTINGS.validate_python({"SessionStart": [group(loader("export MODE=ci", "unset HOME"))]}),
        workspace=workspace,
        events=NullLog(),
    )
    p = make_pipeline(
        workspace,
        hooks=hooks,
        rules=ShellRules(extra_allowed_commands=("printenv",)),
        environ={"HOME": "/h", "PATH": os.environ["PATH"]},
    )
    mine = CallContext(step="dev-batches", role="b1/a", workspace=workspace, session_id="s1")
    other = CallContext(step="dev-batches", role="b1/b", workspace=workspace, session_id="s2")
    anyio.run(hooks.session_start, mine, "startup", Ledger(BudgetLimits()))

    def printenv(ctx: CallContext, name: str) -> Any:
        return anyio.run(p.call, ctx, "shell", {"command": f"printenv {name}"}, "c").result

    assert printenv(mine, "MODE")["stdout"] == "ci\n"
    assert printenv(mine, "HOME")["exit_code"] == 1
    assert printenv(other, "MODE")["exit_code"] == 1  # another role's session: its own
    assert printenv(other, "HOME")["stdout"] == "/h\n"


# --- a file a PostToolUse hook rewrote --------------------------------------------------------


def test_snippet_numbers_each_changed_region_with_8_lines_of_context() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 41))
    new = old.replace("line 3\n", "LINE 3\n").replace("line 30\n", "line 29b\nline 30\n")
    got = snippet(old, new)
    first = "\n".join(f"{n}\t{'LINE' if n == 3 else 'line'} {n}" for n in range(1, 12))
    second = "\n".join(
        [f"{n}\tline {n}" for n in range(22, 30)]
        + ["30\tline 29b"]
        + [f"{n + 1}\tline {n}" for n in range(30, 38)]
    )
    assert got == first + "\n...\n" + second


def test_snippet_is_cut_at_8192_characters() -> None:
    old = "".join(f"{i}\n" for i in range(3000))
    new = "".join(f"changed {i}\n" for i in range(3000))
    got = snippet(old, new)
    head, _, tail = got.partition("\n\n... [")
    assert len(head) <= SNIPPET_CHARS and tail.endswith(" lines truncated] ...")
    shown = head.count("\n") + 1
    assert int(tail.split(" ")[0]) == 3000 - shown


def post_rewrite(workspace: Path, command: str, content: bytes) -> list[str]:
    """A file_write of `content` to src/f.py, then a PostToolUse hook running `command`."""
    target = workspace / "src" / "f.py"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(content)
    rig = Rig(workspace, {"PostToolUse": [group(command, matcher="Write")]})
    call = sample_call(workspace, "file_write", {"file_path": "src/f.py", "content": "…"})
    v = anyio.run(
        rig.hooks.post_tool, rig.ctx, call, "created src/f.py", "c", rig.ledger, PreToolVerdict()
    )
    return v.lines


HEAD = "Note: src/f.py changed on disk since you last read it."


def test_a_rewrite_in_place_of_the_same_size_is_noticed(workspace: Path) -> None:
    [note] = post_rewrite(workspace, "printf 'b = 2\\n' > src/f.py", b"a = 1\n")
    assert note.startswith(HEAD) and note.endswith("(shown with line numbers):\n1\tb = 2")


@pytest.mark.parametrize(
    ("command", "content", "why"),
    [
        ("printf '\\377\\n' > src/f.py", b"a\n", "the file is not UTF-8 text"),
        (
            "head -c 1100000 /dev/zero | tr '\\0' a > src/f.py",
            b"a\n",
            "the file is larger than 1 MiB",
        ),
        (": > src/f.py", b"a\n", "the file is empty now"),
        ("rm src/f.py && ln -s ../README.md src/f.py", b"a\n", "it is no regular file now"),
    ],
    ids=["not-utf8", "large", "emptied", "symlink"],
)
def test_a_rewrite_that_cannot_be_shown_says_why(
    workspace: Path, command: str, content: bytes, why: str
) -> None:
    [note] = post_rewrite(workspace, command, content)
    assert note == (
        f"{HEAD} That's usually deliberate, so take it as the current state rather than "
        "reverting it; if the change looks wrong, say so rather than undoing it yourself — "
        f"otherwise no need to call it out. The diff is omitted here because {why}; use "
        "file_read if you need the current content."
    )


def test_no_note_when_the_hooks_leave_the_file_or_remove_it(workspace: Path) -> None:
    assert post_rewrite(workspace, "true", b"a\n") == []
    assert post_rewrite(workspace, "cp src/f.py /tmp/x-$$ && mv /tmp/x-$$ src/f.py", b"a\n") == []
    assert post_rewrite(workspace, "rm src/f.py", b"a\n") == []


def test_no_note_for_a_failed_write_or_a_read(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "f.py").write_text("a\n")
    rig = Rig(workspace, {"PostToolUse": [group("echo b > src/f.py")]})
    assert (
        rig.post("file_write", {"file_path": "src/f.py", "content": "a\n"}, "error: no").lines == []
    )
    assert rig.post("file_read", {"file_path": "src/f.py"}, "a\n").lines == []


# --- the Claude Code transcript -------------------------------------------------------------


def cc_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_transcript_is_written_again_whole_on_resume(tmp_path: Path) -> None:
    """A role cut by its turn budget, then resumed: the Claude Code transcript holds the
    whole conversation, one chain of `parentUuid`, one `sessionId`."""
    entries = [
        {"text": "first", "tool_calls": [{"tool": "list_files", "input": {}}]},
        {"text": "second"},
        {"text": "third"},
    ]

    def provider() -> ScriptedProvider:
        return ScriptedProvider(ScriptedModel(provider="scripted", script={"b1/api": entries}))  # type: ignore[arg-type]

    path = tmp_path / "cc.jsonl"

    def mirror() -> ClaudeTranscript:
        return ClaudeTranscript(path, session_id="sid", cwd="/ws", version="0")

    first = AgentRig(tmp_path, provider(), limits=BudgetLimits(seconds=None, turns=1))
    first.claude = mirror()
    first.run("build")
    assert [x["type"] for x in cc_lines(path)] == ["user", "assistant", "user"]
    again = AgentRig(tmp_path, provider())
    again.claude = mirror()
    again.run("go on", resume=True)
    lines = cc_lines(path)
    assert [(x["type"], x["message"]["content"] if x["type"] == "user" and isinstance(x["message"]["content"], str) else None) for x in lines] == [
        ("user", "build"), ("assistant", None), ("user", None), ("user", "go on"), ("assistant", None),
    ]  # fmt: skip
    assert [x["parentUuid"] for x in lines] == [None] + [x["uuid"] for x in lines[:-1]]
    assert {x["sessionId"] for x in lines} == {"sid"}
    assert lines[-1]["message"]["content"] == [{"type": "text", "text": "second"}]


def test_a_compaction_writes_a_boundary_and_keeps_the_lines_before(tmp_path: Path) -> None:
    mirror = ClaudeTranscript(tmp_path / "cc.jsonl", session_id="s", cwd="/ws", version="0")
    writer = TranscriptWriter(tmp_path / "own.jsonl", "analyst", mirror)
    mirror.start([Message("system", "sys"), Message("user", "task")])
    call = ToolCall("c1", "shell", {"command": "ls"})
    writer.message(
        "received",
        Message("assistant", "", (call,)),
        model="m1",
        usage={"input_tokens": 5, "output_tokens": 2},
    )
    writer.message("sent", Message("tool", "out", tool_call_id="c1", name="shell"))
    writer.note("compacted", tokens_before=1234, tokens_after=99)
    writer.message("received", Message("assistant", "done"))
    writer.close()
    user, answer, result, boundary, final = cc_lines(tmp_path / "cc.jsonl")
    assert user["message"] == {"role": "user", "content": "task"}
    assert answer["message"]["model"] == "m1" and answer["message"]["usage"] == {
        "input_tokens": 5,
        "output_tokens": 2,
    }
    assert answer["message"]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}
    ]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == result["uuid"]
    assert boundary["compactMetadata"] == {"trigger": "auto", "preTokens": 1234}
    assert final["parentUuid"] == boundary["uuid"]
    own = [json.loads(line) for line in (tmp_path / "own.jsonl").read_text().splitlines()]
    assert "model" not in own[0]  # orkeon's own transcript is as it was


def test_stop_payload_has_the_last_assistant_message(workspace: Path, tmp_path: Path) -> None:
    """Claude Code's Stop payload carries `last_assistant_message`; scripts read it instead
    of the transcript."""
    rec = tmp_path / "rec.jsonl"
    rig = Rig(workspace, {"Stop": [group(ans(record=rec))]})
    anyio.run(rig.hooks.stop, rig.ctx, False, rig.ledger, "All done. <promise>DONE</promise>")
    [p] = payloads(rec)
    assert p["last_assistant_message"] == "All done. <promise>DONE</promise>"
    assert list(p)[-2:] == ["stop_hook_active", "last_assistant_message"]
