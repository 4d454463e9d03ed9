"""Prompt caching end to end: the breakpoints a session sends, the cache usage read back
into events, transcripts and the ledger, and its cost at the cache's prices. The
Anthropic fake serves usage from a simulated prompt cache (tests/kit/fakes/prompt_cache.py),
so what is read back is what the breakpoints sent earned."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from kit.agent import Rig
from kit.fakes.anthropic_api import AnthropicFake, message
from kit.fakes.openai_api import completion
from kit.fakes.prompt_cache import PromptCache
from kit.fakes.protocols import ANTHROPIC, OPENAI

from orkeon_run.models.pricing import Rates, price_for

ROUNDS = 8


def reply(req: Any) -> Any:
    """One `list_files` call per answer until ROUNDS answers, then done."""
    answers = sum(m["role"] == "assistant" for m in req.body["messages"])
    if answers >= ROUNDS - 1:
        return message("done", usage=(0, 5))
    return message(None, [(f"c{answers}", "list_files", {})], usage=(0, 20))


def cached_session(tmp_path: Path, cache: bool, **config: Any) -> tuple[Rig, AnthropicFake]:
    server = AnthropicFake(prompt_cache=PromptCache(min_tokens=1024))
    server.fallback = reply
    with server:
        rig = Rig(tmp_path, ANTHROPIC.provider(server, cache=cache, **config))
        agent_prompt = "List the files, again and again. " * 40
        [result] = rig.run(agent_prompt)
    assert (result.status, result.turns) == ("succeeded", ROUNDS), result.error
    return rig, server


def test_cache_usage_is_read_back_everywhere(tmp_path: Path) -> None:
    rig, server = cached_session(tmp_path, cache=True)
    turns = rig.read_events("model.turn")
    # the first answer writes the prefix, each later one reads what the one before wrote
    assert turns[0]["cache_read_tokens"] == 0 and turns[0]["cache_write_tokens"] > 1024
    for before, turn in itertools.pairwise(turns):
        assert (
            turn["cache_read_tokens"] == before["cache_read_tokens"] + before["cache_write_tokens"]
        )
        assert 0 < turn["cache_write_tokens"] < 200  # only what this turn added
    # event, transcript line and ledger agree with the server's usage
    usages = [r["usage"] for r in received_bodies(rig)]
    assert [(u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) for u in usages] == [
        (t["cache_read_tokens"], t["cache_write_tokens"]) for t in turns
    ]
    assert all(u["input_tokens"] == t["tokens_in"] for u, t in zip(usages, turns, strict=True))
    snap = rig.ledger.snapshot()
    assert snap["cache_read_tokens"] == sum(t["cache_read_tokens"] for t in turns)
    assert snap["cache_write_tokens"] == sum(t["cache_write_tokens"] for t in turns)
    assert snap["tokens_in"] == sum(t["tokens_in"] for t in turns)
    assert all(len(breakpoints_of(r.body)) <= 4 for r in server.requests)


def test_the_cost_uses_the_cache_prices_and_caching_pays(tmp_path: Path) -> None:
    on, _ = cached_session(tmp_path / "on", cache=True)
    off, server = cached_session(tmp_path / "off", cache=False)
    assert all(breakpoints_of(r.body) == [] for r in server.requests)
    assert off.ledger.snapshot()["cache_read_tokens"] == 0
    assert on.ledger.snapshot()["tokens_in"] == off.ledger.snapshot()["tokens_in"]
    price = price_for(ANTHROPIC.provider(server).config)
    assert price is not None
    for rig in (on, off):
        expected = sum(
            price.usd(
                t["tokens_in"], t["tokens_out"], t["cache_read_tokens"], t["cache_write_tokens"]
            )
            for t in rig.read_events("model.turn")
        )
        assert rig.ledger.snapshot()["usd"] == pytest.approx(expected, abs=1e-6)  # 6 places
        assert [t["usd"] for t in rig.read_events("model.turn")] == [
            pytest.approx(price.usd(t["tokens_in"], t["tokens_out"], t["cache_read_tokens"],
                                    t["cache_write_tokens"]), abs=1e-8)
            for t in rig.read_events("model.turn")
        ]  # fmt: skip
    assert on.ledger.snapshot()["usd"] < 0.5 * off.ledger.snapshot()["usd"]


def test_a_price_override_prices_the_cache(tmp_path: Path) -> None:
    prices = {"input_per_mtok": 10, "output_per_mtok": 0, "cache_read_per_mtok": 1,
              "cache_write_per_mtok": 20}  # fmt: skip
    rig, _ = cached_session(tmp_path, cache=True, price=prices)
    snap = rig.ledger.snapshot()
    fresh = snap["tokens_in"] - snap["cache_read_tokens"] - snap["cache_write_tokens"]
    expected = (10 * fresh + 1 * snap["cache_read_tokens"] + 20 * snap["cache_write_tokens"]) / 1e6
    assert snap["usd"] == pytest.approx(expected)
    assert isinstance(rig.provider.price(), Rates)


def test_openai_cached_tokens_are_recorded_and_priced(tmp_path: Path) -> None:
    with OPENAI.server() as server:
        server.push(
            completion(None, [("c1", "list_files", {})], usage=(2000, 10), cached=0),
            completion("done", usage=(2100, 5), cached=1920),
        )
        rig = Rig(tmp_path, OPENAI.provider(server))
        rig.run("list")
    turns = rig.read_events("model.turn")
    assert [(t["tokens_in"], t["cache_read_tokens"], t["cache_write_tokens"]) for t in turns] == [
        (2000, 0, 0),
        (2100, 1920, 0),
    ]
    assert received_bodies(rig)[1]["usage"] == {
        "input_tokens": 2100, "output_tokens": 5,
        "cache_read_input_tokens": 1920, "cache_creation_input_tokens": 0,
    }  # fmt: skip
    assert "cache_read_input_tokens" not in received_bodies(rig)[0]["usage"]
    price = rig.provider.price()
    assert price is not None
    full = price.usd(2100, 5, 0, 0)
    assert turns[1]["usd"] == pytest.approx(price.usd(2100, 5, 1920, 0), abs=1e-8)
    assert turns[1]["usd"] < full


def test_a_scripted_usage_may_report_cache_tokens(tmp_path: Path) -> None:
    from orkeon_run.config.inputs import ScriptedModel
    from orkeon_run.models.scripted import ScriptedProvider

    usage = {"input_tokens": 1000, "output_tokens": 10, "cache_read_input_tokens": 900}
    config = ScriptedModel(provider="scripted", script={"b1/api": [{"text": "x", "usage": usage}]},
                           price={"input_per_mtok": 1, "output_per_mtok": 0,
                                  "cache_read_per_mtok": 0.1})  # fmt: skip
    rig = Rig(tmp_path, ScriptedProvider(config))
    rig.run("go")
    snap = rig.ledger.snapshot()
    assert (snap["tokens_in"], snap["cache_read_tokens"]) == (1000, 900)
    assert snap["usd"] == pytest.approx((100 * 1 + 900 * 0.1) / 1e6)


def received_bodies(rig: Rig) -> list[dict[str, Any]]:
    return [line for line in rig.transcript() if line["direction"] == "received"]


def breakpoints_of(body: dict[str, Any]) -> list[str]:
    text = json.dumps(body)
    return ["x"] * text.count('"cache_control"')
