"""The events headless runs need (docs/hooks.md, "Events"): PermissionDenied, when a stage
before the hooks refused a call, and StopFailure, when a turn ended because the model
provider failed. Both notify-only, with real hook processes."""

from __future__ import annotations

from pathlib import Path

import anyio
from kit.agent import Rig as AgentRig
from kit.fakes.protocols import OPENAI
from kit.hooks import SETTINGS, ans, group, payloads
from kit.pipeline import make_pipeline

from orkeon_run.calls import CallContext
from orkeon_run.events import NullLog
from orkeon_run.hooks.claude.settings import SettingsHooks
from orkeon_run.policy.gate import Gate


def test_permission_denied_fires_for_a_call_a_fence_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """'PermissionDenied (a call refused before any hook ran; notify-only)': a PreToolUse
    hook never runs, the PermissionDenied hook reads the call and the reason, and its
    exit 2 changes nothing."""
    rec, pre = tmp_path / "denied.jsonl", tmp_path / "pre.jsonl"
    config = {
        "PermissionDenied": [group(ans(record=rec, exit=2, stderr="x"), matcher="Bash")],
        "PreToolUse": [group(ans(record=pre))],
    }
    hooks = SettingsHooks(SETTINGS.validate_python(config), workspace=workspace, events=NullLog())
    p = make_pipeline(workspace, hooks=hooks, gate=Gate(deny=["shell(rm *)"]))
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=workspace, batch="b1")
    out = anyio.run(p.call, ctx, "shell", {"command": "rm -rf build"}, "call-7")
    assert (out.outcome, out.refused_by) == ("refused", "gate")
    [payload] = payloads(rec)
    assert payload["hook_event_name"] == "PermissionDenied"
    assert (payload["tool_name"], payload["tool_input"]) == ("Bash", {"command": "rm -rf build"})
    assert payload["tool_use_id"] == "call-7" and payload["reason"] == out.result
    assert payloads(pre) == []
    assert [r.event for r in out.hooks] == ["PermissionDenied"]


def test_stop_failure_fires_when_the_provider_fails(tmp_path: Path) -> None:
    """'StopFailure (a turn ended by a provider error)', notify-only: the role still ends
    failed, with error_kind provider."""
    rec = tmp_path / "fail.jsonl"
    with OPENAI.server() as srv:
        srv.replies.append(OPENAI.error(400, "this model does not exist"))
        provider = OPENAI.provider(srv, max_retries=0)
        rig = AgentRig(tmp_path, provider, hooks={"StopFailure": [group(ans(record=rec))]})
        [result] = rig.run("build")
    assert (result.status, result.error_kind) == ("failed", "provider")
    [payload] = payloads(rec)
    assert payload["hook_event_name"] == "StopFailure"
    assert payload["error"] == result.error
    assert [e["event"] for e in rig.read_events("hook.run")] == ["StopFailure"]


def test_post_tool_use_failure_fires_for_a_failed_command(workspace: Path, tmp_path: Path) -> None:
    """docs/hooks.md, "Events": PostToolUseFailure, with Claude Code's `error` (its f6:
    `Exit code 3\\nto-stdout\\nto-stderr`) and `is_interrupt`, before PostToolUse, which
    still fires; nothing for a call that succeeded."""
    from kit.hooks import Rig

    fail, post = tmp_path / "fail.jsonl", tmp_path / "post.jsonl"
    config = {
        "PostToolUseFailure": [group(ans(record=fail), matcher="Bash")],
        "PostToolUse": [group(ans(record=post))],
    }
    rig = Rig(workspace, config)
    failed = {"exit_code": 3, "stdout": "to-stdout\n", "stderr": "to-stderr\n"}
    v = rig.post("shell", {"command": "make test"}, failed)
    [payload] = payloads(fail)
    assert payload["hook_event_name"] == "PostToolUseFailure"
    assert (payload["error"], payload["is_interrupt"]) == (
        "Exit code 3\nto-stdout\nto-stderr",
        False,
    )
    assert payload["tool_input"] == {"command": "make test"}
    assert [r.event for r in v.runs] == ["PostToolUseFailure", "PostToolUse"]
    rig.post("shell", {"command": "make test"}, {"exit_code": None, "stdout": "", "stderr": ""})
    assert payloads(fail)[-1]["is_interrupt"] is True
    rig.post("shell", {"command": "true"}, {"exit_code": 0, "stdout": "", "stderr": ""})
    assert len(payloads(fail)) == 2 and len(payloads(post)) == 3
