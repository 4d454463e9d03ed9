"""Both HTTP providers against real HTTP servers on 127.0.0.1 speaking their wire protocol
(tests/kit/fakes): sessions, retries, timeouts, errors, usage and cost, and the tool results
the server receives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.agent import Rig
from kit.fakes.protocols import OPENAI, PROTOCOLS, Protocol
from kit.fakes.server import Reply

from orkeon_run.calls import result_text
from orkeon_run.errors import ProviderError
from orkeon_run.limits import BudgetLimits
from orkeon_run.models.base import Message, ToolSpec

SPEC = ToolSpec(
    "file_read",
    "Read a file.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)
CONVO = [Message("system", "You help."), Message("user", "read README.md")]


@pytest.fixture(params=PROTOCOLS, ids=lambda p: p.name)
def proto(request: pytest.FixtureRequest) -> Protocol:
    return request.param


def complete(provider: Any, messages: list[Message] = CONVO, tools: list[ToolSpec] = [SPEC]):  # noqa: B006
    async def go():
        try:
            return await provider.for_role("b1/api").complete(messages, tools)
        finally:
            await provider.aclose()

    return anyio.run(go)


def fails(provider: Any) -> str:
    with pytest.raises(ProviderError) as err:
        complete(provider)
    return str(err.value)


# --- a session -------------------------------------------------------------------------


def test_two_turn_tool_session(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.push(
            proto.reply("Let me look.", [("c1", "file_read", {"file_path": "README.md"})]),
            proto.reply("It is a readme."),
        )
        rig = Rig(tmp_path, proto.provider(server))
        [result] = rig.run("What is in README.md?")
    assert result.status == "succeeded"
    assert (result.turns, result.calls, result.refused) == (2, 1, 0)
    assert result.final_text == "It is a readme."
    assert len(server.requests) == 2
    second = server.requests[1].body
    assert proto.tool_results(second) == [("c1", "# readme\n")]
    assert any(
        t.get("name", t.get("function", {}).get("name")) == "file_read" for t in second["tools"]
    )


def test_tool_results_the_server_receives_are_what_the_pipeline_produced(
    tmp_path: Path, proto: Protocol
) -> None:
    """Refusals included: the gate's text reaches the model unchanged, and a structured
    result (list_files) as compact JSON."""
    calls = [
        ("c1", "file_write", {"file_path": "src/a.py", "content": "a = 1\n"}),
        ("c2", "file_write", {"file_path": "secret/k.txt", "content": "k"}),
        ("c3", "list_files", {"path": "src"}),
        ("c4", "file_write", {"file_path": "../outside.txt", "content": "x"}),
    ]
    with proto.server() as server:
        server.push(proto.reply(None, calls), proto.reply("done"))
        rig = Rig(tmp_path, proto.provider(server), deny=("file_write(secret/**)",))
        [result] = rig.run("write files")
    assert (result.calls, result.refused) == (4, 2)
    produced = [(f"c{e['seq']}", result_text(e["result"])) for e in rig.read_events("tool.call")]
    received = proto.tool_results(server.requests[1].body)
    assert received == produced
    assert received[1][1] == "[refused by the gate: file_write(secret/**)]"
    assert received[3][1] == "[refused: ../outside.txt is outside the workspace]"
    assert json.loads(received[2][1]) == ["src/a.py"]


def test_usage_flows_into_the_ledger_with_cost(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.push(
            proto.reply(None, [("c1", "list_files", {})], usage=(1000, 200)),
            proto.reply("ok", usage=(3000, 100)),
        )
        rig = Rig(tmp_path, proto.provider(server))
        rig.run("list")
    snap = rig.ledger.snapshot()
    assert (snap["turns"], snap["tokens_in"], snap["tokens_out"]) == (2, 4000, 300)
    price = rig.provider.price()
    assert price is not None  # the fakes serve models the price database knows
    turn_usd = [price.usd(1000, 200, 0, 0), price.usd(3000, 100, 0, 0)]
    assert 0 < turn_usd[0] < turn_usd[1]
    assert snap["usd"] == pytest.approx(sum(turn_usd))
    turns = rig.read_events("model.turn")
    assert [(t["tokens_in"], t["tokens_out"], t["tool_calls"]) for t in turns] == [
        (1000, 200, 1),
        (3000, 100, 0),
    ]


def test_price_override_and_unknown_price(tmp_path: Path, proto: Protocol) -> None:
    """`model.price` overrides the table; a model with no known price leaves usd null."""
    with proto.server(models=("my-local-model",)) as server:
        server.push(proto.reply("a", usage=(1_000_000, 0)))
        priced = Rig(tmp_path / "a", proto.provider(
            server, model="my-local-model", price={"input_per_mtok": 2, "output_per_mtok": 4}
        ))  # fmt: skip
        priced.run("hi")
        server.push(proto.reply("b", usage=(1_000_000, 0)))
        unknown = Rig(tmp_path / "b", proto.provider(server, model="my-local-model"))
        unknown.run("hi")
    assert priced.ledger.snapshot()["usd"] == pytest.approx(2.0)
    assert unknown.ledger.snapshot()["usd"] is None
    assert unknown.ledger.snapshot()["tokens_in"] == 1_000_000
    assert unknown.read_events("model.turn")[0]["usd"] is None


def test_token_budget_ends_the_role(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.fallback = lambda req: proto.reply(None, [("c1", "list_files", {})], usage=(10, 5))
        rig = Rig(tmp_path, proto.provider(server), limits=BudgetLimits(seconds=None, tokens=40))
        [result] = rig.run("loop forever")
    assert result.status == "budget_exhausted"
    assert rig.ledger.spent() == "tokens"
    assert result.turns == 3  # 15, 30, 45 tokens: the third reached the limit
    last = rig.read_events("tool.call")[-1]
    assert last["refused_by"] == "budget"


# --- retries ---------------------------------------------------------------------------


def test_429_then_success_honours_retry_after(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(
            proto.error(429, "slow down", headers={"retry-after": "0.4"}),
            proto.reply("fine"),
        )
        turn = complete(proto.provider(server, retry_base=5.0))
    assert turn.text == "fine"
    first, second = server.requests
    # retry-after (0.4 s) was waited, not the backoff (3.75 to 5 s): measured between the two
    # requests' arrivals, so the client's start-up is not in it. A bound that must stay (no
    # event tells one wait from the other); 3.5 s is 8x the quiet 0.4 s.
    assert 0.4 <= second.at - first.at < 3.5


# Hang guard (quiet: 0.1 s): waiting the 30 s of retry-after would run past it.
@pytest.mark.timeout(20)
def test_retry_after_ms_is_preferred(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(
            proto.error(429, "slow down", headers={"retry-after-ms": "50", "retry-after": "30"}),
            proto.reply("fine"),
        )
        assert complete(proto.provider(server)).text == "fine"
    first, second = server.requests
    assert second.at - first.at >= 0.05


def test_retry_after_beyond_the_cap_fails_at_once(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(proto.error(429, "quota", headers={"retry-after": "3600"}))
        message = fails(proto.provider(server))
    # One request, and the error says why: it did not wait (3600 s would pass any guard).
    assert len(server.requests) == 1
    assert "rate limited (HTTP 429): quota" in message
    assert "asks to wait 3600 s, more than 60 s" in message


def test_500_exhausts_the_retries(proto: Protocol) -> None:
    with proto.server() as server:
        server.fallback = lambda req: proto.error(500, "boom")
        message = fails(proto.provider(server, max_retries=2))
    assert len(server.requests) == 3
    assert message == f"{proto.name} {proto.model}: server error (HTTP 500): boom (3 attempts)"
    assert "\n" not in message


def test_backoff_grows_between_retries(proto: Protocol) -> None:
    with proto.server() as server:
        server.fallback = lambda req: proto.error(503, "busy")
        fails(proto.provider(server, max_retries=2, retry_base=0.1))
    # 0.1 s then 0.2 s, each minus up to 25 % jitter: lower bounds, which hold under any load
    first, second, third = (r.at for r in server.requests)
    assert second - first >= 0.075 and third - second >= 0.15


def test_connection_refused_is_retried_then_fails(proto: Protocol) -> None:
    with proto.server() as server:
        provider = proto.provider(server, max_retries=1)
    # the server is gone: nothing listens on its port any more
    message = fails(provider)
    assert "cannot connect to http://127.0.0.1:" in message
    assert message.endswith("(2 attempts)")


# --- failures that end the role at once -------------------------------------------------


def test_401_is_one_clear_line_without_the_key(proto: Protocol) -> None:
    with proto.server() as server:
        secret = "sk-wrong-secret-key-123"
        message = fails(proto.provider(server, key=secret))
    assert len(server.requests) == 1  # not retried
    assert message.startswith(f"{proto.name} {proto.model}: authentication failed (HTTP 401): ")
    assert f"(key from ${proto.key_env})" in message
    assert secret not in message
    assert "\n" not in message


def test_403_is_not_retried(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(proto.error(403, "this key may not use this model"))
        message = fails(proto.provider(server))
    assert len(server.requests) == 1
    assert "access denied (HTTP 403): this key may not use this model" in message


def test_unknown_model_is_404(proto: Protocol) -> None:
    with proto.server() as server:
        message = fails(proto.provider(server, model="no-such-model"))
    assert len(server.requests) == 1
    assert f"model 'no-such-model' not found at {server.base_url} (HTTP 404)" in message  # type: ignore[attr-defined]


def test_a_garbled_body_fails_clearly(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(
            Reply(200, raw=b'{"id": "x", "cho', headers={"content-type": "application/json"})
        )
        message = fails(proto.provider(server))
    assert len(server.requests) == 1
    assert message == f"""{proto.name} {proto.model}: the reply is not JSON: '{{"id": "x", "cho'"""


def test_json_that_is_not_a_reply_fails_clearly(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(Reply(200, {"unexpected": True}))
        message = fails(proto.provider(server))
    assert message.startswith(f"{proto.name} {proto.model}: cannot read the reply (KeyError")


def test_a_reply_slower_than_the_timeout(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(Reply(200, {}, delay=2.0))
        message = fails(proto.provider(server, timeout_seconds=0.3, max_retries=0))
    # The time-out's own text; waited out, the 2 s reply's empty body would fail otherwise.
    assert message == f"{proto.name} {proto.model}: no reply within 0.3 s"


def test_a_slow_reply_is_retried(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(Reply(200, {}, delay=2.0), proto.reply("second try"))
        turn = complete(proto.provider(server, timeout_seconds=0.3, max_retries=1))
    assert turn.text == "second try"


def test_a_failing_provider_fails_the_role(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        rig = Rig(tmp_path, proto.provider(server, key="bad-key"))
        [result] = rig.run("anything")
    assert result.status == "failed"
    assert result.error is not None and "authentication failed (HTTP 401)" in result.error
    assert result.to_json()["error"] == result.error
    assert "bad-key" not in rig.events_path.read_text() + rig.transcript_path.read_text()


def test_the_key_is_never_written(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.push(proto.reply(None, [("c1", "list_files", {})]), proto.reply("ok"))
        rig = Rig(tmp_path, proto.provider(server))
        rig.run("go")
    files = [p for p in rig.run_dir.rglob("*") if p.is_file()]
    assert rig.events_path in files and rig.transcript_path in files
    for path in files:
        assert proto.key not in path.read_text()


# --- the transport -----------------------------------------------------------------------


def test_request_headers(proto: Protocol, monkeypatch: pytest.MonkeyPatch) -> None:
    """The headers the SDK's client would send: JSON, the key, the API version (anthropic),
    the organization and project from their variables (openai)."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    with proto.server() as server:
        server.push(proto.reply("ok"))
        complete(proto.provider(server))
    headers = server.requests[0].headers
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "application/json"
    if proto.name == "openai":
        assert headers["authorization"] == f"Bearer {proto.key}"
        assert (headers["openai-organization"], headers["openai-project"]) == ("org-1", "proj-1")
    else:
        assert headers["x-api-key"] == proto.key
        assert headers["anthropic-version"]
        assert "openai-organization" not in headers


NO_SDK = """
import sys, anyio
from orkeon_run.errors import ProviderError
from orkeon_run.config.inputs import AnthropicModel, OpenAIModel
from orkeon_run.models import build_provider
from orkeon_run.models.base import Message

env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
for config in (OpenAIModel(provider="openai", model="m", base_url=sys.argv[1], max_retries=0),
               AnthropicModel(provider="anthropic", model="m", base_url=sys.argv[1], max_retries=0)):
    provider = build_provider(config, environ=env)
    try:
        anyio.run(provider.for_role("r").complete, [Message("user", "x")], [])
    except ProviderError as exc:
        assert "cannot connect to" in str(exc), exc
print(sorted(m for m in ("openai", "anthropic") if m in sys.modules))
"""


def test_a_provider_turn_loads_no_sdk() -> None:
    """The providers POST through httpx2: importing the `anthropic` SDK alone costs about
    2 s, several times the fixed cost of a whole run (bench/bench_e2e.py)."""
    with OPENAI.server() as server:
        url = server.url
    # nothing listens on the port any more: each provider makes one real attempt and fails
    out = subprocess.run(
        [sys.executable, "-c", NO_SDK, url], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
