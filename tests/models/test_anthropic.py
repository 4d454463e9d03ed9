"""The Anthropic Messages provider's wire form, against a real loopback server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from kit.fakes.anthropic_api import AnthropicFake, conversation_problem, message
from kit.fakes.prompt_cache import PromptCache, blocks, tokens
from kit.fakes.server import Reply

from orkeon_run.config.inputs import AnthropicModel
from orkeon_run.errors import ProviderError
from orkeon_run.models.anthropic import AnthropicProvider, parse_reply, wire_request
from orkeon_run.models.base import Message, ToolCall, ToolSpec
from orkeon_run.models.http import MAX_OUTPUT_TOKENS

SPEC = ToolSpec(
    "shell", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)
MODEL = "claude-sonnet-4-6"
CC = {"type": "ephemeral"}


def conversation() -> list[Message]:
    return [
        Message("system", "You are b1/api."),
        Message("user", "task"),
        Message("assistant", "Looking.", [ToolCall("t1", "shell", {"command": "ls"}), ToolCall("t2", "shell", {"command": "rm x"})]),
        Message("tool", "a.py\n", tool_call_id="t1", name="shell"),
        Message("tool", "[refused by the gate: shell(rm *)]", tool_call_id="t2", name="shell", is_error=True),
        Message("user", "[Stop hook (check.sh) asks to keep going: tests fail]"),
    ]  # fmt: skip


def ask(server: AnthropicFake, messages: list[Message], **config: Any):
    provider = AnthropicProvider(
        AnthropicModel(provider="anthropic", model=MODEL, base_url=server.base_url, **config),
        "sk-ant-test",
    )

    async def go():
        try:
            return await provider.for_role("b1/api").complete(messages, [SPEC])
        finally:
            await provider.aclose()

    return anyio.run(go)


def test_request_wire_form() -> None:
    with AnthropicFake() as server:
        server.push(message("ok"))
        ask(server, conversation())
    req = server.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["anthropic-version"]
    body = req.body
    assert body["model"] == MODEL
    assert body["max_tokens"] == MAX_OUTPUT_TOKENS
    assert body["system"] == [{"type": "text", "text": "You are b1/api.", "cache_control": CC}]
    assert body["tools"] == [
        {"name": "shell", "description": "Run a command.", "input_schema": SPEC.input_schema,
         "cache_control": CC}
    ]  # fmt: skip
    m = uncached(body["messages"])
    assert [x["role"] for x in m] == ["user", "assistant", "user"]
    assert m[1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "t2", "name": "shell", "input": {"command": "rm x"}},
    ]
    # both results in one user message, the refused one flagged, the follow-up text after
    assert m[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a.py\n"},
        {"type": "tool_result", "tool_use_id": "t2",
         "content": "[refused by the gate: shell(rm *)]", "is_error": True},
        {"type": "text", "text": "[Stop hook (check.sh) asks to keep going: tests fail]"},
    ]  # fmt: skip
    assert conversation_problem(m) is None


def uncached(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their cache breakpoints."""
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the request's breakpoints are: "tools[i]", "system", "messages[i][j]"."""
    out = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    if isinstance(body.get("system"), list):
        out += ["system" for b in body["system"] if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        out += [f"messages[{i}][{j}]" for j, b in enumerate(m["content"]) if "cache_control" in b]
    return out


def session_bodies(cache: bool, rounds: int = 3, calls: int = 1) -> list[dict[str, Any]]:
    """The request bodies of a session of `rounds` answers of `calls` calls each."""
    provider = AnthropicProvider(
        AnthropicModel(provider="anthropic", model=MODEL, cache=cache), "k"
    )
    convo = [Message("system", "You are b1/api."), Message("user", "the task. " * 100)]
    bodies = []
    for r in range(rounds):
        bodies.append(provider.request_body(convo, provider.wire_tools([SPEC, SPEC])))
        made = tuple(ToolCall(f"t{r}_{k}", "shell", {"command": f"ls {k}"}) for k in range(calls))
        convo.append(Message("assistant", f"round {r}", made))
        convo += [Message("tool", f"out {c.id}", tool_call_id=c.id, name="shell") for c in made]
    return bodies


def test_breakpoints_move_forward_with_the_conversation() -> None:
    """Tools and system, then the end of the previous request and the end of this one:
    four, the API's limit."""
    first, second, third = session_bodies(cache=True)
    assert breakpoints(first) == ["tools[1]", "system", "messages[0][0]"]
    assert breakpoints(second) == ["tools[1]", "system", "messages[0][0]", "messages[2][0]"]
    assert breakpoints(third) == ["tools[1]", "system", "messages[2][0]", "messages[4][0]"]
    assert "cache_control" not in first["tools"][0]


def test_no_breakpoint_with_the_cache_off() -> None:
    for body in session_bodies(cache=False):
        assert breakpoints(body) == [] and isinstance(body["system"], str)
        assert "cache_control" not in json.dumps(body)


def test_the_previous_end_breakpoint_survives_a_wide_answer() -> None:
    """The API looks back at most 20 blocks from a breakpoint: after an answer of 11 calls
    (23 new blocks), only the breakpoint on the previous request's end still finds what
    that request wrote."""
    first, second, _ = session_bodies(cache=True, calls=11)
    with_it = PromptCache(min_tokens=0)
    with_it.use(first)
    read = with_it.use(second).cache_read_input_tokens
    assert read == sum(tokens(b) for b in blocks(first))  # all the first request sent
    without = PromptCache(min_tokens=0)
    without.use(first)
    last_only = json.loads(json.dumps(second))
    del last_only["messages"][0]["content"][-1]["cache_control"]
    tools_and_system = sum(tokens(b) for b in blocks(first)[:3])
    assert without.use(last_only).cache_read_input_tokens == tools_and_system < read // 2


def test_a_cut_answer_and_an_input_that_is_not_an_object() -> None:
    doc = {"content": [{"type": "text", "text": "partial"},
                       {"type": "tool_use", "id": "t1", "name": "shell", "input": "ls"}],
           "stop_reason": "max_tokens", "usage": {"input_tokens": 3, "output_tokens": 9}}  # fmt: skip
    turn = parse_reply(json.dumps(doc).encode(), "anthropic m", max_output=9)
    assert turn.cut_at == 9
    [call] = turn.tool_calls
    assert (call.input, call.raw, call.error) == (
        {},
        '"ls"',
        'the arguments are not a JSON object: "ls"',
    )
    doc["stop_reason"] = "tool_use"
    assert parse_reply(json.dumps(doc).encode(), "anthropic m", max_output=9).cut_at is None


def test_empty_answers_and_results_stay_valid() -> None:
    """The API rejects empty text blocks and empty messages."""
    _, wire = wire_request([
        Message("user", "task"),
        Message("assistant", "", [ToolCall("t1", "shell", {"command": "true"})]),
        Message("tool", "", tool_call_id="t1", name="shell"),
        Message("assistant", ""),
        Message("user", "again"),
    ])  # fmt: skip
    assert wire[1]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "true"}}
    ]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1"},
        {"type": "text", "text": "again"},
    ]
    assert conversation_problem(wire) is None


