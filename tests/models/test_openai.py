"""The OpenAI Chat Completions provider's wire form, against a real loopback server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from kit.fakes.openai_api import OpenAIFake, completion, conversation_problem
from kit.fakes.server import Reply

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
    assert body["tool_choice"] == "auto"  # one local server ignores the tools without it
    assert body["max_tokens"] == 16384  # not OpenAI's own API: the name every server reads
    assert "max_completion_tokens" not in body
    m = body["messages"]
    assert m[0] == {"role": "system", "content": "You are b1/api."}
    assert m[2]["content"] == ""  # never null: a strict server fails on it
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


def test_unreadable_arguments_make_calls_with_an_error() -> None:
    """Not valid JSON, or not an object: the call carries why and the raw text, and the
    other calls of the answer are read as usual."""
    calls = [
        {"id": "a", "function": {"name": "file_read", "arguments": '{"file_path": "x"}'}},
        {"id": "b", "function": {"name": "shell", "arguments": '{"command": "ls" "-la"}'}},
        {"id": "c", "function": {"name": "shell", "arguments": "[1]"}},
        {"id": "d", "function": {"name": "list_files", "arguments": ""}},
        {"id": "e", "function": {"name": "list_files", "arguments": {"path": "src"}}},
    ]
    turn = parse_reply(_doc({"content": None, "tool_calls": calls}), "openai m")
    a, b, c, d, e = turn.tool_calls
    assert a == ToolCall("a", "file_read", {"file_path": "x"})
    assert (b.input, b.raw) == ({}, '{"command": "ls" "-la"}')
    assert b.error == (
        "the arguments are not valid JSON: Expecting ',' delimiter: line 1 column 18 "
        """(char 17): {"command": "ls" "-la"}"""
    )
    assert (c.error, c.raw) == ("the arguments are not a JSON object: [1]", "[1]")
    assert d == ToolCall("d", "list_files", {})
    assert e == ToolCall("e", "list_files", {"path": "src"})
    # sent back as valid JSON (llama.cpp parses the arguments of past calls)
    wire = wire_messages([Message("user", "x"), Message("assistant", "", tuple(turn.tool_calls))])
    assert [c["function"]["arguments"] for c in wire[1]["tool_calls"]] == [
        '{"file_path": "x"}',
        "{}",
        "{}",
        "{}",
        '{"path": "src"}',
    ]


def test_long_unreadable_arguments_are_shown_in_part() -> None:
    raw = '{"content": "' + "x" * 5000
    turn = parse_reply(
        _doc({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": raw}}]}), "m"
    )
    [call] = turn.tool_calls
    assert call.raw == raw and len(call.error or "") < 400 and (call.error or "").endswith("x…")


def test_finish_reason_length_and_cached_tokens() -> None:
    doc = {"choices": [{"message": {"content": "partial"}, "finish_reason": "length"}],
           "usage": {"prompt_tokens": 1000, "completion_tokens": 64,
                     "prompt_tokens_details": {"cached_tokens": 768}}}  # fmt: skip
    turn = parse_reply(json.dumps(doc).encode(), "openai m", max_output=64)
    assert (turn.cut_at, turn.tokens_in, turn.cache_read_tokens, turn.cache_write_tokens) == (
        64,
        1000,
        768,
        0,
    )
    doc["choices"][0]["finish_reason"] = "stop"
    assert parse_reply(json.dumps(doc).encode(), "openai m", max_output=64).cut_at is None


def test_the_output_limit_and_its_name() -> None:
    """OpenAI's own API takes `max_completion_tokens` (its newer models refuse
    `max_tokens`); every other server reads `max_tokens`. The default is 16384, or half
    the context window when that is smaller."""

    def body(**config: Any) -> dict[str, Any]:
        provider = OpenAIProvider(
            OpenAIModel(provider="openai", model="gpt-4o-mini", **config), "k"
        )
        return provider.request_body([Message("user", "x")], [])

    assert body()["max_completion_tokens"] == 16384 and "max_tokens" not in body()
    assert body(max_output_tokens=500)["max_completion_tokens"] == 500
    local = "http://127.0.0.1:8080/v1"
    assert body(base_url=local, context_tokens=2048)["max_tokens"] == 1024
    assert body(base_url=local, context_tokens=2048, max_output_tokens=300)["max_tokens"] == 300
    assert "tool_choice" not in body(base_url=local)  # no tools offered, no choice sent


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
