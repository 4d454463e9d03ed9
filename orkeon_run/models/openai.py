"""The OpenAI Chat Completions provider: OpenAI, and any server that speaks the same API
(vLLM, Ollama, llama.cpp's server, LM Studio, OpenRouter, LiteLLM) through `base_url`.

Only `build_provider` imports this module, so validation and scripted runs never load
it. The request is a plain POST through httpx2 (models/http.py; importing the `openai`
SDK alone costs about 1 s) with the headers the SDK would send (the key, and
`OpenAI-Organization` / `OpenAI-Project` from `OPENAI_ORG_ID` / `OPENAI_PROJECT_ID` when
set), and the reply is read as JSON here. Measured (bench/bench_providers.py): the SDK's
typed `chat.completions.create` spends 10-50 ms a turn on a 40-turn conversation walking
the request through its typed-dict transforms and building response models; the plain
post adds well under a millisecond to a raw HTTP request.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..config.inputs import OpenAIModel
from .base import Message, ToolCall, ToolSpec, Turn
from .http import HTTPProvider, reading_reply, reply_document

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                d["content"] = m.content or None
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": json.dumps(c.input, ensure_ascii=False),
                        },
                    }
                    for c in m.tool_calls
                ]
            out.append(d)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def wire_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # Some servers answer a list of parts: [{"type": "text", "text": "..."}].
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def parse_reply(data: bytes, label: str) -> Turn:
    """The Turn in a Chat Completions reply; ProviderError when it is not one."""
    doc = reply_document(
        data, label, lambda d: d["error"] if "error" in d and not d.get("choices") else None
    )
    with reading_reply(label):
        message = doc["choices"][0]["message"]
        calls = []
        for k, c in enumerate(message.get("tool_calls") or []):
            fn = c["function"]
            args = fn.get("arguments") or "{}"
            value = json.loads(args) if isinstance(args, str) else args
            if not isinstance(value, dict):
                raise ValueError(f"arguments of {fn['name']} are not a JSON object: {args!r}")
            calls.append(ToolCall(c.get("id") or f"call_{k + 1}", fn["name"], value))
        usage = doc.get("usage") or {}
        return Turn(
            text=_text(message.get("content")),
            tool_calls=calls,
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            model_name=doc.get("model"),
        )


class OpenAIProvider(HTTPProvider):
    name = "openai"
    path = "/chat/completions"
    default_base_url = DEFAULT_BASE_URL
    config: OpenAIModel

    def auth_headers(self) -> dict[str, str]:
        headers = {"authorization": f"Bearer {self.api_key}"}
        optional = (
            ("OpenAI-Organization", "OPENAI_ORG_ID"),
            ("OpenAI-Project", "OPENAI_PROJECT_ID"),
        )
        for name, variable in optional:
            if os.environ.get(variable):
                headers[name] = os.environ[variable]
        return headers

    def request_body(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": wire_messages(messages)}
        if tools:
            body["tools"] = tools
        return body

    def wire_tools(self, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return wire_tools(tools)

    def parse_reply(self, content: bytes) -> Turn:
        return parse_reply(content, self.label)
