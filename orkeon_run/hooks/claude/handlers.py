"""The handler types that are not a shell command (docs/hooks.md, "Handler types"): `http`
and `prompt`. Each gives a `Ran` as a command does, so its answer is read, merged, charged
and recorded the same way (answers.py, base.py).

`http`: the hook's JSON line is POSTed to `url` (`content-type: application/json`) with
`headers`, whose `$NAME` / `${NAME}` are replaced by the variables `allowedEnvVars` lists
(read from orkeon's own environment; any other name becomes empty, as in Claude Code).
Header values never appear in a record or a log line, and a value found in the answer is
redacted. The response body is read as a command's stdout and its status as the exit code:
2xx is exit 0, 403 is exit 2 (the body, or `HTTP 403`, is the reason), any other status, a
redirect (never followed), a time-out or a connection error is a failure: it refuses a
PreToolUse call (fail closed) and is a non-blocking problem elsewhere.

`prompt`: the hook's `prompt`, with `$ARGUMENTS` replaced by the hook's JSON, goes to a
model (the run's own provider, or the one its `model` names), which must answer one JSON
object `{"ok": bool, "reason": "..."}`. `ok: true` is exit 0; `ok: false` is exit 2 with
`reason`. Its tokens and cost are charged to the step's ledger as a model answer and its
time as the hook's. A model that fails, runs out of time or answers anything else is a
failure that refuses a PreToolUse call (fail closed), with a text saying why.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ...config.inputs import SettingsHttp, SettingsPrompt
from .run import Ran

if TYPE_CHECKING:
    from ...ledger import Ledger
    from ...models.base import Provider

HTTP_DEFAULT_TIMEOUT = 10.0  # as a command's: a policy service answers fast or not at all
PROMPT_DEFAULT_TIMEOUT = 30.0  # Claude Code's default for a prompt hook
REFUSAL_STATUS = 403
BODY_CAP = 1 << 20
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")

JUDGE_SYSTEM = (
    "You judge one event of a coding agent's run for the person who set up this check. "
    'Answer with one JSON object and nothing else: {"ok": true} to let it proceed, or '
    '{"ok": false, "reason": "why, in one sentence"} to stop it.'
)


def header_values(
    hook: SettingsHttp, environ: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """`headers` with the allowed variables filled in (other `$NAME`s become empty), and
    the values filled in (to redact)."""
    allowed = set(hook.allowedEnvVars)
    used: list[str] = []

    def fill(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        value = environ.get(name, "") if name in allowed else ""
        if value:
            used.append(value)
        return value

    return {k: _VAR.sub(fill, v) for k, v in hook.headers.items()}, used


def _redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


class HttpClients:
    """The http hooks' clients, one per event loop (a connection pool belongs to one) and
    per scheme: a plain-http URL never loads the CA bundle (some 0.1-0.5 s), an https one
    loads it once per run, not per call. No redirect is followed."""

    def __init__(self) -> None:
        self._clients: dict[tuple[object, bool], Any] = {}

    def get(self, tls: bool) -> Any:
        import httpx2

        key = (anyio.lowlevel.current_token(), tls)
        client = self._clients.get(key)
        if client is None:
            client = httpx2.AsyncClient(follow_redirects=False, verify=tls)
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close the clients of the running loop (the others' loops are gone)."""
        token = anyio.lowlevel.current_token()
        for key in [k for k in self._clients if k[0] == token]:
            await self._clients.pop(key).aclose()


async def post_hook(
    hook: SettingsHttp,
    timeout: float,
    body: bytes,
    ledger: Ledger,
    clients: HttpClients,
    environ: Mapping[str, str] | None = None,
) -> Ran:
    """POST one hook event (module docstring). Charged to the ledger as hook time."""
    import httpx2

    label = hook.label
    limit = ledger.cap(timeout)
    if limit <= 0:
        return Ran(label, timeout, None, "", "", 0.0, False, ledger.time_spent_text())
    headers, filled = header_values(hook, os.environ if environ is None else environ)
    # Longest first: a value that holds another is replaced whole.
    secrets = sorted([*filled, *headers.values()], key=len, reverse=True)
    secrets = [s for s in secrets if len(s) >= 4]
    start = time.perf_counter()
    code: int | None = None
    out = err = ""
    error: str | None = None
    timed_out = False
    try:
        client = clients.get(hook.url.startswith("https://"))
        with anyio.fail_after(limit):
            reply = await client.post(
                hook.url,
                content=body,
                headers={"content-type": "application/json", **headers},
                timeout=limit,
            )
        text = _redact(reply.content[:BODY_CAP].decode("utf-8", "replace"), secrets)
        status = reply.status_code
        if 200 <= status < 300:
            code, out = 0, text
        elif status == REFUSAL_STATUS:
            code, out, err = 2, text, text.strip() or f"HTTP {status}"
        else:
            where = f" to {reply.headers.get('location')}" if 300 <= status < 400 else ""
            error = f"HTTP {status}{where} (an http hook's failure; redirects are not followed)"
    except (TimeoutError, httpx2.TimeoutException):
        timed_out = True
        error = f"no answer within {limit:.3g} s"
    except httpx2.HTTPError as exc:
        error = _redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
    seconds = time.perf_counter() - start
    ledger.charge("hook", seconds)
    return Ran(
        label, limit, code, out, err, seconds, timed_out, error, fail_closed=error is not None
    )


