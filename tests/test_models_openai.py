"""The OpenAI Chat Completions provider's wire form, against a real loopback server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fakes.openai_api import OpenAIFake, completion, conversation_problem
from fakes.server import Reply

from orkeon_run.config.inputs import OpenAIModel
from orkeon_run.errors import ProviderError
from orkeon_run.models.base import Message, ToolCall, ToolSpec
from orkeon_run.models.openai import OpenAIProvider, parse_reply, wire_messages

SPEC = ToolSpec(
    "shell", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)


def conversation() -> list[Message]:
    return [
        Message("system", "You are b1/api."),
        Message("user", "task"),
        Message("assistant", "", [ToolCall("c1", "shell", {"command": "ls"}), ToolCall("c2", "shell", {"command": "rm x"})]),
        Message("tool", "a.py\n", tool_call_id="c1", name="shell"),
        Message("tool", "[refused by the gate: shell(rm *)]", tool_call_id="c2", name="shell", is_error=True),
        Message("assistant", "Done."),
        Message("user", "[Stop hook (check.sh) asks to keep going: tests fail]"),
    ]  # fmt: skip


def ask(server: OpenAIFake, messages: list[Message], **config: Any):
    provider = OpenAIProvider(
        OpenAIModel(provider="openai", model="gpt-4o-mini", base_url=server.base_url, **config),
        "sk-test",
    )

    async def go():
        try:
            return await provider.for_role("b1/api").complete(messages, [SPEC])
        finally:
            await provider.aclose()

    return anyio.run(go)


def test_request_wire_form() -> None:
    with OpenAIFake() as server:
        server.push(completion("ok"))
        ask(server, conversation())
    req = server.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = req.body
    assert body["model"] == "gpt-4o-mini"
    assert body["tools"] == [
        {"type": "function", "function": {"name": "shell", "description": "Run a command.",
                                          "parameters": SPEC.input_schema}}
    ]  # fmt: skip
    m = body["messages"]
    assert m[0] == {"role": "system", "content": "You are b1/api."}
    assert m[2]["content"] is None
    assert m[2]["tool_calls"][1] == {
        "id": "c2", "type": "function", "function": {"name": "shell", "arguments": '{"command": "rm x"}'}
    }  # fmt: skip
    assert m[4] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "[refused by the gate: shell(rm *)]",
    }
    assert m[5] == {"role": "assistant", "content": "Done."}
    assert m[6]["role"] == "user"
    assert conversation_problem(m) is None


def test_reply_with_tool_calls_and_usage() -> None:
    with OpenAIFake() as server:
        server.push(
            completion("Running.", [("call_9", "shell", {"command": "ls -la"})], usage=(40, 7))
        )
        turn = ask(server, conversation()[:2])
    assert turn.text == "Running."
    assert turn.tool_calls == [ToolCall("call_9", "shell", {"command": "ls -la"})]
    assert (turn.tokens_in, turn.tokens_out, turn.model_name) == (40, 7, "gpt-4o-mini")


def _doc(message: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"choices": [{"message": message}], **extra}).encode()


def test_parse_lenient_where_servers_differ() -> None:
    """Content as a list of parts, a call without an id, no usage (some local servers)."""
    turn = parse_reply(
        _doc({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
              "tool_calls": [{"function": {"name": "shell", "arguments": '{"command": "ls"}'}}]}),
        "openai m",
    )  # fmt: skip
    assert turn.text == "ab"
    assert turn.tool_calls == [ToolCall("call_1", "shell", {"command": "ls"})]
    assert (turn.tokens_in, turn.tokens_out) == (0, 0)


def test_parse_rejects_arguments_that_are_not_an_object() -> None:
    bad = _doc(
        {
            "content": None,
            "tool_calls": [{"id": "x", "function": {"name": "shell", "arguments": "{not json"}}],
        }
    )
    with pytest.raises(ProviderError, match=r"^openai m: cannot read the reply \(JSONDecodeError"):
        parse_reply(bad, "openai m")
    listy = _doc({"tool_calls": [{"id": "x", "function": {"name": "shell", "arguments": "[1]"}}]})
    with pytest.raises(ProviderError, match="arguments of shell are not a JSON object"):
        parse_reply(listy, "openai m")


def test_an_error_object_with_status_200() -> None:
    """Some proxies (OpenRouter, LiteLLM) answer 200 with an error object."""
    with OpenAIFake() as server:
        server.push(Reply(200, {"error": {"message": "upstream provider failed", "code": 502}}))
        with pytest.raises(ProviderError) as err:
            ask(server, conversation()[:2])
    assert (
        str(err.value)
        == "openai gpt-4o-mini: the server answered an error: upstream provider failed"
    )


def test_wire_messages_keeps_an_empty_final_answer_valid() -> None:
    wire = wire_messages([Message("user", "x"), Message("assistant", ""), Message("user", "again")])
    assert wire[1] == {"role": "assistant", "content": ""}
