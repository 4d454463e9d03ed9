"""Retries, timeouts and one-line errors, shared by the HTTP providers (no SDK import here).

Retries are done here, not by an SDK, so both providers behave the same and the total wait is bounded: each attempt is cut at
`timeout` seconds; 429, 408, 409, 5xx, connection errors and timeouts are retried up to
`max_retries` times; the wait before a retry is the server's `retry-after-ms` /
`retry-after` (seconds or an HTTP date) when given, else exponential backoff (0.5 s,
1 s, 2 s, ... up to 8 s, minus up to 25 % jitter). A server that asks to wait longer than
`MAX_RETRY_AFTER` seconds is not waited for: the role fails at once with that in the
message. The worst case is therefore (max_retries + 1) * timeout + max_retries * 60 s.

Everything else (401/403, 404, other 4xx, a 500 whose message names a malformed request,
a reply that is not what the API promises) fails at once with one line:
`PROVIDER MODEL: what happened (HTTP N): server message`, the message being the part of
the error body that says why (`reasons.server_message`).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ..errors import ProviderError
from .reasons import server_message

T = TypeVar("T")

MAX_RETRY_AFTER = 60.0
MAX_BACKOFF = 8.0
MAX_MESSAGE = 300


@dataclass
class Failure:
    retryable: bool
    message: str
    retry_after: float | None = None


def one_line(text: str, secret: str | None = None) -> str:
    """Whitespace collapsed, the key (if the server echoed it) masked, length capped. A
    long text keeps its beginning and its end (where a server's message often says why)."""
    if secret:
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) <= MAX_MESSAGE:
        return text
    tail = MAX_MESSAGE // 3
    return text[: MAX_MESSAGE - tail - 3] + " … " + text[-tail:]


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks to wait, from `retry-after-ms` or `retry-after`, or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    if when is None:
        return None
    return max(0.0, email.utils.mktime_tz(when) - time.time())


# A server error that names something wrong with the request itself (llama.cpp's
# "Failed to parse messages: ...", a chat template's TypeError): sending the same bytes
# again fails the same way, so it is not retried.
MALFORMED = re.compile(
    r"(?i:\b(pars(e|ing)|invalid|malformed|validation|expected|missing|unsupported|"
    r"not supported|must be|required)\b)"
    r"|\b(Type|Key|Value|Attribute|Index|JSONDecode|UnicodeDecode|Validation)Error\b"
)


def classify_status(
    status: int,
    message: str,
    headers: Mapping[str, str] | None,
    *,
    model: str,
    base_url: str,
    key_env: str | None,
) -> Failure:
    """What an HTTP error status means for a model request."""
    if status in (401, 403):
        what = "authentication failed" if status == 401 else "access denied"
        source = f"key from ${key_env}" if key_env else "no key sent: model.api_key_env is null"
        return Failure(False, f"{what} (HTTP {status}): {message} ({source})")
    if status == 404:
        return Failure(False, f"model {model!r} not found at {base_url} (HTTP 404): {message}")
    if status == 429:
        return Failure(True, f"rate limited (HTTP 429): {message}", parse_retry_after(headers))
    if status == 500 and MALFORMED.search(message):
        return Failure(False, f"server error (HTTP 500), not retried: {message}")
    if status in (408, 409) or status >= 500:
        return Failure(True, f"server error (HTTP {status}): {message}", parse_retry_after(headers))
    return Failure(False, f"request rejected (HTTP {status}): {message}")


def backoff(retry: int, base: float) -> float:
    return min(base * 2.0**retry, MAX_BACKOFF) * (1 - 0.25 * random.random())


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    classify: Callable[[BaseException], Failure | None],
    *,
    label: str,
    max_retries: int,
    timeout: float,
    base_delay: float = 0.5,
    secret: str | None = None,
) -> T:
    """Run `attempt` until it succeeds; ProviderError (one line) when it cannot."""
    retry = 0
    while True:
        try:
            with anyio.fail_after(timeout):
                return await attempt()
        except TimeoutError:
            failure = Failure(True, f"no reply within {timeout:g} s")
        except Exception as exc:
            found = classify(exc)
            if found is None:
                raise
            failure = found
        if not failure.retryable or retry >= max_retries:
            tries = f" ({retry + 1} attempts)" if retry else ""
            raise ProviderError(one_line(f"{label}: {failure.message}{tries}", secret))
        delay = failure.retry_after
        if delay is None:
            delay = backoff(retry, base_delay)
        elif delay > MAX_RETRY_AFTER:
            raise ProviderError(
                one_line(
                    f"{label}: {failure.message}; the server asks to wait {delay:g} s, "
                    f"more than {MAX_RETRY_AFTER:g} s",
                    secret,
                )
            )
        await anyio.sleep(delay)
        retry += 1


class StatusError(Exception):
    """A reply whose HTTP status is not 2xx. `body` is its JSON, or its text when it is
    not JSON (what `server_message` reads)."""

    def __init__(self, status_code: int, headers: Mapping[str, str], text: str) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.headers = headers
        self.body: Any = text.strip()
        with contextlib.suppress(ValueError):
            self.body = json.loads(self.body)


def http_classifier(
    http: Any, *, model: str, base_url: str, key_env: str | None, timeout: float
) -> Callable[[BaseException], Failure | None]:
    """Classify what a POST through `http` (the httpx2 module, or httpx) raises."""

    def classify(exc: BaseException) -> Failure | None:
        if isinstance(exc, StatusError):
            message = server_message(exc.body, f"HTTP {exc.status_code}")
            return classify_status(
                exc.status_code,
                message,
                exc.headers,
                model=model,
                base_url=base_url,
                key_env=key_env,
            )
        if isinstance(exc, http.TimeoutException):
            return Failure(True, f"no reply within {timeout:g} s")
        if isinstance(exc, http.HTTPError):  # refused, dropped, not HTTP, too many redirects
            return Failure(True, f"cannot connect to {base_url}: {exc or type(exc).__name__}")
        return None

    return classify
