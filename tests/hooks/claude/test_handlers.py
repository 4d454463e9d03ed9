"""Settings-shape handler types other than a command (docs/hooks.md, "Handler types"): `http`
hooks against a real HTTP server on 127.0.0.1, `prompt` hooks against the scripted
provider and the fake OpenAI server, `async: true` and `once: true` hooks as real
processes, and the handler types and keys orkeon refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.fakes.protocols import Protocol
from kit.fakes.server import FakeServer, Reply, unreachable_url
from kit.hooks import Rig, ans, group, records
from kit.pipeline import refusal_lines, sample_call

from orkeon_run.config.inputs import ScriptedModel
from orkeon_run.errors import InputError
from orkeon_run.hooks import PreToolVerdict
from orkeon_run.hooks.claude.sources import parse_hooks
from orkeon_run.models.scripted import ScriptedProvider

OPENAI = Protocol("openai", "gpt-4o-mini", "sk-test-key-0123", "OPENAI_API_KEY")
DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "policy says no",
    }
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


def http(url: str, **more: Any) -> dict[str, Any]:
    return {"type": "http", "url": url, **more}


# --- http ------------------------------------------------------------------------------


def test_http_posts_the_event_and_reads_the_body_as_stdout(
    workspace: Path, server: FakeServer
) -> None:
    """'`http`: POST the hook's JSON to `url` ... the response body is read as a command's
    stdout' (docs/hooks.md, "Handler types")."""
    server.replies.append(Reply(200, DENY))
    hook = http(server.url + "/policy")
    rig = Rig(workspace, {"PreToolUse": [group(hook)]})
    v = rig.pre()
    assert refusal_lines(v) == [
        f"[PreToolUse hook (POST {server.url}/policy) denied the call: policy says no]"
    ]
    [req] = server.requests
    assert (req.method, req.path) == ("POST", "/policy")
    assert req.headers["content-type"] == "application/json"
    assert req.body["hook_event_name"] == "PreToolUse"
    assert req.body["tool_name"] == "Write"
    assert req.body["tool_input"]["file_path"] == str(workspace / "src/x.py")
    assert v.runs[0].command == f"POST {server.url}/policy" and v.runs[0].exit_code == 0


def test_http_headers_take_only_allowed_variables_and_are_redacted(
    workspace: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'values may name environment variables, as Claude Code's `allowedEnvVars` does;
    they are redacted everywhere'."""
    monkeypatch.setenv("POLICY_TOKEN", "tok-4711-secret")
    monkeypatch.setenv("OTHER_SECRET", "must-not-leave")
    # The server echoes the token in its refusal: what orkeon records must not hold it.
    server.replies.append(Reply(403, raw=b"token tok-4711-secret is not allowed here"))
    hook = http(
        server.url,
        headers={"Authorization": "Bearer ${POLICY_TOKEN}", "X-Other": "$OTHER_SECRET"},
        allowedEnvVars=["POLICY_TOKEN"],
    )
    rig = Rig(workspace, {"PreToolUse": [group(hook)]})
    v = rig.pre()
    [req] = server.requests
    assert req.headers["authorization"] == "Bearer tok-4711-secret"
    assert req.headers["x-other"] == ""
    [line] = refusal_lines(v)
    assert "blocked the call: token [redacted] is not allowed here" in line
    assert "tok-4711-secret" not in json.dumps([r.to_json() for r in v.runs])


def test_http_403_blocks_as_exit_2(workspace: Path, server: FakeServer) -> None:
    """'status 403 is exit 2: the body, or `HTTP 403`, is the reason'."""
    server.replies.append(Reply(403, raw=b""))
    v = Rig(workspace, {"PreToolUse": [group(http(server.url))]}).pre()
    assert refusal_lines(v) == [f"[PreToolUse hook (POST {server.url}) blocked the call: HTTP 403]"]
    assert v.runs[0].exit_code == 2


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (Reply(500, {"error": "down"}), "HTTP 500"),
        (Reply(302, raw=b"", headers={"location": "http://127.0.0.1:9/x"}), "HTTP 302 to"),
    ],
)
def test_http_failure_refuses_pre_tool(
    workspace: Path, server: FakeServer, reply: Reply, why: str
) -> None:
    """'any other status, a redirect (never followed) ... is a failure: it refuses a
    PreToolUse call (fail closed)'."""
    server.replies.append(reply)
    v = Rig(workspace, {"PreToolUse": [group(http(server.url))]}).pre()
    [line] = refusal_lines(v)
    assert line.startswith(f"[PreToolUse hook (POST {server.url}) could not run: {why}")
    assert len(server.requests) == 1  # the redirect was not followed


