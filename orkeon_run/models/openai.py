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

What real local servers (llama.cpp's, llama-cpp-python's) need, and the reference API
accepts too: `tool_choice: "auto"` whenever tools are offered (one server ignores the
tools without it); an assistant message with calls carries `"content": ""`, never `null`
(a chat template that adds strings fails on it, and the server answers HTTP 500); a call
whose arguments are not valid JSON is sent back with `{}` (llama.cpp parses the arguments
of past calls and fails on invalid ones). The output limit goes as `max_tokens`, which
every compatible server reads, or `max_completion_tokens` to OpenAI's own API, whose
newer models refuse `max_tokens`.

Reading a reply: a call whose arguments are not valid JSON, or not an object, becomes a
`ToolCall` with its `error` (the agent tells the model, and runs the other calls);
`finish_reason: "length"` marks the answer cut (`Turn.cut_at`); the prompt tokens the
server read from its cache (`usage.prompt_tokens_details.cached_tokens`) are priced as
cache reads.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..config.inputs import OpenAIModel
from .base import Message, ToolCall, ToolSpec, Turn
from .http import HTTPProvider, reading_reply, reply_document
from .structured import unwrap_text, wire_schema

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
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


EXCERPT = 200  # characters of unreadable arguments the model is shown


def read_call(k: int, c: dict[str, Any]) -> ToolCall:
    """One reply `tool_calls` entry; arguments that cannot be read make a call with `error`."""
    fn = c["function"]
    cid = c.get("id") or f"call_{k + 1}"
    args = fn.get("arguments")
    if args is None or args == "":
        return ToolCall(cid, fn["name"], {})
    if not isinstance(args, str):  # some servers send the object itself
        value: Any = args
        raw = json.dumps(args, ensure_ascii=False)
    else:
        raw = args
        try:
            value = json.loads(args)
        except ValueError as exc:
            shown = args if len(args) <= EXCERPT else args[:EXCERPT] + "…"
            error = f"the arguments are not valid JSON: {exc}: {shown}"
            return ToolCall(cid, fn["name"], {}, error, raw)
    if not isinstance(value, dict):
        shown = raw if len(raw) <= EXCERPT else raw[:EXCERPT] + "…"
        return ToolCall(cid, fn["name"], {}, f"the arguments are not a JSON object: {shown}", raw)
    return ToolCall(cid, fn["name"], value)


def parse_reply(data: bytes, label: str, max_output: int = 0) -> Turn:
    """The Turn in a Chat Completions reply; ProviderError when it is not one.
    `max_output` is the limit the request set (reported as `cut_at` when it was hit)."""
    doc = reply_document(
        data, label, lambda d: d["error"] if "error" in d and not d.get("choices") else None
    )
    with reading_reply(label):
        choice = doc["choices"][0]
        message = choice["message"]
        calls = [read_call(k, c) for k, c in enumerate(message.get("tool_calls") or [])]
        usage = doc.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        tokens_in = int(usage.get("prompt_tokens") or 0)
        return Turn(
            text=_text(message.get("content")),
            tool_calls=calls,
            tokens_in=tokens_in,
            tokens_out=int(usage.get("completion_tokens") or 0),
            model_name=doc.get("model"),
            cache_read_tokens=min(tokens_in, int(details.get("cached_tokens") or 0)),
            cut_at=max_output if choice.get("finish_reason") == "length" else None,
        )


class OpenAIProvider(HTTPProvider):
    name = "openai"
    path = "/chat/completions"
    default_base_url = DEFAULT_BASE_URL
    config: OpenAIModel

    def auth_headers(self) -> dict[str, str]:
        # No key (`"api_key_env": null`): no Authorization header, as a local server
        # without one expects (a header with an empty key is refused by some).
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        optional = (
            ("OpenAI-Organization", "OPENAI_ORG_ID"),
            ("OpenAI-Project", "OPENAI_PROJECT_ID"),
        )
        for name, variable in optional:
            if os.environ.get(variable):
                headers[name] = os.environ[variable]
        return headers

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], answer_schema: Any = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": wire_messages(messages)}
        official = self.base_url.startswith(DEFAULT_BASE_URL.removesuffix("/v1"))
        body["max_completion_tokens" if official else "max_tokens"] = self.max_output_tokens()
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if answer_schema is not None:  # structured.py: not strict
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": wire_schema(answer_schema)},
            }
        return body

    def wire_tools(self, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return wire_tools(tools)

    def parse_reply(self, content: bytes, answer_schema: Any = None) -> Turn:
        turn = parse_reply(content, self.label, self.max_output_tokens())
        if answer_schema is not None and not turn.tool_calls:
            turn.text = unwrap_text(answer_schema, turn.text)
        return turn
