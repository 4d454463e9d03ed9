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
    calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    usage: tuple[int, int] = (12, 5),
    model: str = "gpt-4o-mini",
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
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
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
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


class OpenAIFake(FakeServer):
    def __init__(self, api_key: str = "sk-test", models: tuple[str, ...] = ("gpt-4o-mini",)):
        super().__init__(check=self._check)
        self.api_key = api_key
        self.models = models

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
        return None

    def sent_messages(self, n: int = -1) -> list[dict[str, Any]]:
        """The messages of request `n` (the last by default)."""
        return self.requests[n].body["messages"]
