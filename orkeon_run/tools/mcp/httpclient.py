"""The HTTP client of a streamable-HTTP server, and what it saw go wrong.

The SDK turns an HTTP error into a JSON-RPC error without the status ("Server returned an
error response") and a refused connection into "Connection closed"; neither tells an
operator what to fix. The client's transport here records the last failed POST (the
requests that carry the protocol's calls) as one line, `POST URL: answered 401
Unauthorized` or `POST URL: ConnectError: …`, for the reason the model and the events read.
URLs are shown without their query and user info, which may hold credentials.

It also records whether that POST provably ran nothing on the server (`unsent`), which is
when a call may be sent again on a new session (docs/tools.md, "When a server fails"): the
connection could not be made (nothing was sent), or the server answered 404 for the
session id the request carried (the MCP streamable-HTTP rule for a session it does not
know: it expired, or the server restarted). A client has one transport per session.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from ...config.mcp import shown_url

# Connecting, writing and taking a connection from the pool; no read limit of the client's
# own: each call has its time limit, and a tool may stream its answer for as long as that.
TIMEOUT = httpx2.Timeout(30.0, read=None)
SESSION_HEADER = "mcp-session-id"  # the streamable-HTTP transport's session id


class WatchedTransport(httpx2.AsyncBaseTransport):
    """httpx2's own transport, remembering the last POST that failed (`problem`, and
    `unsent` when it ran nothing there); a POST that succeeds clears both. `lost`: the
    server answered 404 for this session's id (it stays lost)."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.problem: str | None = None
        self.unsent = False
        self.lost = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        what = f"{request.method} {shown_url(str(request.url))}"
        session = request.headers.get(SESSION_HEADER)
        if request.method == "DELETE" and self.lost:
            # Ending a session the server said it does not know: nothing to tell it.
            return httpx2.Response(204, request=request)
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            if request.method == "POST":
                text = str(exc).strip()
                self.problem = f"{what}: {type(exc).__name__}" + (f": {text}" if text else "")
                # A request whose connection broke after it was sent may have run: not unsent.
                self.unsent = isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout)
            raise
        if request.method == "POST":
            if response.status_code >= 400:
                self.problem = f"{what}: answered {response.status_code} {response.reason_phrase}"
                self.unsent = response.status_code == 404 and session is not None
                self.lost = self.lost or self.unsent
            else:
                self.problem, self.unsent = None, False
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def client(headers: Mapping[str, str]) -> tuple[httpx2.AsyncClient, WatchedTransport]:
    """A client sending `headers` on every request, and the transport that watches it."""
    watch = WatchedTransport()
    return httpx2.AsyncClient(headers=dict(headers), timeout=TIMEOUT, transport=watch), watch


__all__ = ["SESSION_HEADER", "TIMEOUT", "WatchedTransport", "client"]
