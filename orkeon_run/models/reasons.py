"""The part of an HTTP error body that says why a request failed, for the one-line error.

Servers bury the reason in different places: `{"error": {"message": ...}}` (both APIs,
llama.cpp's server), FastAPI's `{"detail": ...}`, a Python traceback as plain text (its
last line is the exception), a proxy's HTML page (its title). llama-cpp-python answers a
request its pydantic models refuse with HTTP 500 and every error of every union member
(`7 validation errors:` then one Python dict per line): for a message that is not of a
member's role, that member's errors say nothing, so only the errors of the members that
matched are kept (`body.messages.2.ChatCompletionRequestAssistantMessage.content: Input
should be a valid string`).
"""

from __future__ import annotations

import ast
import re
from typing import Any

_VALIDATION = re.compile(r"^\d+ validation errors?\b")


def server_message(body: Any, fallback: str) -> str:
    """The reason in an error body (JSON already decoded, or its text); else `fallback`."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return reason(err["message"])
        if isinstance(err, str) and err.strip():
            return reason(err)
        if isinstance(body.get("message"), str):
            return reason(body["message"])
        detail = body.get("detail")
        if isinstance(detail, str):
            return reason(detail)
        if isinstance(detail, list):  # pydantic's errors: [{"loc": [...], "msg": ...}]
            return "; ".join(_error_line(d) for d in _matching(detail)[:3])
    if isinstance(body, str) and body.strip():
        return reason(body)
    return fallback


def reason(text: str) -> str:
    """The reason in a server's message text."""
    if "<html" in text[:200].lower():
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return text
    if lines[0].startswith("Traceback (most recent call last)"):
        return lines[-1]  # the exception: what went wrong
    if _VALIDATION.match(lines[0]):
        errors = [e for e in map(_literal, lines[1:]) if isinstance(e, dict)]
        if errors:
            kept = _matching(errors)
            return f"{lines[0]} " + "; ".join(_error_line(e) for e in kept[:3])
    return text


def _literal(line: str) -> Any:
    if not line.startswith("{"):
        return None
    try:
        return ast.literal_eval(line)  # literals only: nothing of the server's is run
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _matching(errors: list[Any]) -> list[Any]:
    """The errors of the union members the value was meant to be: a member whose
    discriminator did not match (a `literal_error`) is dropped with all its errors."""
    dicts = [e for e in errors if isinstance(e, dict)]
    wrong = [tuple(e.get("loc") or ())[:-1] for e in dicts if e.get("type") == "literal_error"]
    kept = [
        e for e in dicts if not any(b and tuple(e.get("loc") or ())[: len(b)] == b for b in wrong)
    ]
    return kept or dicts


def _error_line(d: Any) -> str:
    if not isinstance(d, dict):
        return str(d)
    loc = ".".join(str(p) for p in d.get("loc") or ())
    return f"{loc}: {d.get('msg', '')}" if loc else str(d.get("msg", ""))
