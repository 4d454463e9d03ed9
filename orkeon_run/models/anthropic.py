"""The Anthropic Messages provider: `tool_use` / `tool_result` blocks, the system prompt in
`system`, `base_url` configurable (a proxy, a gateway, a local fake).

Only `build_provider` imports this module. As in openai.py, the request is a plain POST
through httpx2 (models/http.py: importing the `anthropic` SDK alone costs about 2 s) and
the reply is read as JSON here (the SDK's typed `messages.create` path would also cost
milliseconds a turn on long conversations).

Conversation mapping: consecutive tool results become one user message of `tool_result`
blocks (a refused call's block has `is_error: true`); a user message that follows them
(a Stop hook's keep-going message, a repair message) joins that same message as a text
block after them, as the API requires. An assistant answer with no text and no calls is
left out (the API rejects empty content).

Prompt caching (on unless `"model": {"cache": false}`): the request carries up to four
`cache_control` breakpoints, the API's limit (`add_breakpoints`). The prompt is cached in
the API's order, tools, then system, then messages, and a breakpoint caches everything
before it:

1. the last tool definition: the tools, shared by every role offered the same ones;
2. the system prompt (sent as one text block to carry it);
3. the last block of the user message that ended the previous request: this request
   reads exactly the prefix the previous one wrote, however many blocks came since (the
   API looks back at most 20 blocks from a breakpoint for an earlier entry, and one
   answer with ten calls adds more than 20);
4. the last block of the last message: written for the next request to read.

Breakpoints 3 and 4 move forward as the conversation grows. No ttl is sent: the API's
default 5 minutes, refreshed at each read, outlasts the time between two turns. A prefix
shorter than the model's minimum (1024 to 4096 tokens) is simply not cached; the API
does not fail on it. Usage reads back `cache_creation_input_tokens` (written, priced at
the cache-write rate) and `cache_read_input_tokens` (read, at the cache-read rate);
`Turn.tokens_in` counts them with `input_tokens`.
"""

from __future__ import annotations

import json
from typing import Any

from ..config.inputs import AnthropicModel
from .base import Message, ToolCall, ToolSpec, Turn
from .http import HTTPProvider, reading_reply, reply_document
from .structured import ANSWER_DESCRIPTION, ANSWER_TOOL, answer_text, wire_schema

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2026-10-21"  # the `anthropic-version` header the SDK (2.14) sends
EPHEMERAL = {"type": "ephemeral"}


def wire_request(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) in the Messages API's form."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def user_blocks() -> list[dict[str, Any]]:
        if out and out[-1]["role"] == "user":
            return out[-1]["content"]
        out.append({"role": "user", "content": []})
        return out[-1]["content"]

    for m in messages:
        if m.role == "system":
            system.append(m.content)
        elif m.role == "user":
            if m.content:
                user_blocks().append({"type": "text", "text": m.content})
        elif m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
            if m.content:
                block["content"] = m.content
            if m.is_error:
                block["is_error"] = True
            user_blocks().append(block)
        else:
            content: list[dict[str, Any]] = []
            if m.content:
                content.append({"type": "text", "text": m.content})
            content.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}
                for c in m.tool_calls
            )
            if content:
                out.append({"role": "assistant", "content": content})
    return "\n\n".join(system), out


def add_breakpoints(body: dict[str, Any]) -> None:
    """Put the cache breakpoints (the module's docstring) into a request `body` whose
    `system` is a string and whose messages are fresh (made by `wire_request`). The tools
    list is shared between turns: its last entry is replaced, not changed."""
    tools = body.get("tools")
    if tools:
        body["tools"] = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]
    if body.get("system"):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": EPHEMERAL}]
    messages = body["messages"]
    last_answer = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), -1
    )
    previous_end = next(
        (i for i in range(last_answer - 1, -1, -1) if messages[i]["role"] == "user"), None
    )
    for i in (previous_end, len(messages) - 1):
        if i is not None and i >= 0 and messages[i]["content"]:
            messages[i]["content"][-1]["cache_control"] = EPHEMERAL


def wire_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def parse_reply(data: bytes, label: str, max_output: int = 0, answer_schema: Any = None) -> Turn:
    """The Turn in a Messages reply; ProviderError when it is not one. `max_output` is the
    request's `max_tokens` (reported as `cut_at` when the answer stopped there). With
    `answer_schema`, a call of the answer tool is the final answer (structured.py)."""
    doc = reply_document(
        data, label, lambda d: d.get("error") if d.get("type") == "error" else None
    )
    with reading_reply(label):
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in doc["content"]:
            kind = block["type"]
            if kind == "text":
                texts.append(block["text"])
            elif kind == "tool_use":
                value = block["input"]
                if isinstance(value, dict):
                    calls.append(ToolCall(block["id"], block["name"], value))
                else:
                    raw = json.dumps(value, ensure_ascii=False)
                    error = f"the arguments are not a JSON object: {raw[:200]}"
                    calls.append(ToolCall(block["id"], block["name"], {}, error, raw))
            # thinking and other block kinds carry nothing the loop uses
        answer = next((c for c in calls if c.name == ANSWER_TOOL), None)
        if answer_schema is not None and answer is not None:
            texts, calls = [answer_text(answer_schema, answer.input)], []
        usage = doc.get("usage") or {}
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        return Turn(
            text="".join(texts),
            tool_calls=calls,
            tokens_in=int(usage.get("input_tokens") or 0) + read + written,
            tokens_out=int(usage.get("output_tokens") or 0),
            model_name=doc.get("model"),
            cache_read_tokens=read,
            cache_write_tokens=written,
            cut_at=max_output if doc.get("stop_reason") == "max_tokens" else None,
        )


class AnthropicProvider(HTTPProvider):
    name = "anthropic"
    path = "/v1/messages"
    default_base_url = DEFAULT_BASE_URL
    config: AnthropicModel

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], answer_schema: Any = None
    ) -> dict[str, Any]:
        system, wire = wire_request(messages)
        body: dict[str, Any] = {"model": self.config.model, "max_tokens": self.max_output_tokens()}
        if system:
            body["system"] = system
        body["messages"] = wire
        if answer_schema is not None:
            # The answer is a forced tool call: some tool every turn, this one at the end.
            answer = {
                "name": ANSWER_TOOL,
                "description": ANSWER_DESCRIPTION,
                "input_schema": wire_schema(answer_schema),
            }
            tools = [*tools, answer]
            body["tool_choice"] = {"type": "any"}
        if tools:
            body["tools"] = tools
        if self.config.cache:
            add_breakpoints(body)
        return body

    def wire_tools(self, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return wire_tools(tools)

    def parse_reply(self, content: bytes, answer_schema: Any = None) -> Turn:
        return parse_reply(content, self.label, self.max_output_tokens(), answer_schema)