def test_http_connection_error_fails_closed_on_pre_tool_only(workspace: Path) -> None:
    """'time-outs and connection errors are a failure (fail closed on pre-tool)'; elsewhere
    a non-blocking problem: a Stop hook that cannot be reached keeps nobody going."""
    url = unreachable_url()
    rig = Rig(workspace, {"PreToolUse": [group(http(url))], "Stop": [group(http(url))]})
    [line] = refusal_lines(rig.pre())
    assert f"(POST {url}) could not run: ConnectError" in line
    assert rig.stop() is None


def test_http_time_out_fails_closed(workspace: Path, server: FakeServer) -> None:
    """A server that never answers: the hook's `timeout` ends it, and the call is refused."""
    server.replies.append(Reply(hang=True))
    v = Rig(workspace, {"PreToolUse": [group(http(server.url, timeout=0.3))]}).pre()
    [line] = refusal_lines(v)
    assert "could not run: no answer within 0.3 s" in line
    assert v.runs[0].timed_out


def test_http_hook_time_is_charged(workspace: Path, server: FakeServer) -> None:
    """'each through the same ledger ... as `command`'."""
    server.replies.append(Reply(200, {}))
    rig = Rig(workspace, {"PreToolUse": [group(http(server.url))]})
    rig.pre()
    assert rig.ledger.hook_seconds > 0


# --- prompt -----------------------------------------------------------------------------


def scripted(*texts: str, usage: tuple[int, int] = (40, 9)) -> ScriptedProvider:
    entries = [
        {"text": t, "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}} for t in texts
    ]
    return ScriptedProvider(
        ScriptedModel.model_validate(
            {"provider": "scripted", "script": {"b1/api/prompt-hook": entries}}
        )
    )


def judge(prompt: str = "Is this fine? $ARGUMENTS", **more: Any) -> dict[str, Any]:
    return {"type": "prompt", "prompt": prompt, **more}


def test_prompt_ok_false_blocks_and_is_charged(workspace: Path) -> None:
    """'`ok: false` blocks as exit 2 would. Its tokens, cost and time are charged to the
    step's budget and recorded as the hook's'."""
    provider = scripted('{"ok": false, "reason": "the tests were not run"}')
    rig = Rig(workspace, {"Stop": [group(judge())]}, provider_for=lambda model: provider)
    keep_going = rig.stop()
    assert (
        keep_going
        == "[Stop hook (prompt: Is this fine? $ARGUMENTS) asks to keep going: the tests were not run]"
    )
    assert (rig.ledger.tokens_in, rig.ledger.tokens_out, rig.ledger.turns) == (40, 9, 1)
    [run] = rig.runs()
    assert run["exit_code"] == 2 and run["first_line"] == "the tests were not run"


def test_prompt_ok_true_lets_the_call_run(workspace: Path) -> None:
    provider = scripted('{"ok": true}')
    rig = Rig(workspace, {"PreToolUse": [group(judge())]}, provider_for=lambda m: provider)
    v = rig.pre()
    assert refusal_lines(v) == []
    assert v.runs[0].usage == {"tokens_in": 40, "tokens_out": 9, "usd": 0.0}


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("sure, looks fine", "the model did not answer JSON"),
        ('{"verdict": "ok"}', 'the model\'s answer has no boolean "ok"'),
    ],
)
def test_prompt_bad_answer_refuses_the_call(workspace: Path, answer: str, why: str) -> None:
    """'a model that ... answers something else refuses the call (fail closed, with a
    text saying why)'."""
    provider = scripted(answer)
    rig = Rig(workspace, {"PreToolUse": [group(judge())]}, provider_for=lambda m: provider)
    [line] = refusal_lines(rig.pre())
    assert "could not run: " + why in line


def test_prompt_sends_the_event_and_fails_closed_when_the_model_fails(workspace: Path) -> None:
    """'`$ARGUMENTS` replaced by the hook's JSON'; 'a model that fails ... refuses the
    call'. Against the fake OpenAI server: first a verdict, then a 400."""
    with OPENAI.server() as srv:
        srv.replies.append(OPENAI.reply('{"ok": false, "reason": "no writes on Friday"}'))
        provider = OPENAI.provider(srv, max_retries=0)
        named: list[str | None] = []

        def provider_for(model: str | None) -> Any:
            named.append(model)
            return provider

        hook = judge("Judge this call: $ARGUMENTS", model="gpt-4o-mini")
        rig = Rig(workspace, {"PreToolUse": [group(hook)]}, provider_for=provider_for)
        [line] = refusal_lines(rig.pre())
        assert line.endswith("blocked the call: no writes on Friday]")
        sent = srv.requests[-1].body["messages"][-1]["content"]
        prefix = "Judge this call: "
        assert sent.startswith(prefix)
        event = json.loads(sent[len(prefix) :])
        assert (event["hook_event_name"], event["tool_name"]) == ("PreToolUse", "Write")
        assert named == ["gpt-4o-mini"]

        srv.replies.append(OPENAI.error(400, "bad request"))
        [line] = refusal_lines(rig.pre())
        assert "could not run: the model failed" in line