def test_reply_with_tool_use_and_usage() -> None:
    with AnthropicFake() as server:
        server.push(message("Running.", [("toolu_1", "shell", {"command": "ls"})], usage=(40, 7)))
        turn = ask(server, conversation()[:2])
    assert turn.text == "Running."
    assert turn.tool_calls == [ToolCall("toolu_1", "shell", {"command": "ls"})]
    assert (turn.tokens_in, turn.tokens_out, turn.model_name) == (40, 7, MODEL)


def test_cache_tokens_count_as_input_and_are_read_back() -> None:
    doc = {"content": [{"type": "text", "text": "x"}],
           "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                     "cache_read_input_tokens": 1000, "output_tokens": 3}}  # fmt: skip
    turn = parse_reply(json.dumps(doc).encode(), "anthropic m")
    assert (turn.tokens_in, turn.tokens_out) == (1105, 3)
    assert (turn.cache_write_tokens, turn.cache_read_tokens) == (100, 1000)


def test_other_blocks_are_skipped() -> None:
    doc = {"content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                       {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}  # fmt: skip
    assert parse_reply(json.dumps(doc).encode(), "anthropic m").text == "ab"


def test_an_error_document_with_status_200() -> None:
    with AnthropicFake() as server:
        server.push(
            Reply(
                200,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        )
        with pytest.raises(ProviderError) as err:
            ask(server, conversation()[:2])
    assert str(err.value) == f"anthropic {MODEL}: the server answered an error: Overloaded"


def test_529_overloaded_is_retried() -> None:
    from kit.fakes.anthropic_api import error

    with AnthropicFake() as server:
        server.push(error(529, "Overloaded", type="overloaded_error", headers={"retry-after": "0"}),
                    message("after the storm"))  # fmt: skip
        assert ask(server, conversation()[:2]).text == "after the storm"
    assert len(server.requests) == 2
