"""The two HTTP providers side by side, for tests that hold for both: how to start each
fake server, build each provider against it, script a reply, and read back the tool
results the server received."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orkeon_run.config.inputs import AnthropicModel, OpenAIModel
from orkeon_run.models.anthropic import AnthropicProvider
from orkeon_run.models.openai import OpenAIProvider

from . import anthropic_api, openai_api
from .server import FakeServer, Reply

Calls = list[tuple[str, str, Any]]


@dataclass(frozen=True)
class Protocol:
    name: str
    model: str
    key: str
    key_env: str

    def server(self, models: tuple[str, ...] | None = None) -> FakeServer:
        models = models or (self.model,)
        if self.name == "openai":
            return openai_api.OpenAIFake(api_key=self.key, models=models)
        return anthropic_api.AnthropicFake(api_key=self.key, models=models)

    def provider(
        self, server: FakeServer, *, key: str | None = None, retry_base: float = 0.01, **config: Any
    ) -> OpenAIProvider | AnthropicProvider:
        config.setdefault("model", self.model)
        config.setdefault("timeout_seconds", 5)
        base_url = server.base_url  # type: ignore[attr-defined]
        if self.name == "openai":
            return OpenAIProvider(
                OpenAIModel(provider="openai", base_url=base_url, **config),
                key or self.key,
                retry_base=retry_base,
            )
        return AnthropicProvider(
            AnthropicModel(provider="anthropic", base_url=base_url, **config),
            key or self.key,
            retry_base=retry_base,
        )

    def reply(
        self,
        text: str | None = None,
        calls: Calls = (),
        usage: tuple[int, int] = (12, 5),  # type: ignore[assignment]
        *,
        cut: bool = False,
    ) -> Reply:
        """An answer; `cut`: stopped at the output limit (`length` / `max_tokens`)."""
        if self.name == "openai":
            finish = "length" if cut else None
            return openai_api.completion(text, calls, usage, model=self.model, finish=finish)
        stop = "max_tokens" if cut else None
        return anthropic_api.message(text, calls, usage, model=self.model, stop_reason=stop)

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        if self.name == "openai":
            return openai_api.error(status, message, headers=headers)
        kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}.get(
            status, "invalid_request_error"
        )
        return anthropic_api.error(status, message, type=kind, headers=headers)

    def rate_limited(self) -> Reply:
        """A 429 as the API sends it, asking to wait 1 ms (so retries take no time)."""
        return self.error(429, "Rate limit reached for requests", {"retry-after-ms": "1"})

    def server_error(self) -> Reply:
        """A 500 as the API sends it when it is down, asking to wait 1 ms."""
        return self.error(
            500, "The server had an error processing your request", {"retry-after-ms": "1"}
        )

    def tool_results(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """(call id, content) of every tool result in a request body, in order."""
        out: list[tuple[str, str]] = []
        for m in body["messages"]:
            if self.name == "openai":
                if m["role"] == "tool":
                    out.append((m["tool_call_id"], m["content"]))
            elif m["role"] == "user" and isinstance(m["content"], list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        out.append((b["tool_use_id"], b.get("content", "")))
        return out


OPENAI = Protocol("openai", "gpt-4o-mini", "sk-test", "OPENAI_API_KEY")
ANTHROPIC = Protocol("anthropic", "claude-sonnet-4-6", "sk-ant-test", "ANTHROPIC_API_KEY")
PROTOCOLS = (OPENAI, ANTHROPIC)