def test_prompt_without_a_provider_fails_closed(workspace: Path) -> None:
    """Where no model can be asked (`orkeon hooks check`), a prompt hook refuses."""
    [line] = refusal_lines(Rig(workspace, {"PreToolUse": [group(judge())]}).pre())
    assert "could not run: no model to ask here" in line


# --- async and once ------------------------------------------------------------------------


def test_async_hook_decides_nothing_and_is_awaited_before_the_end(
    workspace: Path, tmp_path: Path
) -> None:
    """'`async: true` ... run in the background, never change a decision, ... awaited
    before the step's result is written, counted in the ledger'. The hook waits for a
    file the test writes only after the call's verdict came back."""
    go = tmp_path / "go"
    script = f"while [ ! -e {go} ]; do sleep 0.01; done; echo late >&2; exit 2"
    rig = Rig(
        workspace, {"PreToolUse": [group({"type": "command", "command": script, "async": True})]}
    )

    async def main() -> PreToolVerdict:
        call = sample_call(workspace, "file_write", {"file_path": "a.py", "content": ""})
        v = await rig.hooks.pre_tool(rig.ctx, call, "call-1", rig.ledger)
        assert rig.runs() == []  # still running: the verdict did not wait for it
        go.write_text("")
        await rig.hooks.drain()
        return v

    v = anyio.run(main)
    assert refusal_lines(v) == [] and v.runs == []
    [run] = rig.runs()
    assert (run["exit_code"], run["async"], run["first_line"]) == (2, True, "late")
    assert rig.ledger.hook_seconds > 0


def test_async_hook_cancelled_at_the_end_is_recorded(workspace: Path) -> None:
    """'(or cancelled with a record)': a step cut short cancels what still runs."""
    hook = {"type": "command", "command": "sleep 30", "async": True}
    rig = Rig(workspace, {"Stop": [group(hook)]})

    async def main() -> None:
        await rig.hooks.stop(rig.ctx, False, rig.ledger)
        await rig.hooks.drain(cancel=True)

    anyio.run(main)
    [run] = rig.runs()
    assert run["first_line"] == "cancelled: the step ended before it did" and run["async"]


def test_once_hook_runs_once_per_session(workspace: Path, tmp_path: Path) -> None:
    """'`once: true`': the hook runs at most once per session."""
    rec = tmp_path / "rec.jsonl"
    hook = {"type": "command", "command": ans(record=rec), "once": True}
    rig = Rig(workspace, {"PreToolUse": [group(hook)]})
    rig.pre()
    rig.pre()
    assert len(records(rec)) == 1


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        ({"type": "http"}, "hooks.Stop[0].hooks[0].url: Field required"),
        (
            {"type": "http", "url": "file:///etc/passwd"},
            "hooks.Stop[0].hooks[0].url: must be an http:// or https:// URL",
        ),
        ({"type": "prompt"}, "hooks.Stop[0].hooks[0].prompt: Field required"),
        ({"type": "prompt", "prompt": ""}, "hooks.Stop[0].hooks[0].prompt: String should have"),
        ({"type": "agent", "prompt": "x"}, "hooks.Stop[0].hooks[0].type: 'agent' is not supported"),
        ({"type": "webhook"}, "hooks.Stop[0].hooks[0].type: 'webhook' is not a handler type"),
        (
            {"type": "command", "command": "x", "async": True, "asyncRewake": True},
            "hooks.Stop[0].hooks[0].asyncRewake: not supported",
        ),
    ],
)
def test_bad_handler_names_the_field(hook: dict[str, Any], message: str) -> None:
    """docs/hooks.md, "Handler types": an unknown `type`, an `http` hook without a URL or
    with a non-http scheme, a `prompt` hook without text: exit 2 naming the field."""
    with pytest.raises(InputError) as err:
        parse_hooks({"hooks": {"Stop": [{"hooks": [hook]}]}}, "f.json")
    [problem] = err.value.problems
    assert problem.startswith("f.json: " + message), problem
    assert err.value.exit_code == 2
