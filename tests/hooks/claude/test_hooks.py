"""Settings-shape hooks (Claude Code's hooks contract, docs/hooks.md): every row of the
page's tables, run with real hook processes through `SettingsHooks` directly.

The hooks are `tests/data/cc_hooks/answer.py` (prints and exits as told, records what it
read) and short inline shell commands; both run as real processes through the shell.
"""

from __future__ import annotations

import functools
import json
import shlex
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DATA
from kit.hooks import Rig, ans, group, payloads, records
from kit.pipeline import refusal_lines

from orkeon_run.calls import HookRun
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits

RENDEZVOUS = DATA / "steps" / "rendezvous.sh"


# --- exit codes: PreToolUse ----------------------------------------------------------


def test_pre_exit0_runs_and_ignores_stdout(workspace: Path) -> None:
    """'0: Success. ... For other events, stdout is ignored.'"""
    cmd = ans(stdout="some text the model must not see")
    rig = Rig(workspace, {"PreToolUse": [group(cmd)]})
    v = rig.pre()
    assert refusal_lines(v) == [] and v.context_lines == [] and v.updated_input is None
    assert not v.stop
    assert v.runs == [
        HookRun(None, "PreToolUse", cmd, 0, v.runs[0].seconds, False, v.runs[0].first_line)
    ]


def test_pre_exit2_blocks_with_stderr(workspace: Path) -> None:
    """'PreToolUse: The tool is not run; stderr is sent to the model as the block reason.'"""
    cmd = ans(exit=2, stderr="  generated/ is rebuilt, not edited\n", stdout="ignored")
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({cmd}) blocked the call: generated/ is rebuilt, not edited]"
    ]
    assert v.runs[0].exit_code == 2
    assert v.runs[0].first_line == "generated/ is rebuilt, not edited"


def test_pre_exit2_without_stderr_says_no_reason(workspace: Path) -> None:
    """The contract: 'when there is none, `no reason given`'."""
    v = Rig(workspace, {"PreToolUse": [group("exit 2")]}).pre()
    assert refusal_lines(v) == ["[PreToolUse hook (exit 2) blocked the call: no reason given]"]


def test_pre_exit2_ignores_allow_json(workspace: Path) -> None:
    """Exit 2 wins over a JSON answer on stdout (Claude Code b4): 'stdout is ignored'."""
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    cmd = ans(exit=2, stderr="no", stdout=allow)
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: no]"]


@pytest.mark.parametrize("code", [1, 3, 127])
def test_pre_other_exit_is_non_blocking(workspace: Path, code: int) -> None:
    """'other (1, 3, …): Non-blocking error. The agent continues; the hook's stderr is shown
    to you as a warning.'"""
    cmd = ans(exit=code, stderr="lint crashed")
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == []
    assert (v.runs[0].exit_code, v.runs[0].first_line) == (code, "lint crashed")


def test_pre_other_exit_still_honours_deny_json(workspace: Path) -> None:
    """A guard that prints a deny and exits 1 still denies (Claude Code c6)."""
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not on Fridays",
        }
    }
    cmd = ans(exit=1, stdout=deny)
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) denied the call: not on Fridays]"]


def test_missing_command_is_non_blocking(workspace: Path) -> None:
    """'A hook that fails to start, errors, or times out is surfaced as a non-blocking
    message; it never crashes OrbCode.'"""
    v = Rig(workspace, {"PreToolUse": [group("/nonexistent/anchor-hook")]}).pre()
    assert refusal_lines(v) == []
    assert v.runs[0].exit_code == 127
    assert "anchor-hook" in v.runs[0].first_line


def test_hook_that_cannot_start_is_non_blocking(tmp_path: Path) -> None:
    """A hook whose process cannot start at all (its cwd is gone) is a non-blocking message."""
    gone = tmp_path / "gone"
    gone.mkdir()
    rig = Rig(gone, {"PreToolUse": [group("exit 2")]})
    gone.rmdir()
    v = rig.pre()
    assert refusal_lines(v) == []
    assert v.runs[0].exit_code is None and "working directory" in v.runs[0].first_line


# --- exit codes: PostToolUse ---------------------------------------------------------


def test_post_exit2_is_feedback(workspace: Path) -> None:
    """'PostToolUse: The tool already ran; stderr is sent to the model as feedback.'"""
    cmd = ans(exit=2, stderr="tests failed after this edit")
    v = Rig(workspace, {"PostToolUse": [group(cmd)]}).post()
    assert v.lines == [f"[PostToolUse hook ({cmd}) feedback: tests failed after this edit]"]
    assert v.runs[0].event == "PostToolUse"


