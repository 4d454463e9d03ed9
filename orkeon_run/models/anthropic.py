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
"""

from __future__ import annotations

from typing import Any

from ..config.inputs import AnthropicModel
from .base import Message, ToolCall, ToolSpec, Turn
from .http import HTTPProvider, reading_reply, reply_document

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2026-10-21"  # the `anthropic-version` header the SDK (2.14) sends
# Output tokens per answer. Under the SDK's 21333 non-streaming ceiling, and above what
# one tool call (a file_write of a large file) needs.
MAX_TOKENS = 16384


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


def wire_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def parse_reply(data: bytes, label: str) -> Turn:
    """The Turn in a Messages reply; ProviderError when it is not one."""
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
                if not isinstance(block["input"], dict):
                    raise ValueError(f"input of {block['name']} is not a JSON object")
                calls.append(ToolCall(block["id"], block["name"], block["input"]))
            # thinking and other block kinds carry nothing the loop uses
        usage = doc.get("usage") or {}
        tokens_in = sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return Turn(
            text="".join(texts),
            tool_calls=calls,
            tokens_in=tokens_in,
            tokens_out=int(usage.get("output_tokens") or 0),
            model_name=doc.get("model"),
        )


class AnthropicProvider(HTTPProvider):
    name = "anthropic"
    path = "/v1/messages"
    default_base_url = DEFAULT_BASE_URL
    config: AnthropicModel

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def request_body(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        system, wire = wire_request(messages)
        body: dict[str, Any] = {"model": self.config.model, "max_tokens": MAX_TOKENS}
        if system:
            body["system"] = system
        body["messages"] = wire
        if tools:
            body["tools"] = tools
        return body

    def wire_tools(self, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return wire_tools(tools)

    def parse_reply(self, content: bytes) -> Turn:
        return parse_reply(content, self.label)
