"""What the two HTTP providers share: one HTTP client per event loop, the request encoded
once and sent as a plain POST, our retries, price and context window.

The requests go through httpx2, the HTTP library the `openai` and `anthropic` SDKs are
built on (installed with either of them), not through the SDKs: importing the
`anthropic` SDK loads some 3,000 modules (about 2 s, several times a whole run's fixed
cost; bench/bench_e2e.py), `openai` about 1 s, and a provider only needs a POST. What the
SDKs' clients did for us is done here: the base URL joined with the endpoint, JSON
headers, the provider's auth headers, the timeout, redirects followed (over TLS only), and a status that
is not 2xx raised as `retry.StatusError` for our retries (the SDKs' own are off).

A provider subclass names its endpoint (`path`), its auth headers (`auth_headers`), how a
conversation becomes a request body (`request_body`) and how a reply becomes a Turn
(`parse_reply`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import anyio
import anyio.lowlevel

from ..errors import Idle, ProviderError
from ..jsonio import utf8_line
from .base import Message, ToolSpec, Turn
from .pricing import Pricer, context_for, price_for
from .retry import StatusError, http_classifier, one_line, with_retries

try:  # the SDKs' HTTP library: httpx2 in current releases, httpx before
    import httpx2 as http
except ImportError:  # pragma: no cover
    import httpx as http  # type: ignore[no-redef]

# The SDKs' own client settings, kept: concurrent roles share one pool.
LIMITS = http.Limits(max_connections=1000, max_keepalive_connections=100)
# Output tokens per answer when `model.max_output_tokens` is not given (and the context
# window is at least twice as large): what the largest single call (a file_write of a
# large file) needs, and what every current OpenAI and Anthropic chat model may answer.
MAX_OUTPUT_TOKENS = 16384


def reply_document(data: bytes, label: str, error_of: Callable[[Any], Any]) -> Any:
    """A reply's JSON document. ProviderError (one line) when it is not JSON, or when
    `error_of(doc)` finds an error answer in it (its message, or None)."""
    try:
        doc = json.loads(data)
    except ValueError:
        raise ProviderError(
            one_line(f"{label}: the reply is not JSON: {data[:120].decode('utf-8', 'replace')!r}")
        ) from None
    err = error_of(doc) if isinstance(doc, dict) else None
    if err is not None:
        msg = err.get("message") if isinstance(err, dict) else err
        raise ProviderError(one_line(f"{label}: the server answered an error: {msg}"))
    return doc


@contextmanager
def reading_reply(label: str) -> Iterator[None]:
    """A reply of the wrong shape (a missing key, a wrong type) is one ProviderError line."""
    try:
        yield
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise ProviderError(
            one_line(f"{label}: cannot read the reply ({type(exc).__name__}: {exc})")
        ) from None


class HTTPProvider:
    name = ""
    path = ""
    default_base_url = ""

    def __init__(self, config: Any, api_key: str, *, retry_base: float = 0.5) -> None:
        self.config = config
        self.api_key = api_key
        self.retry_base = retry_base
        self.base_url = config.base_url or self.default_base_url
        self.label = f"{self.name} {config.model}"
        self.classify = http_classifier(
            http,
            model=config.model,
            base_url=self.base_url,
            key_env=config.api_key_env,
            timeout=config.timeout_seconds,
        )
        self._client: Any = None
        self._loop: object = None
        self._price: tuple[Pricer | None] | None = None
        self._context: int | None = None
        self._max_output: int | None = None

    # --- what a provider defines -------------------------------------------------------

    def auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], answer_schema: Any = None
    ) -> dict[str, Any]:
        """The request; `answer_schema` (not None): in the provider's structured-output
        mode (structured.py)."""
        raise NotImplementedError

    def wire_tools(self, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def parse_reply(self, content: bytes, answer_schema: Any = None) -> Turn:
        raise NotImplementedError

    # --- shared ------------------------------------------------------------------------

    def make_client(self) -> Any:
        headers = {"accept": "application/json", "content-type": "application/json"}
        # A plain-http base URL (a local vLLM, Ollama, a loopback fake) never uses TLS:
        # skip loading the CA bundle (~40-90 ms of every run's start), and follow no
        # redirect, so no https hop can happen without the certificate checks.
        tls = not self.base_url.startswith("http://")
        return http.AsyncClient(
            base_url=self.base_url,
            headers={**headers, **self.auth_headers()},
            timeout=self.config.timeout_seconds,
            follow_redirects=tls,
            verify=tls,
            limits=LIMITS,
        )

    def client(self) -> Any:
        # Made on first use in the event loop that uses it; a later loop (another
        # anyio.run) gets its own, since a connection pool belongs to one loop.
        loop = anyio.lowlevel.current_token()
        if self._client is None or self._loop != loop:
            self._loop = loop
            self._client = self.make_client()
        return self._client

    def for_role(self, role: str) -> HTTPRole:
        return HTTPRole(self, role)

    def price(self) -> Pricer | None:
        if self._price is None:
            self._price = (price_for(self.config),)
        return self._price[0]

    def context_tokens(self) -> int:
        if self._context is None:
            self._context = context_for(self.config)
        return self._context

    def max_output_tokens(self) -> int:
        """`model.max_output_tokens`, else 16384 or half the context window if smaller
        (a local server with a small window must keep room for the prompt)."""
        if self._max_output is None:
            given = self.config.max_output_tokens
            self._max_output = given or max(1, min(MAX_OUTPUT_TOKENS, self.context_tokens() // 2))
        return self._max_output

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class HTTPRole:
    def __init__(self, provider: HTTPProvider, role: str) -> None:
        self.provider = provider
        self.role = role
        self._tools: tuple[list[ToolSpec], list[dict[str, Any]]] | None = None

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        answer_schema: Any = None,
        *,
        idle: float | None = None,
    ) -> Turn:
        """One POST. With `idle`, the reply is read as it arrives: when the server sends
        no byte (no headers, then no piece of the body) for `idle` seconds, the request
        is dropped and errors.Idle raised, never retried (the watchdog, docs/inputs.md)."""
        p = self.provider
        wire_tools: list[dict[str, Any]] = []
        if tools:
            # The agent passes the same list every turn: convert it once.
            if self._tools is None or self._tools[0] is not tools:
                self._tools = (tools, p.wire_tools(tools))
            wire_tools = self._tools[1]
        body = p.request_body(messages, wire_tools, answer_schema)
        client = p.client()
        # utf8_line: a lone surrogate the model sent (`"\\ud800"` in its JSON) goes back as
        # that escape; a plain encode raised here and crashed the step.
        data = utf8_line(json.dumps(body, ensure_ascii=False, separators=(",", ":")))

        async def attempt() -> bytes:
            if idle is None:
                response = await client.post(p.path, content=data)
                content = response.content
            else:
                response, content = await self._read_watched(client, data, idle)
            if not response.is_success:
                text = content.decode(response.encoding or "utf-8", "replace")
                raise StatusError(response.status_code, response.headers, text)
            return bytes(content)

        content = await with_retries(
            attempt,
            p.classify,
            label=p.label,
            max_retries=p.config.max_retries,
            timeout=p.config.timeout_seconds,
            base_delay=p.retry_base,
            secret=p.api_key,
        )
        return p.parse_reply(content, answer_schema)

    async def _read_watched(self, client: Any, data: bytes, idle: float) -> tuple[Any, bytes]:
        """The reply and its body, each wait for a byte at most `idle` seconds."""
        request = client.build_request("POST", self.provider.path, content=data)
        with anyio.move_on_after(idle) as scope:
            response = await client.send(request, stream=True)
        if scope.cancelled_caught:
            self._silent(idle)
        try:
            chunks: list[bytes] = []
            pieces = response.aiter_bytes()
            while True:
                with anyio.move_on_after(idle) as scope:
                    chunk = await anext(pieces, None)
                if scope.cancelled_caught:
                    self._silent(idle)
                if chunk is None:
                    return response, b"".join(chunks)
                chunks.append(chunk)
        finally:
            await response.aclose()

    def _silent(self, idle: float) -> NoReturn:
        name = self.provider.label
        raise Idle({"kind": "provider", "name": name, "command": None, "seconds": idle})