@pytest.mark.parametrize("code", [0, 1])
def test_post_exit0_and_other_add_nothing(workspace: Path, code: int) -> None:
    """'For other events, stdout is ignored.' / 'Non-blocking error.'"""
    v = Rig(workspace, {"PostToolUse": [group(ans(exit=code, stdout="x", stderr="y"))]}).post()
    assert v.lines == [] and not v.stop


# --- exit codes: UserPromptSubmit ----------------------------------------------------


def test_prompt_exit0_stdout_is_context(workspace: Path) -> None:
    """'For UserPromptSubmit and SessionStart, anything the hook prints on stdout is injected
    into the conversation as extra context.'"""
    v = Rig(workspace, {"UserPromptSubmit": [group("echo 'Git branch: main'")]}).prompt()
    assert v.context == "<hook_context>Git branch: main</hook_context>"
    assert v.blocked_reason is None and not v.stop


def test_prompt_exit2_blocks(workspace: Path) -> None:
    """'UserPromptSubmit: The prompt is blocked (not sent to the model); stderr is shown to you.'"""
    cmd = "echo 'looks like a key' >&2; exit 2"
    v = Rig(workspace, {"UserPromptSubmit": [group(cmd)]}).prompt()
    assert (
        v.blocked_reason == f"[UserPromptSubmit hook ({cmd}) blocked the prompt: looks like a key]"
    )


def test_prompt_other_exit_is_ignored(workspace: Path) -> None:
    """A non-blocking error: the prompt goes on and its stdout is not context (Claude Code g7)."""
    v = Rig(workspace, {"UserPromptSubmit": [group("echo context; exit 1")]}).prompt()
    assert (v.blocked_reason, v.context, v.stop) == (None, None, False)


# --- exit codes: SessionStart --------------------------------------------------------


def test_session_start_stdout_is_context(workspace: Path) -> None:
    rig = Rig(workspace, {"SessionStart": [group("echo 'Team conventions: small PRs'")]})
    assert rig.start() == "<hook_context>Team conventions: small PRs</hook_context>"


@pytest.mark.parametrize("code", [1, 2])
def test_session_start_cannot_block(workspace: Path, code: int) -> None:
    """'SessionStart, SessionEnd, Notification, PreCompact: Cannot block; stderr is shown as
    a warning.'"""
    rig = Rig(workspace, {"SessionStart": [group(f"echo ctx; echo oops >&2; exit {code}")]})
    assert rig.start() is None
    assert [r["exit_code"] for r in rig.runs()] == [code]


# --- exit codes: Stop ----------------------------------------------------------------


def test_stop_exit2_keeps_going(workspace: Path) -> None:
    """'Stop: The agent is told to keep going instead of stopping; stderr explains why.'"""
    cmd = "echo 'tests are red' >&2; exit 2"
    assert Rig(workspace, {"Stop": [group(cmd)]}).stop() == (
        f"[Stop hook ({cmd}) asks to keep going: tests are red]"
    )


@pytest.mark.parametrize("code", [0, 1])
def test_stop_exit0_and_other_let_it_finish(workspace: Path, code: int) -> None:
    assert Rig(workspace, {"Stop": [group(f"echo hi; exit {code}")]}).stop() is None


def test_stop_block_after_a_continuation_still_counts(workspace: Path, tmp_path: Path) -> None:
    """docs/hooks.md: 'Blocks are honoured in a row up to `budget.stop_blocks`': a block on
    an answer that follows a continuation is returned (the agent loop counts and caps
    them, tests/agent/test_loop.py); the hook reads `stop_hook_active: true`."""
    rec = tmp_path / "rec.jsonl"
    rig = Rig(workspace, {"Stop": [group(ans(exit=2, stderr="again", record=rec))]})
    assert rig.stop(active=False) is not None
    assert rig.stop(active=True) is not None
    assert [p["stop_hook_active"] for p in payloads(rec)] == [False, True]


# --- exit codes: events that cannot block --------------------------------------------


def test_lifecycle_exit2_cannot_block(workspace: Path, tmp_path: Path) -> None:
    """'SessionStart, SessionEnd, Notification, PreCompact: Cannot block'; each run is its
    own `hook.run` event."""
    config = {
        e: [group("echo nope >&2; exit 2")] for e in ("SessionEnd", "Notification", "PreCompact")
    }
    rig = Rig(workspace, config)
    assert rig.end("other") is None
    assert rig.notify("need approval") is None
    assert rig.compact() is None
    assert [(r["event"], r["exit_code"], r["first_line"]) for r in rig.runs()] == [
        ("SessionEnd", 2, "nope"),
        ("Notification", 2, "nope"),
        ("PreCompact", 2, "nope"),
    ]
    for r in rig.runs():
        assert r["role"] == "b1/api" and r["command"] == "echo nope >&2; exit 2"
        assert r["timed_out"] is False and r["seconds"] >= 0


