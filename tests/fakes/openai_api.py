"""The OpenAI Chat Completions wire protocol on a `FakeServer`.

The server checks what the real API checks and tests rely on: the bearer key (401), the
model name (404), and that every assistant `tool_calls` entry is answered by a `tool`
message before the conversation goes on (400 otherwise).
"""

from __future__ import annotations

import json
from typing import Any

from .server import FakeServer, Recorded, Reply

PATH = "/v1/chat/completions"


def error(
    status: int,
    message: str,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return Reply(status, body, headers=headers or {})


def completion(
    text: str | None = None,
    calls: list[tuple[str, str, Any]] = (),  # type: ignore[assignment]
    usage: tuple[int, int] = (12, 5),
    model: str = "gpt-4o-mini",
    *,
    finish: str | None = None,
    cached: int = 0,
) -> Reply:
    """A Chat Completions answer. A call's arguments are a dict (sent as its JSON) or a
    string (sent as it is: a small model's broken JSON). `cached` is reported as
    `usage.prompt_tokens_details.cached_tokens` (part of the prompt tokens). `finish`
    defaults to `tool_calls` or `stop`."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for cid, name, args in calls
        ]
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
    return Reply(200, body)


def conversation_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the real API would reject in `messages`, or None."""
    pending: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' (messages[{i}])."
                )
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(pending)}"
            )
        if role == "assistant":
            pending = [c["id"] for c in m.get("tool_calls") or []]
        elif role not in ("system", "user", "developer"):
            return f"Invalid value: '{role}'."
    return None


# What llama-cpp-python's server answers (HTTP 500) when a chat template adds a null
# content to a string: the reason comes last, after the server's own words.
TEMPLATE_FAILURE = (
    "The server failed to apply the chat template to the messages of this request; the "
    "Jinja2 renderer raised while formatting message {index} (role assistant) of the "
    'conversation: TypeError: can only concatenate str (not "NoneType") to str'
)


def content_problem(messages: list[dict[str, Any]]) -> str | None:
    """What a strict local server fails on: an assistant `content` that is not a string."""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and not isinstance(m.get("content"), str):
            return TEMPLATE_FAILURE.format(index=i)
    return None


class OpenAIFake(FakeServer):
    def __init__(
        self,
        api_key: str = "sk-test",
        models: tuple[str, ...] = ("gpt-4o-mini",),
        strict_content: bool = True,
    ):
        super().__init__(check=self._check)
        self.api_key = api_key
        self.models = models
        self.strict_content = strict_content

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def _check(self, req: Recorded) -> Reply | None:
        if req.path != PATH:
            return error(404, f"Invalid URL (POST {req.path})")
        if req.headers.get("authorization") != f"Bearer {self.api_key}":
            return error(401, "Incorrect API key provided: sk-w***g.", code="invalid_api_key")
        body = req.body if isinstance(req.body, dict) else {}
        if body.get("model") not in self.models:
            return error(
                404,
                f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        problem = conversation_problem(body.get("messages") or [])
        if problem:
            return error(400, problem)
        if self.strict_content:
            problem = content_problem(body.get("messages") or [])
            if problem:
                return error(500, problem, type="internal_server_error")
        return None

    def sent_messages(self, n: int = -1) -> list[dict[str, Any]]:
        """The messages of request `n` (the last by default)."""
        return self.requests[n].body["messages"]
