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


def null_content_rejection(index: int, message: dict[str, Any]) -> str:
    """What llama-cpp-python's server (0.3) answers, with HTTP 500, for an assistant message
    whose `content` is null: every error of every member of its pydantic union of message
    types, one Python dict a line, then where it was raised (recorded from the real server;
    the reason is the third line)."""
    where = ("body", "messages", index)
    members = ("System", "User", "Assistant", "Tool", "Function")
    lines = [f"{2 + len(members)} validation errors:"]
    for member in members:
        loc = (*where, f"ChatCompletionRequest{member}Message")
        if member == "Assistant":
            lines.append(repr({"type": "string_type", "loc": (*loc, "content"),
                               "msg": "Input should be a valid string", "input": None}))  # fmt: skip
            continue
        role = member.lower()
        lines.append(repr({"type": "literal_error", "loc": (*loc, "role"),
                           "msg": f"Input should be '{role}'", "input": "assistant",
                           "ctx": {"expected": f"'{role}'"}}))  # fmt: skip
        if member in ("Tool", "Function"):
            field = "tool_call_id" if member == "Tool" else "name"
            lines.append(repr({"type": "missing", "loc": (*loc, field),
                               "msg": "Field required", "input": message}))  # fmt: skip
    trace = (
        '  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n'
        "    POST /v1/chat/completions"
    )
    return "\n  ".join(lines) + "\n\n" + trace


# The reason a `null_content_rejection` gives, as orkeon's one-line error shows it.
NULL_CONTENT_REASON = (
    "7 validation errors: body.messages.{index}.ChatCompletionRequestAssistantMessage.content: "
    "Input should be a valid string"
)


def content_problem(messages: list[dict[str, Any]]) -> str | None:
    """What a strict local server fails on: an assistant `content` that is not a string."""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and not isinstance(m.get("content"), str):
            return null_content_rejection(i, m)
    return None


class OpenAIFake(FakeServer):
    def __init__(
        self,
        api_key: str | None = "sk-test",
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
        # api_key None: a local server that asks for no key (any header is ignored).
        if (
            self.api_key is not None
            and req.headers.get("authorization") != f"Bearer {self.api_key}"
        ):
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