# --- JSON on stdout ------------------------------------------------------------------


def _pre(**hso: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **hso}}


def test_json_deny_with_reason(workspace: Path) -> None:
    """'Deny a tool with a reason': `[PreToolUse hook (CMD) denied the call: REASON]`."""
    cmd = ans(stdout=_pre(permissionDecision="deny", permissionDecisionReason=" protected "))
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) denied the call: protected]"]


def test_json_deny_without_reason(workspace: Path) -> None:
    cmd = ans(stdout=_pre(permissionDecision="deny"))
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) denied the call: no reason given]"]


def test_json_allow_adds_nothing(workspace: Path) -> None:
    """'Skip the approval prompt (auto-allow a tool)': a headless run has no prompt to skip,
    and the gate, rule sets and roots have already run, so allow changes nothing."""
    v = Rig(workspace, {"PreToolUse": [group(ans(stdout=_pre(permissionDecision="allow")))]}).pre()
    assert refusal_lines(v) == [] and v.updated_input is None


def test_json_ask_is_refused_and_notifies(workspace: Path, tmp_path: Path) -> None:
    """'Notification: Fires when OrbCode pauses for you — when it needs permission to run a
    tool'; headless runs cannot ask, so `ask` is a refusal with its reason."""
    rec = tmp_path / "notes.jsonl"
    cmd = ans(stdout=_pre(permissionDecision="ask", permissionDecisionReason="web access"))
    rig = Rig(
        workspace,
        {"PreToolUse": [group(cmd)], "Notification": [group(ans(record=rec))]},
    )
    v = rig.pre(tool="shell", input={"command": "git push"})
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({cmd}) asked for approval, which a headless run cannot give: "
        "web access]"
    ]
    [note] = payloads(rec)
    assert note["hook_event_name"] == "Notification"
    assert "permission to use shell" in note["message"]
    assert [r.event for r in v.runs] == ["PreToolUse", "Notification"]


def test_json_decision_block_is_a_block(workspace: Path) -> None:
    """`"decision": "block"` — 'block = deny the action, with this reason'."""
    cmd = ans(stdout={"decision": "block", "reason": "use the API client"})
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: use the API client]"]


def test_json_decision_approve_adds_nothing(workspace: Path) -> None:
    v = Rig(workspace, {"PreToolUse": [group(ans(stdout={"decision": "approve"}))]}).pre()
    assert refusal_lines(v) == []


def test_json_updated_input_replaces_input(workspace: Path) -> None:
    """'Rewrite the tool input': the input is replaced, not merged (Claude Code e3)."""
    cmd = ans(stdout=_pre(updatedInput={"command": "ls -la"}))
    v = Rig(workspace, {"PreToolUse": [group(cmd, matcher="Bash")]}).pre(
        tool="shell", input={"command": "ls", "description": "list"}
    )
    assert v.updated_input == {"command": "ls -la"}
    assert refusal_lines(v) == []


def test_json_additional_context_pre_and_post(workspace: Path) -> None:
    """'Inject context (any of PreToolUse/PostToolUse/UserPromptSubmit/SessionStart)'."""
    ctx = {"hookEventName": "PreToolUse", "additionalContext": "generated file"}
    rig = Rig(
        workspace,
        {
            "PreToolUse": [group(ans(stdout={"hookSpecificOutput": ctx}))],
            "PostToolUse": [
                group(
                    ans(
                        stdout={
                            "hookSpecificOutput": {
                                "hookEventName": "PostToolUse",
                                "additionalContext": "formatted with black",
                            }
                        }
                    )
                )
            ],
            "UserPromptSubmit": [
                group(
                    ans(
                        stdout={
                            "hookSpecificOutput": {
                                "hookEventName": "UserPromptSubmit",
                                "additionalContext": "branch main",
                            }
                        }
                    )
                )
            ],
            "SessionStart": [
                group(
                    ans(
                        stdout={
                            "hookSpecificOutput": {
                                "hookEventName": "SessionStart",
                                "additionalContext": "conventions",
                            }
                        }
                    )
                )
            ],
        },
    )
    assert rig.pre().context_lines == ["<hook_context>generated file</hook_context>"]
    assert rig.post().lines == ["<hook_context>formatted with black</hook_context>"]
    assert rig.prompt().context == "<hook_context>branch main</hook_context>"
    assert rig.start() == "<hook_context>conventions</hook_context>"


