"""The Anthropic Messages wire protocol on a `FakeServer`.

The server checks what the real API checks and tests rely on: `x-api-key` (401),
`anthropic-version`, `max_tokens`, the model name (404), no `system` role inside
`messages`, that every `tool_use` block is answered by a `tool_result` block in the
next user message, and at most 4 `cache_control` breakpoints (400 otherwise).

With `prompt_cache` (tests/kit/fakes/prompt_cache.py), every answer's usage is what the
prompt cache made of the request: tokens read, written, and paid in full.
"""

from __future__ import annotations

import copy
from typing import Any

from .prompt_cache import MAX_BREAKPOINTS, PromptCache
from .server import FakeServer, Recorded, Reply

PATH = "/v1/messages"


def error(
    status: int,
    message: str,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    return Reply(
        status,
        {"type": "error", "error": {"type": type, "message": message}},
        headers=headers or {},
    )


def message(
    text: str | None = None,
    calls: list[tuple[str, str, Any]] = (),  # type: ignore[assignment]
    usage: tuple[int, int] = (12, 5),
    model: str = "claude-sonnet-4-6",
    *,
    stop_reason: str | None = None,
    cache: tuple[int, int] = (0, 0),
) -> Reply:
    """A Messages answer. `usage` is (input_tokens, output_tokens), the input not counting
    `cache` = (cache_creation_input_tokens, cache_read_input_tokens), as the API reports
    them. `stop_reason` defaults to `tool_use` or `end_turn`."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for cid, name, args in calls:
        content.append({"type": "tool_use", "id": cid, "name": name, "input": args})
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage[0],
            "cache_creation_input_tokens": cache[0],
            "cache_read_input_tokens": cache[1],
            "output_tokens": usage[1],
        },
    }
    return Reply(200, body)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def conversation_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the real API would reject in `messages`, or None."""
    if not messages or messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    pending: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        blocks = _blocks(m.get("content"))
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not blocks:
            return f"messages.{i}: all messages must have non-empty content"
        for b in blocks:
            if b.get("type") == "text" and not b.get("text"):
                return f"messages.{i}: text content blocks must be non-empty"
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        if pending:
            missing = [p for p in pending if p not in results]
            if role != "user" or missing:
                return (
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks "
                    "immediately after: {}"
                ).format(i, ", ".join(missing or pending))
        elif results:
            return (
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` "
                "blocks: each `tool_result` block must have a corresponding `tool_use` "
                "block in the previous message."
            )
        pending = (
            [b["id"] for b in blocks if b.get("type") == "tool_use"] if role == "assistant" else []
        )
    return None


class AnthropicFake(FakeServer):
    def __init__(
        self,
        api_key: str = "sk-ant-test",
        models: tuple[str, ...] = ("claude-sonnet-4-6",),
        prompt_cache: PromptCache | None = None,
    ):
        super().__init__(check=self._check)
        self.api_key = api_key
        self.models = models
        self.prompt_cache = prompt_cache
        if prompt_cache is not None:
            self.transform = self._cached_usage

    def _cached_usage(self, req: Recorded, reply: Reply) -> Reply:
        assert self.prompt_cache is not None
        used = self.prompt_cache.use(req.body)
        body = copy.deepcopy(reply.body)
        body["usage"].update(
            input_tokens=used.input_tokens,
            cache_creation_input_tokens=used.cache_creation_input_tokens,
            cache_read_input_tokens=used.cache_read_input_tokens,
        )
        return Reply(reply.status, body, headers=reply.headers, delay=reply.delay)

    @property
    def base_url(self) -> str:
        return self.url

    def _check(self, req: Recorded) -> Reply | None:
        if req.path.split("?")[0] != PATH:
            return error(404, f"Not found: {req.path}", type="not_found_error")
        # Older SDKs send `x-api-key`, newer ones `Authorization: Bearer`; the API takes both.
        keys = {
            req.headers.get("x-api-key"),
            req.headers.get("authorization", "").removeprefix("Bearer "),
        }
        if self.api_key not in keys:
            return error(401, "invalid x-api-key", type="authentication_error")
        if not req.headers.get("anthropic-version"):
            return error(400, "anthropic-version: header is required")
        body = req.body if isinstance(req.body, dict) else {}
        if body.get("model") not in self.models:
            return error(404, f"model: {body.get('model')}", type="not_found_error")
        if not isinstance(body.get("max_tokens"), int):
            return error(400, "max_tokens: Field required")
        problem = conversation_problem(body.get("messages") or [])
        if problem:
            return error(400, problem)
        marks = PromptCache().breakpoints(body)
        if marks > MAX_BREAKPOINTS:
            return error(
                400,
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {marks}.",
            )
        return None

    def sent_messages(self, n: int = -1) -> list[dict[str, Any]]:
        return self.requests[n].body["messages"]