def judge_prompt(hook: SettingsPrompt, payload_json: str) -> str:
    return hook.prompt.replace("$ARGUMENTS", payload_json)


def read_judgement(text: str) -> tuple[bool, str]:
    """(ok, reason) from the model's answer; ValueError saying what is wrong with it."""
    t = text.strip()
    if t.startswith("```"):  # a fenced block: the JSON inside it
        t = t.strip("`").removeprefix("json").strip()
    try:
        doc = json.loads(t)
    except json.JSONDecodeError:
        raise ValueError(f"the model did not answer JSON: {text.strip()[:200]!r}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("ok"), bool):
        raise ValueError(f'the model\'s answer has no boolean "ok": {text.strip()[:200]!r}')
    reason = doc.get("reason")
    return doc["ok"], reason.strip() if isinstance(reason, str) else ""


async def ask_model(
    hook: SettingsPrompt,
    timeout: float,
    payload_json: str,
    ledger: Ledger,
    provider_for: Callable[[str | None], Provider],
    role: str,
) -> tuple[Ran, dict[str, Any] | None]:
    """Ask the model (module docstring). Returns the run and its usage (`tokens_in`,
    `tokens_out`, `usd`), None when no answer came."""
    from ...errors import ProviderError
    from ...models.base import Message

    label = hook.label
    limit = ledger.cap(timeout)
    if limit <= 0:
        return Ran(label, timeout, None, "", "", 0.0, False, ledger.time_spent_text()), None
    messages = [
        Message("system", JUDGE_SYSTEM),
        Message("user", judge_prompt(hook, payload_json)),
    ]
    start = time.perf_counter()
    try:
        provider = provider_for(hook.model)
        # The scripted provider keys its answers by role: a role's prompt hooks are
        # `ROLE/prompt-hook` there.
        with anyio.fail_after(limit):
            turn = await provider.for_role(f"{role}/prompt-hook").complete(messages, [])
    except TimeoutError:
        seconds = time.perf_counter() - start
        ledger.charge("hook", seconds)
        why = f"the model gave no answer within {limit:.3g} s"
        return Ran(label, limit, None, "", "", seconds, True, why, fail_closed=True), None
    except ProviderError as exc:
        seconds = time.perf_counter() - start
        ledger.charge("hook", seconds)
        why = f"the model failed: {exc}"
        return Ran(label, limit, None, "", "", seconds, False, why, fail_closed=True), None
    seconds = time.perf_counter() - start
    ledger.charge("hook", seconds)
    pricer = provider.price()
    usd = (
        pricer.usd(turn.tokens_in, turn.tokens_out, turn.cache_read_tokens, turn.cache_write_tokens)
        if pricer is not None
        else None
    )
    ledger.add_turn(
        turn.tokens_in, turn.tokens_out, usd, turn.cache_read_tokens, turn.cache_write_tokens
    )
    usage = {"tokens_in": turn.tokens_in, "tokens_out": turn.tokens_out, "usd": usd}
    try:
        ok, reason = read_judgement(turn.text)
    except ValueError as exc:
        ran = Ran(label, limit, None, turn.text, "", seconds, False, str(exc), fail_closed=True)
        return ran, usage
    if ok:
        return Ran(label, limit, 0, "", "", seconds, False, None), usage
    why = reason or "the model answered ok: false with no reason"
    return Ran(label, limit, 2, "", why, seconds, False, None), usage


__all__ = [
    "HTTP_DEFAULT_TIMEOUT",
    "PROMPT_DEFAULT_TIMEOUT",
    "REFUSAL_STATUS",
    "HttpClients",
    "ask_model",
    "header_values",
    "judge_prompt",
    "post_hook",
    "read_judgement",
]