def test_json_continue_false_stops(workspace: Path) -> None:
    """'"continue": false — stop the whole turn immediately'; 'stopReason — message shown
    when continue is false'. The contract: a PreToolUse call it answers does not run."""
    stop = {"continue": False, "stopReason": "quota reached"}
    rig = Rig(
        workspace,
        {
            "PreToolUse": [group(ans(stdout=stop))],
            "PostToolUse": [group(ans(stdout=stop))],
            "UserPromptSubmit": [group(ans(stdout=stop))],
        },
    )
    for v in (rig.pre(), rig.post(), rig.prompt()):
        assert (v.stop, v.stop_reason) == (True, "quota reached")
    assert refusal_lines(rig.pre()) == [
        "[refused: a PreToolUse hook stopped the role: quota reached]"
    ]


def test_json_continue_false_on_stop_lets_the_role_finish(workspace: Path) -> None:
    """A Stop hook that blocks and says continue:false: the role ends (Claude Code h4)."""
    cmd = ans(stdout={"continue": False, "decision": "block", "reason": "x"})
    assert Rig(workspace, {"Stop": [group(cmd)]}).stop() is None


def test_json_stop_decision_block_keeps_going(workspace: Path) -> None:
    """'Block a prompt or force the agent to continue: {"decision":"block","reason":"…"}'."""
    cmd = ans(stdout={"decision": "block", "reason": "Tests are still failing"})
    assert Rig(workspace, {"Stop": [group(cmd)]}).stop() == (
        f"[Stop hook ({cmd}) asks to keep going: Tests are still failing]"
    )


def test_json_prompt_decision_block(workspace: Path) -> None:
    cmd = ans(stdout={"decision": "block", "reason": "contains a credential"})
    v = Rig(workspace, {"UserPromptSubmit": [group(cmd)]}).prompt()
    assert v.blocked_reason == (
        f"[UserPromptSubmit hook ({cmd}) blocked the prompt: contains a credential]"
    )


def test_json_system_message_and_suppress_output(workspace: Path) -> None:
    """'systemMessage — show a note to the user' (not the model); 'suppressOutput — don't
    surface this hook's stdout' (nor record it as the run's first line)."""
    loud = ans(stdout={"systemMessage": "note for you"})
    quiet = ans(stdout={"suppressOutput": True, "systemMessage": "hidden"})
    rig = Rig(workspace, {"PostToolUse": [group(loud, quiet)]})
    v = rig.post()
    assert v.lines == []
    assert v.runs[0].first_line.startswith("{")
    assert v.runs[1].first_line == ""


def test_json_with_wrong_event_name_is_ignored(workspace: Path) -> None:
    """'"hookEventName": "PreToolUse", // must match the event' — otherwise the whole
    answer is rejected and the tool runs (Claude Code d8)."""
    cmd = ans(
        stdout={
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}
        }
    )
    assert refusal_lines(Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()) == []


def test_json_padded_with_blank_space_is_parsed(workspace: Path) -> None:
    """'If a hook prints a JSON object (output starting with `{`)' — after blank space."""
    cmd = 'printf \'\\n\\n   {"decision": "block", "reason": "padded"}  \\n\''
    v = Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook ({cmd}) blocked the call: padded]"]


def test_text_before_json_is_not_json(workspace: Path) -> None:
    """Output that does not start with `{` is not a control object (Claude Code c5)."""
    cmd = 'echo note; echo \'{"decision": "block"}\''
    assert refusal_lines(Rig(workspace, {"PreToolUse": [group(cmd)]}).pre()) == []


def test_plain_stdout_that_starts_with_brace_but_is_not_json(workspace: Path) -> None:
    """'Output that accidentally starts with `{` — it'll be parsed as a JSON control object';
    when it does not parse, it is read as plain text."""
    v = Rig(workspace, {"UserPromptSubmit": [group("echo '{not json'")]}).prompt()
    assert v.context == "<hook_context>{not json</hook_context>"


# --- several hooks -------------------------------------------------------------------


def test_deny_beats_ask_beats_allow(workspace: Path, tmp_path: Path) -> None:
    """'Permission decisions combine most-restrictive-first: deny > ask > allow. If any hook
    denies, the action is denied.' No approval is needed, so Notification does not fire."""
    rec = tmp_path / "notes.jsonl"
    allow = ans(stdout=_pre(permissionDecision="allow"))
    ask = ans(stdout=_pre(permissionDecision="ask", permissionDecisionReason="why"))
    deny = ans(stdout=_pre(permissionDecision="deny", permissionDecisionReason="no"))
    rig = Rig(
        workspace,
        {"PreToolUse": [group(allow, ask, deny)], "Notification": [group(ans(record=rec))]},
    )
    assert refusal_lines(rig.pre()) == [f"[PreToolUse hook ({deny}) denied the call: no]"]
    assert payloads(rec) == []

    rig2 = Rig(workspace, {"PreToolUse": [group(allow, ask)]})
    assert refusal_lines(rig2.pre()) == [
        f"[PreToolUse hook ({ask}) asked for approval, which a headless run cannot give: why]"
    ]


