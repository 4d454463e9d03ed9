"""The Anthropic Messages provider's wire form, against a real loopback server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fakes.anthropic_api import AnthropicFake, conversation_problem, message
from fakes.server import Reply

from orkeon_run.config.inputs import AnthropicModel
from orkeon_run.errors import ProviderError
from orkeon_run.models.anthropic import MAX_TOKENS, AnthropicProvider, parse_reply, wire_request
from orkeon_run.models.base import Message, ToolCall, ToolSpec

SPEC = ToolSpec(
    "shell", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)
MODEL = "claude-sonnet-4-6"


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
    assert body["max_tokens"] == MAX_TOKENS
    assert body["system"] == "You are b1/api."
    assert body["tools"] == [
        {"name": "shell", "description": "Run a command.", "input_schema": SPEC.input_schema}
    ]
    m = body["messages"]
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


def test_cache_tokens_count_as_input() -> None:
    doc = {"content": [{"type": "text", "text": "x"}],
           "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                     "cache_read_input_tokens": 1000, "output_tokens": 3}}  # fmt: skip
    turn = parse_reply(json.dumps(doc).encode(), "anthropic m")
    assert (turn.tokens_in, turn.tokens_out) == (1105, 3)


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
    from fakes.anthropic_api import error

    with AnthropicFake() as server:
        server.push(error(529, "Overloaded", type="overloaded_error", headers={"retry-after": "0"}),
                    message("after the storm"))  # fmt: skip
        assert ask(server, conversation()[:2]).text == "after the storm"
    assert len(server.requests) == 2
