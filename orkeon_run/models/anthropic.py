"""The Anthropic Messages provider: `tool_use` / `tool_result` blocks, the system prompt in
`system`, `base_url` configurable (a proxy, a gateway, a local fake).

Only this module imports the `anthropic` SDK, and only `build_provider` imports this
module. As in openai.py, the request goes through the SDK's client as a plain
`client.post(..., cast_to=Response)` and the reply is read as JSON here (the typed
`messages.create` path costs milliseconds a turn on long conversations).

Conversation mapping: consecutive tool results become one user message of `tool_result`
blocks (a refused call's block has `is_error: true`); a user message that follows them
(a Stop hook's keep-going message, a repair message) joins that same message as a text
block after them, as the API requires. An assistant answer with no text and no calls is
left out (the API rejects empty content).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import anyio.lowlevel

from ..errors import ProviderError
from ..inputs import AnthropicModel
from ..pricing import context_for, price_for
from .base import Message, ToolCall, ToolSpec, Turn
from .retry import one_line, sdk_classifier, with_retries

try:  # the SDK's HTTP library: httpx2 in current releases, httpx before
    from httpx2 import Response
except ImportError:  # pragma: no cover
    from httpx import Response  # type: ignore[no-redef]

DEFAULT_BASE_URL = "https://api.anthropic.com"
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
    try:
        doc = json.loads(data)
    except ValueError:
        raise ProviderError(
            one_line(f"{label}: the reply is not JSON: {data[:120].decode('utf-8', 'replace')!r}")
        ) from None
    if isinstance(doc, dict) and doc.get("type") == "error":
        err = doc.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        raise ProviderError(one_line(f"{label}: the server answered an error: {msg}"))
    try:
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
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise ProviderError(
            one_line(f"{label}: cannot read the reply ({type(exc).__name__}: {exc})")
        ) from None


class AnthropicRole:
    def __init__(self, provider: AnthropicProvider, role: str) -> None:
        self.provider = provider
        self.role = role
        self._tools: tuple[list[ToolSpec], list[dict[str, Any]]] | None = None

    async def complete(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        p = self.provider
        system, wire = wire_request(messages)
        body: dict[str, Any] = {"model": p.config.model, "max_tokens": MAX_TOKENS}
        if system:
            body["system"] = system
        body["messages"] = wire
        if tools:
            # The agent passes the same list every turn: convert it once.
            if self._tools is None or self._tools[0] is not tools:
                self._tools = (tools, wire_tools(tools))
            body["tools"] = self._tools[1]
        client = p.client()
        # Encoded here, once: given a dict, the SDK walks and copies it on every attempt.
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

        async def attempt() -> Response:
            return await client.post("/v1/messages", content=data, cast_to=Response)

        response = await with_retries(
            attempt,
            p.classify,
            label=p.label,
            max_retries=p.config.max_retries,
            timeout=p.config.timeout_seconds,
            base_delay=p.retry_base,
            secret=p.api_key,
        )
        return parse_reply(response.content, p.label)


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, config: AnthropicModel, api_key: str, *, retry_base: float = 0.5) -> None:
        self.config = config
        self.api_key = api_key
        self.retry_base = retry_base
        self.base_url = config.base_url or DEFAULT_BASE_URL
        self.label = f"anthropic {config.model}"
        self.classify = sdk_classifier(
            anthropic,
            model=config.model,
            base_url=self.base_url,
            key_env=config.api_key_env,
            timeout=config.timeout_seconds,
        )
        self._client: anthropic.AsyncAnthropic | None = None
        self._loop: object = None

    def client(self) -> anthropic.AsyncAnthropic:
        # Made on first use in the event loop that uses it; a later loop (another
        # anyio.run) gets its own, since a connection pool belongs to one loop.
        loop = anyio.lowlevel.current_token()
        if self._client is None or self._loop != loop:
            self._loop = loop
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.config.timeout_seconds,
                max_retries=0,  # retries are ours (retry.py): bounded, retry-after honoured
            )
        return self._client

    def for_role(self, role: str) -> AnthropicRole:
        return AnthropicRole(self, role)

    def price(self) -> tuple[float, float] | None:
        return price_for(self.config.model, self.config.price)

    def context_tokens(self) -> int:
        return context_for(self.config.model, self.config.context_tokens)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