def test_block_reasons_join_in_configuration_order(workspace: Path) -> None:
    """'Block reasons from multiple hooks are joined together'; the contract: 'one per refusing
    hook, in the order the hooks are configured' — even when the first finishes last."""
    slow = ans(exit=2, stderr="slow one", sleep=0.3)
    fast = ans(stdout=_pre(permissionDecision="deny", permissionDecisionReason="fast one"))
    v = Rig(workspace, {"PreToolUse": [group(slow), group(fast, matcher="Write")]}).pre()
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({slow}) blocked the call: slow one]",
        f"[PreToolUse hook ({fast}) denied the call: fast one]",
    ]


def test_stop_and_post_reasons_join(workspace: Path) -> None:
    rig = Rig(
        workspace,
        {
            "Stop": [group("echo a >&2; exit 2", 'echo \'{"decision":"block","reason":"b"}\'')],
            "PostToolUse": [group("echo a >&2; exit 2", "echo b >&2; exit 2")],
        },
    )
    assert rig.stop() == (
        "[Stop hook (echo a >&2; exit 2) asks to keep going: a]\n"
        '[Stop hook (echo \'{"decision":"block","reason":"b"}\') asks to keep going: b]'
    )
    assert rig.post().lines == [
        "[PostToolUse hook (echo a >&2; exit 2) feedback: a]",
        "[PostToolUse hook (echo b >&2; exit 2) feedback: b]",
    ]


def test_contexts_concatenate(workspace: Path) -> None:
    """'Context (additionalContext / plain stdout) from every hook is concatenated.'"""
    ctx2 = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "two"}}
    rig = Rig(
        workspace, {"UserPromptSubmit": [group("sleep 0.2; echo one"), group(ans(stdout=ctx2))]}
    )
    assert rig.prompt().context == "<hook_context>one\ntwo</hook_context>"


def test_last_updated_input_in_configuration_order_wins(workspace: Path) -> None:
    """'updatedInput: if more than one hook rewrites the input, the last matching hook
    wins' — last in configuration order (the contract), whatever the finishing order."""
    one = ans(stdout=_pre(updatedInput={"command": "echo one"}), sleep=0.3)
    two = ans(stdout=_pre(updatedInput={"command": "echo two"}))
    rig = Rig(workspace, {"PreToolUse": [group(two), group(one, matcher="shell")]})
    assert rig.pre(tool="shell", input={"command": "x"}).updated_input == {"command": "echo one"}


def test_any_continue_false_stops(workspace: Path) -> None:
    """'continue:false from any hook stops the turn.'"""
    v = Rig(workspace, {"PreToolUse": [group("exit 0", ans(stdout={"continue": False}))]}).pre()
    assert v.stop and v.stop_reason is None


def test_identical_commands_run_once(workspace: Path, tmp_path: Path) -> None:
    """The contract: 'identical commands on one event run once' (Claude Code i5)."""
    rec = tmp_path / "rec.jsonl"
    cmd = ans(record=rec)
    v = Rig(workspace, {"PreToolUse": [group(cmd, matcher="Write"), group(cmd)]}).pre()
    assert len(records(rec)) == 1 and len(v.runs) == 1


def test_matching_hooks_run_in_parallel(workspace: Path, tmp_path: Path) -> None:
    """'All matching hooks for an event run in parallel': each of two hooks waits until the
    other has started (run one after the other, the first would wait alone and fail), and
    each one's own time is charged to the ledger."""
    meet = tmp_path / "meet"
    hook = f"{shlex.quote(str(RENDEZVOUS))} {meet} 2 20 file_write"
    rig = Rig(workspace, {"PreToolUse": [group(hook), group(f"{hook} # the other")]})
    v = rig.pre()
    assert [r.exit_code for r in v.runs] == [0, 0], [r.first_line for r in v.runs]
    assert len(list(meet.iterdir())) == 2
    assert rig.ledger.hook_seconds == pytest.approx(sum(r.seconds for r in v.runs))


# --- contexts ------------------------------------------------------------------------


def test_context_is_capped_at_8192_bytes(workspace: Path) -> None:
    """'wrapped in <hook_context> tags and capped at ~8 KB' (the contract: 8192 bytes)."""
    cmd = "python3 -c \"print('é' * 9000)\""
    ctx = Rig(workspace, {"UserPromptSubmit": [group(cmd)]}).prompt().context
    assert ctx is not None
    inner = ctx.removeprefix("<hook_context>").removesuffix("</hook_context>")
    assert 8000 < len(inner.encode("utf-8")) <= 8192
    inner.encode("utf-8").decode("utf-8")  # cut on a character boundary


def test_context_cannot_close_its_tag(workspace: Path) -> None:
    """'Injected context is sandboxed': a hook cannot end the block early."""
    ctx = Rig(workspace, {"SessionStart": [group("echo 'a</hook_context>b'")]}).start()
    assert ctx == "<hook_context>a&lt;/hook_context&gt;b</hook_context>"


# --- input on stdin ------------------------------------------------------------------


def test_stdin_payloads(workspace: Path, tmp_path: Path) -> None:
    """'Every hook command gets a single-line JSON object on stdin' with the base fields
    `session_id, transcript_path, cwd, hook_event_name` and the event's fields."""
    rec = tmp_path / "rec.jsonl"
    hook = [group(ans(record=rec))]
    events = (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Notification",
        "Stop",
        "PreCompact",
        "SessionEnd",
    )
    rig = Rig(workspace, {e: hook for e in events})
    rig.start("resume")
    rig.prompt("do it")
    rig.pre("shell", {"command": "git status"})
    rig.post(
        "shell", {"command": "git status"}, {"exit_code": 0, "stdout": "clean\n", "stderr": ""}
    )
    rig.notify("hello")
    rig.stop(False)
    rig.compact()
    rig.end("other")
    raw = [r["stdin"] for r in records(rec)]
    assert all(r.endswith("\n") and r.count("\n") == 1 and ", " not in r for r in raw)
    got = [json.loads(r) for r in raw]
    base = {
        "session_id": "sess-1",
        "transcript_path": "/runs/r1/transcripts/b1__api.jsonl",
        "cwd": str(workspace),
    }
    for p in got:
        assert {k: p[k] for k in base} == base
        assert list(p)[:4] == ["session_id", "transcript_path", "cwd", "hook_event_name"]
    extra = [{k: v for k, v in p.items() if k not in base} for p in got]
    assert extra == [
        {"hook_event_name": "SessionStart", "source": "resume"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "do it"},
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "orkeon_tool_name": "shell",
            "tool_input": {"command": "git status"},
            "tool_use_id": "call-1",
        },
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "orkeon_tool_name": "shell",
            "tool_input": {"command": "git status"},
            "tool_response": {
                "stdout": "clean",
                "stderr": "",
                "exit_code": 0,
                "interrupted": False,
            },
            "tool_use_id": "call-1",
        },
        {
            "hook_event_name": "Notification",
            "message": "hello",
            "notification_type": "permission_prompt",
        },
        {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": ""},
        {"hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": None},
        {"hook_event_name": "SessionEnd", "reason": "other"},
    ]
    assert all(r["cwd"] == str(workspace) for r in records(rec))


@pytest.mark.parametrize(
    ("tool", "input", "result", "response"),
    [
        (
            "file_write",
            {"file_path": "a.txt", "content": "hi"},
            "created a.txt (2 bytes)",
            {
                "type": "create",
                "filePath": "WS/a.txt",
                "content": "hi",
                "output": "created a.txt (2 bytes)",
            },
        ),
        (
            "file_write",
            {"file_path": "a.txt", "content": "hi"},
            "updated a.txt (2 bytes)",
            {
                "type": "update",
                "filePath": "WS/a.txt",
                "content": "hi",
                "output": "updated a.txt (2 bytes)",
            },
        ),
        (
            "file_edit",
            {"file_path": "a.txt", "old_string": "a", "new_string": "b"},
            "edited",
            {
                "filePath": "WS/a.txt",
                "oldString": "a",
                "newString": "b",
                "replaceAll": False,
                "output": "edited",
            },
        ),
        (
            "file_read",
            {"file_path": "a.txt"},
            "hi\n",
            {"type": "text", "file": {"filePath": "WS/a.txt", "content": "hi\n"}},
        ),
        (
            "list_files",
            {"path": "."},
            ["a.txt", "b.txt"],
            {"filenames": ["a.txt", "b.txt"], "numFiles": 2},
        ),
        (
            "search_files",
            {"pattern": "hi"},
            [{"file": "a.txt", "line": 1, "text": "hi"}],
            {
                "mode": "content",
                "filenames": ["a.txt"],
                "numFiles": 1,
                "content": "a.txt:1:hi",
                "numLines": 1,
                "matches": [{"file": "a.txt", "line": 1, "text": "hi"}],
            },
        ),
        (
            "shell",
            {"command": "sleep 99"},
            {"exit_code": None, "stdout": "", "stderr": ""},
            {"stdout": "", "stderr": "", "exit_code": None, "interrupted": True},
        ),
        (
            "shell",
            {"command": "git status"},
            {"exit_code": 0, "stdout": "clean\n\n", "stderr": "w\n"},
            {"stdout": "clean", "stderr": "w\n", "exit_code": 0, "interrupted": False},
        ),
        (
            "mcp__memory__read_graph",
            {},
            "two entities",
            [{"type": "text", "text": "two entities"}],
        ),
        (
            "mcp__memory__read_graph",
            {},
            {"entities": [], "relations": []},
            '{"entities":[],"relations":[]}',
        ),
    ],
)
def test_tool_response_shapes(
    workspace: Path, tmp_path: Path, tool: str, input: dict, result: Any, response: Any
) -> None:
    """`tool_response` in Claude Code's shapes (shell: stdout without its trailing newline,
    stderr, exit_code, interrupted; Write's `type` create or update; `filePath` absolute;
    an MCP tool's content blocks, or its structured content as a JSON string:
    docs/hooks.md, "Input on stdin")."""
    rec = tmp_path / "rec.jsonl"
    Rig(workspace, {"PostToolUse": [group(ans(record=rec))]}).post(tool, input, result)
    [p] = payloads(rec)
    expected = json.loads(json.dumps(response).replace('"WS/', f'"{workspace}/'))
    assert p["tool_response"] == expected and p["orkeon_tool_name"] == tool


# --- execution -----------------------------------------------------------------------


def test_runs_in_the_workspace_through_the_users_shell(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'command — run through your shell ($SHELL, falling back to /bin/sh)'; 'OrbCode runs
    the hook with the workspace as the working directory'."""
    cmd = 'echo "$0 $(pwd)"'
    monkeypatch.setenv("SHELL", "/bin/bash")
    assert Rig(workspace, {"SessionStart": [group(cmd)]}).start() == (
        f"<hook_context>/bin/bash {workspace}</hook_context>"
    )
    for shell in (None, "/nonexistent/shell", "bash"):
        if shell is None:
            monkeypatch.delenv("SHELL", raising=False)
        else:
            monkeypatch.setenv("SHELL", shell)
        assert Rig(workspace, {"SessionStart": [group(cmd)]}).start() == (
            f"<hook_context>/bin/sh {workspace}</hook_context>"
        )


def test_timeout_kills_and_does_not_block(workspace: Path) -> None:
    """'A hook that exceeds it is killed and reported as a non-blocking message.'"""
    cmd = {"type": "command", "command": "sleep 60; echo late >&2; exit 2", "timeout": 0.3}
    rig = Rig(workspace, {"PreToolUse": [group(cmd)]})
    v = rig.pre()
    # Not killed, it would have ended by itself after 60 s with exit 2: a refusal.
    assert refusal_lines(v) == []
    [run] = v.runs
    assert run.timed_out and run.exit_code is None


# Hang guard (quiet: 2.3 s, so 8x): the script sleeps 30 s after ignoring SIGTERM, so
# returning within the guard means SIGKILL came; the lower bound below is the grace.
@pytest.mark.timeout(20)
@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash"])
def test_sigterm_then_sigkill_after_2_s(
    workspace: Path, shell: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'If a hook ignores SIGTERM, OrbCode escalates to SIGKILL after a 2s grace.' Under
    either shell: dash's `-c` keeps itself as the script's parent and dies of SIGTERM at
    once, bash's execs the script (CI ran with SHELL unset, so under dash)."""
    monkeypatch.setenv("SHELL", shell)
    script = DATA / "cc_hooks" / "ignore_term.sh"
    cmd = {"type": "command", "command": shlex.quote(str(script)), "timeout": 0.2}
    rig = Rig(workspace, {"Stop": [group(cmd)]})
    t0 = time.monotonic()
    assert rig.stop() is None
    took = time.monotonic() - t0
    assert took > 2.1
    [run] = rig.runs()
    assert run["timed_out"] is True and run["first_line"] == "started"


def test_default_timeout_is_10_s_and_budget_caps_it(workspace: Path) -> None:
    """'Default: 10s'; docs/inputs.md: 'A hook's time limit is the smaller of its own and what
    is left.'"""
    rig = Rig(workspace, {"Stop": [group("exit 0")]})
    answers = anyio.run(rig.hooks._run, "Stop", rig.ctx, None, {}, rig.ledger)
    assert answers[0].ran.timeout == 10
    short = Ledger(BudgetLimits(seconds=0.4))
    rig2 = Rig(workspace, {"Stop": [group("sleep 60; exit 2")]})
    # Not cut, it would have ended by itself after 60 s, exit 2, not timed out.
    assert anyio.run(rig2.hooks.stop, rig2.ctx, False, short) is None
    assert rig2.runs()[0]["timed_out"] is True
    assert short.spent() == "seconds"
    # No budget left: the hook does not run at all.
    v = anyio.run(rig2.hooks.stop, rig2.ctx, False, short)
    assert v is None
    assert rig2.runs()[1]["exit_code"] is None
    assert rig2.runs()[1]["first_line"] == "the step's time budget is spent"


def test_session_end_is_capped_at_3_s(workspace: Path) -> None:
    """'SessionEnd ... Capped at 3s on quit so it never wedges exit.'"""
    rig = Rig(
        workspace, {"SessionEnd": [group({"type": "command", "command": "exit 0", "timeout": 60})]}
    )
    rig.end()
    answers = anyio.run(
        functools.partial(rig.hooks._run, "SessionEnd", rig.ctx, "other", {}, rig.ledger, cap=3.0)
    )
    assert answers[0].ran.timeout == 3.0


def test_environment_is_redacted(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'Any variable whose name matches /(?:^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|
    PRIVATE_KEY)(?:$|_)/i ... are redacted'; the provider's key variable and orkeon's own
    variables too; `ORKEON_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` name the workspace."""
    removed = [
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DATABASE_PASSWORD",
        "api_key",
        "SSH_PRIVATE_KEY_PATH",
        "MY_PASSWD",
        "GCP_CREDENTIAL_FILE",
        "KEY",
        "ORKEON_CONFIG_DIR",
        "ORKEON_TRUST_PROJECT_HOOKS",
        "MY_PROVIDER_VAR",
    ]
    kept = ["MONKEY", "KEYBOARD", "SECRETARY", "TOKENS", "MY_VAR"]
    for name in removed + kept:
        monkeypatch.setenv(name, "v")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/elsewhere")
    rec = tmp_path / "rec.jsonl"
    Rig(workspace, {"Stop": [group(ans(record=rec))]}, remove=("MY_PROVIDER_VAR",)).stop()
    [r] = records(rec)
    env = r["env"]
    assert [n for n in removed if n in env] == []
    assert [n for n in [*kept, "HOME", "PATH"] if n not in env] == []
    assert env["ORKEON_PROJECT_DIR"] == env["CLAUDE_PROJECT_DIR"] == str(workspace)


def test_no_matching_hook_costs_nothing(workspace: Path) -> None:
    """'Hooks are opt-in: with no hooks block, there is zero added work.'"""
    rig = Rig(workspace, {"PreToolUse": [group("exit 2", matcher="Bash")]})
    v = rig.pre("file_read", {"file_path": "README.md"})
    assert v.runs == [] and rig.ledger.hook_seconds == 0
    assert not rig.hooks.has("Stop") and rig.hooks.has("PreToolUse")
    assert rig.stop() is None and rig.events == []


def test_problems_and_notes_go_to_the_person_running_orkeon(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'the hook's stderr is shown to you as a warning'; 'systemMessage — show a note to the
    user'; 'A hook's full stdout/stderr is surfaced to you when it produces a systemMessage
    or a non-blocking error'; 'when a PreToolUse hook rewrites a tool's input via
    updatedInput, OrbCode emits a visible system message'. Logged on stderr, as JSON lines
    when it is not a terminal (docs/output.md)."""
    monkeypatch.setenv("ORKEON_LOG_FORMAT", "json")  # the records' fields, as JSON lines
    failing = "echo out; echo broke >&2; exit 1"
    note = ans(stdout={"systemMessage": "heads up"})
    quiet = ans(stdout={"systemMessage": "quiet", "suppressOutput": True})
    rewrite = ans(stdout=_pre(updatedInput={"command": "ls -la"}))
    rig = Rig(workspace, {"PreToolUse": [group(failing, note, quiet, rewrite)]})
    capsys.readouterr()
    v = rig.pre("shell", {"command": "ls"})
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert v.updated_input == {"command": "ls -la"}
    by_command = {e.get("command"): e for e in logged}
    problem = by_command[failing]
    assert problem["level"] == "warning"
    assert (problem["stderr"], problem["stdout"]) == ("broke\n", "out\n")
    assert by_command[note]["message"] == "heads up" and "stdout" in by_command[note]
    assert by_command[quiet]["message"] == "quiet" and "stdout" not in by_command[quiet]
    rewritten = by_command[rewrite]
    assert rewritten["level"] == "warning"
    assert (rewritten["input"], rewritten["updated_input"]) == (
        {"command": "ls"},
        {"command": "ls -la"},
    )
